"""Indexing with index tensors and masks: scatter, scatter_add, index_select, masked_fill, tril/triu.

Each VJP sends the gradient back to where the values came from:
``scatter``'s is a ``gather`` for ``src`` and a hole for ``input`` (the
positions that were overwritten had no effect on the output);
``masked_fill``'s is the gradient with the filled positions zeroed;
``tril``'s is the same triangle of the gradient. (``split``, ``repeat``,
``flip``, ``roll`` and ``as_strided`` live in ``rearrange.py``.)
"""
from __future__ import annotations

import numpy as np

from .. import ops as O
from ..autograd.function import Op
from ..backend import dtypes as _dt
from ..backend.arrays import scatter_add as _scatter_add
from ..errors import ArgumentError, ArgumentTypeError, DTypeError, IndexOutOfRange, ShapeError, fmt_shape
from .._tensor import Tensor
from ._util import check_tensor, device_mismatch, is_scalar, one_dim
from .index import Index, IndexAddZeros, _along, _check_gather, index_add_zeros
from .registry import Sample, register


def _index_arg(index, op, x, arg="index"):
    index = check_tensor(index, op, arg)
    if type(index.data) is not type(x.data) and index.device != x.device:  # same device (PyTorch)
        raise device_mismatch(op, x, index, ("input", "index"))
    if _dt.category(index.dtype) != 1:
        raise DTypeError(f"{op}: {arg} must be an integer tensor, got dtype {_dt.dtype_name(index.dtype)} "
                         f"({arg} shape {fmt_shape(index.shape)}, input shape {fmt_shape(x.shape)}); "
                         f"convert it with {arg}.long()")
    return index


def _head(shape):
    """The basic index selecting the leading block of ``shape`` (``src[:i0, :i1, ...]``)."""
    return tuple(slice(0, s) for s in shape)


# ---------------------------------------------------------- scatter, scatter_add
class Scatter(Op):
    name = "scatter"
    formula = "dX = dY with the written positions set to 0 ; dSrc = gather(dY, dim, index)"

    @staticmethod
    def forward(ctx, x, src, dim, index):
        ctx.dim, ctx.index = dim, index
        ctx.src_shape = src.shape if isinstance(src, Tensor) else None
        out = x.data.copy()
        out[_along(index.data, dim)] = src.data[_head(index.shape)] if isinstance(src, Tensor) else src
        return out

    def vjp(self, g):
        dx = Scatter.apply(g, 0.0, self.dim, self.index)
        dsrc = None if self.src_shape is None else _pad(O.gather(g, self.dim, self.index), self.src_shape)
        return dx, dsrc, None, None

    def vjp_arrays(self, g):
        where = _along(self.index.data, self.dim)
        dx = dsrc = None
        if self.next_functions[0] is not None:
            dx = g.copy()
            dx[where] = 0
        if self.src_shape is not None and self.next_functions[1] is not None:
            dsrc = _pad_array(g[where], self.src_shape)
        return dx, dsrc, None, None

    def jvp(self, tx, tsrc, *_):
        x, src = self.args[0], self.args[1]
        tx = O.zeros_like(x) if tx is None else tx
        if isinstance(src, Tensor):
            tsrc = O.zeros_like(src) if tsrc is None else tsrc
        else:
            tsrc = 0.0
        return Scatter.apply(tx, tsrc, self.dim, self.index)


class ScatterAdd(Op):
    name = "scatter_add"
    formula = "dX = dY ; dSrc = gather(dY, dim, index)"

    @staticmethod
    def forward(ctx, x, src, dim, index):
        ctx.dim, ctx.index, ctx.src_shape = dim, index, src.shape
        out = x.data.copy()
        _scatter_add(out, _along(index.data, dim), src.data[_head(index.shape)])  # repeats add up (np.add.at)
        return out

    def vjp(self, g):
        return g, _pad(O.gather(g, self.dim, self.index), self.src_shape), None, None

    def vjp_arrays(self, g):
        dsrc = None
        if self.next_functions[1] is not None:
            dsrc = _pad_array(g[_along(self.index.data, self.dim)], self.src_shape)
        return g, dsrc, None, None

    def jvp(self, tx, tsrc, *_):
        x, src = self.args[0], self.args[1]
        tx = O.zeros_like(x) if tx is None else tx
        tsrc = O.zeros_like(src) if tsrc is None else tsrc
        return ScatterAdd.apply(tx, tsrc, self.dim, self.index)


