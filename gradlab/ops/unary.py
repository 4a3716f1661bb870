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

from .. import checks as _c, ops as O
from .._tensor import Tensor
from ..autograd.function import Op
from ..backend import dtypes as _dt, threads as _threads
from ..backend.arrays import as_array, erf as _backend_erf, erfc as _backend_erfc, gamma_family as _gamma_family
from ..backend.device import xp_of
from ..errors import DTypeError
from ._util import OneRule, as_weak, check_tensor, float_input, floating_input, to_float
from .arithmetic import atan2
from .fused_backward import SigmoidBackward, TanhBackward
from .registry import Sample, export, register
from .samples import unary_samples


class ZeroGrad(Op):
    """A piecewise-constant op: its gradient is zero wherever it is defined."""

    formula = "dX = 0   (piecewise constant: the derivative is 0 almost everywhere)"
    fn = None

    @staticmethod
    def forward(ctx, x):
        return as_array(type(ctx).fn(x._data))

    def vjp(self, g):  # g * 0 is the same on a Tensor and on an array: one rule serves both
        return (g * 0,)

    vjp_arrays = vjp

    def jvp(self, t):
        return t * 0


# ------------------------------------------------- short formulas of other ops
_LN2, _LN10 = math.log(2.0), math.log(10.0)


def _unary(name, formula=None, *, op=None, samples=None, **sample_kw):
    """Decorator: register the one-input elementwise function ``name`` (every function in this file
    goes through here): its samples (``unary_samples(**sample_kw)`` unless given), its formula (the op
    class's unless given), ``torch.<name>`` as the oracle, the op class's ``compiled`` kernel and an
    in-place variant (``x.exp_()``; PyTorch has one for every function here) and its Tensor method (``x.exp()``)."""
    def deco(fn):
        fn.__name__ = fn.__qualname__ = name
        return register(name, op=op, samples=samples or unary_samples(**sample_kw), formula=formula,
                        elementwise=True, torch=lambda torch, x: getattr(torch, name)(x),
                        kernel=getattr(op, "compiled", None), inplace=True, method=True)(fn)
    return deco



def _erf_array(a):
    """erf on an array, on its device: NumPy alone on the CPU (``backend/special.py``), CuPy's on the GPU."""
    return _backend_erf(a)


# ----------------------------------------------------------- the table of elementwise functions
_BIG = _threads.MIN_ELEMENTS
class Elementwise(Op):
    """An elementwise op of one input: each class below (``Exp``, ``Tanh``...) is one short row.

    A row states the derivative once, as ``grad(ns, g, v)``: the gradient ``g`` times dY/dX, written
    against a namespace ``ns`` (``O``, gradlab's ops, or the array module) and reading ``v``, the
    input ``x`` or the output ``y`` (``saves``). The same function is the VJP on tensors (``ns = O``:
    a graph, so it is differentiable again), the VJP's array twin (``ns`` = NumPy/CuPy: the engine's
    fast path) and the JVP (``grad(O, t, v)``: for an elementwise op the tangent is scaled the same way).
    """
    saves = "x"          # "x", "y" (the output) or None: what ``grad`` reads as ``v``
    ints = "float"       # integer inputs: "float" (computed in the default float dtype) or "keep"
    compiled = None      # (NumPy ufunc name, CUDA C expression): what gradlab.compile writes for it
    sample_range = {}    # the values the registry's samples draw (``unary_samples`` keywords)
    blocks = True        # a large array is computed by blocks across threads (False: one call, see Relu)

    @staticmethod
    def fn(a):  # pragma: no cover - each row sets its own
        raise NotImplementedError

    @staticmethod
    def grad(ns, g, v):  # pragma: no cover
        raise NotImplementedError

    @staticmethod
    def forward(ctx, x):
        a = x._data
        # a large host array with threads to share: block by block across them (backend.threads;
        # elementwise: same bits). On one thread, one call: by blocks every op of this file was as fast
        # or slower (1M float32, CPU time: relu 0.50 ms in one call vs 0.75 by blocks, tanh 2.70 vs
        # 3.14, neg 0.12 vs 0.30, exp 1.66 vs 1.62), the blocks' copies into the result costing more
        # than their cache reuse saves.
        if type(a) is np.ndarray and a.size >= _BIG and ctx.blocks and _threads.threads_for(a.size) > 1:
            y = _threads.map_blocks(ctx.fn, a)
        else:
            y = ctx.fn(a)
        saves = ctx.saves  # (save_for_backward / save_output, inline: every row's forward runs this)
        if saves == "x":
            ctx._to_save = (x,)
        elif saves == "y":
            ctx._to_save_out = (y,)
        return y

    def vjp(self, g):
        return (self.grad(O, g, self.saved_tensors[0] if self.saves else None),)

    def vjp_arrays(self, g):
        v = self.saved_arrays[0] if self.saves else None
        if type(g) is np.ndarray and g.size >= _BIG and self.blocks and type(v) is np.ndarray and v.shape == g.shape \
                and g.flags.c_contiguous and v.flags.c_contiguous and _threads.threads_for(g.size) > 1:
            # a large host array: block by block across threads, as the forward (elementwise: same bits).
            # (On one thread, one call: ReLU's backward of 1M floats 0.35 ms vs 0.66 ms by blocks.)
            return (_threads.map_blocks(lambda gb, vb: self.grad(np, gb, vb), g, v),)
        xp = np if type(g) is np.ndarray else xp_of(g)  # (a host array's namespace without a call: the hot path)
        return (self.grad(xp, g, v),)

    def jvp(self, t):
        return self.grad(O, t, self.args[0] if self.saves == "x" else self.out if self.saves else None)


