"""The two ops of sparse COO tensors (``gradlab/sparse/coo.py``): ``SparseToDense`` (a COO tensor's
``values`` placed at its ``indices``) and ``SparseMM`` (``S @ D``, a COO matrix times a dense one).

They take the COO tensor's parts (its ``values``, a tensor that may require grad, and its ``indices``,
an int64 array that carries no gradient), so a gradient reaches the values like any other tensor's.
"""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from ..autograd.function import Op


class SparseToDense(Op):
    """The dense tensor of a COO tensor's ``values`` at ``indices`` (duplicates summed)."""

    name = "sparse_to_dense"
    formula = "dValues = dY[indices]   (the gradient read back at each stored position)"

    @staticmethod
    def forward(ctx, values, indices, size):
        ctx.indices, ctx.size = indices, size
        v = values.detach().numpy()
        out = np.zeros(size, dtype=v.dtype)
        if indices.shape[1]:
            np.add.at(out, tuple(indices), v)
        return out

    def vjp(self, g):
        indices = self.indices
        return g[tuple(Tensor._make(np.ascontiguousarray(r)) for r in indices)], None, None

    def jvp(self, tv, *_):
        return SparseToDense.apply(tv, self.indices, self.size)


class SparseMM(Op):
    """``S @ D`` for a 2-D COO matrix ``S`` (its values and indices) and a dense matrix ``D``.

    Forward: ``out[r] += v * D[c]`` for every stored entry ``(r, c, v)``. Backward, with ``G = dOut``:
    ``dD = S^T G`` (the same op with rows and columns swapped) and ``dv = sum_k G[r, k] D[c, k]``
    (one dot product per stored entry: the gradient exists only where ``S`` stores a value).
    """

    name = "sparse_mm"
    formula = "dD = S^T @ dY ; dValues[e] = dY[row_e] . D[col_e]"

    @staticmethod
    def forward(ctx, values, dense, indices, size):
        v, d = values.detach().numpy(), dense.detach().numpy()
        out = np.zeros((size[0],) + tuple(dense.shape[1:]), dtype=np.result_type(v.dtype, d.dtype))
        ctx.indices, ctx.size = indices, size
        rows, cols = indices
        if len(rows):
            np.add.at(out, rows, v.reshape((-1,) + (1,) * (d.ndim - 1)) * d[cols])
        ctx.save_for_backward(values, dense)
        return out

    def vjp(self, g):
        values, dense = self.saved_tensors
        indices, size = self.indices, self.size
        rows, cols = (Tensor._make(np.ascontiguousarray(r)) for r in indices)
        dv = (g.index_select(0, rows) * dense.index_select(0, cols)).sum(-1)
        dd = SparseMM.apply(values, g, indices[::-1].copy(), (size[1], size[0]))
        return dv, dd, None, None

    def jvp(self, tv, td, *_):
        values, dense = self.args[0], self.args[1]
        indices, size = self.indices, self.size
        out = None if tv is None else SparseMM.apply(tv, dense, indices, size)
        if td is not None:
            more = SparseMM.apply(values, td, indices, size)
            out = more if out is None else out + more
        return out