def _pad(t, shape):
    """Place ``t`` in the leading block of a zero tensor of ``shape`` (src may be larger than index)."""
    return t if t.shape == tuple(shape) else IndexAddZeros.apply(t, _head(t.shape), tuple(shape))


def _pad_array(a, shape):
    """``_pad`` on arrays."""
    return a if a.shape == tuple(shape) else index_add_zeros(a, _head(a.shape), tuple(shape))


def _check_scatter(op, x, dim, index, src):
    index = _index_arg(index, op, x)
    d, index = _check_gather(op, x, dim, index)
    if isinstance(src, Tensor):
        if src.ndim != index.ndim or any(i > s for i, s in zip(index.shape, src.shape)):
            raise ShapeError(f"{op}: index {fmt_shape(index.shape)} is larger than src {fmt_shape(src.shape)}; "
                             "src needs the same number of dims and at least index's size in each")
    return d, index


def _scatter_src(op, x, src):
    if isinstance(src, Tensor):
        return src if src.dtype == x.dtype else O.to(src, x.dtype)
    if is_scalar(src):
        return src
    raise ArgumentTypeError(f"{op}: src must be a Tensor or a number, got {type(src).__name__}")


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """``out = input.clone(); out[index[i][j]][j] = src[i][j]`` for ``dim=0`` (and so on).

    ``src`` may be a tensor or a number (``value=`` also works). With repeated
    indices PyTorch leaves it undefined which write wins; gradlab keeps the last.
    ``reduce='add'`` is ``scatter_add``.
    """
    x = check_tensor(input, "scatter")
    if src is None:
        src = value
    if src is None:
        raise ArgumentTypeError("scatter: give src (a tensor) or value (a number)")
    if reduce is not None:
        if reduce != "add" or not isinstance(src, Tensor):
            raise ArgumentError(f"scatter: reduce={reduce!r} is not supported; use scatter_add for 'add'")
        return scatter_add(x, dim, index, src)
    src = _scatter_src("scatter", x, src)
    if x.ndim == 0:  # a 0-d tensor behaves as one element along dim 0
        return O.reshape(scatter(O.reshape(x, (1,)), 0, _lift(index), _lift(src)), ())
    d, index = _check_scatter("scatter", x, dim, index, src)
    return Scatter.apply(x, src, d, index)


def scatter_add(input, dim, index, src):
    """``out = input.clone(); out[index[i][j]][j] += src[i][j]`` for ``dim=0``: repeated indices add up.

    This is the VJP of ``gather``, and how a graph network sums messages per node."""
    x = check_tensor(input, "scatter_add")
    src = check_tensor(_scatter_src("scatter_add", x, src), "scatter_add", "src")
    if x.ndim == 0:
        return O.reshape(scatter_add(O.reshape(x, (1,)), 0, _lift(index), _lift(src)), ())
    d, index = _check_scatter("scatter_add", x, dim, index, src)
    return ScatterAdd.apply(x, src, d, index)


def _lift(t):
    return O.reshape(t, (1,)) if isinstance(t, Tensor) and t.ndim == 0 else t


def _distinct_index(src, shape, d, ishape):
    """An index of ``ishape`` whose entries along ``d`` never repeat (so scatter is deterministic)."""
    full = tuple(shape[d] if i == d else s for i, s in enumerate(ishape))
    order = np.argsort(src.rng.random(full), axis=d)
    return Tensor._make(np.ascontiguousarray(order[_head(ishape)]).astype(np.int64))


