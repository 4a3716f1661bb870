"""``new_param``: the uninitialised parameter every layer creates and then fills in ``reset_parameters``."""
from __future__ import annotations

from ...backend import dtypes as _dt
from ...factories import empty
from ..parameter import Parameter


def new_param(*shape, dtype=None, device=None, requires_grad=True):
    """An uninitialised parameter (every layer fills it in ``reset_parameters``)."""
    return Parameter(empty(*shape, dtype=_dt.as_dtype(dtype) if dtype is not None else None, device=device),
                     requires_grad=requires_grad)