def _neg_forward(a):
    try:
        return np.negative(a)
    except TypeError:  # NumPy refuses -bool, as PyTorch does
        raise DTypeError("neg: -x on a bool tensor is not supported; to invert a mask use ~x "
                         "or x.logical_not()") from None


def _sigmoid_forward(a):
    """``1 / (1 + e^-x)``, stably: ``exp(-|x|)`` never overflows, for both signs of x."""
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
        return y.astype(dt, copy=False)
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1 / (1 + e), e / (1 + e)).astype(dt, copy=False)


_2_SQRT_PI = 2 / math.sqrt(math.pi)


# --------------------------------------------------------- the elementwise functions, one class each
# Each class states one function: ``fn`` (the forward on arrays), ``grad`` (dY/dX times g, in a
# namespace ``ns``), ``saves`` (what ``grad`` reads), its formula, ``ints`` ("float": integer/bool
# inputs are computed in the default float dtype, as torch.exp(int) is float32; "keep": neg, relu and
# abs of an integer stay integers) and ``sample_range`` (the values its tests draw). Its public
# function is made from the class by ``_public`` below the table.
class Neg(Elementwise):
    """Elementwise ``-x``."""
    compiled = ("negative", "(-{0})")
    name, saves, ints, formula = "neg", None, "keep", "dX = -dY"
    fn = staticmethod(_neg_forward)
    grad = staticmethod(lambda ns, g, v: -g)


class Exp(Elementwise):
    """Elementwise ``e^x``."""
    compiled = ("exp", "exp({0})")
    name, saves, formula = "exp", "y", "dX = dY * Y   (Y = exp(X))"
    fn = staticmethod(np.exp)
    grad = staticmethod(lambda ns, g, y: g * y)


class Log(Elementwise):
    """Natural logarithm, elementwise."""
    compiled = ("log", "log({0})")
    name, formula, sample_range = "log", "dX = dY / X", dict(low=0.2, high=3.0)
    fn = staticmethod(np.log)
    grad = staticmethod(lambda ns, g, x: g / x)


class Sqrt(Elementwise):
    """Elementwise square root."""
    compiled = ("sqrt", "sqrt({0})")
    name, saves, formula, sample_range = "sqrt", "y", "dX = dY / (2 * Y)   (Y = sqrt(X))", dict(low=0.2, high=3.0)
    fn = staticmethod(np.sqrt)
    grad = staticmethod(lambda ns, g, y: g / (2 * y))


