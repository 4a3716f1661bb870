"""The ``Dropout`` op (an ``Op``, not the ``nn.Dropout`` layer): ``x * mask`` with the mask given.

``F.dropout``, ``dropout1d/2d/3d`` draw the mask (``nn/_dropout.py``); this op multiplies by it and sends ``dY
* mask`` back. The
functions that call it are in ``nn/_dropout.py``.
"""
from __future__ import annotations

from ..autograd.function import Op
from ._util import OneRule


# ------------------------------------------------------------------ dropout
class Dropout(OneRule, Op):
    name = "dropout"
    formula = "dX = dY * mask / (1 - p)   (the same mask as the forward pass)"

    @staticmethod
    def forward(ctx, x, mask):
        ctx.save_for_backward(mask)
        ctx.mask = mask
        return x._data * mask._data

    def rule(self, ns, g, mask):   # one rule: on tensors (vjp) and on arrays (vjp_arrays), see OneRule
        return g * mask, None

    def jvp(self, t, _):
        return t * self.mask
