"""The one-input elementwise functions.

Holds: ``neg``, ``exp``, ``log``, ``sqrt``, ``tanh``, ``sigmoid``, ``relu``, ``abs`` (the hot
ones, with array twins of their VJPs); ``erf``, ``sin``, ``cos``, ``log1p``, ``expm1``,
``reciprocal``; the step functions ``floor``, ``ceil``, ``trunc``, ``round`` and ``sign`` (zero
gradient); the inverse trigonometric and hyperbolic functions ``asin``, ``acos``, ``atan``,
``asinh``, ``acosh``, ``atanh`` (and NumPy's ``arc*`` spellings), ``deg2rad``, ``rad2deg``; and
short formulas of other ops: ``log2``, ``log10``, ``exp2``, ``rsqrt``, ``sinh``, ``cosh``, ``tan``,
``erfc``, ``logit``, ``frac``; ``negative`` and ``absolute`` are other spellings.

Each op's VJP is written with gradlab ops, so it is differentiable again. ``log1p``/``expm1`` keep
the digits that ``log(1 + x)``/``exp(x) - 1`` lose for tiny ``x``. The step functions have derivative
0 wherever it exists, so nothing flows back through them (which is why quantization needs a
straight-through estimator).
"""
from __future__ import annotations

import math

import numpy as np

from .. import ops as O
from .._tensor import Tensor
from ..autograd.function import Op
from ..backend import dtypes as _dt
from ..backend.arrays import as_array, erf as _backend_erf
from ..backend.device import xp_of
from ._util import as_weak, check_tensor
from .arithmetic import atan2
from .fused_backward import SigmoidBackward, TanhBackward
from .registry import register, Sample
from .samples import unary_samples


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


# ------------------------------------------------- short formulas of other ops
_LN2, _LN10 = math.log(2.0), math.log(10.0)


def _composite_unary(name, formula, low=-2.0, high=2.0, away_from=None):
    def deco(fn):
        fn.__name__ = name
        return register(name, samples=unary_samples(low=low, high=high, away_from=away_from), formula=formula,
                        elementwise=True, torch=lambda torch, x: getattr(torch, name)(x))(fn)
    return deco


def _float_arg(x, name):
    """Integer and bool inputs are computed in the default float dtype, as PyTorch does."""
    x = check_tensor(x, name)
    return x if _dt.is_floating(x.dtype) else O.to(x, _dt.get_default_dtype())




class Neg(Op):
    name = "neg"
    formula = "dX = -dY"

    @staticmethod
    def forward(ctx, x):
        try:
            return np.negative(x.data)
        except TypeError:  # NumPy refuses -bool, as PyTorch does
            from ..errors import DTypeError
            raise DTypeError("neg: -x on a bool tensor is not supported; to invert a mask use ~x "
                             "or x.logical_not()") from None

    def vjp(self, g):
        return (O.neg(g),)

    def vjp_arrays(self, g):
        return (-g,)

    def jvp(self, t):
        return O.neg(t)


class Exp(Op):
    name = "exp"
    formula = "dX = dY * Y   (Y = exp(X))"

    @staticmethod
    def forward(ctx, x):
        with np.errstate(over="ignore"):
            y = np.exp(x.data)
        ctx.save_output(y)
        return y

    def vjp(self, g):
        (y,) = self.saved_tensors
        return (g * y,)

    def vjp_arrays(self, g):
        (y,) = self.saved_arrays
        return (g * y,)

    def jvp(self, t):
        return t * self.out


class Log(Op):
    name = "log"
    formula = "dX = dY / X"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(x.data)

    def vjp(self, g):
        (x,) = self.saved_tensors
        return (g / x,)

    def vjp_arrays(self, g):
        (x,) = self.saved_arrays
        with np.errstate(divide="ignore", invalid="ignore"):
            return (g / x,)

    def jvp(self, t):
        return t / self.args[0]


