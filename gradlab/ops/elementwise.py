"""Elementwise arithmetic: ``+ - * / **`` between tensors and Python numbers.

Each op keeps its forward (on arrays), its VJP (written with gradlab ops, so it
is differentiable again), its JVP and its formula together. Binary ops
broadcast; their VJP sums the gradient back to each input's exact shape with
``sum_to`` -- without that step, ``x (3,1) * y (1,3)`` would hand ``x`` a
(3, 3) gradient, the classic broadcasting bug.
"""
from __future__ import annotations

import numpy as np

from .. import ops as O
from ..autograd.function import Op
from ..backend.arrays import as_array
from .._tensor import Tensor
from ._util import _FLOATS, WEAK_FLOATS, arrays_for, as_weak, check_broadcast, operand, weak_float
from .reduce import sum_to_array
from .registry import register
from .samples import binary_samples


# --------------------------------------------------------------------- binary
class _Binary(Op):
    """Shared forward plumbing: promote dtypes, broadcast, compute."""

    def _compute(self, a, b, f):
        # the everyday cases inline: a float tensor and a Python float (as a cached 0-d array: same
        # numbers, half the time), or two tensors of one dtype; arrays_for promotes everything else
        if type(a) is Tensor:
            x = a.data
            dt = x.dtype
            if type(b) is float and dt in _FLOATS:
                y = b
                if type(x) is np.ndarray:
                    y = WEAK_FLOATS.get((b, dt))
                    if y is None:
                        y = weak_float(b, dt)
            elif type(b) is Tensor and b.data.dtype is dt and type(b.data) is type(x):
                y = b.data
            else:
                x, y, dt = arrays_for(self.name, a, b)
        else:
            x, y, dt = arrays_for(self.name, a, b)
        try:
            if dt.itemsize <= 2:  # float16/bfloat16 overflow to inf quietly, as in PyTorch
                with np.errstate(over="ignore", under="ignore", invalid="ignore"):
                    return f(x, y)
            return f(x, y)
        except ValueError:
            check_broadcast(self.name, a, b)
            raise

    @property
    def shapes(self):
        """The shape each input's gradient must be summed back to: None for a Python scalar or an
        input that needs no gradient (the VJP skips it; ``mul`` did not even save the other factor)."""
        (ma, mb), (ea, eb) = self.input_meta, self.next_functions
        return (None if ea is None else ma[0]), (None if eb is None else mb[0])


def _reduce_to(g, shape):
    return None if shape is None else O.sum_to(g, shape)




class Add(_Binary):
    name = "add"
    formula = "dA = sum_to(dY, A.shape) ; dB = sum_to(dY, B.shape)"

    @staticmethod
    def forward(ctx, a, b):
        return ctx._compute(a, b, np.add)

    def vjp(self, g):
        sa, sb = self.shapes
        return _reduce_to(g, sa), _reduce_to(g, sb)

    def vjp_arrays(self, g):
        sa, sb = self.shapes
        return (None if sa is None else sum_to_array(g, sa)), (None if sb is None else sum_to_array(g, sb))

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
        sa, sb = self.shapes
        return _reduce_to(g, sa), (None if sb is None else O.neg(O.sum_to(g, sb)))

    def vjp_arrays(self, g):
        sa, sb = self.shapes
        return (None if sa is None else sum_to_array(g, sa)), (None if sb is None else -sum_to_array(g, sb))

    def jvp(self, ta, tb):
        return _tsum(ta, None if tb is None else -tb)


class Mul(_Binary):
    name = "mul"
    formula = "dA = sum_to(dY * B, A.shape) ; dB = sum_to(dY * A, B.shape)"

    @staticmethod
    def forward(ctx, a, b):
        # each input's gradient needs the *other* input: save only what a gradient will need
        ctx.save_for_backward(a if isinstance(b, Tensor) and b.requires_grad else None,
                              b if isinstance(a, Tensor) and a.requires_grad else None)
        return ctx._compute(a, b, np.multiply)

    def vjp(self, g):
        a, b = self.saved_tensors
        sa, sb = self.shapes
        return (None if sa is None else O.sum_to(g * b, sa)), (None if sb is None else O.sum_to(g * a, sb))

    def vjp_arrays(self, g):
        a, b = self.saved_arrays
        sa, sb = self.shapes
        return ((None if sa is None else sum_to_array(g * as_weak(b, g), sa)),
                (None if sb is None else sum_to_array(g * as_weak(a, g), sb)))

    def jvp(self, ta, tb):
        a, b = self.args
        return _tsum(None if ta is None else ta * b, None if tb is None else a * tb)


class Div(_Binary):
    name = "div"
    formula = "dA = sum_to(dY / B, A.shape) ; dB = sum_to(-dY * A / B^2, B.shape)"

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            return ctx._compute(a, b, np.true_divide)

    def vjp(self, g):
        a, b = self.saved_tensors
        sa, sb = self.shapes
        da = None if sa is None else O.sum_to(g / b, sa)
        db = None if sb is None else O.sum_to(-g * a / (b * b), sb)
        return da, db

    def vjp_arrays(self, g):
        a, b = self.saved_arrays
        sa, sb = self.shapes
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            da = None if sa is None else sum_to_array(g / b, sa)
            db = None if sb is None else sum_to_array(-g * a / (b * b), sb)
        return da, db

    def jvp(self, ta, tb):
        a, b = self.args
        return _tsum(None if ta is None else ta / b, None if tb is None else -tb * a / (b * b))


