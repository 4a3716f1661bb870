"""Elementwise arithmetic of two operands (tensors or Python numbers).

Holds: ``add``, ``sub``, ``mul``, ``div``, ``pow`` (the ``+ - * / **`` operators) and their other
spellings (``true_divide``, ``divide``, ``subtract``, ``multiply``, ``rsub``, ``square``);
``floor_divide`` and ``remainder`` (``//`` and ``%``, no gradient), ``fmod``, ``lerp``,
``logaddexp``, ``atan2``, ``hypot``, ``xlogy`` and ``diff``.

Each op keeps its forward (on arrays), its VJP (written with gradlab ops, so it is differentiable
again), its JVP and its formula together. Binary ops broadcast; their VJP sums the gradient back to
each input's exact shape with ``sum_to``. The ops after ``pow`` are short formulas of other ops, so
their gradients come from the ops they are made of.
"""
from __future__ import annotations

import numpy as np

from .. import checks as _c, ops as O
from .._tensor import Tensor
from ..autograd import inplace as _inplace
from ..autograd.function import Op
from ..backend import dtypes as _dt, xp_of
from ..backend.arrays import as_array
from ..backend.fperr import quiet as _fp_quiet
from ..errors import ArgumentError, ArgumentTypeError, ShapeError
from ._util import (
    _F32,
    _FLOATS,
    WEAK_FLOAT32,
    OneRule,
    arrays_for,
    as_weak,
    check_broadcast,
    check_tensor,
    is_scalar,
    one_dim,
    operand,
    to_float,
    weak_float,
)
from .compare import _compare
from .reduce import sum_to_array, sum_to_in
from .registry import Sample, export, register
from .samples import binary_samples


# --------------------------------------------------------------------- binary
class _Binary(Op):
    """Shared forward plumbing: promote dtypes, broadcast, compute."""

    def _compute(self, a, b, f):
        # the everyday cases inline: a float tensor and a Python float (as a cached 0-d array: same
        # numbers, half the time), or two tensors of one dtype; arrays_for promotes everything else
        if type(a) is Tensor:
            x = a._data
            dt = x.dtype
            if type(b) is float and dt in _FLOATS:
                y = b
                if type(x) is np.ndarray:
                    y = WEAK_FLOAT32.get(b) if dt is _F32 else None
                    if y is None:
                        y = weak_float(b, dt)
            elif type(b) is Tensor and b._data.dtype is dt and type(b._data) is type(x):
                y = b._data
            else:
                x, y, dt = arrays_for(self.name, a, b)
        else:
            x, y, dt = arrays_for(self.name, a, b)
        try:
            return f(x, y)  # (an overflow to inf is quiet, as in PyTorch: ``Op.apply`` silences NumPy)
        except ValueError:
            check_broadcast(self.name, a, b)
            raise

    def grad_shapes(self):
        """The shape each input's gradient must be summed back to: None for a Python scalar or an
        input that needs no gradient (the VJP skips it; ``mul`` did not even save the other factor)."""
        (ma, mb), (ea, eb) = self.input_meta, self.next_functions
        return (None if ea is None else ma[0]), (None if eb is None else mb[0])


class Add(_Binary):
    name = "add"
    formula = "dA = sum_to(dY, A.shape) ; dB = sum_to(dY, B.shape)"

    @staticmethod
    def forward(ctx, a, b):
        return ctx._compute(a, b, np.add)

    def vjp(self, g):
        sa, sb = self.grad_shapes()
        return (None if sa is None else O.sum_to(g, sa)), (None if sb is None else O.sum_to(g, sb))

    # A twin, one of the few kept (the rule is only "pass dY back"): measured side by side on a 4x4 node
    # (20000 calls, best of 7, three runs; load ~13 on 2 cores), this twin takes 0.71-1.08 us, the same rule run
    # through OneRule (saved_arrays, the namespace, one more call) 2.52-2.96 us; add and sub are half of
    # the per-op chain's nodes, so OneRule here would cost the chain about 10%.
    def vjp_arrays(self, g):
        # (``g`` itself when no broadcast happened: the usual case, without a call; and ``grad_shapes()``
        # inline: 0.28 -> 0.20 us a node, measured in one process, best of 7 x 300,000 calls)
        (ma, mb), (ea, eb) = self.input_meta, self.next_functions
        return ((None if ea is None else g if g.shape == ma[0] else sum_to_array(g, ma[0])),
                (None if eb is None else g if g.shape == mb[0] else sum_to_array(g, mb[0])))

    def jvp(self, ta, tb):
        return _tsum(ta, tb)


