"""``Conv2d`` and ``MaxPool2d`` (NCHW layout, as in PyTorch)."""
from __future__ import annotations

import math

from ...errors import ArgumentError
from .. import functional as F
from .. import init
from ..module import Module
from ._util import new_param, pair


class Conv2d(Module):
    """2-D convolution: each output channel slides a ``(in_channels/groups, kh, kw)`` filter over the input.

    ``weight`` has shape ``(out_channels, in_channels // groups, kh, kw)``.
    Default init as PyTorch: ``kaiming_uniform_(a=sqrt(5))``, bias ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``.
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ArgumentError(f"Conv2d: in_channels ({in_channels}) and out_channels ({out_channels}) "
                                f"must both be divisible by groups ({groups})")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ArgumentError(f"Conv2d: padding_mode must be 'zeros', 'reflect', 'replicate' or 'circular', "
                                f"got {padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = pair(kernel_size)
        self.stride = pair(stride, "stride")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ArgumentError(f"Conv2d: padding must be 'same', 'valid' or ints, got {padding!r}")
            self.padding = padding
        else:
            self.padding = pair(padding, "padding")
        self.dilation = pair(dilation, "dilation")
        self.padding_mode = padding_mode
        self.weight = new_param(out_channels, in_channels // groups, *self.kernel_size, dtype=dtype, device=device)
        if bias:
            self.bias = new_param(out_channels, dtype=dtype, device=device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        if self.padding_mode == "zeros" or self.padding == "valid":
            return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
        # another padding mode: pad first (F.pad's order: last dim first), then convolve without padding
        if self.padding == "same":
            totals = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
            pads = [(t // 2, t - t // 2) for t in totals]
        else:
            pads = [(p, p) for p in self.padding]
        x = F.pad(input, pads[1] + pads[0], mode=self.padding_mode)
        return F.conv2d(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0, 0):
            s += f", padding={self.padding}"
        if self.dilation != (1, 1):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        if self.bias is None:
            s += ", bias=False"
        return s


class _MaxPoolNd(Module):
    """The maximum over each ``kernel_size`` window (stride defaults to the kernel size); ``_fn`` names the
    functional of each dimension (``max_pool1d``, ``max_pool2d``, ``max_pool3d``)."""
    _fn = "max_pool2d"

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        return getattr(F, self._fn)(input, self.kernel_size, self.stride, self.padding, self.dilation,
                                    ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool2d(_MaxPoolNd):
    """The maximum over each ``kernel_size`` window of an image (stride defaults to the kernel size)."""
    _fn = "max_pool2d"


class _AvgPoolNd(Module):
    """The mean over each ``kernel_size`` window (stride defaults to the kernel size); ``_fn`` names the
    functional of each dimension (``avg_pool2d``, ``avg_pool3d``)."""
    _fn = "avg_pool2d"

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return getattr(F, self._fn)(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                    self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """The mean over each ``kernel_size`` window of an image (stride defaults to the kernel size)."""
    _fn = "avg_pool2d"


class _AdaptiveAvgPoolNd(Module):
    """Average-pool to a fixed ``output_size`` whatever the input's size; ``_fn`` names the functional."""
    _fn = "adaptive_avg_pool2d"

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return getattr(F, self._fn)(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Average-pool ``(N, C, H, W)`` to a fixed ``output_size`` whatever the height and width."""
    _fn = "adaptive_avg_pool2d"
