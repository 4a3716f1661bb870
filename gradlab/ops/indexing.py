"""Indexing and rearranging: scatter, index_select, masked_fill, tril/triu, split,
chunk, repeat/tile, flip, roll and as_strided.

Most of these move numbers without changing them, so each VJP moves the
gradient back the opposite way: ``flip``'s is a flip, ``roll``'s a roll the
other way, ``repeat``'s a *sum* over the copies (every copy received a
gradient), ``scatter``'s a ``gather`` for ``src`` and a hole for ``input``
(the positions that were overwritten had no effect on the output).
"""
from __future__ import annotations

import math

import numpy as np

from .. import ops as O
from ..autograd.function import Op
from ..backend import dtypes as _dt
from ..backend import xp_of
from ..errors import ArgumentError, DTypeError, IndexOutOfRange, ShapeError, fmt_shape
from .._tensor import Tensor
from ._util import check_tensor, is_scalar, norm_dim, one_dim, sizes_arg, view_of
from .index import Index, IndexAddZeros, _along, _check_gather
from .registry import Sample, register


def _index_arg(index, op, x, arg="index"):
    index = check_tensor(index, op, arg)
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
        np.add.at(out, _along(index.data, dim), src.data[_head(index.shape)])  # repeats add up
        return out

    def vjp(self, g):
        return g, _pad(O.gather(g, self.dim, self.index), self.src_shape), None, None

    def jvp(self, tx, tsrc, *_):
        x, src = self.args[0], self.args[1]
        tx = O.zeros_like(x) if tx is None else tx
        tsrc = O.zeros_like(src) if tsrc is None else tsrc
        return ScatterAdd.apply(tx, tsrc, self.dim, self.index)


def _pad(t, shape):
    """Place ``t`` in the leading block of a zero tensor of ``shape`` (src may be larger than index)."""
    return t if t.shape == tuple(shape) else IndexAddZeros.apply(t, _head(t.shape), tuple(shape))


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
    raise TypeError(f"{op}: src must be a Tensor or a number, got {type(src).__name__}")


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
        raise TypeError("scatter: give src (a tensor) or value (a number)")
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
    if flat.size and (flat.max() >= n or flat.min() < -n):
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
    if mask.dtype != _dt.bool_:
        raise DTypeError(f"masked_fill: mask must be a bool tensor, got dtype {_dt.dtype_name(mask.dtype)} "
                         f"(mask shape {fmt_shape(mask.shape)}); build it with a comparison, or use mask.bool()")
    try:
        if np.broadcast_shapes(mask.shape, x.shape) != x.shape:
            raise ValueError
    except ValueError:
        raise ShapeError(f"masked_fill: mask {fmt_shape(mask.shape)} does not broadcast to input "
                         f"{fmt_shape(x.shape)}") from None
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise ShapeError(f"masked_fill: value must be a number or a 0-d tensor, got shape {fmt_shape(value.shape)}")
    elif not is_scalar(value):
        raise TypeError(f"masked_fill: value must be a number or a 0-d tensor, got {type(value).__name__}")
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


# -------------------------------------------------------------- split, chunk
def _split_samples(src):
    shape = list(src.shape(1, 3, 1, 5))
    d = src.dim(len(shape))
    yield Sample((src.tensor(tuple(shape)), src.integers(1, 3), d), desc="equal pieces (the last may be smaller)")
    n = shape[d]
    cut = src.integers(0, n)
    yield Sample((src.tensor(tuple(shape)), [cut, n - cut], d), desc="list of sizes")


@register(samples=_split_samples, formula="dX = cat([dY_0, dY_1, ...], dim)",
          torch=lambda torch, x, s, dim=0: torch.split(x, s, dim))