class Sub(_Binary):
    name = "sub"
    formula = "dA = sum_to(dY, A.shape) ; dB = -sum_to(dY, B.shape)"

    @staticmethod
    def forward(ctx, a, b):
        try:
            return ctx._compute(a, b, np.subtract)
        except TypeError:  # NumPy refuses bool - bool, as PyTorch does
            from ..errors import DTypeError
            raise DTypeError("sub: subtracting two bool tensors is not supported; use a ^ b (logical_xor) "
                             "to compare masks, ~a to invert one, or convert first with a.int()") from None

    def vjp(self, g):
        sa, sb = self.grad_shapes()
        return (None if sa is None else O.sum_to(g, sa)), (None if sb is None else -O.sum_to(g, sb))

    def vjp_arrays(self, g):  # a twin for speed, as Add's: 0.70-1.24 us against 2.85-3.46 us as a OneRule
        (ma, mb), (ea, eb) = self.input_meta, self.next_functions  # (grad_shapes() inline, as Add's)
        return ((None if ea is None else g if g.shape == ma[0] else sum_to_array(g, ma[0])),
                (None if eb is None else -(g if g.shape == mb[0] else sum_to_array(g, mb[0]))))

    def jvp(self, ta, tb):
        return _tsum(ta, None if tb is None else -tb)


class Mul(OneRule, _Binary):
    name = "mul"
    formula = "dA = sum_to(dY * B, A.shape) ; dB = sum_to(dY * A, B.shape)"

    @staticmethod
    def forward(ctx, a, b):
        # each input's gradient needs the *other* input: save only what a gradient will need
        # (``ctx.save_for_backward(...)`` inline, as ``Elementwise.forward`` does: one call fewer per product)
        ctx._to_save = (a if isinstance(b, Tensor) and b._requires_grad else None,
                        b if isinstance(a, Tensor) and a._requires_grad else None)
        return ctx._compute(a, b, np.multiply)

    def rule(self, ns, g, a, b):  # the product rule, on tensors and arrays alike (OneRule)
        # (as_weak: on arrays a Python-float factor is its cached 0-d array, the same numbers, faster;
        # a tensor ``g`` leaves it as it is. A factor is None exactly when its input needs no gradient
        # (see forward): ``grad_shapes()`` inline, one call fewer per node, as Add's twin)
        ma, mb = self.input_meta
        return ((None if b is None else sum_to_in(ns, g * as_weak(b, g), ma[0])),
                (None if a is None else sum_to_in(ns, g * as_weak(a, g), mb[0])))

    def jvp(self, ta, tb):
        a, b = self.args
        return _tsum(None if ta is None else ta * b, None if tb is None else a * tb)


class Div(OneRule, _Binary):
    name = "div"
    formula = "dA = sum_to(dY / B, A.shape) ; dB = sum_to(-dY * A / B^2, B.shape)"

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return ctx._compute(a, b, np.true_divide)

    def rule(self, ns, g, a, b):  # the VJP, on tensors and arrays alike (OneRule)
        sa, sb = self.grad_shapes()
        da = None if sa is None else sum_to_in(ns, g / b, sa)
        db = None if sb is None else sum_to_in(ns, -g * a / (b * b), sb)
        return da, db

    def jvp(self, ta, tb):
        a, b = self.args
        return _tsum(None if ta is None else ta / b, None if tb is None else -tb * a / (b * b))


