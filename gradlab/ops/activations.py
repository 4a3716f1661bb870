"""Activations: gelu (exact and tanh forms), silu, softplus, leaky_relu.

Each op's VJP is written with gradlab ops (``O.sigmoid``, ``O.erf``, ``O.where``),
so the backward pass is itself differentiable: second derivatives (and
gradient penalties) work. Each also has the same rule on plain arrays
(``vjp_arrays``), which the engine runs when backward is not recorded; those
work in place on the few arrays they create (gelu's on its widest
activation of a transformer makes two or three, where the formula read
literally makes a dozen). gelu's array kernels run in 64K-element blocks across threads: the tanh form as
``a / (1 + exp(-2u))`` (one ``exp``, not one ``tanh``), the exact form as ``a Phi(a)`` with the normal CDF
of ``backend.special.ncdf_block``.

Stability: ``softplus(x) = log(1 + exp(x))`` overflows for large ``x`` if
written literally; ``logaddexp(0, x)`` never does, and above ``threshold``
PyTorch (and gradlab) simply return ``x``.
"""
from __future__ import annotations

import math

import numpy as np

from .. import checks as _c, ops as O
from .._tensor import Tensor
from ..autograd.function import Op
from ..backend import threads
from ..backend.arrays import as_array
from ..backend.device import xp_of
from ..backend.special import ncdf_block
from ._util import OneRule, apply_in, float_input, floating_input
from .registry import Sample, register
from .samples import unary_samples
from .unary import _erf_array

_SQRT2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_C = 0.044715


def _acc(a):
    """16-bit floats are computed in float32 (as PyTorch: no overflow of ``a^3``) and rounded once."""
    return a.astype(np.float32) if a.dtype.itemsize <= 2 else a


# tanh GELU through the sigmoid: 0.5 (1 + tanh(u)) = sigmoid(2u) = 1 / (1 + exp(-2u)), so
# gelu(a) = a / (1 + exp(v)) with v = -2u = a (_V1 a^2 + _V0), u = c (a + C a^3)
_V0 = -2 * _SQRT_2_OVER_PI
_V1 = -2 * _SQRT_2_OVER_PI * _GELU_C
# gelu'(a) = s + 2 a du s (1 - s) = s (1 + a (2 du) (e s)), s = sigmoid(2u), e = exp(v), 1 - s = e s,
# 2 du = _D0 + _D1 a^2 (du = c (1 + 3 C a^2))
_D0 = 2 * _SQRT_2_OVER_PI
_D1 = 6 * _SQRT_2_OVER_PI * _GELU_C
#: |a| beyond which the tanh form's slope is its limit (1 or 0) to the dtype's precision; clipping there
#: keeps exp(v) finite (float32: v(-10) = 87.3 < 88.7; float64: v(-20) = 603 < 709), so e s is never inf * 0
_SLOPE_CLIP = {np.dtype(np.float32): 10.0, np.dtype(np.float64): 20.0}


def _gelu_tanh(a):
    """``0.5 a (1 + tanh(c (a + C a^3)))`` (c = sqrt(2/pi), C = 0.044715), making one array: the result.

    Computed as ``a / (1 + exp(-2 c (a + C a^3)))`` (``1 + tanh(u) = 2 sigmoid(2u)``): one ``exp`` instead
    of one ``tanh``, which NumPy evaluates about twice as slowly for float32 (2.9 vs 1.3 ns an element on
    the 2-core benchmark machine): 4M float32 on one thread 16.7 -> ~11 ms (``benchmarks/bench_gelu.py``).
    No cancellation: GELU needs ``1 + tanh`` to its own relative precision, which the sigmoid gives
    (``tanh`` itself near 0 would not be). At ``a -> -inf`` ``exp`` overflows to inf and ``a / inf`` is -0,
    the limit; at ``a -> +inf`` ``exp`` gives 0 and the result is ``a`` (no ``a^3`` overflow reaches it)."""
    if a.ndim == 0:  # NumPy makes scalars of 0-d results; out= needs arrays
        return _gelu_tanh(a.reshape(1)).reshape(())
    xp = xp_of(a)
    y = xp.multiply(a, a)
    y *= _V1
    y += _V0
    y *= a                      # v = -2u
    xp.exp(y, out=y)
    y += 1
    xp.divide(a, y, out=y)
    return y


