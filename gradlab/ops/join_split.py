"""Joining tensors and cutting them apart.

Holds: ``cat`` (``concat``, ``concatenate``), ``stack``, ``hstack``/``vstack``/``row_stack``/
``dstack``/``column_stack``; ``split``, ``chunk``, ``tensor_split``, ``hsplit``/``vsplit``/``dsplit``
and ``unbind``.

``cat``'s VJP is a split of the gradient, and a split's is a concatenation (the pieces that got no
gradient count as zeros); the stacks and splits along named directions are written with these.
"""
from __future__ import annotations

import math

import numpy as np

from .. import checks as _c, ops as O
from .._tensor import Tensor
from ..autograd.function import Op
from ..backend import dtypes as _dt
from ..errors import ArgumentError, ArgumentTypeError, ShapeError, fmt_shape
from ._util import check_tensor, device_mismatch, method_spelling, multi_views, one_dim
from .registry import Sample, export, register
from .shape import atleast_1d, atleast_2d, atleast_3d, unsqueeze

unbind = method_spelling("unbind", "A tuple of the slices along ``dim`` (``x.unbind(dim)``).")


register('unbind', samples=lambda src: [Sample((src.tensor((2, 3)),), dict(dim=src.dim(2)))],
         formula="dX = stack(dY_i)", torch=lambda torch, x, dim=0: torch.unbind(x, dim))(unbind)


class Cat(Op):
    name = "cat"
    formula = "dX_i = dY[..., offset_i : offset_i + size_i, ...]   (split along dim)"

    @staticmethod
    def forward(ctx, dim, *xs):
        ctx.dim = dim
        ctx.sizes = [x.shape[dim] for x in xs]
        kind = type(xs[0]._data) if xs else None
        for i, x in enumerate(xs):
            if type(x._data) is not kind:  # nothing is copied between devices implicitly
                raise device_mismatch("cat", xs[0], x, ("tensors[0]", f"tensors[{i}]"))
        dt = _dt.result_type(*xs)
        return np.concatenate([x._data.astype(dt, copy=False) for x in xs], axis=dim)

    def vjp(self, g):
        grads, start = [None], 0
        for s in self.sizes:
            idx = (slice(None),) * self.dim + (slice(start, start + s),)
            grads.append(g[idx])
            start += s
        return tuple(grads)

    vjp_arrays = vjp  # slicing an array is the same code as slicing a Tensor

    def jvp(self, _, *ts):
        parts = [t if t is not None else O.zeros_like(x) for t, x in zip(ts, self.args[1:])]
        return O.cat(parts, self.dim)


def _seq_arg(tensors, op):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise ArgumentTypeError(f"{op}: expects a list or tuple of tensors, got {type(tensors).__name__}")
    if not tensors:
        raise ArgumentError(f"{op}: expects a non-empty list of tensors")
    return [check_tensor(t, op, f"tensors[{i}]") for i, t in enumerate(tensors)]


def _cat_samples(src):
    shape = list(src.shape(1, 3, 1, 3))
    d = src.dim(len(shape))
    parts = []
    for _ in range(src.integers(1, 3)):
        s = list(shape)
        s[d] = src.integers(0, 3)
        parts.append(src.tensor(tuple(s)))
    yield Sample((parts, d))


@register(op=Cat, samples=_cat_samples, torch=lambda torch, xs, dim=0: torch.cat(xs, dim))
def cat(tensors, dim=0, *, axis=None):
    """Join tensors along an existing dimension; all other sizes must match (``axis=`` is ``dim=``)."""
    dim = dim if axis is None else axis
    xs = _seq_arg(tensors, "cat")
    nd = xs[0].ndim
    if nd == 0:
        raise ShapeError("cat: 0-d tensors cannot be concatenated; use stack, or unsqueeze them first")
    d = one_dim(dim, nd, "cat")
    for i, x in enumerate(xs):
        if x.ndim != nd or any(a != b for j, (a, b) in enumerate(zip(x.shape, xs[0].shape)) if j != d):
            raise ShapeError(
                f"cat: tensors[{i}] has shape {fmt_shape(x.shape)} but tensors[0] has {fmt_shape(xs[0].shape)}; "
                f"all sizes except along dim {dim} must match")
    return Cat.apply(d, *xs)