class Sqrt(Op):
    name = "sqrt"
    formula = "dX = dY / (2 * Y)   (Y = sqrt(X))"

    @staticmethod
    def forward(ctx, x):
        with np.errstate(invalid="ignore"):
            y = np.sqrt(x.data)
        ctx.save_output(y)
        return y

    def vjp(self, g):
        (y,) = self.saved_tensors
        return (g / (2 * y),)

    def vjp_arrays(self, g):
        (y,) = self.saved_arrays
        with np.errstate(divide="ignore", invalid="ignore"):
            return (g / (2 * y),)

    def jvp(self, t):
        return t / (2 * self.out)


class Tanh(Op):
    name = "tanh"
    formula = "dX = dY * (1 - Y^2)   (Y = tanh(X))"

    @staticmethod
    def forward(ctx, x):
        y = np.tanh(x.data)
        ctx.save_output(y)
        return y

    def vjp(self, g):
        (y,) = self.saved_tensors
        return (TanhBackward.apply(g, y),)

    def vjp_arrays(self, g):
        (y,) = self.saved_arrays
        return (g * (as_weak(1.0, y) - y * y),)  # (as_weak: the 1 as a cached 0-d array, for speed)

    def jvp(self, t):
        y = self.out
        return t * (1 - y * y)


class Sigmoid(Op):
    name = "sigmoid"
    formula = "dX = dY * Y * (1 - Y)   (Y = sigmoid(X))"

    @staticmethod
    def forward(ctx, x):
        # exp(-|x|) never overflows: the stable form for both signs of x
        a = x.data
        dt = a.dtype
        if dt.itemsize <= 2:  # float16/bfloat16: compute in float32 and round once, as PyTorch does
            a = a.astype(np.float32)
        if type(a) is np.ndarray and a.ndim:  # the same formula in place: three arrays instead of eight
            # (not 0-d: NumPy returns a 0-d result as a scalar, which cannot be written in place)
            y = np.abs(a)
            np.negative(y, out=y)
            e = np.exp(y, out=y)
            d = e + 1
            np.divide(e, d, out=e)               # e / (1 + e)
            np.divide(1, d, out=d)               # 1 / (1 + e)
            np.copyto(y, d, where=a >= 0)
            y = y.astype(dt, copy=False)
        else:
            e = np.exp(-np.abs(a))
            y = np.where(a >= 0, 1 / (1 + e), e / (1 + e)).astype(dt, copy=False)
        ctx.save_output(y)
        return y

    def vjp(self, g):
        (y,) = self.saved_tensors
        return (SigmoidBackward.apply(g, y),)

    def vjp_arrays(self, g):
        (y,) = self.saved_arrays
        return (g * y * (as_weak(1.0, y) - y),)

    def jvp(self, t):
        y = self.out
        return t * y * (1 - y)


class Relu(Op):
    name = "relu"
    formula = "dX = dY * (X > 0)"

    @staticmethod
    def forward(ctx, x):
        y = np.maximum(x.data, 0)
        ctx.save_output(y)
        return y

    def vjp(self, g):
        (y,) = self.saved_tensors
        return (g * (y > 0),)

    def vjp_arrays(self, g):
        (y,) = self.saved_arrays
        return (g * (y > 0),)

    def jvp(self, t):
        return t * (self.out > 0)


class Abs(Op):
    name = "abs"
    formula = "dX = dY * sign(X)"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.abs(x.data)

    def vjp(self, g):
        (x,) = self.saved_tensors
        return (g * O.sign(x),)

    def vjp_arrays(self, g):
        (x,) = self.saved_arrays
        return (g * xp_of(x).sign(x),)

    def jvp(self, t):
        return t * O.sign(self.args[0])


