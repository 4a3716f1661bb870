"""Reductions: ``sum``, ``mean``, ``amax``/``amin``, ``max``/``min``, and ``sum_to``.

The VJP of a reduction puts the reduced dimensions back (as size 1) and
broadcasts the gradient over them: every summed element gets the same
gradient. ``sum_to`` is the reverse of broadcasting, and is how every binary
op reduces its gradient back to an input's shape.
"""
from __future__ import annotations

import builtins
import collections
import math

import numpy as np

from .. import ops as O
from ..autograd.function import Op
from ..amp.state import autocast_args as _autocast_args, state as _amp  # autocast policy (gradlab.amp)
from ..backend import dtypes as _dt
from ..backend.arrays import as_array
from ..backend.device import xp_of
from ..errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from ._util import check_tensor, norm_dim, one_dim
from .registry import Sample, register
from .samples import reduce_samples


_bmax = builtins.max  # this module defines its own ``max``


def _kept_shape(shape, axes):
    """``shape`` with the reduced axes set to 1 (what keepdim=True gives)."""
    axes = range(len(shape)) if axes is None else axes
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _expand_back(g, in_shape, axes, keepdim):
    """Broadcast a reduction's gradient back over the dimensions it reduced."""
    if not keepdim:
        g = O.reshape(g, _kept_shape(in_shape, axes))
    return O.broadcast_to(g, in_shape)


def expand_back_array(g, in_shape, axes, keepdim):
    """``_expand_back`` on arrays (a read-only broadcast view: no copy)."""
    if not keepdim:
        g = g.reshape(_kept_shape(in_shape, axes))
    return xp_of(g).broadcast_to(g, in_shape)


def sum_to_array(a, shape):
    """Sum array ``a`` down to ``shape``: the inverse of broadcasting (``sum_to`` on arrays)."""
    if a.shape == shape:
        return a
    lead = a.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and a.shape[lead + i] != 1)
    if not axes:
        return a.reshape(shape)
    if a.itemsize <= 2:  # float16 sums may overflow to inf: quietly, as in PyTorch
        with np.errstate(over="ignore", invalid="ignore"):
            return a.sum(axis=axes).reshape(shape)
    return a.sum(axis=axes).reshape(shape)


def _keep(keepdim, keepdims):
    """``keepdims=`` (NumPy's spelling) is accepted for ``keepdim=``, as PyTorch accepts it."""
    return keepdim if keepdims is None else keepdims


def _dim_arg(dim, axis, op):
    if axis is not None:
        if dim is not None:
            raise ArgumentError(f"{op}: pass dim= or axis=, not both")
        dim = axis
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        return None  # as PyTorch: an empty dim list reduces over every dim (x.sum(()) is x.sum())
    return dim


class SumTo(Op):
    """Sum a broadcast gradient back to ``shape``: the inverse of broadcasting."""

    name = "sum_to"
    formula = "dX = broadcast_to(dY, X.shape)"

    @staticmethod
    def forward(ctx, x, shape):
        lead = x.ndim - len(shape)
        ctx.in_shape = x.shape
        ctx.axes = tuple(range(lead)) + tuple(  # the widget shows which axes were summed
            lead + i for i, s in enumerate(shape) if s == 1 and x.shape[lead + i] != 1)
        return sum_to_array(x.data, shape)

    def vjp(self, g):
        return O.broadcast_to(g, self.in_shape), None

    def vjp_arrays(self, g):
        return xp_of(g).broadcast_to(g, self.in_shape), None

    def jvp(self, t, _):
        return O.sum_to(t, self.out.shape)


def _sum_to_samples(src):
    a, b = src.broadcast_pair()
    full = np.broadcast_shapes(a, b)
    yield Sample((src.tensor(full), a), desc="reduce to a broadcast operand")
    yield Sample((src.tensor((3, 3)), (3, 1)), desc="(3,3) -> (3,1)")


@register(op=SumTo, samples=_sum_to_samples, torch=lambda torch, x, shape: x.sum_to_size(shape) if shape else x.sum())
def sum_to(input, shape):
    """Sum ``input`` down to ``shape`` (which must broadcast to ``input.shape``)."""
    x = check_tensor(input, "sum_to")
    shape = tuple(shape)
    if x.shape == shape:
        return x
    try:
        if np.broadcast_shapes(shape, x.shape) != x.shape:
            raise ValueError
    except ValueError:
        raise ShapeError(f"sum_to: cannot sum {fmt_shape(x.shape)} down to {fmt_shape(shape)}: "
                         f"{fmt_shape(shape)} does not broadcast to {fmt_shape(x.shape)}") from None
    return SumTo.apply(x, shape)


