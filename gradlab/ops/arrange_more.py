"""More of PyTorch's ways to join, cut, turn and index tensors, written with ops gradlab already has:
``hstack``/``vstack``/``dstack``/``column_stack``/``row_stack``, ``tensor_split`` and ``hsplit``/``vsplit``/``dsplit``,
``fliplr``/``flipud``/``rot90``, ``meshgrid``, ``diff``, ``take_along_dim``, ``argwhere``, ``clamp_min``/``clamp_max``.

Each is a few lines on top of ``cat``/``getitem``/``flip``/``transpose``, so its gradient needs no formula
of its own; the differentiable ones are registered, so the generic suite gradchecks them and compares
them with PyTorch.
"""
from __future__ import annotations

import numpy as np

from .. import ops as O
from .._tensor import Tensor
from ..errors import ArgumentError, ArgumentTypeError, ShapeError, fmt_shape
from ._util import check_tensor, one_dim
from .registry import Sample, register
from .shape import _seq_arg  # a non-empty list or tuple of tensors, checked


def atleast_1d(x):
    x = check_tensor(x, "atleast_1d")
    return O.reshape(x, (1,)) if x.ndim == 0 else x


def atleast_2d(x):
    x = atleast_1d(x)
    return O.unsqueeze(x, 0) if x.ndim == 1 else x


def atleast_3d(x):
    x = check_tensor(x, "atleast_3d")
    if x.ndim == 0:
        return O.reshape(x, (1, 1, 1))
    if x.ndim == 1:
        return O.reshape(x, (1, x.shape[0], 1))
    return O.unsqueeze(x, -1) if x.ndim == 2 else x


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


row_stack = vstack


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


def _split_samples(src):
    yield Sample((src.tensor((7,)), 3))
    yield Sample((src.tensor((2, 7)), [1, 5], 1))
    yield Sample((src.tensor((5, 2)), 2))