class Pow(OneRule, _Binary):
    name = "pow"
    formula = "dA = sum_to(dY * B * A^(B-1), A.shape) ; dB = sum_to(dY * Y * log(A), B.shape)"

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        y = ctx._compute(a, b, _power)
        if isinstance(b, Tensor):  # Y is only needed for the exponent's gradient
            ctx.save_output(y)
        return y

    def rule(self, ns, g, a, b, *y):  # the VJP, on tensors and arrays alike (OneRule); y saved if b is a tensor
        sa, sb = self.grad_shapes()
        da = db = None
        if sa is not None:
            exponent_zero = self.input_meta[1] is None and b == 0  # x ** 0: the gradient is 0, even at 0
            da = sum_to_in(ns, g * 0 if exponent_zero else g * b * a ** (b - 1), sa)
        if sb is not None:
            db = sum_to_in(ns, g * y[0] * _log_or_zero(ns, a, b), sb)
        return da, db

    def jvp(self, ta, tb):
        a, b = self.args
        y = self.out
        return _tsum(None if ta is None else ta * b * a ** (b - 1),
                     None if tb is None else tb * y * _log_or_zero(O, a, b))


def _power(x, y):
    """``np.power``; an integer to a negative integer power gives PyTorch's integer answer
    (1 for base 1, +-1 for base -1, else 0) where NumPy raises.

    ``x ** 3`` of a float array is ``x * x * x``: NumPy special-cases exponent 2 but calls the C
    ``pow`` per element for 3, measured 45x slower (9.6 ms vs 0.21 ms on 131K float32), and the
    product is what PyTorch's CPU kernel computes for this exponent (the same bits; the tanh GELU's
    ``x ** 3`` is in every transformer block). The exponent 3.0 may come as ``_Binary._compute``'s
    cached 0-d array of ``x``'s dtype (``weak_float``): that is the same exponent (missing it cost the
    char transformer's four GELUs about 8 ms a step, np.power 2.0 ms against 0.07 ms on (32, 16, 256))."""
    if (type(y) in (int, float) or (type(y) is np.ndarray and y.ndim == 0)) and y == 3 \
            and getattr(x, "dtype", None) is not None and x.dtype.kind == "f":
        out = x * x
        out *= x
        return out
    try:
        return np.power(x, y)
    except ValueError as e:
        if "negative integer powers" not in str(e):
            raise
    xp = xp_of(y if hasattr(y, "dtype") else x)
    neg = y < 0
    out = xp.power(x, xp.where(neg, 0, y))
    odd = xp.where(xp.remainder(y, 2) == 1, -1, 1)
    return xp.where(neg, xp.where(x == 1, 1, xp.where(x == -1, odd, 0)), out).astype(out.dtype)


def _log_or_zero(ns, a, b):
    """log(a), with 0 where a == 0 and b >= 0 (the limit PyTorch uses: d(0^b)/db = 0), in namespace
    ``ns`` (``O`` on tensors, the array module on arrays); ``a`` may be a number.

    Only called when ``b`` is a tensor (a gradient for the exponent is wanted).
    """
    if is_scalar(a):
        return float(np.log(a)) if a > 0 else (0.0 if a == 0 else float("nan"))
    zero = (a == 0) & (b >= 0)
    return ns.where(zero, 0.0, ns.log(ns.where(a == 0, 1.0, a)))


def _tsum(x, y):
    if x is None:
        return y
    return x if y is None else x + y


# ``Add.apply`` & co, looked up once: looking a classmethod up makes a new bound method each time (about
# 1% of a small op's forward and backward, measured; the operators + - * come here)
_ADD, _SUB, _MUL = Add.apply, Sub.apply, Mul.apply

#: ``x + y``, ``x - y``, ``x * y`` with a tensor or a Python float on the right: there ``add``/``sub``/``mul``
#: below are this one call, which the operators make themselves (``ops/binding.py``; measured there).
OPERATOR_APPLY = {"add": _ADD, "sub": _SUB, "mul": _MUL}


_KERNELS = {"add": ("add", "({0} + {1})"), "sub": ("subtract", "({0} - {1})"), "mul": ("multiply", "({0} * {1})"),
            "div": ("true_divide", "({0} / {1})"), "pow": ("power", "pow({0}, {1})")}


def _binary_entry(name, torch_name, inplace=True):
    return dict(samples=binary_samples(name), torch=lambda torch, a, b: getattr(torch, torch_name)(a, b),
                elementwise=True, kernel=_KERNELS[name], inplace=inplace, method=True)