def split(tensor, split_size_or_sections, dim=0):
    """Cut along ``dim`` into pieces of ``split_size`` (an int; the last piece may be smaller) or of the
    listed sizes. Returns a tuple of views."""
    x = check_tensor(tensor, "split")
    if x.ndim == 0:
        raise ShapeError("split: cannot split a 0-d tensor; it has no dims")
    d = one_dim(dim, x.ndim, "split")
    n = x.shape[d]
    s = split_size_or_sections
    if isinstance(s, (int, np.integer)):
        if s <= 0:
            raise ArgumentError(f"split: split_size must be positive, got {s}")
        sizes = [s] * (n // s) + ([n % s] if n % s else [])
        sizes = sizes or [0]
    else:
        sizes = [int(v) for v in s]
        if sum(sizes) != n or any(v < 0 for v in sizes):
            raise ShapeError(f"split: sections {sizes} sum to {sum(sizes)} but dim {dim} of input "
                             f"{fmt_shape(x.shape)} has size {n}; the sizes must add up to it")
    out, start = [], 0
    for v in sizes:
        out.append(O.getitem(x, (slice(None),) * d + (slice(start, start + v),)))
        start += v
    return tuple(out)


@register(samples=lambda src: [Sample((src.tensor((5, 3)), src.integers(1, 4), src.choice([0, 1, -1])))],
          formula="dX = cat([dY_0, dY_1, ...], dim)", torch=lambda torch, x, c, dim=0: torch.chunk(x, c, dim))
def chunk(input, chunks, dim=0):
    """Cut into ``chunks`` nearly equal pieces along ``dim`` (each ``ceil(n / chunks)`` long, as PyTorch;
    so there may be fewer than ``chunks``)."""
    x = check_tensor(input, "chunk")
    if not isinstance(chunks, (int, np.integer)) or chunks <= 0:
        raise ArgumentError(f"chunk: chunks must be a positive integer, got {chunks!r}")
    if x.ndim == 0:
        raise ShapeError("chunk: cannot chunk a 0-d tensor; it has no dims")
    d = one_dim(dim, x.ndim, "chunk")
    n = x.shape[d]
    if n == 0:
        return tuple(O.getitem(x, (slice(None),) * d + (slice(0, 0),)) for _ in range(chunks))
    return split(x, math.ceil(n / chunks), d)


# -------------------------------------------------------------- repeat, tile
class Repeat(Op):
    name = "repeat"
    formula = "dX = sum of dY over the copies   (reshape to (r0, s0, r1, s1, ...), sum the r's)"

    @staticmethod
    def forward(ctx, x, sizes):
        ctx.sizes, ctx.in_shape = sizes, x.shape
        a = x.data.reshape((1,) * (len(sizes) - x.ndim) + x.shape)
        return np.tile(a, sizes)

    def vjp(self, g):
        padded = (1,) * (len(self.sizes) - len(self.in_shape)) + self.in_shape
        inter = tuple(v for r, s in zip(self.sizes, padded) for v in (r, s))
        summed = O.sum(O.reshape(g, inter), dim=tuple(range(0, 2 * len(padded), 2))) if padded else g
        return O.reshape(summed, self.in_shape), None

    def jvp(self, t, _):
        return Repeat.apply(t, self.sizes)


def _repeat_samples(src):
    shape = src.shape(0, 2, 1, 3)
    sizes = tuple(src.integers(1, 3) for _ in range(len(shape) + src.integers(0, 1)))
    yield Sample((src.tensor(shape), sizes), desc="copies (maybe a new leading dim)")
    yield Sample((src.tensor((2, 3)), (2, 0)), desc="zero copies")


@register(op=Repeat, samples=_repeat_samples, torch=lambda torch, x, sizes: x.repeat(sizes))
def repeat(input, *sizes):
    """``x.repeat(2, 3)``: copy the whole tensor 2 times along dim 0 and 3 times along dim 1 (as
    PyTorch's ``Tensor.repeat``, NumPy's ``tile``). Extra sizes add leading dims."""
    x = check_tensor(input, "repeat")
    sizes = sizes_arg(sizes, "repeat")
    if len(sizes) < x.ndim:
        raise ShapeError(f"repeat: {len(sizes)} repeat counts given for a tensor with {x.ndim} dims "
                         f"{fmt_shape(x.shape)}; give at least one per dim (use tile to pad with 1s)")
    if any(s < 0 for s in sizes):
        raise ArgumentError(f"repeat: repeat counts must be >= 0, got {sizes}")
    return Repeat.apply(x, sizes)


@register(samples=lambda src: [Sample((src.tensor((2, 3)), (2,)), desc="fewer dims than the input"),
                               Sample((src.tensor((3,)), (2, 2)), desc="more dims")],
          formula=Repeat.formula, torch=lambda torch, x, dims: torch.tile(x, dims))
def tile(input, *dims):
    """``repeat``, but ``dims`` shorter than the tensor's rank is padded with 1s on the left (``torch.tile``)."""
    x = check_tensor(input, "tile")
    dims = sizes_arg(dims, "tile")
    dims = (1,) * (x.ndim - len(dims)) + dims
    return repeat(x, dims)


# --------------------------------------------------------------- flip, roll
class Flip(Op):
    name = "flip"
    formula = "dX = flip(dY, dims)"

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        xp = xp_of(x.data)
        return xp.ascontiguousarray(xp.flip(x.data, axis=dims)) if dims else x.data.copy()

    def vjp(self, g):
        return Flip.apply(g, self.dims), None

    def jvp(self, t, _):
        return Flip.apply(t, self.dims)


def _dims_arg(dims, ndim, op):
    return norm_dim(dims, ndim, op, allow_none=False) if ndim else ()


@register(op=Flip, samples=lambda src: [Sample((src.tensor((2, 3, 4)), src.choice([0, -1, (0, 2), [1]])))],
          torch=lambda torch, x, dims: torch.flip(x, dims if isinstance(dims, (list, tuple)) else (dims,)))
def flip(input, *dims):
    """Reverse the order of elements along ``dims`` (``flip(x, (0, 1))`` or ``x.flip(0, 1)``); a copy, as
    in PyTorch."""
    x = check_tensor(input, "flip")
    if len(dims) == 1:
        dims = dims[0]
    return Flip.apply(x, _dims_arg(dims, x.ndim, "flip"))


class Roll(Op):
    name = "roll"
    formula = "dX = roll(dY, -shifts, dims)"

    @staticmethod
    def forward(ctx, x, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        return xp_of(x.data).roll(x.data, shifts, axis=dims)

    def vjp(self, g):
        back = tuple(-s for s in self.shifts) if isinstance(self.shifts, tuple) else -self.shifts
        return Roll.apply(g, back, self.dims), None, None

    def jvp(self, t, *_):
        return Roll.apply(t, self.shifts, self.dims)


def _roll_samples(src):
    yield Sample((src.tensor((3, 4)), src.integers(-5, 5)), desc="flattened")
    yield Sample((src.tensor((3, 4)), src.integers(-5, 5), src.choice([0, 1, -1])), desc="one dim")
    yield Sample((src.tensor((2, 3, 2)), (1, -2), (0, 1)), desc="two dims")


@register(op=Roll, samples=_roll_samples,
          torch=lambda torch, x, shifts, dims=None: torch.roll(x, shifts, dims))
def roll(input, shifts, dims=None):
    """Shift elements along ``dims`` with wrap-around; with ``dims=None`` the flattened tensor is rolled."""
    x = check_tensor(input, "roll")
    if dims is None:
        if not isinstance(shifts, (int, np.integer)):
            if len(shifts) != 1:
                raise ArgumentError(f"roll: without dims, shifts must be one int, got {shifts!r}")
            shifts = shifts[0]
        return Roll.apply(x, int(shifts), None)
    multi = isinstance(shifts, (tuple, list)) or isinstance(dims, (tuple, list))
    if not multi:
        return Roll.apply(x, int(shifts), one_dim(dims, x.ndim, "roll"))
    shifts = tuple(int(s) for s in (shifts if isinstance(shifts, (tuple, list)) else (shifts,)))
    dims = tuple(one_dim(d, x.ndim, "roll") for d in (dims if isinstance(dims, (tuple, list)) else (dims,)))
    if len(shifts) != len(dims):
        raise ArgumentError(f"roll: {len(shifts)} shifts for {len(dims)} dims; give one shift per dim")
    return Roll.apply(x, shifts, dims)


# ---------------------------------------------------------------- as_strided
class AsStrided(Op):
    name = "as_strided"
    formula = "dX = zeros(X.numel()).index_add(flat_positions, dY).reshape(X.shape)   (overlaps add up)"

    @staticmethod
    def forward(ctx, x, size, stride, offset, positions):
        ctx.in_shape, ctx.positions = x.shape, positions
        a = x.data
        item = a.itemsize
        flat = a.reshape(-1)
        return np.lib.stride_tricks.as_strided(flat[offset:], shape=size, strides=tuple(s * item for s in stride),
                                               writeable=False)

    def vjp(self, g):
        flat = IndexAddZeros.apply(g, (self.positions,), (int(np.prod(self.in_shape)),))
        return O.reshape(flat, self.in_shape), None, None, None, None

    def jvp(self, t, *_):
        return Index.apply(O.reshape(t, (-1,)), (self.positions,))


def _as_strided_samples(src):
    yield Sample((src.tensor((6,)), (2, 3), (3, 1)), desc="a plain reshape")
    yield Sample((src.tensor((3, 4)), (4, 3), (1, 4)), desc="a transpose")
    yield Sample((src.tensor((6,)), (4, 3), (1, 1)), desc="overlapping sliding windows")
    yield Sample((src.tensor((2, 5)), (2, 2), (5, 2), 1), desc="storage offset")


@register(op=AsStrided, samples=_as_strided_samples,
          torch=lambda torch, x, size, stride, storage_offset=0: torch.as_strided(x, size, stride, storage_offset))
def as_strided(input, size, stride, storage_offset=0):
    """A read-only view of ``input``'s memory with the given ``size`` and ``stride`` (in elements).

    Element ``out[i, j]`` is memory slot ``storage_offset + i * stride[0] + j * stride[1]``,
    which is all a tensor's layout is: reshape, transpose, expand and sliding windows are
    each just a choice of strides. The "memory" here is ``input``'s elements in row-major
    order (a non-contiguous input is copied first), and ``storage_offset`` counts from
    ``input``'s first element; for a freshly made tensor that is exactly PyTorch's storage.
    The gradient adds up where windows overlap.
    """
    x = check_tensor(input, "as_strided")
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    offset = int(storage_offset or 0)
    if len(size) != len(stride):
        raise ShapeError(f"as_strided: size {fmt_shape(size)} and stride {fmt_shape(stride)} need the same length")
    if any(s < 0 for s in size) or any(s < 0 for s in stride) or offset < 0:
        raise ArgumentError(f"as_strided: size, stride and storage_offset must be >= 0, got size {size}, "
                            f"stride {stride}, storage_offset {offset}")
    n = int(np.prod(x.shape))
    positions = np.asarray(offset, dtype=np.int64)
    for i, (sz, st) in enumerate(zip(size, stride)):
        positions = positions[..., None] + np.arange(sz, dtype=np.int64) * st
    positions = positions.reshape(size)
    if positions.size and int(positions.max()) >= n:
        raise IndexOutOfRange(
            f"as_strided: size {fmt_shape(size)} with stride {fmt_shape(stride)} and storage_offset {offset} reaches "
            f"memory slot {int(positions.max())}, but input {fmt_shape(x.shape)} has only {n} elements")
    if not x.data.flags.c_contiguous:
        x = O.contiguous(x)
    return view_of(AsStrided.apply(x, size, stride, offset, positions), x)
