"""More elementwise math: erf, sin, cos, log1p, expm1, reciprocal, and the step functions
floor, ceil, trunc, round.

Each op's VJP is written with gradlab ops, so it is differentiable again.
``log1p``/``expm1`` keep the digits that ``log(1 + x)``/``exp(x) - 1`` lose
for tiny ``x`` (``1 + 1e-10`` is already rounded). ``floor``, ``ceil``,
``trunc`` and ``round`` are step functions: their derivative is 0 wherever it
exists, so nothing flows back through them (which is why quantization needs a
straight-through estimator).
"""
from __future__ import annotations

import math

import numpy as np

from .. import ops as O
from ..autograd.function import Op
from ..backend import dtypes as _dt
from ..backend import xp_of
from ..backend.arrays import as_array, erf as _backend_erf
from .._tensor import Tensor
from ._util import check_tensor
from .compare import ZeroGrad
from .registry import Sample, register
from .samples import unary_samples


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
