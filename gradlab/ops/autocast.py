"""Autocast's switch and its policy, applied as a wrapper around the ops that have one.

Holds: ``state`` (is autocast on, and to which dtype), the policy sets (``LOWER_PRECISION``,
``FLOAT32``: filled from the registry entries that name a policy, ``register(..., autocast=...)``),
``autocast_args``/``autocast_arg`` (an op's inputs cast as the policy says) and ``wrap`` (an op's
public function with its inputs cast first; the registry wraps every entry that names a policy, so
no op body mentions autocast). It lives in the ops layer because the wrapper runs on every call of
those ops (one attribute test when autocast is off); ``gradlab.amp.autocast`` (layer 5, above) only
flips the switch.

The policy, as in PyTorch's autocast:

* ``"lower"`` ops (matrix products: linear, matmul, conv) run in the
  autocast dtype (float16/bfloat16): they are where the time goes, and they
  tolerate fewer mantissa bits because every output sums many products;
* ``"float32"`` ops (softmax, log_softmax, layer_norm, losses, sums) run in
  float32: they exponentiate or accumulate, where float16's range (max 65504)
  and precision run out.

Only float32/float16/bfloat16 tensors are cast; float64 and integer tensors
are left alone. Casts are differentiable, so gradients flow back to the
float32 master weights in float32.
"""
from __future__ import annotations

import functools
import threading

import numpy as np

from .._tensor import Tensor
from ..backend import dtypes as _dt
from ..errors import ArgumentError

#: The op names of each policy, as their registry entries state it (``register(..., autocast=...)``).
LOWER_PRECISION: set = set()
FLOAT32: set = set()
_POLICIES = {"lower": LOWER_PRECISION, "float32": FLOAT32}
_ELIGIBLE = (np.dtype(np.float32), np.dtype(np.float16), _dt.bfloat16)


class _State(threading.local):
    """This thread's autocast switch: per thread, as PyTorch's (a new thread starts with it off)."""

    def __init__(self):
        self.enabled = False
        self.dtype = None


state = _State()


def _cast(a, target):
    return a.to(target) if isinstance(a, Tensor) and a.dtype in _ELIGIBLE and a.dtype != target else a


def autocast_args(op: str, *args):
    """``args`` cast as the policy says for ``op`` (unchanged if autocast is off or ``op`` has no policy)."""
    if not state.enabled:
        return args
    if op in LOWER_PRECISION:
        target = state.dtype
    elif op in FLOAT32:
        target = np.dtype(np.float32)
    else:
        return args
    return tuple(_cast(a, target) for a in args)


def autocast_arg(op: str, arg):
    """Single-argument form of :func:`autocast_args`."""
    return autocast_args(op, arg)[0] if state.enabled else arg


def wrap(fn, op: str, policy: str):
    """``fn`` (the public function of ``op``) under the autocast ``policy`` ("lower" or "float32"):
    while autocast is on, its tensor arguments are cast first; off, the call goes straight through."""
    if policy not in _POLICIES:
        raise ArgumentError(f"register: autocast={policy!r} for {op}; use 'lower' or 'float32'")
    _POLICIES[policy].add(op)

    @functools.wraps(fn)
    def autocast_wrapper(*args, **kwargs):
        if state.enabled:
            args = autocast_args(op, *args)
            if kwargs:
                kwargs = dict(zip(kwargs, autocast_args(op, *kwargs.values())))
        # (no keywords, the usual call: fn(*args) skips unpacking an empty dict, about 3% of a
        # tiny MLP's step went to this wrapper's call before)
        return fn(*args, **kwargs) if kwargs else fn(*args)
    return autocast_wrapper
