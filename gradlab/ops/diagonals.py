"""Diagonals and triangles of matrices: ``diagonal``, ``diag``, ``trace`` (the method
``x.trace()``), ``tril``, ``triu``.

``diagonal`` is a view, as PyTorch's: the diagonal's elements are every ``(row stride + column
stride)`` bytes of the input's memory, so one strided array shows them without a copy (an in-place
change through it is seen in the input, and the two share a version counter). Its VJP puts the
gradient on the diagonal of zeros (``DiagonalScatter``), whose own VJP is ``diagonal`` again.
``diag`` and ``trace`` use it; ``tril``'s VJP is the same triangle of the gradient.
"""
from __future__ import annotations

import numpy as np

from .. import checks as _c, ops as O
from .._tensor import Tensor
from ..autograd.function import Op
from ..backend import xp_of
from ..errors import ArgumentError, ShapeError, fmt_shape
from ._util import OneRule, apply_in, check_tensor, one_dim, view_of
from .registry import Sample, register


# --------------------------------------------------------------- tril, triu
class Tril(OneRule, Op):
    name = "tril"
    formula = "dX = tril(dY, diagonal)"
    kernel = staticmethod(np.tril)  # (on arrays: forward, and the VJP's fast path)

    @staticmethod
    def forward(ctx, x, diagonal):
        ctx.diagonal = diagonal
        return type(ctx).kernel(x._data, diagonal)

    def rule(self, ns, g):  # the VJP, on tensors and arrays alike (OneRule): the same mask
        return apply_in(ns, type(self), g, self.diagonal), None

    def jvp(self, t, _):
        return type(self).apply(t, self.diagonal)


class Triu(Tril):
    name = "triu"
    formula = "dX = triu(dY, diagonal)"
    kernel = staticmethod(np.triu)


def _tri_samples(src):
    shape = src.shape(2, 4, 1, 4)
    yield Sample((src.tensor(shape),), desc="main diagonal")
    yield Sample((src.tensor(shape), src.integers(-2, 2)), desc="offset diagonal")


def _tri(op_cls, name, which):
    def fn(input, diagonal=0):
        x = check_tensor(input, name)
        if x.ndim < 2:
            raise ShapeError(f"{name}: input must have at least 2 dims, got shape {fmt_shape(x.shape)}")
        return op_cls.apply(x, _c.size(diagonal, name, "diagonal", None))
    fn.__name__ = name
    fn.__doc__ = (f"Keep the {which} triangle of the last two dims (``diagonal`` shifts it up for > 0), "
                  "zero the rest.")
    return register(name, op=op_cls, samples=_tri_samples, method=True,
                    torch=lambda torch, x, diagonal=0: getattr(torch, name)(x, diagonal))(fn)


tril = _tri(Tril, "tril", "lower")
triu = _tri(Triu, "triu", "upper")


def diagonal_view(a, offset, d1, d2):
    """The ``offset`` diagonal of array ``a`` over dims ``d1``, ``d2``, as its last dim: a view of ``a``'s
    memory (writeable where ``a`` is), stepping one row and one column at a time."""
    m = xp_of(a).moveaxis(a, (d1, d2), (-2, -1))
    m = m[..., :, offset:] if offset >= 0 else m[..., -offset:, :]
    shape = m.shape[:-2] + (min(m.shape[-2], m.shape[-1]),)
    strides = m.strides[:-2] + (m.strides[-2] + m.strides[-1],)
    if isinstance(m, np.ndarray):  # NumPy (and the simulated device, a NumPy subclass)
        return np.lib.stride_tricks.as_strided(m, shape, strides, subok=True, writeable=m.flags.writeable)
    return xp_of(a).lib.stride_tricks.as_strided(m, shape, strides)  # pragma: no cover - GPU only


class Diagonal(OneRule, Op):
    name = "diagonal"
    formula = "dX = zeros(X.shape) with dX's diagonal = dY"

    @staticmethod
    def kernel(a, offset, d1, d2):
        """The diagonal of array ``a`` as a new array (forward returns the view itself)."""
        return diagonal_view(a, offset, d1, d2).copy()

    @staticmethod
    def forward(ctx, x, offset, d1, d2):
        ctx.geometry, ctx.in_shape = (offset, d1, d2), x.shape
        return diagonal_view(x._data, offset, d1, d2)

    def rule(self, ns, g):  # the VJP, on tensors and arrays alike (OneRule)
        return apply_in(ns, DiagonalScatter, g, self.in_shape, *self.geometry), None, None, None

    def jvp(self, t, *_):
        return Diagonal.apply(t, *self.geometry)


