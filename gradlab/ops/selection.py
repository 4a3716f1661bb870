"""Ops that pick between values: ``where``, ``maximum``, ``minimum``, ``clamp`` (``clip``,
``clamp_min``, ``clamp_max``) and ``nan_to_num``.

Their gradient flows to whichever input was picked. At a tie (``maximum(x, y)`` with ``x == y``)
PyTorch splits the gradient half and half; so does gradlab.
"""
from __future__ import annotations

import numpy as np

from .. import ops as O
from .._tensor import Tensor
from ..autograd.function import Op
from ..backend import dtypes as _dt, xp_of
from ..backend.arrays import as_array
from ..errors import ArgumentTypeError, DTypeError
from ._util import OneRule, arrays_for, check_broadcast, check_tensor, device_mismatch, operand, shape_of
from .compare import _tt
from .reduce import sum_to_in
from .registry import Sample, export, register
from .samples import binary_samples


@register(method=True, samples=lambda src: [Sample((Tensor._make(np.array([1.0, np.nan, np.inf, -np.inf, -2.0])),)),
                               Sample((Tensor._make(np.array([1.0, np.nan, np.inf, -np.inf])), 0.5, 9.0, -9.0))],
          formula="dX = dY where X is finite, 0 elsewhere", elementwise=True,
          torch=lambda torch, x, nan=0.0, posinf=None, neginf=None: torch.nan_to_num(x, nan, posinf, neginf))
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """Replace NaN by ``nan``, +inf by ``posinf`` and -inf by ``neginf`` (default: the dtype's largest and
    smallest finite values)."""
    x = check_tensor(input, "nan_to_num")
    if not _dt.is_floating(x.dtype):
        return O.clone(x)
    info = np.finfo(x.dtype)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    y = O.where(O.isnan(x), O.full_like(x, nan), x)
    y = O.where(O.logical_and(O.isinf(x), x > 0), O.full_like(x, posinf), y)
    return O.where(O.logical_and(O.isinf(x), x < 0), O.full_like(x, neginf), y)


@register(method=True, samples=lambda src: [Sample((src.tensor((3, 4), away_from=0.1), 0.2))], elementwise=True,
          formula="dX = dY where X > min", torch=lambda torch, x, m: torch.clamp_min(x, m), inplace=True)
def clamp_min(input, min):  # noqa: A002 - PyTorch's name
    """``max(input, min)`` elementwise (``clamp(input, min=min)``)."""
    return O.clamp(input, min=min)


@register(method=True, samples=lambda src: [Sample((src.tensor((3, 4), away_from=0.1), 0.2))], elementwise=True,
          formula="dX = dY where X < max", torch=lambda torch, x, m: torch.clamp_max(x, m), inplace=True)
def clamp_max(input, max):  # noqa: A002 - PyTorch's name
    """``min(input, max)`` elementwise (``clamp(input, max=max)``)."""
    return O.clamp(input, max=max)


class Maximum(OneRule, Op):
    name = "maximum"
    formula = "dA = sum_to(dY * [A > B] (+ half at ties), A.shape) ; dB likewise with [B > A]"
    pick = staticmethod(np.maximum)
    better = staticmethod(np.greater)

    @staticmethod
    def forward(ctx, a, b):
        x, y, _ = arrays_for(ctx.name, a, b)
        try:
            out = type(ctx).pick(x, y)
        except ValueError:
            check_broadcast(ctx.name, a, b)
            raise
        wa = type(ctx).better(x, y) + 0.5 * (x == y)  # a's share of the gradient
        ctx.shapes = (shape_of(a), shape_of(b))
        ctx.wa = Tensor._make(as_array(wa, dtype=out.dtype))
        ctx.save_for_backward(ctx.wa)
        return out

    def rule(self, ns, g, wa):  # the VJP, on tensors and arrays alike (OneRule)
        sa, sb = self.shapes
        nf = self.next_functions
        da = None if sa is None or nf[0] is None else sum_to_in(ns, g * wa, sa)
        db = None if sb is None or nf[1] is None else sum_to_in(ns, g * (1 - wa), sb)
        return da, db

    def jvp(self, ta, tb):
        wa = self.wa
        out = None if ta is None else ta * wa
        if tb is not None:
            out = tb * (1 - wa) if out is None else out + tb * (1 - wa)
        return out