#: elements per block of gelu's blocked paths: twice ``threads.GRAIN``. Exact GELU runs ~30 NumPy calls a
#: block (the erf's two branches), and at 32K elements their ~1.3 us of overhead each was a fifth of the
#: time; measured on 4M float32, one thread, CPU (load 3.7): exact 21.0 -> 17.9 ms, tanh 11.3 -> 10.2 ms
#: (128K: no better, its temporaries leave the 1 MB L2).
_GELU_GRAIN = 1 << 16


def _blocked(fn, a, *more):
    """``fn(a, *more)`` for an elementwise array function: block by block across threads for a large
    host array (``backend.threads.map_blocks``: the same bits), one call otherwise."""
    if threads.big(a):
        return threads.map_blocks(lambda *b: fn(*b, *more), a, grain=_GELU_GRAIN)
    return fn(a, *more)


def _ncdf(a):
    """The standard normal CDF ``Phi(a) = 0.5 (1 + erf(a / sqrt 2))`` as a fresh array of ``a``'s dtype (gelu's
    weight, and part of its slope). A host float32/64 array (a block from ``_blocked``, or a small array)
    goes straight to the kernel (``backend.special.ncdf_block``: float32 Phi without an erf, see there),
    skipping the op-level dispatch; anything else (CuPy) through ``erf``'s array function."""
    if type(a) is np.ndarray and a.dtype in (np.float32, np.float64):
        return ncdf_block(a.reshape(-1)).reshape(a.shape)
    d = as_array(_erf_array(a * (1 / _SQRT2)), dtype=a.dtype)
    d += 1
    d *= 0.5
    return d


def _gelu_erf(a):
    """``a Phi(a) = 0.5 a (1 + erf(a / sqrt 2))`` as a fresh array."""
    y = _ncdf(a)
    y *= a
    return y


def _gelu_slope(a, approximate):
    """gelu'(a) as a fresh array: block by block for a large host array (``_blocked``), else in one call."""
    if threads.big(a):
        return _blocked(_gelu_slope_block, a, approximate)
    return _gelu_slope_block(a, approximate)


def _gelu_slope_block(a, approximate):
    """gelu'(a) as a fresh array, in one call (the tanh form makes two arrays and returns one of them).
    (Separate from ``_gelu_slope`` so that a block never re-enters the blocking, whatever its size.)"""
    if a.ndim == 0:  # NumPy makes scalars of 0-d results; out= needs arrays
        return _gelu_slope_block(a.reshape(1), approximate).reshape(())
    xp = xp_of(a)
    if approximate == "tanh":
        # gelu' = s (1 + a (2 du) (e s)) with s = sigmoid(2u), e = exp(-2u), e s = 1 - s computed without
        # cancelling (see _D0): three arrays and one exp, where the tanh form took one tanh (twice exp's cost):
        # 4M float32, one thread, CPU 19.6 -> 17.2 ms
        c = xp.clip(a, -_SLOPE_CLIP.get(a.dtype, 10.0), _SLOPE_CLIP.get(a.dtype, 10.0))   # NaN stays NaN
        du = xp.multiply(c, c)
        e = du * _V1
        e += _V0
        e *= c
        xp.exp(e, out=e)                    # e = exp(v), finite (clipped)
        du *= _D1
        du += _D0
        du *= c                             # 2 a du
        s = xp.add(e, 1, out=c)             # (c is free now)
        xp.divide(1, s, out=s)              # s = sigmoid(2u) (NumPy's divide loop: 0.18 ns an element, reciprocal's 0.27)
        e *= s                              # e s = 1 - s
        du *= e
        du += 1
        du *= s
        return du
    d = _ncdf(a)                            # Phi(a)
    pdf = xp.multiply(a, a)
    pdf *= -0.5
    xp.exp(pdf, out=pdf)
    pdf *= _INV_SQRT_2PI
    pdf *= a
    d += pdf
    return d


def _gelu_grad(g, a, approximate):
    """``dY * gelu'(X)`` on arrays: the slope array, multiplied by ``dY`` in place."""
    d = _gelu_slope(_acc(a), approximate)
    dt = np.result_type(g.dtype, a.dtype)
    if d.dtype != dt:
        d = d.astype(dt)
    d *= g
    return d


