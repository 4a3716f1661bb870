"""Inverse trigonometric and hyperbolic functions: ``asin``, ``acos``, ``atan``, ``atan2``, ``asinh``,
``acosh``, ``atanh`` (and NumPy's ``arc*`` spellings), plus ``deg2rad``, ``rad2deg`` and ``hypot``.

``asin``, ``acos``, ``atan`` and ``atan2`` are ops with their own VJP (their derivatives are short
algebraic formulas: ``d asin(x) = 1 / sqrt(1 - x^2)``...), written with gradlab ops so they are
differentiable again. The hyperbolic inverses are logarithms of other ops, so their gradients come
from the ops they are made of.
"""
from __future__ import annotations

import math

import numpy as np

from .. import ops as O
from ..autograd.function import Op
from ..backend import dtypes as _dt
from ._util import check_broadcast, check_tensor, is_scalar
from .registry import Sample, register
from .mathextra import _unary  # register a pointwise function with unary samples and a torch oracle
from ..errors import ArgumentTypeError


def _float(x, name):
    """Integer and bool inputs are computed in the default float dtype, as PyTorch does."""
    x = check_tensor(x, name)
    return x if _dt.is_floating(x.dtype) else O.to(x, _dt.get_default_dtype())


class Asin(Op):
    name = "asin"
    formula = "dX = dY / sqrt(1 - X^2)"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.arcsin(x.data)

    def vjp(self, g):
        (x,) = self.saved_tensors
        return (g * O.rsqrt(1.0 - x * x),)

    def jvp(self, t):
        x = self.args[0]
        return t * O.rsqrt(1.0 - x * x)


class Acos(Op):
    name = "acos"
    formula = "dX = -dY / sqrt(1 - X^2)"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.arccos(x.data)

    def vjp(self, g):
        (x,) = self.saved_tensors
        return (-(g * O.rsqrt(1.0 - x * x)),)

    def jvp(self, t):
        x = self.args[0]
        return -(t * O.rsqrt(1.0 - x * x))


class Atan(Op):
    name = "atan"
    formula = "dX = dY / (1 + X^2)"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.arctan(x.data)

    def vjp(self, g):
        (x,) = self.saved_tensors
        return (g / (1.0 + x * x),)

    def jvp(self, t):
        x = self.args[0]
        return t / (1.0 + x * x)


class Atan2(Op):
    name = "atan2"
    formula = "dY_in = dOut * X / (X^2 + Y^2),  dX = -dOut * Y / (X^2 + Y^2)"

    @staticmethod
    def forward(ctx, y, x):
        ctx.save_for_backward(y, x)
        return np.arctan2(y.data, x.data)

    def vjp(self, g):
        y, x = self.saved_tensors
        r2 = x * x + y * y
        r2 = O.where(r2 == 0, O.ones_like(r2), r2)  # at the origin both gradients are 0, as in PyTorch
        return g * x / r2, -(g * y) / r2

    def jvp(self, ty, tx):
        y, x = self.args
        r2 = x * x + y * y
        r2 = O.where(r2 == 0, O.ones_like(r2), r2)
        out = None
        if ty is not None:
            out = ty * x / r2
        if tx is not None:
            d = -(tx * y) / r2
            out = d if out is None else out + d
        return out


@_unary("asin", Asin.formula, low=-0.9, high=0.9)
def asin(input):
    """The angle (radians, in [-pi/2, pi/2]) whose sine is ``input``; NaN outside [-1, 1]."""
    return Asin.apply(_float(input, "asin"))


@_unary("acos", Acos.formula, low=-0.9, high=0.9)
def acos(input):
    """The angle (radians, in [0, pi]) whose cosine is ``input``; NaN outside [-1, 1]."""
    return Acos.apply(_float(input, "acos"))


@_unary("atan", Atan.formula, low=-3.0, high=3.0)
def atan(input):
    """The angle (radians, in (-pi/2, pi/2)) whose tangent is ``input``."""
    return Atan.apply(_float(input, "atan"))


