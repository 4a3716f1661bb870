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

    ``resolves`` imports ``gradlab.x.y`` as a module; but where the package ``gradlab.x`` has an
    attribute ``y`` that is not the module (a function named as its file was), that attribute hides
    the module, and a student typing ``gradlab.x.y.Name`` gets an AttributeError. (tests/test_layout.py
    refuses such a name in gradlab, but for the few it lists with their reason.)
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
