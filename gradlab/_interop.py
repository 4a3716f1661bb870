"""A Tensor beside NumPy, and on the screen: ``Tensor.__array_ufunc__`` and ``repr``.

Kept apart from ``_tensor.py`` (which is about what a tensor *is*). ``_tensor``
imports this module; the Tensor class comes in as an argument (``Tensor``),
so this file needs nothing from ``_tensor`` and there is no import cycle.
"""
from __future__ import annotations

import numpy as np

from .backend import dtypes as _dt
from .backend.device import CPU
from .errors import fmt_shape


def array_ufunc(Tensor, ufunc, method, inputs, kwargs):  # noqa: N803 - the class, passed in by Tensor
    """``Tensor.__array_ufunc__``: NumPy meets a Tensor. ``array * tensor`` is the Tensor op
    (``tensor.__rmul__``); an in-place ``array -= tensor`` (``a = p.numpy(); a -= lr * p.grad``) updates
    the array in place (no graph), instead of silently replacing ``a`` by a Tensor; other ufuncs see the
    arrays."""
    out = kwargs.get("out")
    if out is None and method == "__call__" and len(inputs) == 2:
        names = _REFLECTED.get(ufunc.__name__)
        a, b = inputs
        if names is not None and isinstance(b, Tensor) and not isinstance(a, Tensor):
            return getattr(b, names[1])(a)  # ``array - tensor``: the Tensor op
    args = [i._data if isinstance(i, Tensor) else i for i in inputs]
    if out is not None:
        kwargs["out"] = tuple(o._data if isinstance(o, Tensor) else o for o in out)
    return getattr(ufunc, method)(*args, **kwargs)


def tensor_repr(self) -> str:
    """``repr(tensor)``: values as NumPy prints them, then only what differs from the defaults."""
    arr = self._data
    if self.device != CPU:
        arr = arr.get()
    body = np.array2string(
        np.asarray(arr, dtype=np.float64) if self.dtype == _dt.bfloat16 else arr,
        separator=", ", prefix="tensor(", precision=4, threshold=200, edgeitems=3,
    )
    parts = [body]
    if arr.size == 0 or arr.ndim > 1 or arr.size > 6:
        parts.append(f"shape={fmt_shape(self.shape)}")
    if self.dtype not in (_dt.float32, _dt.int64, _dt.bool_) or arr.size == 0:
        parts.append(f"dtype={_dt.dtype_name(self.dtype)}")
    if self.device != CPU:
        parts.append(f"device='{self.device}'")
    if self.grad_fn is not None:
        parts.append(f"grad_fn=<{self.grad_fn.name}>")
    elif self.requires_grad:
        parts.append("requires_grad=True")
    if self.name:
        parts.append(f"name='{self.name}'")
    return "tensor(" + ", ".join(parts) + ")"


# NumPy ufunc name -> (Tensor operator, reflected operator), for ``array <op> tensor``
_REFLECTED = {
    "add": ("__add__", "__radd__"), "subtract": ("__sub__", "__rsub__"), "multiply": ("__mul__", "__rmul__"),
    "divide": ("__truediv__", "__rtruediv__"), "floor_divide": ("__floordiv__", "__rfloordiv__"),
    "remainder": ("__mod__", "__rmod__"), "power": ("__pow__", "__rpow__"), "matmul": ("__matmul__", "__rmatmul__"),
    "less": ("__lt__", "__gt__"), "less_equal": ("__le__", "__ge__"), "greater": ("__gt__", "__lt__"),
    "greater_equal": ("__ge__", "__le__"), "equal": ("__eq__", "__eq__"), "not_equal": ("__ne__", "__ne__"),
    "bitwise_and": ("__and__", "__rand__"), "bitwise_or": ("__or__", "__ror__"),
    "bitwise_xor": ("__xor__", "__rxor__"),
}
