"""``torch.serialization``: ``save``/``load`` (``gradlab.io``'s) and the ``weights_only`` allow-list helpers,
accepted so programs that register their classes (``add_safe_globals([MyConfig])``) run unchanged."""
from __future__ import annotations

import contextlib

from ..io import load, save  # noqa: F401

_SAFE: list = []


def add_safe_globals(safe_globals) -> None:
    """Remember classes a ``weights_only`` load may rebuild (kept for ``get_safe_globals``)."""
    _SAFE.extend(safe_globals)


def get_safe_globals() -> list:
    return list(_SAFE)


def clear_safe_globals() -> None:
    _SAFE.clear()


@contextlib.contextmanager
def safe_globals(safe_globals):
    n = len(_SAFE)
    _SAFE.extend(safe_globals)
    try:
        yield
    finally:
        del _SAFE[n:]


__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "load", "safe_globals", "save"]