class Sum(Op):
    name = "sum"
    formula = "dX = broadcast_to(dY, X.shape)   (every summed element gets dY)"

    @staticmethod
    def forward(ctx, x, axes, keepdim, dtype):
        ctx.in_shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        # (the array's own .sum: the same reduction as np.sum without its Python wrapper, twice as fast on
        # a small tensor; CuPy arrays have it too)
        if x.data.itemsize <= 2:  # a float16 sum may overflow to inf: quietly, as in PyTorch
            with np.errstate(over="ignore", invalid="ignore"):
                return as_array(x.data.sum(axis=axes, keepdims=keepdim, dtype=dtype))
        return as_array(x.data.sum(axis=axes, keepdims=keepdim, dtype=dtype))

    def vjp(self, g):
        return _expand_back(g, self.in_shape, self.axes, self.keepdim), None, None, None

    def vjp_arrays(self, g):
        return expand_back_array(g, self.in_shape, self.axes, self.keepdim), None, None, None

    def jvp(self, t, *_):
        return O.sum(t, dim=self.axes, keepdim=self.keepdim)


def _sum_dtype(x, dtype):
    if dtype is not None:
        return _dt.as_dtype(dtype)
    if _dt.category(x.dtype) < 2:
        return _dt.int64  # as PyTorch: integer and bool sums are int64
    return None


@register(op=Sum, samples=reduce_samples(),
          torch=lambda torch, x, dim=None, keepdim=False: x.sum() if dim is None else x.sum(dim=dim, keepdim=keepdim))
def sum(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):  # noqa: A001 - PyTorch's name
    """Sum over ``dim`` (an int, a tuple, or None for all dims)."""
    x = check_tensor(input, "sum")
    if _amp.enabled:
        (x,) = _autocast_args("sum", x)
    axes = norm_dim(_dim_arg(dim, axis, "sum"), x.ndim, "sum")
    return Sum.apply(x, axes, bool(keepdim if keepdims is None else keepdims), _sum_dtype(x, dtype))


class Mean(Op):
    name = "mean"
    formula = "dX = broadcast_to(dY, X.shape) / N   (N = number of elements averaged)"

    @staticmethod
    def forward(ctx, x, axes, keepdim):
        ctx.in_shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        reduced = range(x.ndim) if axes is None else axes
        ctx.count = math.prod(x.shape[a] for a in reduced)
        if ctx.count == 0:  # the mean of nothing is nan, as in PyTorch (and no NumPy "empty slice" warning)
            return as_array(np.sum(x.data, axis=axes, keepdims=keepdim) * np.nan, dtype=x.dtype)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            return as_array(x.data.mean(axis=axes, keepdims=keepdim), dtype=x.dtype)  # (no np.mean wrapper)

    def vjp(self, g):
        # an empty input has an empty gradient, so the max(., 1) never changes a value
        return _expand_back(g / _bmax(self.count, 1), self.in_shape, self.axes, self.keepdim), None, None

    def vjp_arrays(self, g):
        g = xp_of(g).asarray(g / _bmax(self.count, 1))  # (a 0-d result would be a NumPy scalar)
        return expand_back_array(g, self.in_shape, self.axes, self.keepdim), None, None

    def jvp(self, t, *_):
        return O.mean(t, dim=self.axes, keepdim=self.keepdim)


@register(op=Mean, samples=reduce_samples(allow_empty=False),
          torch=lambda torch, x, dim=None, keepdim=False: x.mean() if dim is None else x.mean(dim=dim, keepdim=keepdim))
def mean(input, dim=None, keepdim=False, *, axis=None, dtype=None, keepdims=None):
    """Average over ``dim`` (an int, a tuple, or None for all dims); ``dtype`` casts the input first."""
    x = check_tensor(input, "mean")
    if dtype is not None:
        x = x.to(dtype)
    if _dt.category(x.dtype) < 2:
        raise DTypeError(f"mean: input has dtype {x.dtype}; mean needs a floating tensor, e.g. x.float().mean()")
    axes = norm_dim(_dim_arg(dim, axis, "mean"), x.ndim, "mean")
    if _amp.enabled:
        (x,) = _autocast_args("mean", x)
    return Mean.apply(x, axes, bool(_keep(keepdim, keepdims)))