class Tanh(Elementwise):
    """Elementwise hyperbolic tangent."""
    compiled = ("tanh", "tanh({0})")
    name, saves, formula = "tanh", "y", "dX = dY * (1 - Y^2)   (Y = tanh(X))"
    fn = staticmethod(np.tanh)
    grad = staticmethod(lambda ns, g, y: g * (as_weak(1.0, y) - y * y))

    def vjp(self, g):  # on tensors, one fused node (PyTorch's tanh_backward) instead of three; same rule
        return (TanhBackward.apply(g, self.saved_tensors[0]),)

    vjp_arrays = Elementwise.vjp_arrays  # (the row's rule on arrays: a class that defines vjp alone has none)


class Sigmoid(Elementwise):
    """Elementwise ``1 / (1 + e^-x)``."""
    compiled = (None, "(1 / (1 + exp(-{0})))")
    name, saves, formula = "sigmoid", "y", "dX = dY * Y * (1 - Y)   (Y = sigmoid(X))"
    fn = staticmethod(_sigmoid_forward)
    grad = staticmethod(lambda ns, g, y: g * y * (as_weak(1.0, y) - y))

    def vjp(self, g):  # on tensors, one fused node (PyTorch's sigmoid_backward); same rule
        return (SigmoidBackward.apply(g, self.saved_tensors[0]),)

    vjp_arrays = Elementwise.vjp_arrays  # (the row's rule on arrays: a class that defines vjp alone has none)


def _relu_forward(a):
    """``max(a, 0)``, for a large contiguous array against a block of zeros shaped as its trailing dims.

    Why the block: NumPy 2.4 runs ``maximum`` against a scalar in its plain loop, a branch per element
    (about 0.5 ns each on the 2-core machine: random signs defeat the branch predictor), but two
    contiguous arrays in its vector loop. The block (``a``'s trailing dims, at least 1024 values, a
    quarter of ``a`` at most) stays in cache and costs one small allocation. Same bits as
    ``maximum(a, 0)`` (checked on -0, nan, +-inf, denormals). Measured, (64, 16, 32, 32) float32, best of
    40 alternating (load 1.5): 0.69 ms against the scalar, 0.22-0.28 ms against the block."""
    xp = np if type(a) is np.ndarray else xp_of(a)
    if a.size >= 4096 and a.dtype.kind == "f" and a.flags.c_contiguous:  # (ints and bools: as before)
        lead, inner = a.ndim, 1
        while lead > 0 and inner < 1024:  # the fewest trailing dims holding 1024 values
            lead -= 1
            inner *= a.shape[lead]
        if 4 * inner <= a.size:
            return xp.maximum(a, xp.zeros(a.shape[lead:], a.dtype))
    return xp.maximum(a, 0)


class Relu(Elementwise):
    """Elementwise ``max(x, 0)``.

    Not by blocks across threads (``blocks = False``): one compare per element is bound by memory, not
    arithmetic, so a second thread adds nothing and the blocks' copies and hand-offs cost more. Measured
    at 2 threads on the 2-core machine (load 2.4), (64, 16, 32, 32) float32, best of 30: forward 1.62 ms
    by blocks vs 0.52 ms in one call, forward + backward 7.2 vs 2.0 ms; the ResNet of
    ``benchmarks/bench_conv_bn_programs.py`` at 2 threads, its relu calls' forward + backward: 36 ms per 3
    steps by blocks vs 16.6 ms in one call; the whole 3 steps, 9 alternating runs: median 442 -> 362 ms."""
    compiled = (None, "({0} > 0 ? {0} : 0)")
    name, saves, ints, formula, sample_range = "relu", "y", "keep", "dX = dY * (X > 0)", dict(away_from=0.0)
    blocks = False
    fn = staticmethod(_relu_forward)
    grad = staticmethod(lambda ns, g, y: g * (y > 0))


class Abs(Elementwise):
    """Elementwise ``|x|``."""
    compiled = ("absolute", "fabs({0})")
    name, ints, formula, sample_range = "abs", "keep", "dX = dY * sign(X)", dict(away_from=0.0)
    fn = staticmethod(np.abs)
    grad = staticmethod(lambda ns, g, x: g * ns.sign(x))