def _scatter_samples(distinct):
    def samples(src):
        shape = src.shape(1, 3, 1, 4)
        d = src.dim(len(shape)) % len(shape)
        ishape = tuple(src.integers(1, s) for s in shape)
        idx = _distinct_index(src, shape, d, ishape) if distinct else src.index_tensor(ishape, shape[d])
        sshape = ishape  # (a larger src works too, but PyTorch's own backward rejects it: no oracle)
        yield Sample((src.tensor(shape), d, idx, src.tensor(sshape)), desc="src tensor")
        if distinct:
            yield Sample((src.tensor(shape), d - len(shape), idx), dict(value=1.5), desc="value")
        else:
            yield Sample((src.tensor((3,)), 0, Tensor._make(np.array([0, 0, 2, 0])), src.tensor((4,))),
                         desc="repeated indices add up")
    return samples


register("scatter", op=Scatter, samples=_scatter_samples(True),
         torch=lambda torch, x, d, idx, src=None, value=None: torch.scatter(x, d, idx, src if src is not None
                                                                            else value))(scatter)
register("scatter_add", op=ScatterAdd, samples=_scatter_samples(False),
         torch=lambda torch, x, d, idx, src: torch.scatter_add(x, d, idx, src))(scatter_add)


# ------------------------------------------------------------- index_select
def _index_select_samples(src):
    shape = src.shape(1, 3, 1, 4)
    d = src.dim(len(shape))
    yield Sample((src.tensor(shape), d, src.index_tensor((src.integers(0, 5),), shape[d])), desc="repeats likely")


@register(samples=_index_select_samples, formula="dX = zeros(X.shape).index_add(dim, index, dY)",
          torch=lambda torch, x, d, idx: torch.index_select(x, d, idx))
def index_select(input, dim, index):
    """Pick whole slices along ``dim``: ``index_select(x, 0, idx)`` is ``x[idx]`` (rows may repeat)."""
    x = check_tensor(input, "index_select")
    index = _index_arg(index, "index_select", x)
    if index.ndim > 1:
        raise ShapeError(f"index_select: index must be 1-D (or 0-d), got shape {fmt_shape(index.shape)}")
    d = one_dim(dim, x.ndim, "index_select")
    n = x.shape[d] if x.ndim else 1
    flat = index.data.reshape(-1)
    if flat.size and (flat.max() >= n or flat.min() < 0):  # no wrap-around of negatives, as in PyTorch
        raise IndexOutOfRange(f"index_select: index holds values outside [0, {n}) for dim {dim} of "
                              f"input {fmt_shape(x.shape)}")
    if x.ndim == 0:
        return O.reshape(x, ()) if flat.size else x
    return Index.apply(x, (slice(None),) * d + (flat,))


# -------------------------------------------------------------- masked_fill
class MaskedFill(Op):
    name = "masked_fill"
    formula = "dX = where(mask, 0, dY) ; dValue = sum(where(mask, dY, 0))"

    @staticmethod
    def forward(ctx, x, mask, value):
        ctx.save_for_backward(mask)
        ctx.value_shape = value.shape if isinstance(value, Tensor) else None
        v = value.data if isinstance(value, Tensor) else value
        return np.where(mask.data, v, x.data).astype(x.dtype, copy=False)

    def vjp(self, g):
        (mask,) = self.saved_tensors
        dv = None
        if self.value_shape is not None:
            dv = O.reshape(O.sum(O.where(mask, g, 0.0)), self.value_shape)
        return O.where(mask, 0.0, g), None, dv

    def vjp_arrays(self, g):
        (mask,) = self.saved_arrays
        dx = dv = None
        if self.value_shape is not None and self.next_functions[2] is not None:
            dv = np.sum(np.where(mask, g, 0.0)).reshape(self.value_shape)
        if self.next_functions[0] is not None:
            dx = np.where(mask, 0.0, g)
        return dx, None, dv

    def jvp(self, tx, _, tv):
        x, mask = self.args[0], self.args[1]
        tx = O.zeros_like(x) if tx is None else tx
        return O.where(mask, 0.0 if tv is None else O.reshape(tv, ()), tx)