def _sigmoid_array(a):
    """``1 / (1 + exp(-a))`` as a fresh array (``exp`` may overflow to inf: then 1/inf = 0, exactly right)."""
    if a.ndim == 0:  # NumPy makes scalars of 0-d results; out= needs arrays
        return _sigmoid_array(a.reshape(1)).reshape(())
    xp = xp_of(a)
    s = xp.negative(a)
    xp.exp(s, out=s)
    s += 1
    xp.reciprocal(s, out=s)
    return s


class Gelu(OneRule, Op):
    name = "gelu"
    formula = "dX = dY * (Phi(X) + X * phi(X))   (Phi, phi: standard normal CDF and density)"

    @staticmethod
    def forward(ctx, x, approximate):
        ctx.save_for_backward(x)
        ctx.approximate = approximate
        a = x._data
        if approximate == "tanh":
            ctx.formula = ("dX = dY * (0.5 * (1 + T) + 0.5 * X * (1 - T^2) * sqrt(2/pi) * (1 + 3 * 0.044715 * X^2))"
                           "   (T = tanh(sqrt(2/pi) * (X + 0.044715 * X^3)))")
            return as_array(_blocked(_gelu_tanh, _acc(a)), dtype=a.dtype)
        return as_array(_blocked(_gelu_erf, _acc(a)), dtype=a.dtype)

    def _dydx(self, x):
        if self.approximate == "tanh":
            t = O.tanh(_SQRT_2_OVER_PI * (x + _GELU_C * x * x * x))
            du = _SQRT_2_OVER_PI * (1 + 3 * _GELU_C * x * x)
            return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du
        cdf = 0.5 * (1 + O.erf(x * (1 / _SQRT2)))
        pdf = O.exp(-0.5 * x * x) * _INV_SQRT_2PI
        return cdf + x * pdf

    def _d2ydx2(self, x):
        if self.approximate == "tanh":
            t = O.tanh(_SQRT_2_OVER_PI * (x + _GELU_C * x * x * x))
            du = _SQRT_2_OVER_PI * (1 + 3 * _GELU_C * x * x)
            return (1 - t * t) * (du + 0.5 * x * (6 * _SQRT_2_OVER_PI * _GELU_C * x - 2 * t * du * du))
        return O.exp(-0.5 * x * x) * _INV_SQRT_2PI * (2 - x * x)

    def rule(self, ns, g, x):  # the VJP, once: a GeluBackward node on tensors, its kernel on arrays (OneRule)
        return apply_in(ns, GeluBackward, g, x, self.approximate), None

    def jvp(self, t, _):
        return t * self._dydx(self.args[0])


class GeluBackward(Op):
    """``dY * gelu'(X)`` in one NumPy expression: gelu's VJP as an op of its own.

    Written with ops (``Gelu._dydx``) it is a dozen elementwise ops, each a node
    and a full-size array, on the widest activation of a transformer's MLP; as
    one op it is several times faster (PyTorch has ``gelu_backward`` for the
    same reason). Its own VJP (second derivatives) is written with ops.
    """

    name = "gelu_backward"
    formula = "dG = dZ * gelu'(X) ; dX = dZ * G * gelu''(X)"

    kernel = staticmethod(_gelu_grad)   # (on arrays: what gelu's rule runs on the engine's fast path)

    @staticmethod
    def forward(ctx, g, x, approximate):
        ctx.save_for_backward(g, x)
        ctx.approximate = approximate
        return _gelu_grad(g._data, x._data, approximate)

    _dydx = Gelu._dydx
    _d2ydx2 = Gelu._d2ydx2

    def vjp(self, gz):
        g, x = self.saved_tensors
        return gz * self._dydx(x), gz * g * self._d2ydx2(x), None

    def jvp(self, tg, tx, _):
        g, x = self.args
        out = None if tg is None else tg * self._dydx(x)
        if tx is not None:
            d = tx * g * self._d2ydx2(x)
            out = d if out is None else out + d
        return out


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
    x = floating_input(input, "gelu")
    return Gelu.apply(x, approximate)


def _sigmoid_in(ns, x):
    """sigmoid in a ``OneRule``'s namespace: gradlab's op on tensors, the stable kernel on arrays."""
    return O.sigmoid(x) if ns is O else _sigmoid_array(x)


