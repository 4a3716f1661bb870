"""Comparisons, logic and other ops with no useful gradient.

They return bool (or integer) tensors that never require grad: a step
function's derivative is zero almost everywhere, so nothing flows through them.
``sign``, ``floor`` and ``round`` return floats but also pass zero gradient.
"""
from __future__ import annotations

import numpy as np

from ..autograd.function import Op
from ..backend.arrays import as_array
from .._tensor import Tensor
from ._util import arrays_for, check_broadcast, check_tensor, norm_dim, operand
from .registry import Sample, register
from .samples import binary_samples, unary_samples


def _compare(name, fn):
    def f(input, other):
        a, b = operand(input, name, "input"), operand(other, name, "other")
        x, y, _ = arrays_for(name, a, b)
        try:
            return Tensor._make(as_array(fn(x, y)))
        except ValueError:
            check_broadcast(name, a, b)
            raise
    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}`` comparison, broadcasting; a bool tensor (no gradient)."
    tname = {"floor_divide": "floor_divide", "remainder": "remainder"}.get(name, name)
    return register(name, samples=_no_grad(binary_samples(name)), differentiable=False, formula="(no gradient)",
                    torch=lambda torch, a, b: getattr(torch, tname)(*_tt(torch, a, b)))(f)


def _tt(torch, a, b):
    like = a if isinstance(a, torch.Tensor) else b
    return tuple(x if isinstance(x, torch.Tensor) else torch.tensor(x, dtype=like.dtype) for x in (a, b))


def _no_grad(samples):
    """The same samples with nothing requiring grad (these ops have no gradient)."""
    def gen(src):
        for s in samples(src):
            yield Sample(tuple(a.detach() if isinstance(a, Tensor) else a for a in s.args), s.kwargs, s.desc)
    return gen


lt = less = _compare("lt", np.less)
le = less_equal = _compare("le", np.less_equal)
gt = greater = _compare("gt", np.greater)
ge = greater_equal = _compare("ge", np.greater_equal)
eq = _compare("eq", np.equal)
ne = not_equal = _compare("ne", np.not_equal)
logical_and = _compare("logical_and", np.logical_and)
logical_or = _compare("logical_or", np.logical_or)
logical_xor = _compare("logical_xor", np.logical_xor)


def _int_safe(name, fn):
    """floor_divide / remainder: an integer division by zero is an error (as in PyTorch); a float one
    gives inf/nan quietly (no NumPy RuntimeWarning)."""
    def f(x, y):
        if getattr(x, "dtype", np.dtype(float)).kind in "biu" and np.any(y == 0) \
                and np.result_type(x, y).kind in "biu":
            from ..errors import ArgumentError
            raise ArgumentError(f"{name}: integer division by zero (the divisor holds a 0); "
                                f"use a float tensor (x.float()) to get inf/nan instead")
        with np.errstate(divide="ignore", invalid="ignore"):
            return fn(x, y)
    return f


floor_divide = _compare("floor_divide", _int_safe("floor_divide", np.floor_divide))
remainder = _compare("remainder", _int_safe("remainder", np.remainder))


@register(samples=_no_grad(unary_samples()), differentiable=False, formula="(no gradient)",
          torch=lambda torch, x: torch.logical_not(x))
def logical_not(input):
    """``True`` where ``input`` is zero (False), for any dtype; ``~x`` is the bitwise not on integers."""
    x = check_tensor(input, "logical_not")
    return Tensor._make(np.logical_not(x.data))


def _pred(name, fn):
    def f(input):
        return Tensor._make(as_array(fn(check_tensor(input, name).data)))
    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}``: a bool tensor (no gradient)."
    return register(name, samples=_no_grad(unary_samples()), differentiable=False, formula="(no gradient)",
                    torch=lambda torch, x: getattr(torch, name)(x))(f)


isnan = _pred("isnan", np.isnan)
isinf = _pred("isinf", np.isinf)
isfinite = _pred("isfinite", np.isfinite)


def equal(input, other) -> bool:
    """True if both tensors have the same shape and the same values."""
    a, b = check_tensor(input, "equal"), check_tensor(other, "equal")
    return a.shape == b.shape and bool(np.array_equal(a.data, b.data))


def allclose(input, other, rtol=1e-5, atol=1e-8, equal_nan=False) -> bool:
    a, b = check_tensor(input, "allclose"), check_tensor(other, "allclose")
    check_broadcast("allclose", a, b)
    return bool(np.allclose(a.data, b.data, rtol=rtol, atol=atol, equal_nan=equal_nan))


@register(samples=_no_grad(unary_samples()), differentiable=False, formula="(no gradient)",
          torch=lambda torch, x: torch.any(x))
def any(input, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A001
    x = check_tensor(input, "any")
    axes = norm_dim(dim if axis is None else axis, x.ndim, "any")
    return Tensor._make(as_array(np.any(x.data, axis=axes, keepdims=keepdim if keepdims is None else keepdims)))


@register(samples=_no_grad(unary_samples()), differentiable=False, formula="(no gradient)",
          torch=lambda torch, x: torch.all(x))
def all(input, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A001
    x = check_tensor(input, "all")
    axes = norm_dim(dim if axis is None else axis, x.ndim, "all")
    return Tensor._make(as_array(np.all(x.data, axis=axes, keepdims=keepdim if keepdims is None else keepdims)))


class ZeroGrad(Op):
    """A piecewise-constant op: its gradient is zero wherever it is defined."""

    formula = "dX = 0   (piecewise constant: the derivative is 0 almost everywhere)"
    fn = None

    @staticmethod
    def forward(ctx, x):
        return as_array(type(ctx).fn(x.data))

    def vjp(self, g):
        return (g * 0,)

    def vjp_arrays(self, g):
        return (g * 0,)

    def jvp(self, t):
        return t * 0


class Sign(ZeroGrad):
    name = "sign"
    fn = staticmethod(np.sign)


@register(op=Sign, samples=unary_samples(away_from=0.0), elementwise=True, torch=lambda torch, x: torch.sign(x))
def sign(input):
    """-1, 0 or +1 for each element; its gradient is zero."""
    x = check_tensor(input, "sign")
    if x.dtype == np.bool_:  # the sign of a bool is itself, as in PyTorch (NumPy has no bool sign)
        return Tensor._make(x.data.copy())
    return Sign.apply(x)
