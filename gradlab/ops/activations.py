"""Activations and more elementwise math: gelu, silu, softplus, leaky_relu, sin, cos...

Each op's VJP is written with gradlab ops (``O.sigmoid``, ``O.erf``, ``O.where``),
so the backward pass is itself differentiable: second derivatives (and
gradient penalties) work.

Two lessons live here:

* **Stability.** ``softplus(x) = log(1 + exp(x))`` overflows for large ``x`` if
  written literally; ``logaddexp(0, x)`` never does, and above ``threshold``
  PyTorch (and gradlab) simply return ``x``. ``log1p``/``expm1`` keep the
  digits that ``log(1 + x)``/``exp(x) - 1`` lose for small ``x``.
* **Zero gradients.** ``floor``, ``ceil``, ``trunc`` and ``round`` are step
  functions: their derivative is 0 wherever it exists, so nothing flows back
  through them (which is why quantization needs a straight-through estimator).
"""
from __future__ import annotations

import math

import numpy as np

from .. import ops as O
from ..autograd.function import Op
from ..backend import dtypes as _dt
from ..backend import xp_of
from .._tensor import Tensor
from ._util import check_tensor
from .compare import ZeroGrad
from .registry import Sample, register
from .samples import unary_samples

_SQRT2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_C = 0.044715


def _float_input(x: Tensor, op: str) -> Tensor:
    """Integer and bool inputs compute in the default float dtype (as ``torch.sin(int_tensor)``)."""
    if _dt.category(x.dtype) < 2:
        return O.to(x, _dt.get_default_dtype())
    return x


def _erf_array(a):
    """erf on an array: SciPy's when available (or CuPy's on the GPU), else the math module's."""
    xp = xp_of(a)
    if xp is not np:  # pragma: no cover - GPU backend
        from cupyx.scipy.special import erf
        return erf(a)
    try:
        from scipy.special import erf
    except ImportError:  # scipy is optional: NumPy alone, to double precision
        return np.asarray(_erf_numpy(a), dtype=a.dtype)
    return np.asarray(erf(a), dtype=a.dtype)


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
        return np.asarray(np.round(x.data, decimals))

    def vjp(self, g):
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


# --------------------------------------------------------------- activations
class Gelu(Op):
    name = "gelu"
    formula = "dX = dY * (Phi(X) + X * phi(X))   (Phi, phi: standard normal CDF and density)"

    @staticmethod
    def forward(ctx, x, approximate):
        ctx.save_for_backward(x)
        ctx.approximate = approximate
        a = x.data
        if approximate == "tanh":
            ctx.formula = ("dX = dY * (0.5 * (1 + T) + 0.5 * X * (1 - T^2) * sqrt(2/pi) * (1 + 3 * 0.044715 * X^2))"
                           "   (T = tanh(sqrt(2/pi) * (X + 0.044715 * X^3)))")
            return np.asarray(0.5 * a * (1 + np.tanh(_SQRT_2_OVER_PI * (a + _GELU_C * a * a * a))), dtype=a.dtype)
        return np.asarray(0.5 * a * (1 + _erf_array(a / _SQRT2)), dtype=a.dtype)

    def _dydx(self, x):
        if self.approximate == "tanh":
            t = O.tanh(_SQRT_2_OVER_PI * (x + _GELU_C * x * x * x))
            du = _SQRT_2_OVER_PI * (1 + 3 * _GELU_C * x * x)
            return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du
        cdf = 0.5 * (1 + O.erf(x * (1 / _SQRT2)))
        pdf = O.exp(-0.5 * x * x) * _INV_SQRT_2PI
        return cdf + x * pdf

    def vjp(self, g):
        (x,) = self.saved_tensors
        return g * self._dydx(x), None

    def jvp(self, t, _):
        return t * self._dydx(self.args[0])


def _gelu_samples(src):
    shape = src.shape(0, 3, 0, 4)
    yield Sample((src.tensor(shape, low=-3, high=3),), desc="exact (erf)")
    yield Sample((src.tensor(shape, low=-3, high=3),), dict(approximate="tanh"), desc="tanh approximation")
    yield Sample((src.tensor((), low=-3, high=3),), dict(approximate="none"), desc="0-d")


@register(op=Gelu, samples=_gelu_samples, elementwise=True,
          torch=lambda torch, x, approximate="none": torch.nn.functional.gelu(x, approximate=approximate))
