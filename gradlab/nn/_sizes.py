"""Size arguments (``kernel_size``, ``stride``, ``padding``...) as tuples: the one home of that check.

* ``ntuple(value, n, op, arg, minimum=None)``: an int is repeated ``n`` times, a sequence must hold
  ``n`` ints (each at least ``minimum``); anything else is an ``ArgumentError`` naming ``op`` and ``arg``;
* ``single(value, op, arg)``: the one int of a 1-d size (an int or a 1-tuple).
"""
from __future__ import annotations

import operator

from ..errors import ArgumentError


def ntuple(value, n, op, arg, minimum=None):
    """``value`` as a tuple of ``n`` ints (PyTorch's ``_ntuple``), checked; ``op`` and ``arg`` name it in errors."""
    try:
        t = (operator.index(value),) * n if not isinstance(value, (tuple, list)) else tuple(
            operator.index(v) for v in value)
    except TypeError:
        t = ()
    if len(t) != n or (minimum is not None and min(t) < minimum):
        what = "an int" if minimum is None else f"an int >= {minimum}"
        raise ArgumentError(f"{op}: {arg} must be {what} or a tuple of {n} of them, got {value!r}")
    return t


def single(value, op, arg):
    """The int of a 1-d size given as an int or a 1-tuple."""
    return ntuple(value, 1, op, arg)[0]
