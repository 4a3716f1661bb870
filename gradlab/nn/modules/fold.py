"""``Unfold`` (im2col) and ``Fold`` (col2im): the sliding-window view under every convolution.
"""
from __future__ import annotations

from .. import functional as F
from ..module import Module


class Unfold(Module):
    """im2col: ``(N, C, H, W) -> (N, C*kh*kw, L)``, one column per position of a sliding ``kernel_size`` block.

    A convolution is ``weight.view(C_out, -1) @ unfold(x)``: this layer makes that visible.
    """

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class Fold(Module):
    """col2im, the adjoint of ``Unfold``: ``(N, C*kh*kw, L) -> (N, C, *output_size)``, summing overlaps."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
