"""The nodes of assignment: ``x[index] = value`` (``SetItem``) and a tensor overwritten whole (``Overwrite``).

``gradlab/autograd/inplace.py`` decides *when* an in-place change must be recorded and rebases the
tensor onto the new node (the version counter, leaves, views: see its docstring); the nodes it records
are these two ops, written like any other op (forward, VJP, JVP). It reaches them at call time through
``gradlab._tensor._ops`` (``gradlab.ops``), since the autograd layer does not import the ops.

What an index means when writing (integers before index arrays, as PyTorch) is
``gradlab.autograd.indices.assign``, the same rule the no-graph path of ``x[i] = v`` uses.
"""
from __future__ import annotations

from .. import ops as O
from .._tensor import Tensor
from ..autograd.function import Op
from ..autograd.indices import assign
from ..backend import xp_of


class SetItem(Op):
    """``out = x.clone(); out[index] = value``: the node ``x[index] = value`` records."""

    name = "setitem"
    formula = "dX = dY with dY[idx] = 0 ; dV = sum_to(dY[idx], V.shape)"

    @staticmethod
    def forward(ctx, x, value, index):
        ctx.index = index
        ctx.v_shape = value.shape if isinstance(value, Tensor) else None
        out = x._data.copy()
        assign(out, index, value._data if isinstance(value, Tensor) else value)
        return out

    def _mask(self, like):
        m = xp_of(like).ones(like.shape, dtype=like.dtype)
        assign(m, self.index, 0)
        return Tensor._make(m)

    def vjp(self, g):
        gx = g * self._mask(g._data)
        gv = None
        if self.v_shape is not None:
            gv = O.sum_to(O.getitem(g, self.index), self.v_shape)
        return gx, gv, None

    def jvp(self, tx, tv, _):
        x = self.args[0]
        if tx is None:
            tx = Tensor._make(xp_of(x._data).zeros(x.shape, dtype=x.dtype))
        return SetItem.apply(tx, tv if tv is not None else 0.0, self.index)


class Overwrite(Op):
    """Every element of ``s`` replaced by a constant (``x.zero_()``, ``x.fill_(v)`` on a tensor in the graph):
    the old value gets a gradient of exactly zero.

    Zeros made afresh, as PyTorch's ``zeros_like(grad)``: not ``g * 0``, which would be NaN where
    ``g`` is infinite and would stay in the graph of a higher-order gradient.
    """

    name = "overwrite"
    formula = "dX = 0"

    @staticmethod
    def forward(ctx, s, out):
        return out

    def vjp(self, g):
        return Tensor._make(xp_of(g._data).zeros(g.shape, dtype=g.dtype)), None

    def jvp(self, t, t_out):
        return Tensor._make(xp_of(self.out._data).zeros(self.out.shape, dtype=self.out.dtype))