class Amax(Op):
    """Max over dims; ties share the gradient equally (as PyTorch's amax)."""

    name = "amax"
    formula = "dX = broadcast(dY) * (X == max) / count(X == max)"
    fn = staticmethod(np.max)

    @staticmethod
    def forward(ctx, x, axes, keepdim):
        if (x.data.size == 0 and axes is None) or any(x.shape[a] == 0 for a in (axes or ())):
            raise ArgumentError(
                f"{ctx.name}: cannot reduce an empty dimension of a tensor of shape {fmt_shape(x.shape)}: "
                "the max of nothing is undefined")
        ctx.in_shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        y = as_array(type(ctx).fn(x.data, axis=axes, keepdims=keepdim))
        ctx.save_for_backward(x)
        ctx.save_output(y)
        return y

    def _weights(self, x, y):
        yk = O.reshape(y, _kept_shape(self.in_shape, self.axes)) if not self.keepdim else y
        mask = (x == yk).to(x.dtype)
        return mask / O.sum(mask, dim=self.axes, keepdim=True)

    def vjp(self, g):
        x, y = self.saved_tensors
        return _expand_back(g, self.in_shape, self.axes, self.keepdim) * self._weights(x, y.detach()), None, None

    def vjp_arrays(self, g):
        x, y = self.saved_arrays
        yk = y if self.keepdim else y.reshape(_kept_shape(self.in_shape, self.axes))
        w = (x == yk).astype(x.dtype)
        w /= w.sum(axis=self.axes, keepdims=True)  # ties share the gradient equally
        return expand_back_array(g, self.in_shape, self.axes, self.keepdim) * w, None, None

    def jvp(self, t, *_):
        x = self.args[0]
        return O.sum(t * self._weights(x, self.out), dim=self.axes, keepdim=self.keepdim)


class Amin(Amax):
    name = "amin"
    formula = "dX = broadcast(dY) * (X == min) / count(X == min)"
    fn = staticmethod(np.min)


def _red(op_cls, name):
    def fn(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
        x = check_tensor(input, name)
        axes = norm_dim(_dim_arg(dim, axis, name), x.ndim, name)
        return op_cls.apply(x, axes, bool(_keep(keepdim, keepdims)))
    fn.__name__ = name
    fn.__doc__ = f"The {name[1:]}imum over ``dim`` (int, tuple or None); ties share the gradient equally."
    return register(name, op=op_cls, samples=reduce_samples(distinct=True, allow_empty=False),
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
    if x.shape[d] == 0:
        raise ArgumentError(f"{name}: cannot reduce the empty dim {dim} of a tensor of shape {fmt_shape(x.shape)}")
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


@register(samples=_max_samples, formula="dX = dY at the argmax (scattered back), 0 elsewhere", torch=_torch_max("max"))
def max(input, dim=None, keepdim=False, *, axis=None, other=None, keepdims=None):  # noqa: A001
    """``max(x)``: the largest value; ``max(x, dim)``: ``(values, indices)`` as PyTorch;
    ``max(x, y)``: elementwise maximum."""
    return _max_min("max", O.argmax, amax, O.maximum, input, dim, _keep(keepdim, keepdims), axis, other)


@register(samples=_max_samples, formula="dX = dY at the argmin (scattered back), 0 elsewhere", torch=_torch_max("min"))
def min(input, dim=None, keepdim=False, *, axis=None, other=None, keepdims=None):  # noqa: A001
    """``min(x)``: the smallest value; ``min(x, dim)``: ``(values, indices)`` as PyTorch;
    ``min(x, y)``: elementwise minimum."""
    return _max_min("min", O.argmin, amin, O.minimum, input, dim, _keep(keepdim, keepdims), axis, other)


def _arg(name, fn):
    def f(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
        x = check_tensor(input, name)
        dim, keepdim = _dim_arg(dim, axis, name), _keep(keepdim, keepdims)
        d = None if dim is None else one_dim(dim, x.ndim, name)
        if x.data.size == 0 and (d is None or x.ndim == 0 or x.shape[d] == 0):
            raise ArgumentError(f"{name}: the input of shape {fmt_shape(x.shape)} is empty"
                                + ("" if d is None else f" along dim {dim}"))
        if dim is None:
            out = as_array(fn(x.data.reshape(-1)))
            if keepdim:
                out = out.reshape((1,) * x.ndim)
        else:
            out = fn(x.data, axis=d, keepdims=keepdim) if x.ndim else xp_of(x.data).asarray(0)
        return O.Tensor._make(as_array(out, dtype=np.int64))
    f.__name__ = name
    f.__doc__ = f"Index of the {name[3:]}imum (over all elements, or along ``dim``); not differentiable."
    return f


argmax = _arg("argmax", np.argmax)
argmin = _arg("argmin", np.argmin)