@_unary("asinh", "dX = dY / sqrt(X^2 + 1)")
def asinh(input):
    """Inverse hyperbolic sine: ``sign(x) log(|x| + sqrt(x^2 + 1))`` (odd, and exact for large negative x)."""
    x = _float(input, "asinh")
    s = O.where(x < 0, O.full_like(x, -1.0), O.ones_like(x))  # a constant sign (1 at 0, where abs' slope is 0)
    a = x * s
    return s * O.log1p(a + a * a / (1.0 + O.sqrt(a * a + 1.0)))


@_unary("acosh", "dX = dY / sqrt(X^2 - 1)", low=1.2, high=3.0)
def acosh(input):
    """Inverse hyperbolic cosine ``log(x + sqrt(x^2 - 1))`` for ``x >= 1`` (NaN below)."""
    x = _float(input, "acosh")
    return O.log(x + O.sqrt(x * x - 1.0))


@_unary("atanh", "dX = dY / (1 - X^2)", low=-0.9, high=0.9)
def atanh(input):
    """Inverse hyperbolic tangent ``0.5 log((1 + x) / (1 - x))`` for ``|x| < 1``."""
    x = _float(input, "atanh")
    return 0.5 * (O.log1p(x) - O.log1p(-x))


@_unary("deg2rad", "dX = dY * pi / 180")
def deg2rad(input):
    """Degrees to radians: ``x * pi / 180``."""
    return _float(input, "deg2rad") * (math.pi / 180.0)


@_unary("rad2deg", "dX = dY * 180 / pi")
def rad2deg(input):
    """Radians to degrees: ``x * 180 / pi``."""
    return _float(input, "rad2deg") * (180.0 / math.pi)


def _pair(op, a, b, names):
    if is_scalar(a) or is_scalar(b):
        raise ArgumentTypeError(f"{op}: {names[0]} and {names[1]} must both be Tensors; "
                                f"wrap a number with gradlab.tensor(...)")
    a, b = check_tensor(a, op, names[0]), check_tensor(b, op, names[1])
    check_broadcast(op, a, b, names)
    dt = _dt.result_type(a, b)
    if not _dt.is_floating(dt):
        dt = _dt.get_default_dtype()
    shape = tuple(np.broadcast_shapes(a.shape, b.shape))
    a, b = O.to(a, dt), O.to(b, dt)
    return (a if a.shape == shape else O.broadcast_to(a, shape)), (b if b.shape == shape else O.broadcast_to(b, shape))


def _pair_samples(src):
    sa, sb = src.broadcast_pair()
    yield Sample((src.tensor(sa, away_from=0.0), src.tensor(sb, away_from=0.0)), desc="broadcast")
    yield Sample((src.tensor((3, 1), away_from=0.0), src.tensor((1, 3), away_from=0.0)), desc="(3,1) and (1,3)")


@register(op=Atan2, samples=_pair_samples, formula=Atan2.formula, elementwise=True,
          torch=lambda torch, y, x: torch.atan2(y, x))
def atan2(input, other):
    """The angle of the point ``(other, input)`` = ``(x, y)``, in (-pi, pi]: ``atan(y / x)`` in the right quadrant."""
    y, x = _pair("atan2", input, other, ("input", "other"))
    return Atan2.apply(y, x)


@register(samples=_pair_samples, formula="dX = dY * X / hypot, dY_in = dY * Y / hypot", elementwise=True,
          torch=lambda torch, x, y: torch.hypot(x, y))
def hypot(input, other):
    """``sqrt(input^2 + other^2)``: the length of the hypotenuse."""
    a, b = _pair("hypot", input, other, ("input", "other"))
    return O.sqrt(a * a + b * b)


arcsin, arccos, arctan, arctan2 = asin, acos, atan, atan2
arcsinh, arccosh, arctanh = asinh, acosh, atanh

TRIG_METHODS = ["asin", "acos", "atan", "atan2", "asinh", "acosh", "atanh", "arcsin", "arccos", "arctan",
                "arctan2", "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg", "hypot"]
