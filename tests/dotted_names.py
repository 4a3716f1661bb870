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