class Erf(Elementwise):
    """Elementwise error function (the Gaussian CDF is 0.5*(1 + erf(x/sqrt 2)))."""
    compiled = (None, "erf({0})")
    name, formula = "erf", "dX = dY * 2/sqrt(pi) * exp(-X^2)"
    fn = staticmethod(lambda a: _erf_array(a))
    grad = staticmethod(lambda ns, g, x: g * _2_SQRT_PI * ns.exp(-(x * x)))


class Erfc(Elementwise):
    """``1 - erf(x)``, computed as itself: relative precision where erf rounds to 1 (erfc(5) = 1.5e-12)."""
    name, formula = "erfc", "dX = -dY * 2/sqrt(pi) * exp(-X^2)"
    fn = staticmethod(lambda a: _backend_erfc(a))
    grad = staticmethod(lambda ns, g, x: -(g * _2_SQRT_PI * ns.exp(-(x * x))))


class Sin(Elementwise):
    """Elementwise sine."""
    compiled = ("sin", "sin({0})")
    name, formula, sample_range = "sin", "dX = dY * cos(X)", dict(low=-4, high=4)
    fn = staticmethod(np.sin)
    grad = staticmethod(lambda ns, g, x: g * ns.cos(x))


class Cos(Elementwise):
    """Elementwise cosine."""
    compiled = ("cos", "cos({0})")
    name, formula, sample_range = "cos", "dX = -dY * sin(X)", dict(low=-4, high=4)
    fn = staticmethod(np.cos)
    grad = staticmethod(lambda ns, g, x: -(g * ns.sin(x)))


class Log1p(Elementwise):
    """``log(1 + x)``, accurate for tiny ``x`` (where ``1 + x`` would round to 1)."""
    compiled = ("log1p", "log1p({0})")
    name, formula, sample_range = "log1p", "dX = dY / (1 + X)", dict(low=-0.5, high=3.0)
    fn = staticmethod(np.log1p)
    grad = staticmethod(lambda ns, g, x: g / (x + 1))


class Expm1(Elementwise):
    """``exp(x) - 1``, accurate for tiny ``x``."""
    compiled = ("expm1", "expm1({0})")
    name, saves, formula = "expm1", "y", "dX = dY * (Y + 1)   (Y = exp(X) - 1)"
    fn = staticmethod(np.expm1)
    grad = staticmethod(lambda ns, g, y: g * (y + 1))


class Reciprocal(Elementwise):
    """Elementwise ``1 / x``."""
    compiled = ("reciprocal", "(1 / {0})")
    name, saves, formula = "reciprocal", "y", "dX = -dY * Y^2   (Y = 1 / X)"
    sample_range = dict(away_from=0.0, low=-3, high=3)
    fn = staticmethod(np.reciprocal)
    grad = staticmethod(lambda ns, g, y: -(g * y * y))


class Asin(Elementwise):
    """The angle (radians, in [-pi/2, pi/2]) whose sine is ``input``; NaN outside [-1, 1]."""
    name, formula, sample_range = "asin", "dX = dY / sqrt(1 - X^2)", dict(low=-0.9, high=0.9)
    fn = staticmethod(np.arcsin)
    grad = staticmethod(lambda ns, g, x: g / ns.sqrt(1.0 - x * x))


class Acos(Elementwise):
    """The angle (radians, in [0, pi]) whose cosine is ``input``; NaN outside [-1, 1]."""
    name, formula, sample_range = "acos", "dX = -dY / sqrt(1 - X^2)", dict(low=-0.9, high=0.9)
    fn = staticmethod(np.arccos)
    grad = staticmethod(lambda ns, g, x: -(g / ns.sqrt(1.0 - x * x)))


class Atan(Elementwise):
    """The angle (radians, in (-pi/2, pi/2)) whose tangent is ``input``."""
    name, formula, sample_range = "atan", "dX = dY / (1 + X^2)", dict(low=-3.0, high=3.0)
    fn = staticmethod(np.arctan)
    grad = staticmethod(lambda ns, g, x: g / (1.0 + x * x))