concat, concatenate = export("concat")(cat), export("concatenate")(cat)


def _stack_samples(src):
    shape = src.shape(0, 3, 1, 3)
    n = src.integers(1, 3)
    yield Sample(([src.tensor(shape) for _ in range(n)], src.integers(-(len(shape) + 1), len(shape))))


@register(samples=_stack_samples, formula="dX_i = dY.select(dim, i)", torch=lambda torch, xs, dim=0: torch.stack(xs, dim))
def stack(tensors, dim=0, *, axis=None):
    """Join same-shaped tensors along a new dimension ``dim`` (``axis=`` is ``dim=``)."""
    dim = dim if axis is None else axis
    xs = _seq_arg(tensors, "stack")
    for i, x in enumerate(xs):
        if x.shape != xs[0].shape:
            raise ShapeError(f"stack: tensors[{i}] has shape {fmt_shape(x.shape)} but tensors[0] has "
                             f"{fmt_shape(xs[0].shape)}; stack needs equal shapes")
    d = one_dim(dim, xs[0].ndim + 1, "stack")
    return cat([unsqueeze(x, d) for x in xs], d)

# -------------------------------------------------------------- split, chunk
def _split_samples(src):
    shape = list(src.shape(1, 3, 1, 5))
    d = src.dim(len(shape))
    yield Sample((src.tensor(tuple(shape)), src.integers(1, 3), d), desc="equal pieces (the last may be smaller)")
    n = shape[d]
    cut = src.integers(0, n)
    yield Sample((src.tensor(tuple(shape)), [cut, n - cut], d), desc="list of sizes")