def _masked_fill_samples(src):
    shape = src.shape(1, 3, 1, 4)
    mask = Tensor._make(src.rng.random(src.broadcastable(shape)) > 0.5)
    yield Sample((src.tensor(shape), mask, -1.5), desc="number")
    yield Sample((src.tensor(shape), mask, src.tensor(())), desc="0-d tensor value gets a gradient")


@register(op=MaskedFill, samples=_masked_fill_samples,
          torch=lambda torch, x, mask, value: x.masked_fill(mask, value))
def masked_fill(input, mask, value):
    """``value`` where ``mask`` is true, ``input`` elsewhere; ``mask`` (bool) broadcasts to ``input``'s shape.

    The attention lesson's causal mask: ``scores.masked_fill(~causal, float('-inf'))``."""
    x = check_tensor(input, "masked_fill")
    mask = check_tensor(mask, "masked_fill", "mask")
    if type(mask.data) is not type(x.data) and mask.device != x.device:  # same device (PyTorch)
        raise device_mismatch("masked_fill", x, mask, ("input", "mask"))
    if mask.dtype != _dt.bool_:
        raise DTypeError(f"masked_fill: mask must be a bool tensor, got dtype {_dt.dtype_name(mask.dtype)} "
                         f"(mask shape {fmt_shape(mask.shape)}); build it with a comparison, or use mask.bool()")
    try:
        if np.broadcast_shapes(mask.shape, x.shape) != x.shape:
            raise ValueError
    except ValueError:
        raise ShapeError(f"masked_fill: mask {fmt_shape(mask.shape)} does not broadcast to input "
                         f"{fmt_shape(x.shape)}") from None
    _dt.check_fits(value, x.dtype, "masked_fill")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise ShapeError(f"masked_fill: value must be a number or a 0-d tensor, got shape {fmt_shape(value.shape)}")
    elif not is_scalar(value):
        raise ArgumentTypeError(f"masked_fill: value must be a number or a 0-d tensor, got {type(value).__name__}")
    return MaskedFill.apply(x, mask, value)


# --------------------------------------------------------------- tril, triu
class Tril(Op):
    name = "tril"
    formula = "dX = tril(dY, diagonal)"
    fn = staticmethod(np.tril)

    @staticmethod
    def forward(ctx, x, diagonal):
        ctx.diagonal = diagonal
        return type(ctx).fn(x.data, diagonal)

    def vjp(self, g):
        return type(self).apply(g, self.diagonal), None

    def vjp_arrays(self, g):
        return type(self).fn(g, self.diagonal), None

    def jvp(self, t, _):
        return type(self).apply(t, self.diagonal)


class Triu(Tril):
    name = "triu"
    formula = "dX = triu(dY, diagonal)"
    fn = staticmethod(np.triu)


def _tri_samples(src):
    shape = src.shape(2, 4, 1, 4)
    yield Sample((src.tensor(shape),), desc="main diagonal")
    yield Sample((src.tensor(shape), src.integers(-2, 2)), desc="offset diagonal")


def _tri(op_cls, name, which):
    def fn(input, diagonal=0):
        x = check_tensor(input, name)
        if x.ndim < 2:
            raise ShapeError(f"{name}: input must have at least 2 dims, got shape {fmt_shape(x.shape)}")
        return op_cls.apply(x, int(diagonal))
    fn.__name__ = name
    fn.__doc__ = (f"Keep the {which} triangle of the last two dims (``diagonal`` shifts it up for > 0), "
                  "zero the rest.")
    return register(name, op=op_cls, samples=_tri_samples,
                    torch=lambda torch, x, diagonal=0: getattr(torch, name)(x, diagonal))(fn)


tril = _tri(Tril, "tril", "lower")
triu = _tri(Triu, "triu", "upper")