class Lgamma(Elementwise):
    """``log |Gamma(x)|``, elementwise (``lgamma(n + 1) = log n!``): the normaliser of the Gamma, Beta and
    Dirichlet densities."""
    name, formula, sample_range = "lgamma", "dX = dY * digamma(X)", dict(low=0.2, high=5.0)
    fn = staticmethod(lambda a: _gamma_family("lgamma", a))
    grad = staticmethod(lambda ns, g, x: g * _ns_polygamma(ns, 0, x))


class Digamma(Elementwise):
    """The derivative of ``lgamma``, elementwise (``digamma(1) = -0.5772...``, minus Euler's constant)."""
    name, formula, sample_range = "digamma", "dX = dY * polygamma(1, X)", dict(low=0.2, high=5.0)
    fn = staticmethod(lambda a: _gamma_family("polygamma", a, 0))
    grad = staticmethod(lambda ns, g, x: g * _ns_polygamma(ns, 1, x))


class Polygamma(OneRule, Op):
    """``polygamma(n, x)`` for ``n >= 1`` (order 0 is :class:`Digamma`): its derivative is the next
    order, so every order is differentiable again."""
    name, formula = "polygamma", "dX = dY * polygamma(n + 1, X)"

    @staticmethod
    def forward(ctx, x, n):
        ctx.n = n
        ctx.save_for_backward(x)
        return _gamma_family("polygamma", x._data, n)

    def rule(self, ns, g, x):  # the VJP, on tensors and arrays alike (OneRule)
        return g * _ns_polygamma(ns, self.n + 1, x), None

    def jvp(self, t, _):
        return t * polygamma(self.n + 1, self.args[0])


def _ns_polygamma(ns, n, x):
    """``polygamma(n, x)`` in the rule's namespace: gradlab's op on tensors (a graph: differentiable
    again), the array kernel on arrays (the engine's fast path)."""
    return polygamma(n, x) if ns is O else _gamma_family("polygamma", x, n)


#: The elementwise op classes above, by name.
UNARY = {c.name: c for c in (Neg, Exp, Log, Sqrt, Tanh, Sigmoid, Relu, Abs, Erf, Erfc, Sin, Cos, Log1p, Expm1,
                             Reciprocal, Asin, Acos, Atan, Lgamma, Digamma)}


def _public(cls):
    """The public function of an elementwise op class, registered under its name."""
    name, floating, apply = cls.name, cls.ints == "float", cls.apply  # (apply looked up once, not per call)

    def fn(input):
        x = input if type(input) is Tensor else check_tensor(input, name)
        if floating and x._data.dtype.kind in "biu":  # torch.exp(int_tensor) is float32 (the default dtype)
            x = to_float(x)
        return apply(x)
    fn.__doc__ = f"{cls.__doc__} Backward: {cls.formula}"
    return _unary(name, op=cls, **cls.sample_range)(fn)


neg, exp, log, sqrt, tanh, sigmoid, relu = (_public(c) for c in (Neg, Exp, Log, Sqrt, Tanh, Sigmoid, Relu))
abs, erf, erfc, sin, cos, log1p, expm1 = (_public(c) for c in (Abs, Erf, Erfc, Sin, Cos, Log1p, Expm1))  # noqa: A001
reciprocal, asin, acos, atan, lgamma, digamma = (_public(c) for c in (Reciprocal, Asin, Acos, Atan, Lgamma, Digamma))


def _polygamma_samples(src):
    for n in (1, 2):
        yield Sample((n, src.tensor(src.shape(0, 3, 0, 4), low=0.3, high=4.0)), desc=f"n={n}")
    yield Sample((0, src.tensor((), low=0.3, high=4.0)), desc="n=0 (digamma), 0-d")


@register(samples=_polygamma_samples, formula="dX = dY * polygamma(n + 1, X)", elementwise=True,
          torch=lambda torch, n, x: torch.polygamma(n, x))
