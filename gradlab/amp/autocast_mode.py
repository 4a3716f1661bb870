"""``autocast``: run a region in mixed precision.

Inside ``with gradlab.amp.autocast(dtype=gradlab.float16):`` the ops in the
policy table (see :mod:`gradlab.amp.state`) cast their inputs: matrix products
to the low dtype, softmax / normalisation / losses / reductions to float32.
The parameters themselves stay float32 ("master weights"): each matmul casts a
float16 *copy*, and the cast's backward turns the gradient back into float32.

Use it for the forward pass and the loss only; call ``backward()`` outside.
With float16, combine it with :class:`GradScaler` so small gradients do not
underflow to zero.
"""
from __future__ import annotations

import functools

from ..backend import dtypes as _dt
from ..errors import ArgumentError
from .state import state


class autocast:
    """``autocast(device_type="cpu", dtype=None, enabled=True)``; also ``autocast(dtype=gradlab.float16)``.

    The default dtype is bfloat16 on the cpu and float16 on cuda, as in PyTorch.
    Works as a context manager and as a decorator; regions nest.
    """

    def __init__(self, device_type="cpu", dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):  # autocast(gradlab.float16)
            device_type, dtype = "cpu", device_type
        if device_type not in ("cpu", "cuda"):
            raise ArgumentError(f"autocast: device_type must be 'cpu' or 'cuda', got {device_type!r}")
        if dtype is None:
            dtype = _dt.bfloat16 if device_type == "cpu" else _dt.float16
        dtype = _dt.as_dtype(dtype)
        if dtype not in (_dt.float16, _dt.bfloat16):
            raise ArgumentError(f"autocast: dtype must be float16 or bfloat16, got {_dt.dtype_name(dtype)}")
        self.device_type, self.fast_dtype, self.enabled = device_type, dtype, bool(enabled)

    def __enter__(self):
        self._prev = (state.enabled, state.dtype)
        if self.enabled:
            state.enabled, state.dtype = True, self.fast_dtype
        else:
            state.enabled = False
        return self

    def __exit__(self, *exc):
        state.enabled, state.dtype = self._prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(self.device_type, self.fast_dtype, self.enabled):
                return fn(*args, **kwargs)
        return wrapper


def is_autocast_enabled(device_type=None) -> bool:
    return state.enabled


def get_autocast_dtype(device_type=None):
    return state.dtype
