"""The ``Embedding`` op (an ``Op``, not the ``nn.Embedding`` layer) and ``RowsAdded``, its backward.

``weight[ids]`` forwards; backward adds ``dY`` into the looked-up rows (``_rows_added``: a sort of the ids and
one sum per run of equal ids). The functions that call it are in ``nn/_embedding.py``.
"""
from __future__ import annotations

import numpy as np

from .. import ops as O
from ..autograd.function import Op
from ..backend import xp_of
from ..backend.arrays import scatter_add
from ._util import OneRule, apply_in


# ---------------------------------------------------------------- embedding
class Embedding(OneRule, Op):
    name = "embedding"
    formula = "dW = zeros(W.shape); dW[ids] += dY   (repeated ids add up; padding_idx gets none)"

    @staticmethod
    def kernel(w, ids, scale):
        return w[ids]

    @staticmethod
    def forward(ctx, weight, ids, scale):
        ctx.ids, ctx.scale, ctx.n = ids, scale, weight.shape[0]
        return weight._data[ids]

    def rule(self, ns, g):  # the VJP, on tensors and arrays alike (OneRule)
        if self.scale is not None:
            g = g * (self.scale if ns is O else self.scale._data)
        return apply_in(ns, RowsAdded, g, self.ids, self.n), None, None

    def jvp(self, t, *_):
        return Embedding.apply(t, self.ids, None)


class RowsAdded(OneRule, Op):
    """``embedding``'s backward as an op: ``zeros((n, d))`` with ``dY``'s rows added at ``ids``
    (:func:`_rows_added`, a sort instead of ``np.add.at``). Linear in ``dY``: its VJP is the lookup."""
    name = "embedding_backward"
    formula = "dG = dZ[ids]"

    @staticmethod
    def kernel(g, ids, n):
        return _rows_added(ids, g.reshape(ids.size, g.shape[-1]), n)

    @staticmethod
    def forward(ctx, g, ids, n):
        ctx.ids = ids
        return RowsAdded.kernel(g._data, ids, n)

    def rule(self, ns, gg):  # the VJP, on tensors and arrays alike (OneRule)
        return apply_in(ns, Embedding, gg, self.ids, None), None, None

    def jvp(self, t, *_):
        return RowsAdded.apply(t, self.ids, self.out.shape[0])


def _rows_added(ids, g2, n):
    """``zeros((n, d))`` with each row ``g2[i]`` added into row ``ids[i]`` (repeated ids add up).

    ``np.add.at`` does exactly this but one element at a time (several ms for a GPT batch).
    Instead: sort the ids (stably), and ``np.add.reduceat`` sums each run of equal ids in one
    vectorized pass; on CuPy the backend's ``scatter_add`` (a GPU atomic add) does it.
    """
    xp = xp_of(g2)
    ids = ids.reshape(-1)
    out = xp.zeros((n,) + g2.shape[1:], dtype=g2.dtype)
    if ids.size == 0:
        return out
    if isinstance(g2, np.ndarray):  # NumPy (and the simulated device, a NumPy subclass)
        order = xp.argsort(ids, kind="stable")
        s = ids[order]
        starts = xp.flatnonzero(xp.concatenate((xp.ones(1, dtype=bool), s[1:] != s[:-1])))
        out[s[starts]] = np.add.reduceat(g2[order], starts, axis=0)
    else:  # CuPy
        scatter_add(out, ids, g2)
    return out
