"""Small helpers shared by the layer modules."""
from __future__ import annotations

from ...backend import dtypes as _dt
from ...factories import empty
from ..parameter import Parameter


def new_param(*shape, dtype=None, device=None, requires_grad=True):
    """An uninitialised parameter (every layer fills it in ``reset_parameters``)."""
    return Parameter(empty(*shape, dtype=_dt.as_dtype(dtype) if dtype is not None else None, device=device),
                     requires_grad=requires_grad)


def pair(x, name="kernel_size"):
    if isinstance(x, int):
        return (x, x)
    x = tuple(x)
    if len(x) != 2:
        raise ValueError(f"{name} must be an int or a pair of ints, got {x}")
    return x
