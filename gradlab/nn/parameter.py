"""``Parameter``: a tensor that a ``Module`` owns and an optimizer updates.

A parameter is an ordinary :class:`~gradlab.Tensor` that requires grad and
carries one flag, ``_is_param``. Assigning one to a module attribute
(``self.weight = Parameter(...)``) registers it, so ``module.parameters()``
finds it. Keeping parameters plain tensors (rather than a subclass) keeps every
op's fast path: the engine checks ``type(x) is Tensor``.

``isinstance(p, gradlab.nn.Parameter)`` still works, as in PyTorch: the class
answers ``True`` for any tensor carrying the flag.
"""
from __future__ import annotations

from .._tensor import Tensor
from ..backend import dtypes as _dt
from ..errors import DTypeError


class _ParameterMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj._is_param

    def __subclasscheck__(cls, sub):
        return sub is cls


class Parameter(metaclass=_ParameterMeta):
    """Mark a tensor as a learnable parameter: ``Parameter(gradlab.randn(3, 4))``.

    Returns a new leaf tensor that shares ``data``'s values (no copy) and
    requires grad (unless ``requires_grad=False``). Integer parameters cannot
    require grad.
    """

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from ..factories import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            from ..factories import tensor
            data = tensor(data)
        p = Tensor._make(data._data)
        p._version = data._version  # same storage, same version counter
        p._is_param = True
        p.name = data.name
        if requires_grad:
            if not _dt.is_floating(p.dtype):
                raise DTypeError(
                    f"Parameter: dtype {_dt.dtype_name(p.dtype)} cannot require grad; only floating "
                    "parameters can be learned. Pass requires_grad=False or convert with .float()"
                )
            p._requires_grad = True
        return p


def is_parameter(obj) -> bool:
    return isinstance(obj, Tensor) and obj._is_param
