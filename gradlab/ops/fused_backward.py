"""Fused backward ops: a VJP computed in one pass, as an op of its own.

``tanh``'s VJP written with ops (``g * (1 - y * y)``) is just as correct, but
makes three arrays and three graph nodes; PyTorch has ``tanh_backward`` for the
same reason. These ops compute the VJP in one NumPy expression, and their own
VJPs (for second derivatives) are written with ordinary gradlab ops.
"""
from __future__ import annotations

from ..autograd.function import Op
from ._util import OneRule


class TanhBackward(OneRule, Op):
    """``dY * (1 - Y^2)`` in one pass: tanh's VJP as an op of its own.

    Writing it as three ops (``1 - y*y``, then ``g * .``) is just as correct but
    makes three arrays and three nodes; PyTorch has ``tanh_backward`` for the
    same reason. Its own VJP (for second derivatives) is written with ops.
    """

    name = "tanh_backward"
    formula = "dG = dZ * (1 - Y^2) ; dY = -2 * dZ * G * Y"

    @staticmethod
    def forward(ctx, g, y):
        ctx.save_for_backward(g, y)
        return g._data * (1 - y._data * y._data)

    def rule(self, ns, gz, g, y):  # the VJP, on tensors and arrays alike (OneRule)
        return gz * (1 - y * y), -2 * gz * g * y

    def jvp(self, tg, ty):
        g, y = self.args
        out = None if tg is None else tg * (1 - y * y)
        if ty is not None:
            d = -2 * ty * g * y
            out = d if out is None else out + d
        return out


class SigmoidBackward(OneRule, Op):
    """``dY * Y * (1 - Y)`` in one pass: sigmoid's VJP as an op of its own."""

    name = "sigmoid_backward"
    formula = "dG = dZ * Y * (1 - Y) ; dY = dZ * G * (1 - 2Y)"

    @staticmethod
    def forward(ctx, g, y):
        ctx.save_for_backward(g, y)
        yd = y._data
        return g._data * yd * (1 - yd)

    def rule(self, ns, gz, g, y):  # the VJP, on tensors and arrays alike (OneRule)
        return gz * y * (1 - y), gz * g * (1 - 2 * y)

    def jvp(self, tg, ty):
        g, y = self.args
        out = None if tg is None else tg * y * (1 - y)
        if ty is not None:
            d = ty * g * (1 - 2 * y)
            out = d if out is None else out + d
        return out