@register(op=Add, **_binary_entry("add", "add"))
def add(input, other, *, alpha=1):
    """``input + other`` (``input + alpha * other`` when ``alpha`` is given), broadcasting."""
    if alpha != 1:
        other = mul(other, alpha)
    if type(input) is not Tensor:
        input = operand(input, "add", "input")
    if type(other) is not Tensor and type(other) is not float:
        other = operand(other, "add", "other")
    return _ADD(input, other)


@register(op=Sub, **_binary_entry("sub", "sub"))
def sub(input, other, *, alpha=1):
    """``input - other`` (``input - alpha * other`` when ``alpha`` is given), broadcasting."""
    if alpha != 1:
        other = mul(other, alpha)
    if type(input) is not Tensor:
        input = operand(input, "sub", "input")
    if type(other) is not Tensor and type(other) is not float:
        other = operand(other, "sub", "other")
    return _SUB(input, other)


@register(op=Mul, **_binary_entry("mul", "mul"))
def mul(input, other):
    """``input * other`` elementwise, broadcasting."""
    if type(input) is not Tensor:
        input = operand(input, "mul", "input")
    if type(other) is not Tensor and type(other) is not float:
        other = operand(other, "mul", "other")
    return _MUL(input, other)


def _rounded_div(a, b, mode):
    from ..backend import dtypes as _dt
    if mode not in ("trunc", "floor"):
        raise ArgumentError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {mode!r}")
    if _dt.category(_dt.result_type(a, b)) < 2:  # integers: an integer quotient
        q = O.floor_divide(a, b)
        if mode == "floor":
            return q
        x, y, _ = arrays_for("div", a, b)
        fix = (as_array(x - q._data * y) != 0) & ((as_array(x) < 0) != (as_array(y) < 0))  # on x's device
        return Tensor._make(q._data + fix.astype(q._data.dtype))  # floor -> toward zero
    q = div(a, b)
    return O.trunc(q) if mode == "trunc" else O.floor(q)


@register(op=Div, **_binary_entry("div", "div", inplace=_inplace.div_))
def div(input, other, *, rounding_mode=None):
    """``input / other`` (true division, so integer inputs give floats), broadcasting.

    ``rounding_mode="trunc"`` rounds the quotient toward zero (C's integer division) and
    ``"floor"`` rounds it down (Python's ``//``); integer inputs then give integers. Rounded
    quotients are step functions: their gradient is zero.
    """
    a, b = operand(input, "div", "input"), operand(other, "div", "other")
    from ..backend import dtypes as _dt
    if rounding_mode is not None:
        return _rounded_div(a, b, rounding_mode)
    if _dt.category(_dt.result_type(a, b)) < 2:  # int / int is a float in PyTorch
        a = a.to(_dt.get_default_dtype()) if isinstance(a, Tensor) else float(a)
    return Div.apply(a, b)


@register(op=Pow, **_binary_entry("pow", "pow"))
def pow(input, exponent):  # noqa: A001 - PyTorch's name
    """``input ** exponent``, broadcasting; either side may be a number."""
    a, b = operand(input, "pow", "input"), operand(exponent, "pow", "exponent")
    if isinstance(b, (int, np.integer)) and not isinstance(b, bool) and b < 0 \
            and isinstance(a, Tensor) and a._data.dtype.kind in "biu":
        from ..errors import ArgumentError
        raise ArgumentError(f"pow: an integer tensor (dtype {a.dtype}) to the negative integer power {b} "
                            f"is not allowed; use a float tensor (x.float() ** {b})")
    return Pow.apply(a, b)


class Atan2(Op):
    name = "atan2"
    formula = "dY_in = dOut * X / (X^2 + Y^2),  dX = -dOut * Y / (X^2 + Y^2)"

    @staticmethod
    def forward(ctx, y, x):
        ctx.save_for_backward(y, x)
        return np.arctan2(y._data, x._data)

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


@register(op=Atan2, method=True, samples=_pair_samples, formula=Atan2.formula, elementwise=True,
          torch=lambda torch, y, x: torch.atan2(y, x))