class DiagonalScatter(OneRule, Op):
    """``diagonal``'s backward: zeros of the input's shape with ``g`` on the diagonal (PyTorch's
    ``diagonal_backward``). Linear in ``g``, so its VJP is ``diagonal`` of the incoming gradient."""
    name = "diagonal_scatter"
    formula = "dG = diagonal(dY)"

    @staticmethod
    def kernel(g, shape, offset, d1, d2):
        out = xp_of(g).zeros(shape, dtype=g.dtype)
        diagonal_view(out, offset, d1, d2)[...] = g
        return out

    @staticmethod
    def forward(ctx, g, shape, offset, d1, d2):
        ctx.geometry, ctx.shape = (offset, d1, d2), shape
        return DiagonalScatter.kernel(g._data, shape, offset, d1, d2)

    def rule(self, ns, gg):  # the VJP, on tensors and arrays alike (OneRule)
        return apply_in(ns, Diagonal, gg, *self.geometry), None, None, None, None

    def jvp(self, t, *_):
        return DiagonalScatter.apply(t, self.shape, *self.geometry)


def _diag_index(n1, n2, offset, xp):
    """Row and column indices of the ``offset`` diagonal of an (n1, n2) matrix."""
    length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    i = xp.arange(length, dtype=np.int64)
    return (i, i + offset) if offset >= 0 else (i - offset, i)


@register(op=Diagonal, method=True, samples=lambda src: [Sample((src.tensor((3, 4)),)), Sample((src.tensor((2, 3, 4)), 1, 0, 2)),
                                            Sample((src.tensor((4, 3)), -2, -1, 0))],
          torch=lambda torch, x, offset=0, dim1=0, dim2=1: torch.diagonal(x, offset, dim1, dim2))
def diagonal(input, offset=0, dim1=0, dim2=1):
    """The ``offset`` diagonal of the matrices spanned by ``dim1`` and ``dim2``; it becomes the last dim.
    A view of ``input``, as PyTorch's (see the module docstring)."""
    x = check_tensor(input, "diagonal")
    if x.ndim < 2:
        raise ShapeError(f"diagonal: input must have at least 2 dims, got shape {fmt_shape(x.shape)}")
    d1, d2 = one_dim(dim1, x.ndim, "diagonal"), one_dim(dim2, x.ndim, "diagonal")
    if d1 == d2:
        raise ArgumentError(f"diagonal: dim1 and dim2 must differ, both are {d1}")
    return view_of(Diagonal.apply(x, _c.size(offset, "diagonal", "offset", None), d1, d2), x)


@register(samples=lambda src: [Sample((src.tensor((3, 4)),))], formula="dX = eye(X.shape) * dY",
          torch=lambda torch, x: torch.trace(x), public=False)  # x.trace() only: gradlab.trace is the debugging trace
def trace(input):
    """The sum of the main diagonal of a matrix."""
    x = check_tensor(input, "trace")
    if x.ndim != 2:
        raise ShapeError(f"trace: input must be a matrix (2-D), got shape {fmt_shape(x.shape)}")
    return O.sum(diagonal(x))


@register(method=True, samples=lambda src: [Sample((src.tensor((3,)),)), Sample((src.tensor((3,)), 1)),
                               Sample((src.tensor((3, 4)), -1))],
          formula="vector: dV = diagonal(dY, k); matrix: dX = zeros with the k-th diagonal = dY",
          torch=lambda torch, x, diagonal=0: torch.diag(x, diagonal))
def diag(input, diagonal=0):  # noqa: F811 - PyTorch's name for the argument
    """A vector becomes a square matrix with it on the ``diagonal``-th diagonal; a matrix gives that diagonal."""
    x = check_tensor(input, "diag")
    k = _c.size(diagonal, "diag", "diagonal", None)
    if x.ndim == 2:
        return globals()["diagonal"](x, k)
    if x.ndim != 1:
        raise ShapeError(f"diag: input must be 1-D (a vector) or 2-D (a matrix), got shape {fmt_shape(x.shape)}")
    n = x.shape[0] + abs(k)
    out = O.zeros(n, n, dtype=x.dtype, device=x.device)
    rows, cols = _diag_index(n, n, k, xp_of(x._data))
    out[Tensor._make(rows), Tensor._make(cols)] = x
    return out