def _pointwise_unary(op_cls, name, torch_name=None, floating=False, **sample_kw):
    def fn(input):
        x = input if type(input) is Tensor else check_tensor(input, name)
        if floating and x.data.dtype.kind in "biu":  # torch.exp(int_tensor) is float32 (the default dtype)
            from ..backend import dtypes as _dt
            x = O.to(x, _dt.get_default_dtype())
        return op_cls.apply(x)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name}. Backward: {op_cls.formula}"
    tn = torch_name or name
    return register(name, op=op_cls, samples=unary_samples(**sample_kw), elementwise=True,
                    torch=lambda torch, x: getattr(torch, tn)(x))(fn)


neg = _pointwise_unary(Neg, "neg")
exp = _pointwise_unary(Exp, "exp", floating=True)
log = _pointwise_unary(Log, "log", floating=True, low=0.2, high=3.0)
sqrt = _pointwise_unary(Sqrt, "sqrt", floating=True, low=0.2, high=3.0)
tanh = _pointwise_unary(Tanh, "tanh", floating=True)
sigmoid = _pointwise_unary(Sigmoid, "sigmoid", floating=True)
relu = _pointwise_unary(Relu, "relu", away_from=0.0)
abs = _pointwise_unary(Abs, "abs", away_from=0.0)  # noqa: A001 - PyTorch's name


def _float_input(x: Tensor, op: str) -> Tensor:
    """Integer and bool inputs compute in the default float dtype (as ``torch.sin(int_tensor)``)."""
    if _dt.category(x.dtype) < 2:
        return O.to(x, _dt.get_default_dtype())
    return x


def _erf_array(a):
    """erf on an array: SciPy's when available (or CuPy's on the GPU), else the math module's."""
    return _backend_erf(a, _erf_numpy)  # scipy is optional: without it, NumPy alone (_erf_numpy)


def _erf_numpy(a):
    """erf to about 1e-15 with NumPy only: a Taylor series for |x| < 2, a continued fraction beyond.

    ``erf(x) = 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1))`` converges everywhere but
    cancels badly for large x; there ``erfc(x) = exp(-x^2) / (sqrt(pi) (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))))``
    converges fast instead.
    """
    x = np.asarray(a, dtype=np.float64)
    out = np.empty_like(x)
    small = np.abs(x) < 2.0
    xs = x[small]
    x2 = -(xs * xs)
    term, total = xs.copy(), xs.copy()
    for n in range(1, 34):
        term *= x2
        term /= n
        total += term / (2 * n + 1)
    out[small] = total * (2 / math.sqrt(math.pi))
    xl = np.abs(x[~small])
    k = xl.copy()
    for n in range(40, 0, -1):
        k = xl + (n / 2) / k
    with np.errstate(invalid="ignore"):  # inf / inf at x = +-inf: erfc is 0 there
        erfc = np.nan_to_num(np.exp(-xl * xl) / (math.sqrt(math.pi) * k))
    out[~small] = np.sign(x[~small]) * (1 - erfc)
    return out


# ----------------------------------------------------------- simple unary ops
class Erf(Op):
    name = "erf"
    formula = "dX = dY * 2/sqrt(pi) * exp(-X^2)"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _erf_array(x.data)

    def vjp(self, g):
        (x,) = self.saved_tensors
        return (g * (2 / math.sqrt(math.pi)) * O.exp(-(x * x)),)

    def vjp_arrays(self, g):
        (x,) = self.saved_arrays
        return (g * (2 / math.sqrt(math.pi)) * np.exp(-(x * x)),)

    def jvp(self, t):
        x = self.args[0]
        return t * (2 / math.sqrt(math.pi)) * O.exp(-(x * x))


class Sin(Op):
    name = "sin"
    formula = "dX = dY * cos(X)"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.sin(x.data)

    def vjp(self, g):
        (x,) = self.saved_tensors
        return (g * O.cos(x),)

    def vjp_arrays(self, g):
        (x,) = self.saved_arrays
        return (g * np.cos(x),)

    def jvp(self, t):
        return t * O.cos(self.args[0])


