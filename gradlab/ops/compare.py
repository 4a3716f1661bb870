"""Comparisons: ``eq``, ``ne``, ``lt``, ``le``, ``gt``, ``ge`` (and ``less``, ``greater_equal``...
spellings), ``equal``, ``allclose``, ``isclose``, ``isnan``, ``isinf``, ``isfinite``, ``isin``.

They return bool tensors that never require grad: a step function's derivative is zero almost
everywhere, so nothing flows through them.
"""
from __future__ import annotations

import numpy as np

from .. import checks as _c
from .._tensor import Tensor
from ..backend.arrays import as_array
from ..backend.memory_limit import out_of_memory
from ..errors import ArgumentError
from ._util import arrays_for, check_broadcast, check_tensor, is_scalar, operand
from .registry import Sample, export, register
from .samples import binary_samples, unary_samples


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|a - b| <= atol + rtol * |b|`` as a bool tensor (no gradient)."""
    a, b = check_tensor(input, "isclose"), check_tensor(other, "isclose", "other")
    _c.same_dtype("isclose", input=a, other=b)
    check_broadcast("isclose", a, b)
    for arg, v in (("rtol", rtol), ("atol", atol)):  # (PyTorch: "rtol must be greater than or equal to zero")
        if _c.number(v, "isclose", arg) < 0:
            raise ArgumentError(f"isclose: {arg} must be greater than or equal to zero, got {v!r}")
    equal_nan = _c.flag(equal_nan, "isclose", "equal_nan")
    return Tensor._make(np.isclose(a._data, b._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


register('isclose', method=True, samples=lambda src: [Sample((src.tensor((3, 4)), src.tensor((3, 4))))],
         formula='(no gradient)', torch=lambda torch, a, b: torch.isclose(a, b), differentiable=False)(isclose)


def _compare(name, fn, method=True):
    def f(input, other):
        a, b = operand(input, name, "input"), operand(other, name, "other")
        x, y, _ = arrays_for(name, a, b)
        try:
            return Tensor._make(as_array(fn(x, y)))
        except ValueError:
            check_broadcast(name, a, b)
            raise
        except MemoryError as e:  # (as Op.apply: see backend/memory_limit.py)
            raise out_of_memory(name, e) from None
    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}`` comparison, broadcasting; a bool tensor (no gradient)."
    tname = {"floor_divide": "floor_divide", "remainder": "remainder"}.get(name, name)
    return register(name, samples=_no_grad(binary_samples(name)), differentiable=False, formula="(no gradient)",
                    torch=lambda torch, a, b: getattr(torch, tname)(*_tt(torch, a, b)), kernel=_KERNELS.get(name),
                    method=method)(f)


#: what ``gradlab.compile`` writes for a comparison inside a fused kernel (the registry's ``kernel``)
_KERNELS = {n: (fn, f"({{0}} {c} {{1}})") for n, fn, c in (
    ("gt", "greater", ">"), ("lt", "less", "<"), ("ge", "greater_equal", ">="), ("le", "less_equal", "<="),
    ("eq", "equal", "=="), ("ne", "not_equal", "!="), ("logical_and", "logical_and", "&&"),
    ("logical_or", "logical_or", "||"))}


def _tt(torch, a, b):
    """The PyTorch oracle's operands: a Python/NumPy number beside a tensor as a tensor of its dtype (the
    functions called take two tensors); anything else as it is, so that PyTorch refuses what it refuses
    (a NumPy array or a list: "must be Tensor")."""
    like = a if isinstance(a, torch.Tensor) else b
    return tuple(torch.tensor(x, dtype=like.dtype) if is_scalar(x) and isinstance(like, torch.Tensor) else x
                 for x in (a, b))


def _no_grad(samples):
    """The same samples with nothing requiring grad (these ops have no gradient)."""
    def gen(src):
        for s in samples(src):
            yield Sample(tuple(a.detach() if isinstance(a, Tensor) else a for a in s.args), s.kwargs, s.desc)
    return gen


lt = _compare("lt", np.less)
le = _compare("le", np.less_equal)
gt = _compare("gt", np.greater)
ge = _compare("ge", np.greater_equal)
eq = _compare("eq", np.equal)
ne = _compare("ne", np.not_equal)
# PyTorch's longer spellings: the same functions
less, less_equal, greater = export("less")(lt), export("less_equal")(le), export("greater")(gt)
greater_equal, not_equal = export("greater_equal")(ge), export("not_equal")(ne)


def _pred(name, fn):
    def f(input):
        try:
            return Tensor._make(as_array(fn(check_tensor(input, name)._data)))
        except MemoryError as e:
            raise out_of_memory(name, e) from None
    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}``: a bool tensor (no gradient)."
    return register(name, samples=_no_grad(unary_samples()), differentiable=False, formula="(no gradient)",
                    torch=lambda torch, x: getattr(torch, name)(x), method=True)(f)


isnan = _pred("isnan", np.isnan)
isinf = _pred("isinf", np.isinf)
isfinite = _pred("isfinite", np.isfinite)


@export(method=True)
def equal(input, other) -> bool:
    """True if both tensors have the same shape and the same values."""
    a, b = check_tensor(input, "equal"), check_tensor(other, "equal")
    return a.shape == b.shape and bool(np.array_equal(a._data, b._data))


@export(method=True)
def allclose(input, other, rtol=1e-5, atol=1e-8, equal_nan=False) -> bool:
    a, b = check_tensor(input, "allclose"), check_tensor(other, "allclose", "other")
    _c.same_dtype("allclose", input=a, other=b)
    check_broadcast("allclose", a, b)
    return bool(np.allclose(a._data, b._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


@export()
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """A bool tensor shaped like ``elements``: True where the element occurs in ``test_elements``."""
    e = elements if isinstance(elements, Tensor) else Tensor._make(np.asarray(elements))
    t = np.asarray(test_elements.cpu()._data if isinstance(test_elements, Tensor) else test_elements)
    return Tensor._make(np.isin(np.asarray(e.cpu()._data), t, invert=invert)).to(e.device)
