"""Reductions: ops that summarize a tensor along dims.

Holds: ``sum``, ``mean``, ``amax``/``amin``, ``max``/``min``, ``argmax``/``argmin``, ``sum_to``;
``var``/``std``, ``logsumexp``, ``prod``; the cumulative ops ``cumsum``, ``cumprod``, ``cummax``,
``cummin``; ``any``/``all``, ``count_nonzero``, ``nansum``/``nanmean`` and ``bincount``.

The VJP of a reduction puts the reduced dimensions back (as size 1) and broadcasts the gradient
over them: every summed element gets the same gradient. ``sum_to`` is the reverse of broadcasting,
and is how every binary op reduces its gradient back to an input's shape. ``logsumexp`` subtracts
the max before exponentiating (``exp(1e4)`` is ``inf``); ``prod``'s VJP handles zeros without
dividing by them.
"""
from __future__ import annotations

import builtins
import collections
import math

import numpy as np

from .. import checks as _c, ops as O
from .._tensor import Tensor
from ..autograd.function import Op
from ..backend import dtypes as _dt
from ..backend.arrays import as_array
from ..backend.device import xp_of
from ..backend.fperr import quiet as _fp_quiet
from ..errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError, ValueRuntimeError, fmt_shape
from ._util import OneRule, apply_in, check_tensor, float_input, norm_dim, one_dim
from .compare import _no_grad
from .registry import Sample, export, register
from .samples import reduce_samples, unary_samples


def count_nonzero(input, dim=None):
    """How many entries are not zero (over all, or along ``dim``)."""
    return O.sum(O.ne(check_tensor(input, "count_nonzero"), 0), dim=dim)


register('count_nonzero', method=True, samples=lambda src: [Sample((src.tensor((3, 4)),), dict(dim=src.dim(2)))],
         formula='(no gradient)', torch=lambda torch, x, **kw: torch.count_nonzero(x, **kw), differentiable=False)(count_nonzero)


@register(method=True, samples=_no_grad(unary_samples()), differentiable=False, formula="(no gradient)",
          torch=lambda torch, x: torch.any(x))
