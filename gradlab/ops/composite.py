"""Ops built from other ops: ``diagonal``, ``trace``, ``diag``, ``masked_select``, ``repeat_interleave``.

Each is a few lines of indexing on top of ``getitem`` / ``index_select`` / ``setitem``, so its gradient
needs no formula of its own: backward runs through the ops it is made of (look at the graph with
``gradlab.show_graph`` and you see them). The registry still lists each one, so the generic suite
gradchecks it and compares it with PyTorch.
"""
from __future__ import annotations

import numpy as np

from .. import ops as O
from ..backend import xp_of
from ..errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError, fmt_shape
from .._tensor import Tensor
from ._util import check_tensor, one_dim
from .registry import Sample, register


def _diag_index(n1, n2, offset, xp):
    """Row and column indices of the ``offset`` diagonal of an (n1, n2) matrix."""
    length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    i = xp.arange(length, dtype=np.int64)
    return (i, i + offset) if offset >= 0 else (i - offset, i)


@register(samples=lambda src: [Sample((src.tensor((3, 4)),)), Sample((src.tensor((2, 3, 4)), 1, 0, 2)),
                               Sample((src.tensor((4, 3)), -2, -1, 0))],
          formula="dX = zeros(X.shape) with dX's diagonal = dY",
          torch=lambda torch, x, offset=0, dim1=0, dim2=1: torch.diagonal(x, offset, dim1, dim2))
def diagonal(input, offset=0, dim1=0, dim2=1):
    """The ``offset`` diagonal of the matrices spanned by ``dim1`` and ``dim2``; it becomes the last dim."""
    x = check_tensor(input, "diagonal")
    if x.ndim < 2:
        raise ShapeError(f"diagonal: input must have at least 2 dims, got shape {fmt_shape(x.shape)}")
    d1, d2 = one_dim(dim1, x.ndim, "diagonal"), one_dim(dim2, x.ndim, "diagonal")
    if d1 == d2:
        raise ArgumentError(f"diagonal: dim1 and dim2 must differ, both are {d1}")
    y = x.movedim((d1, d2), (-2, -1))
    rows, cols = _diag_index(y.shape[-2], y.shape[-1], int(offset), xp_of(x.data))
    return O.getitem(y, (Ellipsis, Tensor._make(rows), Tensor._make(cols)))


@register(samples=lambda src: [Sample((src.tensor((3, 4)),))], formula="dX = eye(X.shape) * dY",
          torch=lambda torch, x: torch.trace(x))
def trace(input):
    """The sum of the main diagonal of a matrix."""
    x = check_tensor(input, "trace")
    if x.ndim != 2:
        raise ShapeError(f"trace: input must be a matrix (2-D), got shape {fmt_shape(x.shape)}")
    return O.sum(diagonal(x))


@register(samples=lambda src: [Sample((src.tensor((3,)),)), Sample((src.tensor((3,)), 1)),
                               Sample((src.tensor((3, 4)), -1))],
          formula="vector: dV = diagonal(dY, k); matrix: dX = zeros with the k-th diagonal = dY",
          torch=lambda torch, x, diagonal=0: torch.diag(x, diagonal))
def diag(input, diagonal=0):  # noqa: F811 - PyTorch's name for the argument
    """A vector becomes a square matrix with it on the ``diagonal``-th diagonal; a matrix gives that diagonal."""
    x = check_tensor(input, "diag")
    k = int(diagonal)
    if x.ndim == 2:
        return globals()["diagonal"](x, k)
    if x.ndim != 1:
        raise ShapeError(f"diag: input must be 1-D (a vector) or 2-D (a matrix), got shape {fmt_shape(x.shape)}")
    n = x.shape[0] + abs(k)
    out = O.zeros(n, n, dtype=x.dtype, device=x.device)
    rows, cols = _diag_index(n, n, k, xp_of(x.data))
    out[Tensor._make(rows), Tensor._make(cols)] = x
    return out


def _masked_select_samples(src):
    yield Sample((src.tensor((3, 4)), Tensor._make(src.rng.random((3, 4)) > 0.4)))
    yield Sample((src.tensor((3, 1)), Tensor._make(src.rng.random((1, 4)) > 0.4)), desc="broadcast")


@register(samples=_masked_select_samples, formula="dX = zeros(X.shape) with dX[mask] = dY",
          torch=lambda torch, x, mask: torch.masked_select(x, mask))
def masked_select(input, mask):
    """The elements of ``input`` where the bool ``mask`` is True, as a 1-D tensor (both broadcast)."""
    x = check_tensor(input, "masked_select")
    m = check_tensor(mask, "masked_select", "mask")
    if m.dtype != np.bool_:
        raise DTypeError(f"masked_select: mask must be a bool tensor, got dtype {m.dtype}; "
                         "build it with a comparison, or use mask.bool()")
    try:
        shape = np.broadcast_shapes(x.shape, m.shape)
    except ValueError:
        raise ShapeError(f"masked_select: mask {fmt_shape(m.shape)} and input {fmt_shape(x.shape)} "
                         "do not broadcast") from None
    if x.shape != shape:
        x = O.broadcast_to(x, shape)
    if m.shape != shape:
        m = O.broadcast_to(m, shape)
    return O.getitem(x, m)


@register(samples=lambda src: [Sample((src.tensor((2, 3)), 2)), Sample((src.tensor((2, 3)), 3, 1)),
                               Sample((src.tensor((3, 2)), Tensor._make(np.array([1, 0, 2])), 0))],
          formula="dX = sum of dY over each element's copies",
          torch=lambda torch, x, repeats, dim=None: torch.repeat_interleave(x, repeats, dim))
def repeat_interleave(input, repeats, dim=None, *, output_size=None):
    """Repeat each element ``repeats`` times along ``dim`` (the flattened input when ``dim`` is None).

    ``repeats`` is an int, or a tensor with one count per element along ``dim``.
    ``[a, b].repeat_interleave(2)`` is ``[a, a, b, b]``; ``repeat`` would give ``[a, b, a, b]``."""
    x = check_tensor(input, "repeat_interleave")
    if dim is None:
        x, d = O.flatten(x), 0
    else:
        d = one_dim(dim, x.ndim, "repeat_interleave")
    n = x.shape[d] if x.ndim else 1
    if isinstance(repeats, Tensor):
        if repeats.dtype.kind not in "iu" or repeats.ndim > 1:
            raise ArgumentTypeError("repeat_interleave: repeats must be an int or a 1-D integer tensor")
        counts = np.asarray(repeats.cpu().data).reshape(-1)
    elif isinstance(repeats, (int, np.integer)) and not isinstance(repeats, bool):
        counts = np.asarray([repeats])
    else:
        raise ArgumentTypeError(f"repeat_interleave: repeats must be an int or an integer tensor, got {repeats!r}")
    if counts.size not in (1, n) or (counts < 0).any():
        raise ArgumentError(f"repeat_interleave: repeats must be >= 0 and give one count (or one per element: "
                            f"{n} along dim {d}), got {counts.size}")
    idx = np.repeat(np.arange(n, dtype=np.int64), counts if counts.size == n else int(counts[0]))
    if x.ndim == 0:
        x = O.reshape(x, (1,))
    return O.index_select(x, d, O.to(Tensor._make(idx), x.device))