class Cos(Op):
    name = "cos"
    formula = "dX = -dY * sin(X)"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.cos(x.data)

    def vjp(self, g):
        (x,) = self.saved_tensors
        return (-(g * O.sin(x)),)

    def vjp_arrays(self, g):
        (x,) = self.saved_arrays
        return (-(g * np.sin(x)),)

    def jvp(self, t):
        return -(t * O.sin(self.args[0]))


class Log1p(Op):
    name = "log1p"
    formula = "dX = dY / (1 + X)"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log1p(x.data)

    def vjp(self, g):
        (x,) = self.saved_tensors
        return (g / (x + 1),)

    def vjp_arrays(self, g):
        (x,) = self.saved_arrays
        with np.errstate(divide="ignore", invalid="ignore"):
            return (g / (x + 1),)

    def jvp(self, t):
        return t / (self.args[0] + 1)


class Expm1(Op):
    name = "expm1"
    formula = "dX = dY * (Y + 1)   (Y = exp(X) - 1)"

    @staticmethod
    def forward(ctx, x):
        with np.errstate(over="ignore"):
            y = np.expm1(x.data)
        ctx.save_output(y)
        return y

    def vjp(self, g):
        (y,) = self.saved_tensors
        return (g * (y + 1),)

    def vjp_arrays(self, g):
        (y,) = self.saved_arrays
        return (g * (y + 1),)

    def jvp(self, t):
        return t * (self.out + 1)


class Reciprocal(Op):
    name = "reciprocal"
    formula = "dX = -dY * Y^2   (Y = 1 / X)"

    @staticmethod
    def forward(ctx, x):
        with np.errstate(divide="ignore"):
            y = np.reciprocal(x.data)
        ctx.save_output(y)
        return y

    def vjp(self, g):
        (y,) = self.saved_tensors
        return (-(g * y * y),)

    def vjp_arrays(self, g):
        (y,) = self.saved_arrays
        return (-(g * y * y),)

    def jvp(self, t):
        y = self.out
        return -(t * y * y)


class Floor(ZeroGrad):
    name = "floor"
    fn = staticmethod(np.floor)


class Ceil(ZeroGrad):
    name = "ceil"
    fn = staticmethod(np.ceil)


class Trunc(ZeroGrad):
    name = "trunc"
    fn = staticmethod(np.trunc)


class Round(ZeroGrad):
    name = "round"

    @staticmethod
    def forward(ctx, x, decimals):
        # half to even, like PyTorch: round(0.5) == 0, round(1.5) == 2
        return as_array(np.round(x.data, decimals))

    def vjp(self, g):
        return g * 0, None

    def vjp_arrays(self, g):
        return g * 0, None

    def jvp(self, t, _):
        return t * 0


def _unary(op_cls, name, samples, doc):
    def fn(input):
        return op_cls.apply(_float_input(check_tensor(input, name), name))
    fn.__name__ = name
    fn.__doc__ = f"{doc} Backward: {op_cls.formula}"
    return register(name, op=op_cls, samples=samples, elementwise=True,
                    torch=lambda torch, x: getattr(torch, name)(x))(fn)


erf = _unary(Erf, "erf", unary_samples(), "Elementwise error function (the Gaussian CDF is 0.5*(1 + erf(x/sqrt 2))).")
sin = _unary(Sin, "sin", unary_samples(low=-4, high=4), "Elementwise sine.")
cos = _unary(Cos, "cos", unary_samples(low=-4, high=4), "Elementwise cosine.")
log1p = _unary(Log1p, "log1p", unary_samples(low=-0.5, high=3.0),
               "``log(1 + x)``, accurate for tiny ``x`` (where ``1 + x`` would round to 1).")
expm1 = _unary(Expm1, "expm1", unary_samples(), "``exp(x) - 1``, accurate for tiny ``x``.")
reciprocal = _unary(Reciprocal, "reciprocal", unary_samples(away_from=0.0, low=-3, high=3), "Elementwise ``1 / x``.")