def any(input, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A001
    x = check_tensor(input, "any")
    axes = norm_dim(dim if axis is None else axis, x.ndim, "any")
    return Tensor._make(as_array(np.any(x._data, axis=axes, keepdims=keepdim if keepdims is None else keepdims)))


@register(method=True, samples=_no_grad(unary_samples()), differentiable=False, formula="(no gradient)",
          torch=lambda torch, x: torch.all(x))
def all(input, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A001
    x = check_tensor(input, "all")
    axes = norm_dim(dim if axis is None else axis, x.ndim, "all")
    return Tensor._make(as_array(np.all(x._data, axis=axes, keepdims=keepdim if keepdims is None else keepdims)))


_bmax = builtins.max  # this module defines its own ``max``


def _kept_shape(shape, axes):
    """``shape`` with the reduced axes set to 1 (what keepdim=True gives)."""
    axes = range(len(shape)) if axes is None else axes
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def expand_back(ns, g, in_shape, axes, keepdim):
    """Broadcast a reduction's gradient back over the dimensions it reduced, in a ``OneRule``'s namespace
    (on arrays a read-only broadcast view: no copy)."""
    if not keepdim:
        g = g.reshape(_kept_shape(in_shape, axes))
    return O.broadcast_to(g, in_shape) if ns is O else xp_of(g).broadcast_to(g, in_shape)


def sum_to_array(a, shape):
    """Sum array ``a`` down to ``shape``: the inverse of broadcasting (``sum_to`` on arrays)."""
    if a.shape == shape:
        return a
    lead = a.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and a.shape[lead + i] != 1)
    if not axes:
        return a.reshape(shape)
    return a.sum(axis=axes).reshape(shape)


def sum_to_in(ns, g, shape):
    """``sum_to`` in a ``OneRule``'s namespace: ``O.sum_to`` (a graph, differentiable again) when ``ns``
    is ``O``, else ``sum_to_array``. The VJP of anything that broadcasts sums the gradient back this way."""
    if ns is O:
        return O.sum_to(g, shape)
    return g if g.shape == shape else sum_to_array(g, shape)  # (the usual case, no broadcast, without a call)


def _keep(keepdim, keepdims, fn):
    """``keepdims=`` (NumPy's spelling) is accepted for ``keepdim=``, as PyTorch accepts it; a bool."""
    return _c.flag(keepdim if keepdims is None else keepdims, fn, "keepdim")


def _dim_arg(dim, axis, op):
    if axis is not None:
        if dim is not None:
            raise ArgumentError(f"{op}: pass dim= or axis=, not both")
        dim = axis
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        return None  # as PyTorch: an empty dim list reduces over every dim (x.sum(()) is x.sum())
    return dim


class SumTo(OneRule, Op):
    """Sum a broadcast gradient back to ``shape``: the inverse of broadcasting."""

    name = "sum_to"
    formula = "dX = broadcast_to(dY, X.shape)"

    @staticmethod
    def forward(ctx, x, shape):
        lead = x.ndim - len(shape)
        ctx.in_shape = x.shape
        ctx.axes = tuple(range(lead)) + tuple(  # the widget shows which axes were summed
            lead + i for i, s in enumerate(shape) if s == 1 and x.shape[lead + i] != 1)
        return sum_to_array(x._data, shape)

    def rule(self, ns, g):  # the VJP, on tensors and arrays alike (OneRule)
        return ns.broadcast_to(g, self.in_shape), None

    def jvp(self, t, _):
        return O.sum_to(t, self.out.shape)


def _sum_to_samples(src):
    a, b = src.broadcast_pair()
    full = np.broadcast_shapes(a, b)
    yield Sample((src.tensor(full), a), desc="reduce to a broadcast operand")
    yield Sample((src.tensor((3, 3)), (3, 1)), desc="(3,3) -> (3,1)")


@register(op=SumTo, method=True, samples=_sum_to_samples, torch=lambda torch, x, shape: x.sum_to_size(shape) if shape else x.sum())
def sum_to(input, shape):
    """Sum ``input`` down to ``shape`` (which must broadcast to ``input.shape``)."""
    x = check_tensor(input, "sum_to")
    shape = _c.shape(shape, "sum_to", "shape")
    if x.shape == shape:
        return x
    try:
        if np.broadcast_shapes(shape, x.shape) != x.shape:
            raise ValueError
    except ValueError:
        raise ShapeError(f"sum_to: cannot sum {fmt_shape(x.shape)} down to {fmt_shape(shape)}: "
                         f"{fmt_shape(shape)} does not broadcast to {fmt_shape(x.shape)}") from None
    return SumTo.apply(x, shape)


class Sum(OneRule, Op):
    name = "sum"
    formula = "dX = broadcast_to(dY, X.shape)   (every summed element gets dY)"

    @staticmethod
    def forward(ctx, x, axes, keepdim, dtype):
        ctx.in_shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        # (the array's own .sum: the same reduction as np.sum without its Python wrapper, twice as fast on
        # a small tensor; CuPy arrays have it too)
        return as_array(x._data.sum(axis=axes, keepdims=keepdim, dtype=dtype))

    def rule(self, ns, g):  # the VJP, on tensors and arrays alike (OneRule)
        return expand_back(ns, g, self.in_shape, self.axes, self.keepdim), None, None, None

    def jvp(self, t, *_):
        return O.sum(t, dim=self.axes, keepdim=self.keepdim)


def _sum_dtype(x, dtype):
    if dtype is not None:
        return _dt.as_dtype(dtype)
    if _dt.category(x.dtype) < 2:
        return _dt.int64  # as PyTorch: integer and bool sums are int64
    return None


@register(op=Sum, method=True, samples=reduce_samples(),
          torch=lambda torch, x, dim=None, keepdim=False: torch.sum(x) if dim is None else torch.sum(x, dim=dim, keepdim=keepdim),
          autocast="float32")
def sum(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):  # noqa: A001 - PyTorch's name
    """Sum over ``dim`` (an int, a tuple, or None for all dims)."""
    x = check_tensor(input, "sum")
    axes = norm_dim(_dim_arg(dim, axis, "sum"), x.ndim, "sum")
    return Sum.apply(x, axes, _keep(keepdim, keepdims, "sum"), _sum_dtype(x, dtype))


class Mean(OneRule, Op):
    name = "mean"
    formula = "dX = broadcast_to(dY, X.shape) / N   (N = number of elements averaged)"

    @staticmethod
    def forward(ctx, x, axes, keepdim):
        ctx.in_shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        reduced = range(x.ndim) if axes is None else axes
        ctx.count = math.prod(x.shape[a] for a in reduced)
        if ctx.count == 0:  # the mean of nothing is nan, as in PyTorch (and no NumPy "empty slice" warning)
            return as_array(np.sum(x._data, axis=axes, keepdims=keepdim) * np.nan, dtype=x.dtype)
        return as_array(x._data.mean(axis=axes, keepdims=keepdim), dtype=x.dtype)  # (no np.mean wrapper)

    def rule(self, ns, g):  # the VJP, on tensors and arrays alike (OneRule)
        # an empty input has an empty gradient, so the max(., 1) never changes a value
        return expand_back(ns, g / _bmax(self.count, 1), self.in_shape, self.axes, self.keepdim), None, None

    def jvp(self, t, *_):
        return O.mean(t, dim=self.axes, keepdim=self.keepdim)


@register(op=Mean, method=True, samples=reduce_samples(allow_empty=False),
          torch=lambda torch, x, dim=None, keepdim=False: torch.mean(x) if dim is None else torch.mean(x, dim=dim, keepdim=keepdim),
          autocast="float32")
def mean(input, dim=None, keepdim=False, *, axis=None, dtype=None, keepdims=None):
    """Average over ``dim`` (an int, a tuple, or None for all dims); ``dtype`` casts the input first."""
    x = check_tensor(input, "mean")
    if dtype is not None:
        x = x.to(dtype)
    if _dt.category(x.dtype) < 2:
        raise DTypeError(f"mean: input has dtype {x.dtype}; mean needs a floating tensor, e.g. x.float().mean()")
    axes = norm_dim(_dim_arg(dim, axis, "mean"), x.ndim, "mean")
    return Mean.apply(x, axes, _keep(keepdim, keepdims, "mean"))


class Amax(OneRule, Op):
    """Max over dims; ties share the gradient equally (as PyTorch's amax)."""

    name = "amax"
    formula = "dX = broadcast(dY) * (X == max) / count(X == max)"
    fn = staticmethod(np.max)

    @staticmethod
    def forward(ctx, x, axes, keepdim):
        if (x._data.size == 0 and axes is None) or builtins.any(x.shape[a] == 0 for a in (axes or ())):
            raise ArgumentError(
                f"{ctx.name}: cannot reduce an empty dimension of a tensor of shape {fmt_shape(x.shape)}: "
                "the max of nothing is undefined")
        ctx.in_shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        y = as_array(type(ctx).fn(x._data, axis=axes, keepdims=keepdim))
        ctx.save_for_backward(x)
        ctx.save_output(y)
        return y

    def _weights(self, ns, x, y):
        """1 / (number of ties) where X is the max, 0 elsewhere: ties share the gradient equally."""
        hit = x == _kept(y, self.in_shape, self.axes, self.keepdim)
        mask = hit.to(x.dtype) if ns is O else hit.astype(x.dtype)
        return mask / mask.sum(axis=self.axes, keepdims=True)

    def rule(self, ns, g, x, y):  # the VJP, on tensors and arrays alike (OneRule)
        return expand_back(ns, g, self.in_shape, self.axes, self.keepdim) * self._weights(ns, x, y), None, None

    def jvp(self, t, *_):
        x = self.args[0]
        return O.sum(t * self._weights(O, x, self.out), dim=self.axes, keepdim=self.keepdim)


class Amin(Amax):
    name = "amin"
    formula = "dX = broadcast(dY) * (X == min) / count(X == min)"
    fn = staticmethod(np.min)


def _red(op_cls, name):
    def fn(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
        x = check_tensor(input, name)
        axes = norm_dim(_dim_arg(dim, axis, name), x.ndim, name)
        return op_cls.apply(x, axes, _keep(keepdim, keepdims, name))
    fn.__name__ = name
    fn.__doc__ = f"The {name[1:]}imum over ``dim`` (int, tuple or None); ties share the gradient equally."
    return register(name, op=op_cls, samples=reduce_samples(distinct=True, allow_empty=False), method=True,
                    torch=lambda torch, x, dim=None, keepdim=False: (
                        getattr(torch, name)(x) if dim is None else getattr(torch, name)(x, dim=dim, keepdim=keepdim)))(fn)


amax = _red(Amax, "amax")
amin = _red(Amin, "amin")

MaxResult = collections.namedtuple("MaxResult", ["values", "indices"])


def _max_min(name, arg_fn, red_fn, binary_fn, input, dim, keepdim, axis, other):
    x = check_tensor(input, name)
    if isinstance(dim, O.Tensor) and other is None:
        other, dim = dim, None
    if other is not None:
        return binary_fn(x, other)
    dim = _dim_arg(dim, axis, name)
    if dim is None:
        return red_fn(x)
    if not isinstance(dim, (int, np.integer)):
        return red_fn(x, dim, keepdim)  # a tuple of dims: values only, like amax
    d = one_dim(dim, x.ndim, name)
    if x.ndim == 0:
        return MaxResult(x, O.zeros((), dtype=_dt.int64, device=x.device))
    _c.nonempty_dim(x.shape, d, name)
    idx = arg_fn(x, dim=d, keepdim=True)
    values = O.gather(x, d, idx)
    if not keepdim:
        values, idx = O.squeeze(values, d), O.squeeze(idx, d)
    return MaxResult(values, idx)


def _max_samples(src):
    shape = src.shape(1, 3, 1, 4)
    yield Sample((src.tensor(shape, distinct=True),), desc="all dims")
    yield Sample((src.tensor(shape, distinct=True),), dict(dim=src.dim(len(shape)), keepdim=src.boolean()))


def _torch_max(name):
    def ref(torch, x, dim=None, keepdim=False):
        if dim is None:
            return getattr(torch, name)(x)
        return getattr(torch, name)(x, dim=dim, keepdim=keepdim)
    return ref


@register(method=True, samples=_max_samples, formula="dX = dY at the argmax (scattered back), 0 elsewhere", torch=_torch_max("max"))
def max(input, dim=None, keepdim=False, *, axis=None, other=None, keepdims=None):  # noqa: A001
    """``max(x)``: the largest value; ``max(x, dim)``: ``(values, indices)`` as PyTorch;
    ``max(x, y)``: elementwise maximum."""
    return _max_min("max", O.argmax, amax, O.maximum, input, dim, _keep(keepdim, keepdims, "max"), axis, other)


@register(method=True, samples=_max_samples, formula="dX = dY at the argmin (scattered back), 0 elsewhere", torch=_torch_max("min"))
def min(input, dim=None, keepdim=False, *, axis=None, other=None, keepdims=None):  # noqa: A001
    """``min(x)``: the smallest value; ``min(x, dim)``: ``(values, indices)`` as PyTorch;
    ``min(x, y)``: elementwise minimum."""
    return _max_min("min", O.argmin, amin, O.minimum, input, dim, _keep(keepdim, keepdims, "min"), axis, other)


def _arg(name, fn):
    def f(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
        x = check_tensor(input, name)
        dim, keepdim = _dim_arg(dim, axis, name), _keep(keepdim, keepdims, name)
        d = None if dim is None else one_dim(dim, x.ndim, name)
        if x._data.size == 0 and (d is None or x.ndim == 0 or x.shape[d] == 0):
            raise ArgumentError(f"{name}: the input of shape {fmt_shape(x.shape)} is empty"
                                + ("" if d is None else f" along dim {dim}"))
        if dim is None:
            out = as_array(fn(x._data.reshape(-1)))
            if keepdim:
                out = out.reshape((1,) * x.ndim)
        else:
            out = fn(x._data, axis=d, keepdims=keepdim) if x.ndim else xp_of(x._data).asarray(0)
        return O.Tensor._make(as_array(out, dtype=np.int64))
    f.__name__ = name
    f.__doc__ = f"Index of the {name[3:]}imum (over all elements, or along ``dim``); not differentiable."
    return export(name, method=True)(f)


argmax = _arg("argmax", np.argmax)
argmin = _arg("argmin", np.argmin)


def _count(shape, axes):
    return math.prod(shape[a] for a in (range(len(shape)) if axes is None else axes))


def _kept(t, in_shape, axes, keepdim):
    """A reduced tensor or array reshaped so that it broadcasts against the input (reduced dims as size 1;
    ``.reshape`` is the same call on both)."""
    return t if keepdim else t.reshape(_kept_shape(in_shape, axes))


def _need_float(x, op):
    if _dt.category(x.dtype) < 2:
        raise DTypeError(f"{op}: input has dtype {x.dtype}; {op} needs a floating tensor, e.g. x.float()")


# ------------------------------------------------------------------ var, std
class Var(OneRule, Op):
    name = "var"
    formula = "dX = broadcast(dY) * 2 * (X - mean(X)) / (N - correction)"

    @staticmethod
    def forward(ctx, x, axes, correction, keepdim):
        ctx.axes, ctx.correction, ctx.keepdim, ctx.in_shape = axes, correction, keepdim, x.shape
        ctx.denom = _count(x.shape, axes) - correction
        ctx.save_for_backward(x)
        return as_array(Var._compute(x._data, axes, keepdim, ctx.denom), dtype=x._data.dtype)

    @staticmethod
    def _compute(a, axes, keepdim, denom):
        """The variance, in float32 for 16-bit floats (as PyTorch: their squares overflow at 256)."""
        if a.dtype.itemsize < 4:
            a = a.astype(np.float32)
        if a.size == 0:  # nan where nothing is reduced, as PyTorch (and no NumPy "Mean of empty slice" warning)
            return np.sum(a, axis=axes, keepdims=keepdim) * np.nan
        d = a - np.mean(a, axis=axes, keepdims=True)
        return np.sum(d * d, axis=axes, keepdims=keepdim) / builtins.max(denom, 0)

    def _dvar_dx(self, x):
        """dVar/dX = 2 (X - mean(X)) / (N - correction), on a tensor or an array (the same calls)."""
        centered = x - x.mean(axis=self.axes, keepdims=True)
        return centered * (2.0 / self.denom if self.denom > 0 else float("inf"))

    def rule(self, ns, g, x):  # the VJP, on tensors and arrays alike (OneRule)
        return _kept(g, self.in_shape, self.axes, self.keepdim) * self._dvar_dx(x), None, None, None

    def jvp(self, t, *_):
        return O.sum(t * self._dvar_dx(self.args[0]), dim=self.axes, keepdim=self.keepdim)


class Std(Var):
    name = "std"
    formula = "dX = broadcast(dY / (2 * Y)) * 2 * (X - mean(X)) / (N - correction)   (0 where Y == 0)"

    @staticmethod
    def forward(ctx, x, axes, correction, keepdim):
        ctx.axes, ctx.correction, ctx.keepdim, ctx.in_shape = axes, correction, keepdim, x.shape
        ctx.denom = _count(x.shape, axes) - correction
        ctx.save_for_backward(x)
        y = as_array(np.sqrt(Var._compute(x._data, axes, keepdim, ctx.denom)), dtype=x._data.dtype)
        ctx.save_output(y)
        return y

    @staticmethod
    def _dvar(ns, g, y):
        # d sqrt(v) = dv / (2 sqrt(v)); PyTorch sets it to 0 where the std is 0
        zero = y == 0
        return ns.where(zero, 0.0, g / (2 * ns.where(zero, 1.0, y)))

    def rule(self, ns, g, x, y):  # the VJP, on tensors and arrays alike (OneRule): var's, after sqrt's
        return Var.rule(self, ns, self._dvar(ns, g, y), x)

    def jvp(self, t, *_):
        dv = O.sum(t * self._dvar_dx(self.args[0]), dim=self.axes, keepdim=self.keepdim)
        return self._dvar(O, dv, self.out)


def _correction(unbiased, correction, op):
    if correction is not None and unbiased is not None:
        raise ArgumentError(f"{op}: pass correction= or unbiased=, not both")
    if correction is not None:
        return correction
    return 1 if unbiased is None or _c.flag(unbiased, op, "unbiased") else 0


def _var_std(op_cls, name, input, dim, unbiased, keepdim, correction, axis):
    x = check_tensor(input, name)
    _need_float(x, name)
    if isinstance(dim, bool):  # the old spelling var(x, False)
        dim, unbiased = None, dim
    axes = norm_dim(_dim_arg(dim, axis, name), x.ndim, name)
    return op_cls.apply(x, axes, _correction(unbiased, correction, name), _c.flag(keepdim, name, "keepdim"))


def _var_samples(src):
    shape = src.shape(1, 3, 2, 4)  # at least 2 elements per reduced dim: N - correction > 0
    yield Sample((src.tensor(shape),), desc="all dims, correction=1")
    yield Sample((src.tensor(shape),), dict(dim=src.dim(len(shape)), keepdim=src.boolean()), desc="one dim")
    yield Sample((src.tensor(shape),), dict(dim=src.dim(len(shape)), correction=0), desc="correction=0")
    if len(shape) >= 2:
        yield Sample((src.tensor(shape),), dict(dim=(0, -1), correction=src.choice([0, 1]), keepdim=True),
                     desc="two dims")


def _torch_var(name):
    def ref(torch, x, dim=None, keepdim=False, correction=1):
        return getattr(torch, name)(x, dim=dim, correction=correction, keepdim=keepdim)
    return ref


@register(op=Var, method=True, samples=_var_samples, torch=_torch_var("var"))
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None):
    """Variance over ``dim``: ``sum((x - mean)^2) / (N - correction)``; ``correction=1`` by default
    (Bessel's correction, as PyTorch), ``correction=0`` for the population variance."""
    return _var_std(Var, "var", input, dim, unbiased, _keep(keepdim, keepdims, "var"), correction, axis)


@register(op=Std, method=True, samples=_var_samples, torch=_torch_var("std"))
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None):
    """Standard deviation: ``sqrt(var(...))`` with the same arguments; its gradient is 0 where it is 0."""
    return _var_std(Std, "std", input, dim, unbiased, _keep(keepdim, keepdims, "std"), correction, axis)


# ------------------------------------------------------------------ logsumexp
class LogSumExp(OneRule, Op):
    name = "logsumexp"
    formula = "dX = broadcast(dY) * exp(X - Y)   (the softmax of X)"

    @staticmethod
    def forward(ctx, x, axes, keepdim):
        ctx.axes, ctx.keepdim, ctx.in_shape = axes, keepdim, x.shape
        ctx.save_for_backward(x)
        a = x._data
        m = np.max(a, axis=axes, keepdims=True, initial=-np.inf)
        m = np.where(np.isfinite(m), m, 0)  # rows of -inf (or +inf) stay -inf (+inf) instead of nan
        y = np.log(np.sum(np.exp(a - m), axis=axes, keepdims=True)) + m
        y = as_array(y if keepdim else y.reshape(_reduced(a.shape, axes)), dtype=a.dtype)
        ctx.save_output(y)
        return y

    def _softmax(self, ns, x, y):
        return ns.exp(x - _kept(y, self.in_shape, self.axes, self.keepdim))

    def rule(self, ns, g, x, y):  # the VJP, on tensors and arrays alike (OneRule)
        return _kept(g, self.in_shape, self.axes, self.keepdim) * self._softmax(ns, x, y), None, None

    def jvp(self, t, *_):
        return O.sum(t * self._softmax(O, self.args[0], self.out), dim=self.axes, keepdim=self.keepdim)


def _reduced(shape, axes):
    return () if axes is None else tuple(s for i, s in enumerate(shape) if i not in axes)


def _lse_samples(src):
    shape = src.shape(1, 3, 1, 4)
    yield Sample((src.tensor(shape, low=-5, high=5), src.dim(len(shape))), dict(keepdim=src.boolean()), desc="one dim")
    if len(shape) >= 2:
        yield Sample((src.tensor(shape), (0, 1)), desc="two dims")
    yield Sample((src.tensor((2, 3), low=-3e3, high=3e3), 1), desc="large logits")


@register(op=LogSumExp, method=True, samples=_lse_samples,
          torch=lambda torch, x, dim, keepdim=False: torch.logsumexp(x, dim, keepdim=keepdim))
def logsumexp(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """``log(sum(exp(x)))`` over ``dim``, computed stably as ``m + log(sum(exp(x - m)))`` with ``m = max(x)``.

    ``dim=None`` reduces every dim (PyTorch requires ``dim``)."""
    x = float_input(input, "logsumexp")  # as PyTorch: integers are summed as the default float dtype
    axes = norm_dim(_dim_arg(dim, axis, "logsumexp"), x.ndim, "logsumexp")
    return LogSumExp.apply(x, axes, _keep(keepdim, keepdims, "logsumexp"))


# ----------------------------------------------------------------------- prod
class Prod(Op):
    name = "prod"
    formula = "dX_i = broadcast(dY) * prod_{j != i} X_j   (= Y / X_i when no element is 0)"

    @staticmethod
    def forward(ctx, x, axes, keepdim, dtype):
        ctx.axes, ctx.keepdim, ctx.in_shape = axes, keepdim, x.shape
        ctx.save_for_backward(x)
        y = as_array(np.prod(x._data, axis=axes, keepdims=keepdim, dtype=dtype))
        ctx.save_output(y)
        return y

    def _others(self, x, y):
        """prod_{j != i} x_j for every i, written with gradlab ops (so it is differentiable)."""
        if self.axes == ():  # a 0-d input: the product of nothing else is 1
            return O.ones_like(x)
        dim = None if self.axes is None else self.axes[0]
        yk = _kept(y, self.in_shape, self.axes, self.keepdim)
        zero = x._data == 0
        if not zero.any():
            return yk / x
        # y is 0 wherever a slice holds a zero; then y / x_safe gives the right 0 (and its
        # derivative, through y, the right product of the others) at the non-zero places.
        z = Tensor._make(zero)
        x_safe = O.where(z, 1.0, x)
        count = np.sum(zero, axis=self.axes, keepdims=True)
        p_nonzero = O.prod(x_safe, dim=dim, keepdim=True) if dim is not None else O.prod(x_safe)
        # at a zero: the product of the others is p_nonzero times the *other* zeros, which is
        # 1 for a lone zero, the other zero (value 0, derivative 1) for a pair, 0 beyond that
        zeros_sum = O.sum(O.where(z, x, 0.0), dim=self.axes, keepdim=True)
        other_zeros = O.where(Tensor._make(count == 1), 1.0,
                              O.where(Tensor._make(count == 2), zeros_sum - x, 0.0))
        return O.where(z, p_nonzero * other_zeros, yk / x_safe)

    def vjp(self, g):  # (no array twin: the engine runs this rule on wrapped arrays; prod is rare in a model)
        x, y = self.saved_tensors
        return expand_back(O, g, self.in_shape, self.axes, self.keepdim) * self._others(x, y), None, None, None

    def jvp(self, t, *_):
        return O.sum(t * self._others(self.args[0], self.out), dim=self.axes, keepdim=self.keepdim)


def _prod_samples(src):
    shape = src.shape(1, 3, 1, 4)
    yield Sample((src.tensor(shape, low=0.5, high=1.5),), desc="all dims")
    yield Sample((src.tensor(shape),), dict(dim=src.dim(len(shape)), keepdim=src.boolean()), desc="one dim")
    for nz in (1, 2, 3):
        v = src.values((3, 4))
        v[:, :nz] = 0.0
        v = np.ascontiguousarray(v[:, src.rng.permutation(4)])
        yield Sample((Tensor._make(v).requires_grad_(), 1), desc=f"{nz} zero(s) per row")
    v = src.values((5,))
    v[src.integers(0, 4)] = 0.0
    yield Sample((Tensor._make(v).requires_grad_(),), desc="one zero, all dims")


@register(op=Prod, method=True, samples=_prod_samples,
          torch=lambda torch, x, dim=None, keepdim=False: torch.prod(x) if dim is None else torch.prod(x, dim, keepdim))
def prod(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    """The product of the elements (all, or along one ``dim``); integer and bool inputs give int64."""
    x = check_tensor(input, "prod")
    dim = _dim_arg(dim, axis, "prod")
    axes = None if dim is None else (one_dim(dim, x.ndim, "prod"),) if x.ndim else ()
    if dtype is not None:
        dtype = _dt.as_dtype(dtype)
    elif _dt.category(x.dtype) < 2:
        dtype = _dt.int64
    return Prod.apply(x, axes, _keep(keepdim, keepdims, "prod"), dtype)


# --------------------------------------------------------------------- cumsum
def _flip(ns, a, dim):
    """``a`` reversed along ``dim`` in a ``OneRule``'s namespace (on arrays a view)."""
    return O.flip(a, dim) if ns is O else xp_of(a).flip(a, axis=dim)


class CumSum(OneRule, Op):
    name = "cumsum"
    formula = "dX = flip(cumsum(flip(dY)))   (each X_i feeds every Y_j with j >= i)"

    @staticmethod
    def kernel(a, dim, dtype=None):
        if a.ndim == 0:
            return a.astype(dtype or a.dtype)  # a copy, on a's device
        if dtype is None and a.dtype.itemsize <= 2 and a.dtype.kind not in "biu":
            # float16/bfloat16: accumulate in float32 as PyTorch does (a float16 running sum stops growing)
            return np.cumsum(a.astype(np.float32), axis=dim).astype(a.dtype)
        return np.cumsum(a, axis=dim, dtype=dtype)

    @staticmethod
    def forward(ctx, x, dim, dtype):
        ctx.dim = dim
        return CumSum.kernel(x._data, dim, dtype)

    def rule(self, ns, g):  # the VJP, on tensors and arrays alike (OneRule): a cumsum from the other end
        if g.ndim == 0:
            return g, None, None
        d = self.dim
        return _flip(ns, apply_in(ns, CumSum, _flip(ns, g, d), d, None), d), None, None

    def jvp(self, t, *_):
        return O.cumsum(t, self.dim)


def _cumsum_samples(src):
    shape = src.shape(0, 3, 0, 4)
    yield Sample((src.tensor(shape), src.dim(len(shape))))
    yield Sample((src.tensor((5,)), 0), desc="1-D")


@register(op=CumSum, method=True, samples=_cumsum_samples, torch=lambda torch, x, dim: torch.cumsum(x, dim))
def cumsum(input, dim=None, *, dtype=None, axis=None):
    """Running sum along ``dim``: ``y[i] = x[0] + ... + x[i]``; integer and bool inputs give int64."""
    x = check_tensor(input, "cumsum")
    dim = _dim_arg(dim, axis, "cumsum")
    if dim is None:
        raise ArgumentTypeError("cumsum: dim is required (the dim to run along, e.g. x.cumsum(dim=0))")
    d = one_dim(dim, x.ndim, "cumsum")
    if dtype is not None:
        dtype = _dt.as_dtype(dtype)
    elif _dt.category(x.dtype) < 2:
        dtype = _dt.int64
    return CumSum.apply(x, d, dtype)

ValuesIndices = collections.namedtuple("ValuesIndices", ["values", "indices"])


def _cumprod_samples(src):
    yield Sample((src.tensor((4,)), 0))
    yield Sample((src.tensor((2, 3)), 1))
    yield Sample((Tensor._make(np.array([[1.5, 0.0, 2.0, -1.0], [0.0, 0.0, 3.0, 0.5]])), -1), desc="zeros")


@register(method=True, samples=_cumprod_samples, formula="dX_i = sum_{j >= i} dY_j * prod_{k <= j, k != i} X_k",
          torch=lambda torch, x, dim: torch.cumprod(x, dim))
def cumprod(input, dim, *, dtype=None):
    """Running product along ``dim``: ``y[j] = x[0] * ... * x[j]``; integer and bool inputs give int64."""
    x = check_tensor(input, "cumprod")
    if dtype is not None:
        x = O.to(x, _dt.as_dtype(dtype))
    elif _dt.category(x.dtype) < 2:
        x = O.to(x, _dt.int64)
    if x.ndim == 0:
        return O.clone(x)
    d = one_dim(dim, x.ndim, "cumprod")
    n = x.shape[d]
    xl = O.movedim(x, d, -1)
    block = O.expand(O.unsqueeze(xl, -2), *(xl.shape[:-1] + (n, n)))  # block[..., j, i] = x[..., i]
    keep = Tensor._make(np.tril(np.ones((n, n), dtype=bool)))  # i <= j
    if keep.device != x.device:
        keep = O.to(keep, x.device)
    y = O.prod(O.where(keep, block, Tensor._make(np.ones((), dtype=x.dtype)).to(x.device)), -1)
    return O.movedim(y, -1, d)


@export(method=True)
def bincount(input, weights=None, minlength=0):
    """How often each value 0, 1, 2, ... occurs in a 1-D non-negative integer tensor (summing ``weights``
    instead of counting ones when given); at least ``minlength`` bins."""
    x = check_tensor(input, "bincount")
    if x.ndim != 1 or x.dtype.kind not in "iu":
        raise ValueRuntimeError(f"bincount: input must be a 1-D integer tensor, got shape {fmt_shape(x.shape)} "
                         f"and dtype {x.dtype}; count class labels with y.long().flatten()")
    a = np.asarray(x.cpu()._data)
    if a.size and a.min() < 0:
        raise ValueRuntimeError(f"bincount: input must hold only non-negative values, found {int(a.min())}; shift them first "
                                f"(x - x.min())")
    w = None
    if weights is not None:
        weights = check_tensor(weights, "bincount", "weights")
        if weights.shape != x.shape:
            raise ShapeError(f"bincount: weights {fmt_shape(weights.shape)} must have the same shape as input "
                             f"{fmt_shape(x.shape)}")
        w = np.asarray(weights.cpu()._data)
    out = np.bincount(a, weights=w, minlength=int(minlength))
    if w is None:
        out = out.astype(np.int64)
    elif w.dtype == np.float32:
        out = out.astype(np.float32)
    return Tensor._make(out).to(x.device)


@register(method=True, samples=lambda src: [Sample((Tensor._make(np.array([[1.0, np.nan, 2.0], [np.nan, 0.5, -1.0]])),)),
                               Sample((Tensor._make(np.array([[1.0, np.nan], [3.0, 4.0]])), 1))],
          formula="dX = dY where X is not NaN, 0 elsewhere",
          torch=lambda torch, x, dim=None, keepdim=False: torch.nansum(x) if dim is None else torch.nansum(x, dim, keepdim))
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """The sum, counting NaNs as zero."""
    x = check_tensor(input, "nansum")
    z = O.where(O.isnan(x), O.zeros_like(x), x) if _dt.is_floating(x.dtype) else x
    return O.sum(z, dim, keepdim, dtype=dtype) if dim is not None else O.sum(z, dtype=dtype)


@register(method=True, samples=lambda src: [Sample((Tensor._make(np.array([[1.0, np.nan, 2.0], [np.nan, 0.5, -1.0]])),)),
                               Sample((Tensor._make(np.array([[1.0, np.nan], [3.0, 4.0]])), 1))],
          formula="dX = dY / count(not NaN) where X is not NaN",
          torch=lambda torch, x, dim=None, keepdim=False: torch.nanmean(x) if dim is None else torch.nanmean(x, dim, keepdim))
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """The mean of the entries that are not NaN."""
    x = check_tensor(input, "nanmean")
    if not _dt.is_floating(x.dtype):
        raise DTypeError(f"nanmean: input must be a floating point tensor, got dtype {x.dtype}; use x.float()")
    ok = O.logical_not(O.isnan(x))
    total = nansum(x, dim, keepdim, dtype=dtype)
    count = O.sum(ok, dim, keepdim) if dim is not None else O.sum(ok)
    return total / O.to(count, total.dtype)


def _cum_extreme(name, better):
    def fn(input, dim):
        x = check_tensor(input, name)
        if x.ndim == 0:
            return ValuesIndices(O.clone(x), Tensor._make(np.zeros((), np.int64)))
        d = one_dim(dim, x.ndim, name)
        a = np.moveaxis(np.asarray(x.cpu()._data), d, -1)
        n = a.shape[-1]
        idx = np.zeros(a.shape, np.int64)
        if n:
            best = a[..., 0].copy()
            for j in range(1, n):  # ties go to the later index, as PyTorch
                take = better(a[..., j], best) | (a[..., j] == best) | np.isnan(a[..., j]) if a.dtype.kind == "f" \
                    else better(a[..., j], best) | (a[..., j] == best)
                if a.dtype.kind == "f":
                    take &= ~np.isnan(best)
                best = np.where(take, a[..., j], best)
                idx[..., j] = np.where(take, j, idx[..., j - 1])
        idx = Tensor._make(np.moveaxis(idx, -1, d)).to(x.device)
        return ValuesIndices(O.gather(x, d, idx), idx)
    fn.__name__ = name
    fn.__doc__ = (f"Running {'maximum' if name == 'cummax' else 'minimum'} along ``dim`` and the index where "
                  "each running value was found (the later one among ties).")
    return fn


def _cum_samples(src):
    yield Sample((src.tensor((3, 4), distinct=True), 1))
    yield Sample((src.tensor((4,), distinct=True), 0))


cummax = register("cummax", method=True, samples=_cum_samples, formula="dX = dY added at the running maximum's index",
                  torch=lambda torch, x, dim: torch.cummax(x, dim))(_cum_extreme("cummax", np.greater))
cummin = register("cummin", method=True, samples=_cum_samples, formula="dX = dY added at the running minimum's index",
                  torch=lambda torch, x, dim: torch.cummin(x, dim))(_cum_extreme("cummin", np.less))


@register(method=True, samples=lambda src: [Sample((src.tensor(src.shape(1, 2, 1, 6)),), dict(bins=src.integers(1, 5))),
                               Sample((src.tensor((8,)),), dict(bins=4, min=-1.0, max=1.0))],
          formula="(no gradient)", differentiable=False,
          torch=lambda torch, x, **kw: torch.histc(x, **kw))
def histc(input, bins=100, min=0, max=0):  # noqa: A002 - PyTorch's names
    """``torch.histc``: counts of the elements in ``bins`` equal-width bins over ``[min, max]`` (``min == max``:
    the data's own range); elements outside are ignored. A float tensor of the input's dtype."""
    x = check_tensor(input, "histc")
    if not _dt.is_floating(x.dtype):
        raise DTypeError(f"histc: input must be a floating tensor, got {x.dtype}; convert with x.float()")
    bins = _c.size(bins, "histc", "bins", minimum=1)
    xp = xp_of(x._data)
    a = x._data.reshape(-1)
    lo, hi = float(_c.number(min, "histc", "min")), float(_c.number(max, "histc", "max"))
    if lo == hi and a.size:
        lo, hi = float(a.min()), float(a.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise ArgumentError(f"histc: max ({max}) must be larger than min ({min})")
    a = a[(a >= lo) & (a <= hi)].astype(np.float64)
    with _fp_quiet():  # (histc's own arrays, outside any op: infinite limits give nan bins quietly)
        pos = xp.floor((a - lo) * int(bins) / (hi - lo)).astype(np.int64)
    pos = xp.minimum(pos, int(bins) - 1)
    return Tensor._make(xp.bincount(pos, minlength=int(bins)).astype(x.dtype))
