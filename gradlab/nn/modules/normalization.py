"""``LayerNorm``: normalise each sample's features to mean 0, variance 1, then scale and shift.

Unlike batch norm it does not mix samples, so it behaves the same in training
and evaluation, which is why transformers use it.
"""
from __future__ import annotations

from .. import functional as F
from .. import init
from ..module import Module
from ._util import new_param


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(s) for s in normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = new_param(*self.normalized_shape, dtype=dtype, device=device)
            if bias:
                self.bias = new_param(*self.normalized_shape, dtype=dtype, device=device)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