class Minimum(Maximum):
    name = "minimum"
    formula = "dA = sum_to(dY * [A < B] (+ half at ties), A.shape) ; dB likewise with [B < A]"
    pick = staticmethod(np.minimum)
    better = staticmethod(np.less)


def _torch2(name):
    def ref(torch, a, b):
        return getattr(torch, name)(*_tt(torch, a, b))
    return ref


@register(op=Maximum, method=True, samples=binary_samples("maximum"), torch=_torch2("maximum"), elementwise=True,
          kernel=("maximum", "max({0}, {1})"))
def maximum(input, other):
    """Elementwise larger of two tensors (broadcasting); ties share the gradient."""
    return Maximum.apply(operand(input, "maximum", "input"), operand(other, "maximum", "other"))


@register(op=Minimum, method=True, samples=binary_samples("minimum"), torch=_torch2("minimum"), elementwise=True,
          kernel=("minimum", "min({0}, {1})"))
def minimum(input, other):
    """Elementwise smaller of two tensors (broadcasting); ties share the gradient."""
    return Minimum.apply(operand(input, "minimum", "input"), operand(other, "minimum", "other"))


class Clamp(OneRule, Op):
    name = "clamp"
    formula = "dX = dY * [min <= X <= max]"

    @staticmethod
    def forward(ctx, x, lo, hi):
        a = x._data
        out = a
        if lo is not None:
            out = np.maximum(out, a.dtype.type(lo))
        if hi is not None:
            out = np.minimum(out, a.dtype.type(hi))
        inside = xp_of(a).ones(a.shape, dtype=bool)
        if lo is not None:
            inside &= a >= lo
        if hi is not None:
            inside &= a <= hi
        ctx.mask = Tensor._make(inside)
        ctx.save_for_backward(ctx.mask)
        return as_array(out, dtype=a.dtype)

    def rule(self, ns, g, mask):  # the VJP, on tensors and arrays alike (OneRule)
        return g * mask, None, None

    def jvp(self, t, *_):
        return t * self.mask


def _clamp_samples(src):
    shape = src.shape(0, 3, 1, 4)
    yield Sample((src.tensor(shape, away_from=0.5),), dict(min=-0.5 + 0.01, max=0.5), desc="both bounds")
    yield Sample((src.tensor(shape, away_from=0.0),), dict(min=0.0), desc="min only (a relu)")
    yield Sample((src.tensor(shape, away_from=1.0),), dict(max=1.0), desc="max only")


@register(op=Clamp, method=True, samples=_clamp_samples, elementwise=True, inplace=True,
          torch=lambda torch, x, min=None, max=None: torch.clamp(x, min=min, max=max))
def clamp(input, min=None, max=None):  # noqa: A002 - PyTorch's names
    """Limit values to ``[min, max]``; the gradient is zero where a bound was applied.

    Tensor bounds are supported too (and receive gradient where they were picked)."""
    x = check_tensor(input, "clamp")
    if min is None and max is None:
        raise ArgumentTypeError("clamp: give at least one of min= and max=")
    for v, arg in ((min, "min"), (max, "max")):
        if v is not None and not isinstance(v, Tensor):
            operand(v, "clamp", arg)  # a number (or array-like): anything else is an ArgumentTypeError
    if x.dtype.kind in "biu" and any(isinstance(v, float) for v in (min, max)):
        from ..backend import dtypes as _dt  # an integer tensor clamped to 0.5 is a float tensor
        x = x.to(_dt.get_default_dtype())
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = x
        if min is not None:
            out = where(out < min, min, out)
        if max is not None:
            out = where(out > max, max, out)
        return out
    return Clamp.apply(x, min, max)


clip = export("clip", method=True)(clamp)


