"""Rearranging without changing values: split, chunk, repeat/tile, flip, roll and as_strided.

These move numbers without computing anything, so each VJP moves the gradient
back the opposite way: ``split``'s is a concatenation, ``flip``'s a flip,
``roll``'s a roll the other way, ``repeat``'s a *sum* over the copies (every
copy received a gradient), ``as_strided``'s an add-back into memory slots
(where windows overlap, the slot collects every window's gradient).
"""
from __future__ import annotations

import math

import numpy as np

from .. import ops as O
from ..autograd.function import Op
from ..backend import xp_of
from ..backend.arrays import as_strided as _as_strided
from ..errors import ArgumentError, ArgumentTypeError, IndexOutOfRange, ShapeError, fmt_shape
from ._util import check_tensor, norm_dim, one_dim, sizes_arg, view_of
from .index import Index, IndexAddZeros, index_add_zeros
from .registry import Sample, register

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
        if not isinstance(s, (tuple, list)) or not all(isinstance(v, (int, np.integer)) for v in s):
            raise ArgumentTypeError(f"split: split_size_or_sections must be an int or a list of ints, got {s!r}")
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

    def vjp_arrays(self, g):
        padded = (1,) * (len(self.sizes) - len(self.in_shape)) + self.in_shape
        inter = tuple(v for r, s in zip(self.sizes, padded) for v in (r, s))
        summed = np.sum(g.reshape(inter), axis=tuple(range(0, 2 * len(padded), 2))) if padded else g
        return summed.reshape(self.in_shape), None

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
def tile(input, *dims_args, dims=None):
    """``repeat``, but ``dims`` shorter than the tensor's rank is padded with 1s on the left (``torch.tile``)."""
    x = check_tensor(input, "tile")
    dims = sizes_arg(dims_args if dims is None else (dims,), "tile")
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

    def vjp_arrays(self, g):
        return (xp_of(g).flip(g, axis=self.dims) if self.dims else g), None

    def jvp(self, t, _):
        return Flip.apply(t, self.dims)


def _dims_arg(dims, ndim, op):
    return norm_dim(dims, ndim, op, allow_none=False) if ndim else ()


@register(op=Flip, samples=lambda src: [Sample((src.tensor((2, 3, 4)), src.choice([0, -1, (0, 2), [1]])))],
          torch=lambda torch, x, dims: torch.flip(x, dims if isinstance(dims, (list, tuple)) else (dims,)))
def flip(input, *dims_args, dims=None):
    """Reverse the order of elements along ``dims`` (``flip(x, (0, 1))``, ``flip(x, dims=[0])`` or
    ``x.flip(0, 1)``); a copy, as in PyTorch."""
    x = check_tensor(input, "flip")
    if dims is None:
        if not dims_args:
            raise ArgumentTypeError("flip: give the dims to reverse, e.g. flip(x, 0) or flip(x, dims=(0, 1))")
        dims = dims_args[0] if len(dims_args) == 1 else dims_args
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

    def vjp_arrays(self, g):
        back = tuple(-s for s in self.shifts) if isinstance(self.shifts, tuple) else -self.shifts
        return xp_of(g).roll(g, back, axis=self.dims), None, None

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
        if type(x.data) is not np.ndarray:  # the gradient's scatter-add needs its indices on x's device
            positions = xp_of(x.data).asarray(positions)
        ctx.in_shape, ctx.positions = x.shape, positions
        a = x.data
        item = a.itemsize
        flat = a.reshape(-1)
        return _as_strided(flat[offset:], size, tuple(s * item for s in stride))  # NumPy's or CuPy's

    def vjp(self, g):
        flat = IndexAddZeros.apply(g, (self.positions,), (int(np.prod(self.in_shape)),))
        return O.reshape(flat, self.in_shape), None, None, None, None

    def vjp_arrays(self, g):
        flat = index_add_zeros(g, (self.positions,), (int(np.prod(self.in_shape)),))
        return flat.reshape(self.in_shape), None, None, None, None

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