def polygamma(n, input):
    """The ``n``-th derivative of ``digamma`` (``polygamma(0, x)`` is digamma; 1 is the trigamma function)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise DTypeError(f"polygamma: n must be a non-negative int (the order of the derivative), got {n!r}")
    x = input if type(input) is Tensor else check_tensor(input, "polygamma")
    if x._data.dtype.kind in "biu":
        x = to_float(x)
    return digamma(x) if n == 0 else Polygamma.apply(x, int(n))



class Floor(ZeroGrad):
    name = "floor"
    compiled = ("floor", "floor({0})")
    fn = staticmethod(np.floor)


class Ceil(ZeroGrad):
    name = "ceil"
    compiled = ("ceil", "ceil({0})")
    fn = staticmethod(np.ceil)


class Trunc(ZeroGrad):
    name = "trunc"
    compiled = ("trunc", "trunc({0})")
    fn = staticmethod(np.trunc)


class Round(ZeroGrad):
    name = "round"
    compiled = (None, "rint({0})")

    @staticmethod
    def forward(ctx, x, decimals):
        # half to even, like PyTorch: round(0.5) == 0, round(1.5) == 2
        return as_array(np.round(x._data, decimals))

    def vjp(self, g):  # g * 0 is the same on a Tensor and on an array: one rule serves both
        return g * 0, None

    vjp_arrays = vjp

    def jvp(self, t, _):
        return t * 0


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
    fn.__doc__ = doc + " Its gradient is zero everywhere it exists (a step function)."
    return _unary(name, op=op_cls, samples=_step_samples)(fn)


floor = _zero_grad_unary(Floor, "floor", "The largest integer <= x, elementwise.")
ceil = _zero_grad_unary(Ceil, "ceil", "The smallest integer >= x, elementwise.")
trunc = _zero_grad_unary(Trunc, "trunc", "Round towards zero, elementwise.")


def _round_samples(src):
    yield from _step_samples(src)
    x = Tensor._make(np.round(src.values(src.shape(1, 2, 1, 4)), 2) + 0.0023).requires_grad_()
    yield Sample((x,), dict(decimals=1), desc="decimals=1")


@register(op=Round, method=True, samples=_round_samples, elementwise=True, kernel=Round.compiled, inplace=True,
          torch=lambda torch, x, **kw: torch.round(x, **kw))
def round(input, *, decimals=None):  # noqa: A001 - PyTorch's name
    """Round to ``decimals`` places, halves to even (``round(2.5) == 2``), as PyTorch.

    The gradient is zero: rounding is a step function. (Quantization-aware
    training gets a gradient through it with a straight-through estimator.)
    """
    x = check_tensor(input, "round")
    if decimals is not None:
        decimals = _c.size(decimals, "round", "decimals", None)
    if x.dtype == np.bool_ or (decimals is not None and _dt.category(x.dtype) < 2):
        # PyTorch: round(int_tensor) is the tensor itself, but with decimals= (even 0), or on bools, refused
        raise DTypeError(f"round: {'decimals= needs' if x.dtype != np.bool_ else 'needs'} a floating tensor, got "
                         f"dtype {_dt.dtype_name(x.dtype)}" + ("" if x.dtype == np.bool_ else
                                                               " (an integer tensor is already rounded)")
                         + "; convert with x.float()")
    if _dt.category(x.dtype) < 2:
        return x
    return Round.apply(x, decimals or 0)


@_unary("asinh", "dX = dY / sqrt(X^2 + 1)")
def asinh(input):
    """Inverse hyperbolic sine: ``sign(x) log(|x| + sqrt(x^2 + 1))`` (odd, and exact for large negative x)."""
    x = float_input(input, "asinh")
    s = O.where(x < 0, O.full_like(x, -1.0), O.ones_like(x))  # a constant sign (1 at 0, where abs' slope is 0)
    a = x * s
    return s * O.log1p(a + a * a / (1.0 + O.sqrt(a * a + 1.0)))


@_unary("acosh", "dX = dY / sqrt(X^2 - 1)", low=1.2, high=3.0)
def acosh(input):
    """Inverse hyperbolic cosine ``log(x + sqrt(x^2 - 1))`` for ``x >= 1`` (NaN below)."""
    x = float_input(input, "acosh")
    return O.log(x + O.sqrt(x * x - 1.0))


@_unary("atanh", "dX = dY / (1 - X^2)", low=-0.9, high=0.9)
def atanh(input):
    """Inverse hyperbolic tangent ``0.5 log((1 + x) / (1 - x))`` for ``|x| < 1``."""
    x = float_input(input, "atanh")
    return 0.5 * (O.log1p(x) - O.log1p(-x))


@_unary("deg2rad", "dX = dY * pi / 180")
def deg2rad(input):
    """Degrees to radians: ``x * pi / 180``."""
    return float_input(input, "deg2rad") * (math.pi / 180.0)


@_unary("rad2deg", "dX = dY * 180 / pi")
def rad2deg(input):
    """Radians to degrees: ``x * 180 / pi``."""
    return float_input(input, "rad2deg") * (180.0 / math.pi)


# NumPy's spellings (torch.arcsin, x.arcsin()...): the same functions
arcsin, arccos, arctan = export("arcsin", method=True)(asin), export("arccos", method=True)(acos), export("arctan", method=True)(atan)
arctan2 = export("arctan2", method=True)(atan2)
arcsinh, arccosh = export("arcsinh", method=True)(asinh), export("arccosh", method=True)(acosh)
arctanh = export("arctanh", method=True)(atanh)


@_unary("log2", "dX = dY / (X ln 2)", low=0.2, high=3.0)
def log2(input):
    """Base-2 logarithm: ``log(x) / ln 2``."""
    return O.log(float_input(input, "log2")) / _LN2


@_unary("log10", "dX = dY / (X ln 10)", low=0.2, high=3.0)
def log10(input):
    """Base-10 logarithm: ``log(x) / ln 10``."""
    return O.log(float_input(input, "log10")) / _LN10


@_unary("exp2", "dX = dY * 2^X ln 2")
def exp2(input):
    """``2 ** x``, as ``exp(x ln 2)``."""
    return O.exp(float_input(input, "exp2") * _LN2)


@_unary("rsqrt", "dX = -dY / (2 X^1.5)", low=0.2, high=3.0)
def rsqrt(input):
    """``1 / sqrt(x)``."""
    return O.reciprocal(O.sqrt(float_input(input, "rsqrt")))


@_unary("sinh", "dX = dY cosh(X)")
def sinh(input):
    """``(e^x - e^-x) / 2``."""
    x = float_input(input, "sinh")
    return (O.exp(x) - O.exp(-x)) * 0.5


@_unary("cosh", "dX = dY sinh(X)")
def cosh(input):
    """``(e^x + e^-x) / 2``."""
    x = float_input(input, "cosh")
    return (O.exp(x) + O.exp(-x)) * 0.5


@_unary("tan", "dX = dY / cos(X)^2", low=-1.2, high=1.2)
def tan(input):
    """``sin(x) / cos(x)``."""
    x = float_input(input, "tan")
    return O.sin(x) / O.cos(x)


@_unary("logit", "dX = dY / (X (1 - X))", low=0.05, high=0.95)
def logit(input, eps=None):
    """``log(p / (1 - p))``, the inverse of the sigmoid; ``eps`` clamps ``p`` to ``[eps, 1 - eps]`` first."""
    p = float_input(input, "logit")
    if eps is not None:
        p = O.clamp(p, eps, 1.0 - eps)
    return O.log(p / (1.0 - p))


@_unary("frac", "dX = dY", away_from=0.0)
def frac(input):
    """The fractional part ``x - trunc(x)`` (with the sign of ``x``)."""
    x = floating_input(input, "frac")
    return x - O.trunc(x)


class Sign(ZeroGrad):
    name = "sign"
    compiled = ("sign", "(({0} > 0) - ({0} < 0))")
    fn = staticmethod(np.sign)


@register(op=Sign, method=True, samples=unary_samples(away_from=0.0), elementwise=True, torch=lambda torch, x: torch.sign(x),
          kernel=Sign.compiled, inplace=True)
def sign(input):
    """-1, 0 or +1 for each element; its gradient is zero."""
    x = check_tensor(input, "sign")
    if x.dtype == np.bool_:  # the sign of a bool is itself, as in PyTorch (NumPy has no bool sign)
        return Tensor._make(x._data.copy())
    return Sign.apply(x)


# ------------------------------------------------- PyTorch's other spellings of the same ops
@export(method=True)
def negative(input):
    """Same as ``neg``."""
    return neg(input)


@export(method=True)
def absolute(input):
    """Same as ``abs``."""
    return abs(input)