@register(samples=_split_samples, formula="dX = the pieces of dY joined back",
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
        s = int(s.item()) if s.ndim == 0 else [int(v) for v in np.asarray(s.cpu().data)]
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
        bounds = [int(v) for v in s]
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
    return fn


hsplit = _dir_split("hsplit", lambda x: 0 if x.ndim == 1 else 1, 1)
vsplit = _dir_split("vsplit", lambda x: 0, 2)
dsplit = _dir_split("dsplit", lambda x: 2, 3)


@register(samples=lambda src: [Sample((src.tensor((2, 3)),)), Sample((src.tensor((2, 3, 2)),))],
          formula="dX = fliplr(dY)", torch=lambda torch, x: torch.fliplr(x))
def fliplr(input):
    """Reverse the columns (dim 1); the input needs at least 2 dims."""
    x = check_tensor(input, "fliplr")
    if x.ndim < 2:
        raise ShapeError(f"fliplr: input must have at least 2 dims, got shape {fmt_shape(x.shape)}")
    return O.flip(x, (1,))


@register(samples=lambda src: [Sample((src.tensor((2, 3)),)), Sample((src.tensor((3,)),))],
          formula="dX = flipud(dY)", torch=lambda torch, x: torch.flipud(x))
def flipud(input):
    """Reverse the rows (dim 0); the input needs at least 1 dim."""
    x = check_tensor(input, "flipud")
    if x.ndim < 1:
        raise ShapeError("flipud: input must have at least 1 dim, got a 0-d tensor")
    return O.flip(x, (0,))


@register(samples=lambda src: [Sample((src.tensor((2, 3)),)), Sample((src.tensor((2, 3, 2)), 3, (1, 2))),
                               Sample((src.tensor((2, 3)), -1))],
          formula="dX = rot90(dY, -k, dims)", torch=lambda torch, x, k=1, dims=(0, 1): torch.rot90(x, k, dims))
def rot90(input, k=1, dims=(0, 1)):
    """Turn by 90 degrees ``k`` times, from the first of ``dims`` towards the second."""
    x = check_tensor(input, "rot90")
    dims = tuple(dims)
    if len(dims) != 2:
        raise ArgumentError(f"rot90: dims must name exactly 2 dims, got {dims}")
    if x.ndim < 2:
        raise ShapeError(f"rot90: input must have at least 2 dims, got shape {fmt_shape(x.shape)}")
    d0, d1 = one_dim(dims[0], x.ndim, "rot90"), one_dim(dims[1], x.ndim, "rot90")
    if d0 == d1:
        raise ArgumentError(f"rot90: the two dims must differ, got {dims}")
    k = int(k) % 4
    if k == 1:
        return O.transpose(O.flip(x, (d1,)), d0, d1)
    if k == 2:
        return O.flip(x, (d0, d1))
    if k == 3:
        return O.flip(O.transpose(x, d0, d1), (d1,))
    return O.clone(x)


@register(samples=lambda src: [Sample((src.tensor((3,)), src.tensor((2,))), dict(indexing="ij")),
                               Sample((src.tensor((3,)), src.tensor((2,)), src.tensor((2,))), dict(indexing="xy"))],
          formula="dX_i = dY_i summed over the other grids' dims",
          torch=lambda torch, *ts, indexing=None: torch.meshgrid(*ts, indexing=indexing))
def meshgrid(*tensors, indexing=None):
    """Coordinate grids: for 1-D inputs of sizes n1..nk, k tensors of shape (n1, ..., nk).

    ``indexing='ij'`` (PyTorch's default) keeps the order; ``'xy'`` swaps the first two dims (as
    ``numpy.meshgrid``). Each result is an expanded view of its input.
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ArgumentError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    xs = [check_tensor(t, "meshgrid", f"tensors[{i}]") for i, t in enumerate(tensors)]
    for i, t in enumerate(xs):
        if t.ndim > 1:
            raise ShapeError(f"meshgrid: expects 0-D or 1-D tensors, but tensors[{i}] has shape {fmt_shape(t.shape)}")
    xs = [atleast_1d(t) for t in xs]
    swap = indexing == "xy" and len(xs) >= 2
    if swap:
        xs[0], xs[1] = xs[1], xs[0]
    shape = tuple(t.shape[0] for t in xs)
    out = []
    for i, t in enumerate(xs):
        view = [1] * len(xs)
        view[i] = t.shape[0]
        out.append(O.expand(O.reshape(t, tuple(view)), *shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def _diff_samples(src):
    yield Sample((src.tensor((5,)),))
    yield Sample((src.tensor((3, 4)),), dict(n=2, dim=1))
    yield Sample((src.tensor((3, 4)),), dict(dim=0, prepend=src.tensor((1, 4)), append=src.tensor((2, 4))))


@register(samples=_diff_samples, formula="dX[i] = dY[i-1] - dY[i]",
          torch=lambda torch, x, n=1, dim=-1, prepend=None, append=None: torch.diff(x, n, dim, prepend, append))
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th forward difference along ``dim``: ``y[i] = x[i + 1] - x[i]`` (repeated ``n`` times),
    after joining ``prepend`` before and ``append`` after ``input``. Bool inputs give ``x[i + 1] != x[i]``."""
    x = check_tensor(input, "diff")
    if x.ndim == 0:
        raise ShapeError("diff: expects input to be at least one-dimensional, got a 0-d tensor")
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


def _take_samples(src):
    yield Sample((src.tensor((3, 4)), src.index_tensor((3, 2), 4), 1))
    yield Sample((src.tensor((3, 4)), src.index_tensor((5,), 12)))


@register(samples=_take_samples, formula="dX = zeros with dY added at the taken positions",
          torch=lambda torch, x, idx, dim=None: torch.take_along_dim(x, idx, dim))
def take_along_dim(input, indices, dim=None):
    """``input`` picked at ``indices`` along ``dim`` (indices broadcast against input, as
    ``numpy.take_along_axis``); with ``dim=None`` both are flattened first."""
    x = check_tensor(input, "take_along_dim")
    idx = check_tensor(indices, "take_along_dim", "indices")
    if idx.dtype.kind not in "iu":
        raise ArgumentTypeError(f"take_along_dim: indices must be an integer tensor, got dtype {idx.dtype}")
    if dim is None:
        return O.gather(O.flatten(x), 0, O.flatten(idx))
    d = one_dim(dim, x.ndim, "take_along_dim")
    if idx.ndim != x.ndim:
        raise ShapeError(f"take_along_dim: input {fmt_shape(x.shape)} and indices {fmt_shape(idx.shape)} "
                         "should have the same number of dims")
    sx, si = list(x.shape), list(idx.shape)
    sx[d] = si[d] = 1
    try:
        b = list(np.broadcast_shapes(tuple(sx), tuple(si)))
    except ValueError:
        raise ShapeError(f"take_along_dim: input {fmt_shape(x.shape)} and indices {fmt_shape(idx.shape)} do not "
                         f"broadcast outside dim {d}") from None
    bx, bi = list(b), list(b)
    bx[d], bi[d] = x.shape[d], idx.shape[d]
    if tuple(bx) != x.shape:
        x = O.broadcast_to(x, tuple(bx))
    if tuple(bi) != idx.shape:
        idx = O.broadcast_to(idx, tuple(bi))
    return O.gather(x, d, idx)


def argwhere(input):
    """The indices of the nonzero entries, one row per entry (``x.nonzero()``), shape ``(count, ndim)``."""
    return O.nonzero(check_tensor(input, "argwhere"))


@register(samples=lambda src: [Sample((src.tensor((3, 4), away_from=0.1), 0.2))], elementwise=True,
          formula="dX = dY where X > min", torch=lambda torch, x, m: torch.clamp_min(x, m))
def clamp_min(input, min):  # noqa: A002 - PyTorch's name
    """``max(input, min)`` elementwise (``clamp(input, min=min)``)."""
    return O.clamp(input, min=min)


@register(samples=lambda src: [Sample((src.tensor((3, 4), away_from=0.1), 0.2))], elementwise=True,
          formula="dX = dY where X < max", torch=lambda torch, x, m: torch.clamp_max(x, m))
def clamp_max(input, max):  # noqa: A002 - PyTorch's name
    """``min(input, max)`` elementwise (``clamp(input, max=max)``)."""
    return O.clamp(input, max=max)


ARRANGE_METHODS = ["tensor_split", "hsplit", "vsplit", "dsplit", "fliplr", "flipud", "rot90", "diff",
                   "take_along_dim", "argwhere", "clamp_min", "clamp_max"]