def gelu(input, approximate="none"):
    """``x * Phi(x)``: the input weighted by how likely a standard normal is below it.

    ``approximate='tanh'`` uses ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``,
    the form GPT-2 was trained with. Both match ``torch.nn.functional.gelu``.
    """
    if approximate not in ("none", "tanh"):
        from ..errors import ArgumentError
        raise ArgumentError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    x = _float_input(check_tensor(input, "gelu"), "gelu")
    return Gelu.apply(x, approximate)


class Silu(Op):
    name = "silu"
    formula = "dX = dY * S * (1 + X * (1 - S))   (S = sigmoid(X))"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        a = x.data
        e = np.exp(-np.abs(a))
        s = np.where(a >= 0, 1 / (1 + e), e / (1 + e))
        return np.asarray(a * s, dtype=a.dtype)

    @staticmethod
    def _dydx(x):
        s = O.sigmoid(x)
        return s * (1 + x * (1 - s))

    def vjp(self, g):
        (x,) = self.saved_tensors
        return (g * self._dydx(x),)

    def jvp(self, t):
        return t * self._dydx(self.args[0])


@register(op=Silu, samples=unary_samples(low=-4, high=4), elementwise=True,
          torch=lambda torch, x: torch.nn.functional.silu(x))
def silu(input):
    """``x * sigmoid(x)`` (also called swish)."""
    return Silu.apply(_float_input(check_tensor(input, "silu"), "silu"))


class Softplus(Op):
    name = "softplus"
    formula = "dX = dY * sigmoid(beta * X)   (dY where beta * X > threshold: there Y = X)"

    @staticmethod
    def forward(ctx, x, beta, threshold):
        ctx.save_for_backward(x)
        ctx.beta, ctx.threshold = beta, threshold
        a = x.data
        bx = a * beta
        # logaddexp(0, bx) = log(1 + exp(bx)) without overflow
        y = np.where(bx > threshold, a, np.logaddexp(0, bx) / beta)
        return np.asarray(y, dtype=a.dtype)

    def _dydx(self, x):
        bx = x * self.beta
        return O.where(bx > self.threshold, 1.0, O.sigmoid(bx))

    def vjp(self, g):
        (x,) = self.saved_tensors
        return g * self._dydx(x), None, None

    def jvp(self, t, *_):
        return t * self._dydx(self.args[0])


def _softplus_samples(src):
    shape = src.shape(0, 3, 0, 4)
    yield Sample((src.tensor(shape, low=-4, high=4),), desc="default beta=1, threshold=20")
    yield Sample((src.tensor(shape, low=-3, high=3),), dict(beta=2.0, threshold=3.0), desc="beta and threshold",)
    yield Sample((src.tensor(shape, low=-3, high=3),), dict(beta=0.5), desc="beta=0.5")


@register(op=Softplus, samples=_softplus_samples, elementwise=True,
          torch=lambda torch, x, beta=1.0, threshold=20.0: torch.nn.functional.softplus(x, beta=beta,
                                                                                        threshold=threshold))
def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * x)) / beta``, a smooth relu; ``x`` itself where ``beta * x > threshold``."""
    x = _float_input(check_tensor(input, "softplus"), "softplus")
    return Softplus.apply(x, float(beta), float(threshold))


class LeakyRelu(Op):
    name = "leaky_relu"
    formula = "dX = dY * (1 if X > 0 else negative_slope)"

    @staticmethod
    def forward(ctx, x, negative_slope):
        a = x.data
        pos = a > 0
        ctx.slope = Tensor._make(np.where(pos, 1.0, negative_slope).astype(a.dtype))
        ctx.save_for_backward(ctx.slope)
        return np.asarray(np.where(pos, a, a * negative_slope), dtype=a.dtype)

    def vjp(self, g):
        (slope,) = self.saved_tensors
        return g * slope, None

    def jvp(self, t, _):
        return t * self.slope


def _leaky_samples(src):
    shape = src.shape(0, 3, 0, 4)
    yield Sample((src.tensor(shape, away_from=0.0),), desc="default slope 0.01")
    yield Sample((src.tensor(shape, away_from=0.0),), dict(negative_slope=0.2), desc="slope 0.2")


@register(op=LeakyRelu, samples=_leaky_samples, elementwise=True,
          torch=lambda torch, x, negative_slope=0.01: torch.nn.functional.leaky_relu(x, negative_slope))
def leaky_relu(input, negative_slope=0.01):
    """``x`` for ``x > 0``, ``negative_slope * x`` otherwise: a relu whose negative side still learns."""
    x = _float_input(check_tensor(input, "leaky_relu"), "leaky_relu")
    return LeakyRelu.apply(x, float(negative_slope))
