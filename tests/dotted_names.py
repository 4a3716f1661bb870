"""Helpers the documentation tests share: does a dotted ``gradlab.x.y`` name resolve?"""
from __future__ import annotations

import importlib


def resolves(dotted: str) -> bool:
    """True when ``dotted`` imports as a module followed by attributes (``gradlab.ops.unary.UNARY``)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def reads_as_written(dotted: str) -> bool:
    """True when ``dotted`` also works typed as written, attribute by attribute from ``gradlab``.

    ``resolves`` imports ``gradlab.ops.softmax`` as a module; but ``gradlab.ops.softmax`` *as an
    attribute* is the function ``softmax``, which hides the module, so a student typing
    ``gradlab.ops.softmax.SoftmaxBackward`` gets an AttributeError. The docs name such a thing by its
    file (``SoftmaxBackward`` in ``gradlab/ops/softmax.py``) or with ``from ... import``.
    """
    if not resolves(dotted):
        return False
    parts = dotted.split(".")
    obj = importlib.import_module(parts[0])
    try:
        for attr in parts[1:]:
            obj = getattr(obj, attr)
    except AttributeError:
        return False
    return True