def _step_samples(src):
    """Values k + u with u away from 0 and 0.5: the steps of floor/ceil/round are never straddled."""
    def vals(shape):
        k = src.rng.integers(-3, 3, size=shape)
        u = src.rng.uniform(0.1, 0.4, size=shape) + 0.5 * src.rng.integers(0, 2, size=shape)
        return Tensor._make(np.asarray(k + u, dtype=np.float64)).requires_grad_()
    yield Sample((vals(src.shape(0, 3, 0, 4)),), desc="any shape")
    yield Sample((vals(()),), desc="0-d")


def _zero_grad_unary(op_cls, name, doc):
    def fn(input):
        x = check_tensor(input, name)
        if _dt.category(x.dtype) < 2:
            return x  # already integral, as PyTorch returns integer inputs unchanged
        return op_cls.apply(x)
    fn.__name__ = name
    fn.__doc__ = doc + " Its gradient is zero everywhere it exists (a step function)."
    return register(name, op=op_cls, samples=_step_samples, elementwise=True,
                    torch=lambda torch, x: getattr(torch, name)(x))(fn)


floor = _zero_grad_unary(Floor, "floor", "The largest integer <= x, elementwise.")
ceil = _zero_grad_unary(Ceil, "ceil", "The smallest integer >= x, elementwise.")
trunc = _zero_grad_unary(Trunc, "trunc", "Round towards zero, elementwise.")


def _round_samples(src):
    yield from _step_samples(src)
    x = Tensor._make(np.round(src.values(src.shape(1, 2, 1, 4)), 2) + 0.0023).requires_grad_()
    yield Sample((x,), dict(decimals=1), desc="decimals=1")


@register(op=Round, samples=_round_samples, elementwise=True,
          torch=lambda torch, x, decimals=0: torch.round(x, decimals=decimals))
def round(input, *, decimals=0):  # noqa: A001 - PyTorch's name
    """Round to ``decimals`` places, halves to even (``round(2.5) == 2``), as PyTorch.

    The gradient is zero: rounding is a step function. (Quantization-aware
    training gets a gradient through it with a straight-through estimator.)
    """
    x = check_tensor(input, "round")
    if _dt.category(x.dtype) < 2 and decimals == 0:
        return x
    return Round.apply(x, int(decimals))


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


@_composite_unary("asin", Asin.formula, low=-0.9, high=0.9)
def asin(input):
    """The angle (radians, in [-pi/2, pi/2]) whose sine is ``input``; NaN outside [-1, 1]."""
    return Asin.apply(_float_arg(input, "asin"))


@_composite_unary("acos", Acos.formula, low=-0.9, high=0.9)
def acos(input):
    """The angle (radians, in [0, pi]) whose cosine is ``input``; NaN outside [-1, 1]."""
    return Acos.apply(_float_arg(input, "acos"))


@_composite_unary("atan", Atan.formula, low=-3.0, high=3.0)
def atan(input):
    """The angle (radians, in (-pi/2, pi/2)) whose tangent is ``input``."""
    return Atan.apply(_float_arg(input, "atan"))


@_composite_unary("asinh", "dX = dY / sqrt(X^2 + 1)")
def asinh(input):
    """Inverse hyperbolic sine: ``sign(x) log(|x| + sqrt(x^2 + 1))`` (odd, and exact for large negative x)."""
    x = _float_arg(input, "asinh")
    s = O.where(x < 0, O.full_like(x, -1.0), O.ones_like(x))  # a constant sign (1 at 0, where abs' slope is 0)
    a = x * s
    return s * O.log1p(a + a * a / (1.0 + O.sqrt(a * a + 1.0)))


@_composite_unary("acosh", "dX = dY / sqrt(X^2 - 1)", low=1.2, high=3.0)
def acosh(input):
    """Inverse hyperbolic cosine ``log(x + sqrt(x^2 - 1))`` for ``x >= 1`` (NaN below)."""
    x = _float_arg(input, "acosh")
    return O.log(x + O.sqrt(x * x - 1.0))