@register(method=True, samples=_split_samples, formula="dX = cat([dY_0, dY_1, ...], dim)",
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
    return multi_views(tuple(out), "split")


@register(method=True, samples=lambda src: [Sample((src.tensor((5, 3)), src.integers(1, 4), src.choice([0, 1, -1])))],
          formula="dX = cat([dY_0, dY_1, ...], dim)", torch=lambda torch, x, c, dim=0: torch.chunk(x, c, dim))
def chunk(input, chunks, dim=0):
    """Cut into ``chunks`` nearly equal pieces along ``dim`` (each ``ceil(n / chunks)`` long, as PyTorch;
    so there may be fewer than ``chunks``)."""
    x = check_tensor(input, "chunk")
    chunks = _c.size(chunks, "chunk", "chunks", None)
    if chunks <= 0:
        raise ArgumentError(f"chunk: chunks must be a positive integer, got {chunks!r}")
    if x.ndim == 0:
        raise ShapeError("chunk: cannot chunk a 0-d tensor; it has no dims")
    d = one_dim(dim, x.ndim, "chunk")
    n = x.shape[d]
    if n == 0:
        return multi_views(tuple(O.getitem(x, (slice(None),) * d + (slice(0, 0),)) for _ in range(chunks)), "chunk")
    return split(x, math.ceil(n / chunks), d)


def _two(src):
    return [Sample(([src.tensor((2, 3)), src.tensor((2, 3))],)), Sample(([src.tensor((3,)), src.tensor((2,))],))]


@register(samples=_two, formula="dX_i = the slice of dY that X_i filled",
          torch=lambda torch, ts: torch.hstack(ts))
def hstack(tensors):
    """Join horizontally: along dim 1, or dim 0 for 1-D tensors (``numpy.hstack``)."""
    xs = [atleast_1d(t) for t in _seq_arg(tensors, "hstack")]
    return O.cat(xs, 0 if xs[0].ndim == 1 else 1)


@register(samples=lambda src: [Sample(([src.tensor((2, 3)), src.tensor((1, 3))],)),
                               Sample(([src.tensor((3,)), src.tensor((3,))],))],
          formula="dX_i = the rows of dY that X_i filled", torch=lambda torch, ts: torch.vstack(ts))
def vstack(tensors):
    """Join vertically (row-wise): 1-D tensors become rows first (``numpy.vstack``)."""
    return O.cat([atleast_2d(t) for t in _seq_arg(tensors, "vstack")], 0)


row_stack = export("row_stack")(vstack)


@register(samples=lambda src: [Sample(([src.tensor((2, 3)), src.tensor((2, 3))],))],
          formula="dX_i = dY[..., i]", torch=lambda torch, ts: torch.dstack(ts))
def dstack(tensors):
    """Join depth-wise, along dim 2 (1-D and 2-D tensors are made 3-D first)."""
    return O.cat([atleast_3d(t) for t in _seq_arg(tensors, "dstack")], 2)


@register(samples=lambda src: [Sample(([src.tensor((3,)), src.tensor((3, 2))],))],
          formula="dX_i = the columns of dY that X_i filled", torch=lambda torch, ts: torch.column_stack(ts))
def column_stack(tensors):
    """Join as columns: each 0-d/1-D tensor becomes one column, 2-D tensors are joined along dim 1."""
    xs = []
    for t in _seq_arg(tensors, "column_stack"):
        xs.append(O.reshape(t, (t.numel(), 1)) if t.ndim <= 1 else t)
    return O.cat(xs, 1)


def _tensor_split_samples(src):
    yield Sample((src.tensor((7,)), 3))
    yield Sample((src.tensor((2, 7)), [1, 5], 1))
    yield Sample((src.tensor((5, 2)), 2))


@register(method=True, samples=_tensor_split_samples, formula="dX = the pieces of dY joined back",
          torch=lambda torch, x, s, dim=0: torch.tensor_split(x, s, dim))
def tensor_split(input, indices_or_sections, dim=0):
    """Cut along ``dim`` into ``n`` nearly equal pieces (an int: the first ``size % n`` pieces are one longer)
    or at the given indices (a list or 1-D tensor: ``[1, 5]`` gives ``x[:1], x[1:5], x[5:]``). Views."""
    x = check_tensor(input, "tensor_split")
    if x.ndim == 0:
        raise ShapeError("tensor_split: expected at least a 1-dimensional tensor, got a 0-d one")
    d = one_dim(dim, x.ndim, "tensor_split")
    n = x.shape[d]
    s = indices_or_sections
    if isinstance(s, Tensor):
        if s.dtype.kind not in "iu" or s.ndim > 1:
            raise ArgumentTypeError("tensor_split: a tensor indices_or_sections must be a 0-d or 1-D integer tensor")
        s = int(s.item()) if s.ndim == 0 else [int(v) for v in np.asarray(s.cpu()._data)]
    if isinstance(s, (int, np.integer)) and not isinstance(s, bool):
        if s <= 0:
            raise ArgumentError(f"tensor_split: number of sections must be larger than 0, got {s}")
        q, r = divmod(n, int(s))
        bounds, start = [], 0
        for i in range(int(s)):
            start += q + (1 if i < r else 0)
            bounds.append(start)
        bounds = bounds[:-1]
    elif isinstance(s, (list, tuple)):
        bounds = [_c.size(v, "tensor_split", "indices", None) for v in s]
    else:
        raise ArgumentTypeError(f"tensor_split: indices_or_sections must be an int, a list of ints or an integer "
                                f"tensor, got {type(s).__name__}")
    pieces, prev = [], 0
    for b in bounds + [n]:
        b = max(0, min(n, b + n if b < 0 else b))
        lo = min(prev, b)
        pieces.append(O.getitem(x, (slice(None),) * d + (slice(lo, b),)))
        prev = max(prev, b)
    return tuple(pieces)


def _dir_split(name, dim_for, min_ndim):
    def fn(input, indices_or_sections):
        x = check_tensor(input, name)
        if x.ndim < min_ndim:
            raise ShapeError(f"{name}: requires a tensor with at least {min_ndim} dims, got shape {fmt_shape(x.shape)}")
        d = dim_for(x)
        if isinstance(indices_or_sections, (int, np.integer)) and x.shape[d] % int(indices_or_sections):
            raise ArgumentError(f"{name}: dim {d} of size {x.shape[d]} is not divisible by the split size "
                                f"{indices_or_sections}; use tensor_split for uneven pieces")
        return tensor_split(x, indices_or_sections, d)
    fn.__name__ = name
    fn.__doc__ = f"``tensor_split`` along dim {name[0]} (the sections must divide the dim evenly)."
    return export(name, method=True)(fn)


hsplit = _dir_split("hsplit", lambda x: 0 if x.ndim == 1 else 1, 1)
vsplit = _dir_split("vsplit", lambda x: 0, 2)
dsplit = _dir_split("dsplit", lambda x: 2, 3)