class Pow(_Binary):
    name = "pow"
    formula = "dA = sum_to(dY * B * A^(B-1), A.shape) ; dB = sum_to(dY * Y * log(A), B.shape)"

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            y = ctx._compute(a, b, _power)
        if isinstance(b, Tensor):  # Y is only needed for the exponent's gradient
            ctx.save_output(y)
        return y

    def vjp(self, g):
        a, b, *y = self.saved_tensors
        y = y[0] if y else None
        sa, sb = self.shapes
        da = db = None
        if sa is not None:
            da = O.sum_to(g * b * a ** (b - 1), sa) if not _is_zero(b) else O.sum_to(g * 0, sa)
        if sb is not None:
            db = O.sum_to(g * y * _log_or_zero(a, b), sb)
        return da, db

    def vjp_arrays(self, g):
        a, b, *y = self.saved_arrays
        sa, sb = self.shapes
        da = db = None
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if sa is not None:
                exponent_zero = self.input_meta[1] is None and b == 0
                da = sum_to_array(g * 0 if exponent_zero else g * b * a ** (b - 1), sa)
            if sb is not None:
                db = sum_to_array(g * y[0] * _log_or_zero_array(a, b), sb)
        return da, db

    def jvp(self, ta, tb):
        a, b = self.args
        y = self.out
        return _tsum(None if ta is None else ta * b * a ** (b - 1),
                     None if tb is None else tb * y * _log_or_zero(a, b))


def _power(x, y):
    """``np.power``; an integer to a negative integer power gives PyTorch's integer answer
    (1 for base 1, +-1 for base -1, else 0) where NumPy raises."""
    try:
        return np.power(x, y)
    except ValueError as e:
        if "negative integer powers" not in str(e):
            raise
    from ..backend import xp_of
    xp = xp_of(y if hasattr(y, "dtype") else x)
    neg = y < 0
    out = xp.power(x, xp.where(neg, 0, y))
    odd = xp.where(xp.remainder(y, 2) == 1, -1, 1)
    return xp.where(neg, xp.where(x == 1, 1, xp.where(x == -1, odd, 0)), out).astype(out.dtype)


def _is_zero(b):
    return not isinstance(b, Tensor) and b == 0


def _log_or_zero(a, b):
    """log(a), with 0 where a == 0 and b >= 0 (the limit PyTorch uses: d(0^b)/db = 0).

    Only called when ``b`` is a tensor (a gradient for the exponent is wanted).
    """
    if not isinstance(a, Tensor):
        return float(np.log(a)) if a > 0 else (0.0 if a == 0 else float("nan"))
    zero = (a == 0) & (b >= 0)
    return O.where(zero, 0.0, O.log(O.where(a == 0, 1.0, a)))


def _log_or_zero_array(a, b):
    """``_log_or_zero`` on arrays (``a`` may be a Python number)."""
    if np.ndim(a) == 0 and not hasattr(a, "dtype"):
        return float(np.log(a)) if a > 0 else (0.0 if a == 0 else float("nan"))
    zero = (a == 0) & (b >= 0)
    return np.where(zero, 0.0, np.log(np.where(a == 0, 1.0, a)))


def _tsum(x, y):
    if x is None:
        return y
    return x if y is None else x + y


def _binary_entry(name, torch_name):
    return dict(samples=binary_samples(name), torch=lambda torch, a, b: getattr(torch, torch_name)(a, b),
                elementwise=True)


@register(op=Add, **_binary_entry("add", "add"))
def add(input, other, *, alpha=1):
    """``input + other`` (``input + alpha * other`` when ``alpha`` is given), broadcasting."""
    if alpha != 1:
        other = mul(other, alpha)
    if type(input) is not Tensor:
        input = operand(input, "add", "input")
    if type(other) is not Tensor and type(other) is not float:
        other = operand(other, "add", "other")
    return Add.apply(input, other)


@register(op=Sub, **_binary_entry("sub", "sub"))
def sub(input, other, *, alpha=1):
    """``input - other`` (``input - alpha * other`` when ``alpha`` is given), broadcasting."""
    if alpha != 1:
        other = mul(other, alpha)
    if type(input) is not Tensor:
        input = operand(input, "sub", "input")
    if type(other) is not Tensor and type(other) is not float:
        other = operand(other, "sub", "other")
    return Sub.apply(input, other)


@register(op=Mul, **_binary_entry("mul", "mul"))
def mul(input, other):
    """``input * other`` elementwise, broadcasting."""
    if type(input) is not Tensor:
        input = operand(input, "mul", "input")
    if type(other) is not Tensor and type(other) is not float:
        other = operand(other, "mul", "other")
    return Mul.apply(input, other)


def _rounded_div(a, b, mode):
    from ..backend import dtypes as _dt
    from ..errors import ArgumentError
    if mode not in ("trunc", "floor"):
        raise ArgumentError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {mode!r}")
    if _dt.category(_dt.result_type(a, b)) < 2:  # integers: an integer quotient
        q = O.floor_divide(a, b)
        if mode == "floor":
            return q
        x, y, _ = arrays_for("div", a, b)
        fix = (as_array(x - q.data * y) != 0) & ((as_array(x) < 0) != (as_array(y) < 0))  # on x's device
        return Tensor._make(q.data + fix.astype(q.data.dtype))  # floor -> toward zero
    q = div(a, b)
    return O.trunc(q) if mode == "trunc" else O.floor(q)


@register(op=Div, **_binary_entry("div", "div"))
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
            and isinstance(a, Tensor) and a.data.dtype.kind in "biu":
        from ..errors import ArgumentError
        raise ArgumentError(f"pow: an integer tensor (dtype {a.dtype}) to the negative integer power {b} "
                            f"is not allowed; use a float tensor (x.float() ** {b})")
    return Pow.apply(a, b)