def atan2(input, other):
    """The angle of the point ``(other, input)`` = ``(x, y)``, in (-pi, pi]: ``atan(y / x)`` in the right quadrant."""
    y, x = _pair("atan2", input, other, ("input", "other"))
    return Atan2.apply(y, x)


@register(method=True, samples=_pair_samples, formula="dX = dY * X / hypot, dY_in = dY * Y / hypot", elementwise=True,
          torch=lambda torch, x, y: torch.hypot(x, y))
def hypot(input, other):
    """``sqrt(input^2 + other^2)``: the length of the hypotenuse."""
    a, b = _pair("hypot", input, other, ("input", "other"))
    return O.sqrt(a * a + b * b)


def _pairs(src):
    """Tensor pairs (broadcasting both ways, and same shapes) from the binary samples."""
    return [s for s in binary_samples("pairs")(src) if all(isinstance(a, Tensor) for a in s.args)]


@register(method=True, samples=lambda src: [Sample(s.args + (w,), desc=s.desc) for s, w in zip(_pairs(src), (0.3, -0.5, 1.5, 0.0))],
          formula="dA = dY (1 - W) ; dB = dY W", elementwise=True,
          torch=lambda torch, a, b, w: torch.lerp(a, b, w), inplace=_inplace.lerp_)
def lerp(input, end, weight):
    """``input + weight * (end - input)``: a straight line from ``input`` (weight 0) to ``end`` (weight 1).

    As PyTorch, ``input`` and ``end`` (and a ``weight`` tensor with dims) must share one floating dtype."""
    a, b = check_tensor(input, "lerp"), check_tensor(end, "lerp", "end")
    _c.same_dtype("lerp", input=a, end=b, weight=weight if isinstance(weight, Tensor) and weight.ndim else None)
    _c.floating(a, "lerp")
    return a + weight * (b - a)


@register(method=True, samples=_pairs, formula="dA = dY sigmoid(A - B) ; dB = dY sigmoid(B - A)", elementwise=True,
          torch=lambda torch, a, b: torch.logaddexp(a, b))
def logaddexp(input, other):
    """``log(e^a + e^b)`` computed stably as ``m + log(e^(a-m) + e^(b-m))`` with ``m = max(a, b)``."""
    a, b = check_tensor(input, "logaddexp"), check_tensor(other, "logaddexp", "other")
    m = O.maximum(a, b).detach()
    m = O.where(O.isfinite(m), m, 0.0)  # a pair of infinities must not give inf - inf
    return m + O.log(O.exp(a - m) + O.exp(b - m))


def fmod(input, other):
    """The remainder of C's ``fmod``: ``a - b * trunc(a / b)``, with the sign of ``a`` (``remainder``,
    Python's ``%``, takes the sign of ``b``)."""
    a = operand(input, "fmod", "input")
    other = operand(other, "fmod", "other")
    if isinstance(a, Tensor) and a.dtype.kind in "iu" and not (isinstance(other, float)
                                                              or getattr(other, "dtype", a.dtype).kind == "f"):
        q = O.div(a, other, rounding_mode="trunc")
        return a - q * other
    return a - other * O.trunc(a / other)


register('fmod', method=True, samples=lambda src: [Sample((src.tensor((3, 4), low=0.1, high=1.4), 1.5)),
                          Sample((src.tensor((3, 4), low=0.1, high=1.4), src.tensor((4,), low=1.5, high=2.0)))],
         formula="dA = dY ; dB = -dY trunc(A / B)", torch=lambda torch, a, b: torch.fmod(a, b))(fmod)


def _int_safe(name, fn):
    """floor_divide / remainder: an integer division by zero is an error (as in PyTorch); a float one
    gives inf/nan quietly (no NumPy RuntimeWarning)."""
    def f(x, y):
        if getattr(x, "dtype", np.dtype(float)).kind in "biu" and np.any(y == 0) \
                and np.result_type(x, y).kind in "biu":
            from ..errors import ArgumentError
            raise ArgumentError(f"{name}: integer division by zero (the divisor holds a 0); "
                                f"use a float tensor (x.float()) to get inf/nan instead")
        with _fp_quiet():  # (a public function's own arrays, outside any op)
            return fn(x, y)
    return f