class Where(OneRule, Op):
    name = "where"
    formula = "dA = sum_to(where(C, dY, 0), A.shape) ; dB = sum_to(where(C, 0, dY), B.shape)"

    @staticmethod
    def forward(ctx, cond, a, b):
        x, y, _ = arrays_for("where", a, b)
        c = cond._data
        try:
            out = np.where(c, x, y)
        except ValueError:
            check_broadcast("where", a, b)
            check_broadcast("where", cond, a, ("condition", "input"))
            check_broadcast("where", cond, b, ("condition", "other"))
            raise
        ctx.shapes = (shape_of(a), shape_of(b))
        ctx.save_for_backward(cond)
        return out

    def rule(self, ns, g, cond):  # the VJP, on tensors and arrays alike (OneRule)
        sa, sb = self.shapes
        nf = self.next_functions
        da = None if sa is None or nf[1] is None else sum_to_in(ns, ns.where(cond, g, 0.0), sa)
        db = None if sb is None or nf[2] is None else sum_to_in(ns, ns.where(cond, 0.0, g), sb)
        return None, da, db

    def jvp(self, _, ta, tb):
        cond = self.args[0]
        shape = self.out.shape
        ta = O.zeros(shape, dtype=self.out.dtype, device=self.out.device) if ta is None else ta
        tb = O.zeros(shape, dtype=self.out.dtype, device=self.out.device) if tb is None else tb
        return O.broadcast_to(O.where(cond, ta, tb), shape)


def _where_samples(src):
    sa, sb = src.broadcast_pair()
    full = np.broadcast_shapes(sa, sb)
    cond = Tensor._make(src.rng.random(src.broadcastable(full)) > 0.5)
    yield Sample((cond, src.tensor(sa), src.tensor(sb)), desc="broadcast")
    yield Sample((cond, src.tensor(sa), 0.0), desc="scalar other")


@register(op=Where, samples=_where_samples, torch=lambda torch, c, a, b: torch.where(c, a, b))
def where(condition, input=None, other=None):
    """``input`` where ``condition`` is true, else ``other`` (all three broadcast).

    ``where(condition)`` alone is ``condition.nonzero(as_tuple=True)``: the indices of the true entries."""
    cond = check_tensor(condition, "where", "condition")
    if input is None and other is None:
        return cond.nonzero(as_tuple=True)
    if input is None or other is None:
        raise ArgumentTypeError("where: give both input and other (or neither, for the indices of the true entries)")
    for name, t in (("input", input), ("other", other)):
        if isinstance(t, Tensor) and type(t._data) is not type(cond._data) and t.device != cond.device:
            raise device_mismatch("where", t, cond, (name, "condition"))
    if cond.dtype != _dt.bool_:
        raise DTypeError(f"where: condition must be a bool tensor, got dtype {_dt.dtype_name(cond.dtype)}; compare "
                         f"first (where(c > 0, ...)) or convert with .bool()")
    return Where.apply(cond, operand(input, "where", "input"), operand(other, "where", "other"))


def _fmax_fmin(name, pick):
    def fn(input, other):
        a, b = operand(input, name, "input"), operand(other, name, "other")
        if not isinstance(a, Tensor):
            a = O.full_like(b, a) if isinstance(b, Tensor) else a
        if not isinstance(b, Tensor):
            b = O.full_like(a, b)
        take_a = O.logical_or(pick(a, b), O.isnan(b))  # NaN only where both are NaN
        return where(take_a, a, b)
    fn.__name__ = name
    fn.__doc__ = (f"Elementwise {'larger' if name == 'fmax' else 'smaller'} of two tensors, ignoring NaN: a NaN "
                  "loses to a number (``maximum``/``minimum`` propagate it); ties send the gradient to ``input``.")
    return fn


fmax = register("fmax", method=True, samples=binary_samples("fmax"), formula="dA = dY where A wins (or B is NaN) ; dB = dY elsewhere",
                torch=_torch2("fmax"))(_fmax_fmin("fmax", lambda a, b: O.ge(a, b)))
fmin = register("fmin", method=True, samples=binary_samples("fmin"), formula="dA = dY where A wins (or B is NaN) ; dB = dY elsewhere",
                torch=_torch2("fmin"))(_fmax_fmin("fmin", lambda a, b: O.le(a, b)))