class Silu(OneRule, Op):
    name = "silu"
    formula = "dX = dY * S * (1 + X * (1 - S))   (S = sigmoid(X))"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        a = x._data
        e = np.exp(-np.abs(a))
        s = np.where(a >= 0, 1 / (1 + e), e / (1 + e))
        return as_array(a * s, dtype=a.dtype)

    @staticmethod
    def _dydx(ns, x):
        s = _sigmoid_in(ns, x)
        return s * (1 + x * (1 - s))

    def rule(self, ns, g, x):  # the VJP, on tensors and arrays alike (OneRule)
        return (g * self._dydx(ns, x),)

    def jvp(self, t):
        return t * self._dydx(O, self.args[0])


@register(op=Silu, samples=unary_samples(low=-4, high=4), elementwise=True, kernel=(None, "({0} / (1 + exp(-{0})))"),
          torch=lambda torch, x: torch.nn.functional.silu(x))
def silu(input):
    """``x * sigmoid(x)`` (also called swish)."""
    return Silu.apply(floating_input(input, "silu"))


class Softplus(OneRule, Op):
    name = "softplus"
    formula = "dX = dY * sigmoid(beta * X)   (dY where beta * X > threshold: there Y = X)"

    @staticmethod
    def forward(ctx, x, beta, threshold):
        ctx.save_for_backward(x)
        ctx.beta, ctx.threshold = beta, threshold
        a = x._data
        if beta == 1:  # the default (and BCEWithLogitsLoss's softplus): two full-size passes fewer
            y = np.where(a > threshold, a, np.logaddexp(0, a))
        else:  # logaddexp(0, bx) = log(1 + exp(bx)) without overflow
            bx = a * beta
            y = np.where(bx > threshold, a, np.logaddexp(0, bx) / beta)
        return as_array(y, dtype=a.dtype)

    def _dydx(self, ns, x):
        bx = x if self.beta == 1 else x * self.beta  # (beta = 1, the default: no product to make)
        return ns.where(bx > self.threshold, 1.0, _sigmoid_in(ns, bx))

    def rule(self, ns, g, x):  # the VJP, on tensors and arrays alike (OneRule)
        return g * self._dydx(ns, x), None, None

    def jvp(self, t, *_):
        return t * self._dydx(O, self.args[0])


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
    x = floating_input(input, "softplus")
    return Softplus.apply(x, float(_c.number(beta, "softplus", "beta")), float(_c.number(threshold, "softplus", "threshold")))


def log1p_exp(x):
    """``log(1 + exp(x))`` with no linear cut-off (softplus, threshold infinite): never overflows.

    The building block of ``logsigmoid``, ``mish`` and the logit losses, which need it exact for
    every ``x`` (PyTorch's ``softplus`` returns ``x`` itself above its threshold).
    """
    return Softplus.apply(float_input(x, "softplus"), 1.0, float("inf"))


class LeakyRelu(OneRule, Op):
    name = "leaky_relu"
    formula = "dX = dY * (1 if X > 0 else negative_slope)"

    @staticmethod
    def forward(ctx, x, negative_slope):
        a = x._data
        pos = a > 0
        ctx.slope = Tensor._make(np.where(pos, 1.0, negative_slope).astype(a.dtype))
        ctx.save_for_backward(ctx.slope)
        return as_array(np.where(pos, a, a * negative_slope), dtype=a.dtype)

    def rule(self, ns, g, slope):  # the VJP, on tensors and arrays alike (OneRule)
        return g * slope, None

    def jvp(self, t, _):
        return t * self.slope


def _leaky_samples(src):
    shape = src.shape(0, 3, 0, 4)
    yield Sample((src.tensor(shape, away_from=0.0),), desc="default slope 0.01")
    yield Sample((src.tensor(shape, away_from=0.0),), dict(negative_slope=0.2), desc="slope 0.2")


@register(op=LeakyRelu, samples=_leaky_samples, elementwise=True, kernel=(None, "({0} > 0 ? {0} : {0} * {1})"),
          torch=lambda torch, x, negative_slope=0.01: torch.nn.functional.leaky_relu(x, negative_slope))
def leaky_relu(input, negative_slope=0.01):
    """``x`` for ``x > 0``, ``negative_slope * x`` otherwise: a relu whose negative side still learns."""
    x = floating_input(input, "leaky_relu")
    return LeakyRelu.apply(x, float(_c.number(negative_slope, "leaky_relu", "negative_slope")))
