"""The ``_Softplus`` op: ``log(1 + exp(z))`` computed as ``logaddexp(0, z)``, never overflowing.

Used by ``logsigmoid``, ``mish`` and the logit losses (``binary_cross_entropy_with_logits``,
``soft_margin_loss``...). It lives in ``nn/`` for now and moves under ``gradlab/ops/`` with the other op
classes; the functions that call it are in ``nn/_activation.py`` and ``nn/_loss.py``.
"""
from __future__ import annotations

from .. import ops as O
from ..autograd.function import Op
from ..backend import xp_of
from ..ops.activations import _sigmoid_array


# ----------------------------------------------- binary_cross_entropy_with_logits
class _Softplus(Op):
    """``log(1 + exp(z))`` computed as ``logaddexp(0, z)``: never overflows, exact near 0."""

    name = "softplus"
    formula = "dZ = dY * sigmoid(Z)"

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return xp_of(z.data).logaddexp(0, z.data)

    def vjp(self, g):
        (z,) = self.saved_tensors
        return (g * O.sigmoid(z),)

    def vjp_arrays(self, g):
        (z,) = self.saved_arrays
        return (g * _sigmoid_array(z),)

    def jvp(self, t):
        return t * O.sigmoid(self.args[0])
