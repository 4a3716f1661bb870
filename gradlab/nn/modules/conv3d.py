"""``Conv3d``, ``ConvTranspose3d``, ``MaxPool3d``, ``AvgPool3d`` and ``AdaptiveAvgPool3d`` for ``(N, C, D, H, W)`` volumes (video, scans)."""
from __future__ import annotations

from .. import functional as F
from .conv import _AdaptiveAvgPoolNd, _AvgPoolNd, _MaxPoolNd
from .conv_more import _ConvNd


class Conv3d(_ConvNd):
    """3-D convolution: weight ``(C_out, C_in/groups, kd, kh, kw)``, PyTorch's init (kaiming_uniform, a=sqrt(5))."""
    _n = 3

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device=device, dtype=dtype)

    def forward(self, input):
        if self.padding_mode == "zeros" or self.padding == "valid":
            return F.conv3d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
        if self.padding == "same":  # PyTorch puts the odd extra element at the end
            pads = [(t // 2, t - t // 2) for t in (d * (k - 1) for d, k in zip(self.dilation, self.kernel_size))]
        else:
            pads = [(p, p) for p in self.padding]
        x = F.pad(input, pads[2] + pads[1] + pads[0], mode=self.padding_mode)
        return F.conv3d(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)


class ConvTranspose3d(_ConvNd):
    """Transposed 3-D convolution: weight ``(C_in, C_out/groups, kd, kh, kw)``; upsamples a volume by ``stride``."""
    _n, _transposed = 3, True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, device=device, dtype=dtype)

    def forward(self, input, output_size=None):
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups, self.dilation)


class MaxPool3d(_MaxPoolNd):
    """The maximum over each ``kernel_size`` window of a volume (stride defaults to the kernel size)."""
    _fn = "max_pool3d"


class AvgPool3d(_AvgPoolNd):
    """The mean over each ``kernel_size`` window of a volume (stride defaults to the kernel size)."""
    _fn = "avg_pool3d"


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Average-pool a volume to a fixed ``output_size`` whatever its depth, height and width."""
    _fn = "adaptive_avg_pool3d"