floor_divide = _compare("floor_divide", _int_safe("floor_divide", np.floor_divide), method=False)  # x.floor_divide(): methods.py
remainder = _compare("remainder", _int_safe("remainder", np.remainder), method=False)


def _xlogy_samples(src):
    yield Sample((src.tensor((2, 3), low=-2, high=2), src.tensor((2, 3), low=0.3, high=2)))
    yield Sample((Tensor._make(np.array([0.0, 1.5, 0.0])), Tensor._make(np.array([0.5, 2.0, 3.0]))), desc="x = 0")


@register(method=True, samples=_xlogy_samples, formula="dX = dY log(Y_in), dY_in = dY X / Y_in (0 where X = 0)",
          elementwise=True, torch=lambda torch, x, y: torch.xlogy(x, y))
def xlogy(input, other):
    """``input * log(other)``, defined as 0 where ``input`` is 0 (so ``0 * log(0)`` is 0, as in entropies)."""
    input, other = operand(input, "xlogy", "input"), operand(other, "xlogy", "other")
    x = input if isinstance(input, Tensor) else Tensor._make(np.asarray(input, dtype=_dt.get_default_dtype()))
    y = other if isinstance(other, Tensor) else O.full_like(x, other)
    x = to_float(x)
    zero = x == 0
    safe = O.where(zero, O.ones_like(y), y)
    out = O.where(zero, O.zeros_like(x * safe), x * O.log(safe))
    return O.where(O.isnan(y), y + x * 0, out)


def _diff_samples(src):
    yield Sample((src.tensor((5,)),))
    yield Sample((src.tensor((3, 4)),), dict(n=2, dim=1))
    yield Sample((src.tensor((3, 4)),), dict(dim=0, prepend=src.tensor((1, 4)), append=src.tensor((2, 4))))


@register(method=True, samples=_diff_samples, formula="dX[i] = dY[i-1] - dY[i]",
          torch=lambda torch, x, n=1, dim=-1, prepend=None, append=None: torch.diff(x, n, dim, prepend, append))
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th forward difference along ``dim``: ``y[i] = x[i + 1] - x[i]`` (repeated ``n`` times),
    after joining ``prepend`` before and ``append`` after ``input``. Bool inputs give ``x[i + 1] != x[i]``."""
    x = check_tensor(input, "diff")
    if x.ndim == 0:
        raise ShapeError("diff: expects input to be at least one-dimensional, got a 0-d tensor")
    if isinstance(n, bool):
        raise ArgumentTypeError(f"diff: n must be an int, got bool {n!r}")
    n = _c.size(n, "diff", "n", None)
    if n < 0:
        raise ArgumentError(f"diff: n (the order of the difference) must be >= 0, got {n}")
    d = one_dim(dim, x.ndim, "diff")
    parts = [check_tensor(p, "diff", nm) for p, nm in ((prepend, "prepend"), (x, "input"), (append, "append"))
             if p is not None]
    if len(parts) > 1:
        x = O.cat(parts, d)
    for _ in range(int(n)):
        a = O.getitem(x, (slice(None),) * d + (slice(1, None),))
        b = O.getitem(x, (slice(None),) * d + (slice(None, -1),))
        x = O.ne(a, b) if x.dtype == np.bool_ else a - b
    return x


# ------------------------------------------------- PyTorch's other spellings of the same ops
@export(method=True)
def true_divide(input, other):
    """Same as ``div``."""
    return div(input, other)


@export(method=True)
def divide(input, other, *, rounding_mode=None):
    """Same as ``div``."""
    return div(input, other, rounding_mode=rounding_mode) if rounding_mode is not None else div(input, other)


@export(method=True)
def subtract(input, other):
    """Same as ``sub``."""
    return sub(input, other)


@export(method=True)
def multiply(input, other):
    """Same as ``mul``."""
    return mul(input, other)


@export()
def rsub(input, other):
    """``other - input``."""
    return sub(other, input)


@export(method=True)
def square(input):
    """``input * input``."""
    return mul(input, input)
