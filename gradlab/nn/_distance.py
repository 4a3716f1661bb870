"""Distances of ``F``: ``cosine_similarity``, ``pairwise_distance`` (row by row) and ``pdist`` (all pairs).

Each is a composite of gradlab ops (norms, sums, divisions), so the gradients come from those ops;
``eps`` keeps each norm away from its kink at zero.
"""
from __future__ import annotations

import numpy as np

from .. import checks as _c, ops as O
from .._tensor import Tensor
from ..backend import xp_of
from ..errors import ArgumentError, ShapeError, fmt_shape
from ..ops._util import check_tensor
from ..ops.registry import Sample
from ._normalization import _vec_samples
from ._register import register_table


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``<x1, x2> / (||x1|| * ||x2||)`` along ``dim`` (each norm at least ``eps``); the inputs broadcast."""
    a, b = check_tensor(x1, "cosine_similarity", "x1"), check_tensor(x2, "cosine_similarity", "x2")
    # one integer tensor is promoted to the other's floating dtype (as PyTorch); two are refused
    dt = _c.common_floating("cosine_similarity", x1=a, x2=b)
    eps = _c.arguments("cosine_similarity", eps=(eps, "nonnegative"))
    a, b = (t if t.dtype == dt else O.to(t, dt) for t in (a, b))
    try:
        shape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ShapeError(f"cosine_similarity: x1 {fmt_shape(a.shape)} and x2 {fmt_shape(b.shape)} do not "
                         "broadcast") from None
    a, b = O.broadcast_to(a, shape), O.broadcast_to(b, shape)
    na = O.clamp(O.norm(a, 2, dim=dim, keepdim=True), min=eps)
    nb = O.clamp(O.norm(b, 2, dim=dim, keepdim=True), min=eps)
    return O.sum((a / na) * (b / nb), dim=dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``||x1 - x2 + eps||_p`` over the last dim (eps avoids the norm's kink at zero)."""
    a, b = check_tensor(x1, "pairwise_distance", "x1"), check_tensor(x2, "pairwise_distance", "x2")
    _c.number(p, "pairwise_distance", "p", tensor_ok=False), _c.number(eps, "pairwise_distance", "eps", tensor_ok=False)
    _c.flag(keepdim, "pairwise_distance", "keepdim")
    return O.norm(a - b + eps, p, dim=-1, keepdim=keepdim)


def pdist(input, p=2):
    """The ``p``-norm distance between every pair of rows ``i < j`` of ``(N, M)``: ``N*(N-1)/2`` values."""
    x = check_tensor(input, "pdist")
    if not _c.number(p, "pdist", "p", tensor_ok=False) >= 0:
        raise ArgumentError(f"pdist: p must be >= 0 (the p-norm of each difference), got {p!r}")
    if x.ndim != 2:
        raise ShapeError(f"pdist: input must be 2-D (N, M), got {fmt_shape(x.shape)}")
    i, j = np.triu_indices(x.shape[0], 1)
    xp = xp_of(x._data)
    return O.norm(x[Tensor._make(xp.asarray(i))] - x[Tensor._make(xp.asarray(j))], p, dim=-1)


def _pdist_samples(src):
    yield Sample((src.tensor((src.integers(2, 4), src.integers(1, 3)), distinct=True),), dict(p=src.choice([1, 2])))


register_table([
    (cosine_similarity, _vec_samples("cosine"), "dX1 = (X2 / (|X1||X2|) - cos * X1 / |X1|^2) * dY"),
    (pairwise_distance, _vec_samples("pairwise"), "dX1 = d||D||_p/dD * dY ; dX2 = -dX1   (D = X1 - X2 + eps)"),
    (pdist, _pdist_samples, "d||x_i - x_j|| / dx_i = the unit difference (p=2)"),
])
