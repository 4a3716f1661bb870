"""Dtypes and PyTorch's type-promotion rules.

gradlab's dtypes *are* NumPy dtypes (``gradlab.float32 is np.dtype("float32")``),
so they work unchanged with NumPy and CuPy arrays. ``bfloat16`` comes from the
``ml_dtypes`` package, which teaches NumPy that type.

Promotion follows PyTorch, not NumPy, because that is what students will use
later. The two differ in ways that bite:

* NumPy: ``int64 array + float32 array -> float64``; PyTorch: ``-> float32``.
* NumPy 2: ``float32 array * 2.5 -> float32`` (same as PyTorch), but an
  ``int`` tensor times ``2.5`` is ``float64`` in NumPy and ``float32``
  (the default float dtype) in PyTorch.

PyTorch's rule has three tiers: tensors with at least one dimension, then
zero-dimensional tensors, then Python scalars. A lower tier can only change the
result when it brings a higher *category* (bool < integer < floating).
"""
from __future__ import annotations

import builtins as _b

import numpy as np

_py_float, _py_int, _py_bool = _b.float, _b.int, _b.bool

try:  # ml_dtypes is a dependency, but keep import errors readable
    import ml_dtypes as _mld

    bfloat16 = np.dtype(_mld.bfloat16)
except ImportError:  # pragma: no cover - ml_dtypes is in install_requires
    bfloat16 = None

float16 = np.dtype("float16")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
bool_ = np.dtype("bool")

# PyTorch spellings
half, float, double = float16, float32, float64  # noqa: A001 - mirrors torch
short, int, long = int16, int32, int64  # noqa: A001

FLOATING = tuple(d for d in (float16, bfloat16, float32, float64) if d is not None)

_NAMES = {
    "float16": float16, "half": float16, "float32": float32, "float": float32,
    "float64": float64, "double": float64, "bfloat16": bfloat16,
    "int8": int8, "int16": int16, "short": int16, "int32": int32, "int": int32,
    "int64": int64, "long": int64, "uint8": uint8, "bool": bool_,
}

_default_float = float32


def get_default_dtype() -> np.dtype:
    """The dtype of floating tensors made without an explicit dtype (float32)."""
    return _default_float


def set_default_dtype(dtype) -> None:
    """Change the default floating dtype (as ``torch.set_default_dtype``)."""
    global _default_float
    d = as_dtype(dtype)
    if not is_floating(d):
        from ..errors import DTypeError
        raise DTypeError(f"set_default_dtype: {d} is not a floating dtype; use float32 or float64")
    _default_float = d


def as_dtype(dtype) -> np.dtype:
    """Turn ``"float32"``, ``np.float32``, ``gradlab.float32`` (or ``None``) into a dtype."""
    if dtype is None:
        return None
    if isinstance(dtype, str):
        try:
            d = _NAMES[dtype.replace("torch.", "").replace("gradlab.", "")]
        except KeyError:
            from ..errors import DTypeError
            raise DTypeError(
                f"unknown dtype {dtype!r}; use one of {', '.join(sorted(k for k, v in _NAMES.items() if v is not None))}"
            ) from None
        return d
    if dtype is _py_float:
        return _default_float
    if dtype is _py_int:
        return int64
    if dtype is _py_bool:
        return bool_
    try:
        return np.dtype(dtype)
    except TypeError:
        from ..errors import DTypeError
        raise DTypeError(f"unknown dtype {dtype!r}") from None



def is_floating(dtype) -> bool:
    return dtype in FLOATING


def category(dtype) -> _py_int:
    """0 for bool, 1 for integers, 2 for floating point."""
    if dtype == bool_:
        return 0
    if is_floating(dtype):
        return 2
    return 1


def _promote_two(a: np.dtype, b: np.dtype) -> np.dtype:
    if a == b:
        return a
    ca, cb = category(a), category(b)
    if ca != cb:
        return a if ca > cb else b
    if bfloat16 is not None and {a, b} == {float16, bfloat16}:
        return float32  # as PyTorch: neither can hold the other
    if bfloat16 is not None and bfloat16 in (a, b):
        other = b if a == bfloat16 else a
        return bfloat16 if other.itemsize <= 2 else other
    return np.promote_types(a, b)


def _scalar_dtype(v) -> np.dtype:
    if isinstance(v, _py_bool) or isinstance(v, np.bool_):
        return bool_
    if isinstance(v, (_py_int, np.integer)):
        return int64
    if isinstance(v, complex):
        from ..errors import DTypeError
        raise DTypeError("gradlab has no complex dtypes; split real and imaginary parts into two tensors")
    return _default_float


def result_type(*operands) -> np.dtype:
    """PyTorch's promotion over tensors (anything with ``.dtype`` and ``.ndim``) and Python scalars."""
    dims, zero, scalars = None, None, None
    for o in operands:
        dt = getattr(o, "dtype", None)
        if dt is None:
            d = _scalar_dtype(o)
            scalars = d if scalars is None else _promote_two(scalars, d)
        elif o.ndim == 0:
            zero = dt if zero is None else _promote_two(zero, dt)
        else:
            dims = dt if dims is None else _promote_two(dims, dt)
    result = None
    for tier in (dims, zero, scalars):
        if tier is None:
            continue
        if result is None:
            result = tier
        elif category(tier) > category(result):
            # a higher category from a lower tier: scalars bring the default
            # dtype of their category, zero-dim tensors bring their own
            result = tier
    return result


def finfo(dtype):
    """The float type's limits (``eps``, ``tiny``, ``min``, ``max``) for a NumPy dtype or bfloat16."""
    dtype = np.dtype(dtype)
    return _mld.finfo(dtype) if dtype == bfloat16 else np.finfo(dtype)


def dtype_name(dtype) -> str:
    return "bfloat16" if bfloat16 is not None and dtype == bfloat16 else str(dtype)


def check_fits(value, dtype, op: str) -> None:
    """Raise if the Python number ``value`` cannot be stored in integer ``dtype`` (PyTorch refuses; NumPy
    would raise OverflowError or silently wrap 300 to 44 in a uint8)."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu" or isinstance(value, _b.bool) or not isinstance(value, (_b.int, np.integer)):
        return
    info = np.iinfo(dtype)
    if not info.min <= value <= info.max:
        from ..errors import ArgumentError
        wider = "int64" if dtype.itemsize < 8 else "float64"
        raise ArgumentError(f"{op}: the value {value} does not fit in {dtype_name(dtype)} "
                            f"(range {info.min} to {info.max}); use a wider dtype such as {wider}")