@_composite_unary("atanh", "dX = dY / (1 - X^2)", low=-0.9, high=0.9)
def atanh(input):
    """Inverse hyperbolic tangent ``0.5 log((1 + x) / (1 - x))`` for ``|x| < 1``."""
    x = _float_arg(input, "atanh")
    return 0.5 * (O.log1p(x) - O.log1p(-x))


@_composite_unary("deg2rad", "dX = dY * pi / 180")
def deg2rad(input):
    """Degrees to radians: ``x * pi / 180``."""
    return _float_arg(input, "deg2rad") * (math.pi / 180.0)


@_composite_unary("rad2deg", "dX = dY * 180 / pi")
def rad2deg(input):
    """Radians to degrees: ``x * 180 / pi``."""
    return _float_arg(input, "rad2deg") * (180.0 / math.pi)


arcsin, arccos, arctan, arctan2 = asin, acos, atan, atan2
arcsinh, arccosh, arctanh = asinh, acosh, atanh


@_composite_unary("log2", "dX = dY / (X ln 2)", low=0.2, high=3.0)
def log2(input):
    """Base-2 logarithm: ``log(x) / ln 2``."""
    return O.log(_float_arg(input, "log2")) / _LN2


@_composite_unary("log10", "dX = dY / (X ln 10)", low=0.2, high=3.0)
def log10(input):
    """Base-10 logarithm: ``log(x) / ln 10``."""
    return O.log(_float_arg(input, "log10")) / _LN10


@_composite_unary("exp2", "dX = dY * 2^X ln 2")
def exp2(input):
    """``2 ** x``, as ``exp(x ln 2)``."""
    return O.exp(_float_arg(input, "exp2") * _LN2)


@_composite_unary("rsqrt", "dX = -dY / (2 X^1.5)", low=0.2, high=3.0)
def rsqrt(input):
    """``1 / sqrt(x)``."""
    return O.reciprocal(O.sqrt(_float_arg(input, "rsqrt")))


@_composite_unary("sinh", "dX = dY cosh(X)")
def sinh(input):
    """``(e^x - e^-x) / 2``."""
    x = _float_arg(input, "sinh")
    return (O.exp(x) - O.exp(-x)) * 0.5


@_composite_unary("cosh", "dX = dY sinh(X)")
def cosh(input):
    """``(e^x + e^-x) / 2``."""
    x = _float_arg(input, "cosh")
    return (O.exp(x) + O.exp(-x)) * 0.5


@_composite_unary("tan", "dX = dY / cos(X)^2", low=-1.2, high=1.2)
def tan(input):
    """``sin(x) / cos(x)``."""
    x = _float_arg(input, "tan")
    return O.sin(x) / O.cos(x)


@_composite_unary("erfc", "dX = -dY 2/sqrt(pi) exp(-X^2)")
def erfc(input):
    """``1 - erf(x)``."""
    return 1.0 - O.erf(_float_arg(input, "erfc"))


@_composite_unary("logit", "dX = dY / (X (1 - X))", low=0.05, high=0.95)
def logit(input, eps=None):
    """``log(p / (1 - p))``, the inverse of the sigmoid; ``eps`` clamps ``p`` to ``[eps, 1 - eps]`` first."""
    p = _float_arg(input, "logit")
    if eps is not None:
        p = O.clamp(p, eps, 1.0 - eps)
    return O.log(p / (1.0 - p))


@_composite_unary("frac", "dX = dY", away_from=0.0)
def frac(input):
    """The fractional part ``x - trunc(x)`` (with the sign of ``x``)."""
    x = check_tensor(input, "frac")
    return x - O.trunc(x)


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


# ------------------------------------------------- PyTorch's other spellings of the same ops
def negative(input):
    """Same as ``neg``."""
    return neg(input)


def absolute(input):
    """Same as ``abs``."""
    return abs(input)
