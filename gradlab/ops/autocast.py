"""Autocast's switch and policy table, consulted by the ops it concerns.

Holds: ``state`` (is autocast on, and to which dtype), the policy (``LOWER_PRECISION``, ``FLOAT32``)
and ``autocast_args``/``autocast_arg`` (an op's inputs cast as the policy says). It lives in the ops
layer because the ops read it on every call (``if _amp.enabled:`` is one attribute test when autocast
is off); ``gradlab.amp.autocast`` (layer 5, above) only flips the switch.

The policy, as in PyTorch's autocast:

* ``LOWER_PRECISION`` ops (matrix products: linear, matmul, conv) run in the
  autocast dtype (float16/bfloat16): they are where the time goes, and they
  tolerate fewer mantissa bits because every output sums many products;
* ``FLOAT32`` ops (softmax, log_softmax, layer_norm, losses, sums, exp/log)
  run in float32: they exponentiate or accumulate, where float16's range
  (max 65504) and precision run out.

Only float32/float16/bfloat16 tensors are cast; float64 and integer tensors
are left alone. Casts are differentiable, so gradients flow back to the
float32 master weights in float32.
"""
from __future__ import annotations

import threading

from .cast import to

LOWER_PRECISION = frozenset({
    "matmul", "mm", "bmm", "baddbmm", "addmm", "linear", "conv2d", "einsum", "scaled_dot_product_attention",
})
FLOAT32 = frozenset({
    "softmax", "log_softmax", "layer_norm", "cross_entropy", "nll_loss", "mse_loss",
    "binary_cross_entropy_with_logits", "sum", "mean", "var", "std", "logsumexp", "exp", "log", "norm",
})


class _State(threading.local):
    """This thread's autocast switch: per thread, as PyTorch's (a new thread starts with it off)."""

    def __init__(self):
        self.enabled = False
        self.dtype = None


state = _State()


def autocast_args(op: str, *args):
    """``args`` cast as the policy says for ``op`` (unchanged if autocast is off or ``op`` is not listed)."""
    if not state.enabled:
        return args
    import numpy as np

    from ..backend import dtypes as _dt
    if op in LOWER_PRECISION:
        target = state.dtype
    elif op in FLOAT32:
        target = np.dtype(np.float32)
    else:
        return args
    from .._tensor import Tensor
    eligible = (np.dtype(np.float32), np.dtype(np.float16), _dt.bfloat16)
    return tuple(to(a, target) if isinstance(a, Tensor) and a.dtype in eligible and a.dtype != target else a
                 for a in args)


def autocast_arg(op: str, arg):
    """Single-argument form of :func:`autocast_args`."""
    return autocast_args(op, arg)[0] if state.enabled else arg
