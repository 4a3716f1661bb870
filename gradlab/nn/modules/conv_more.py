"""``Conv1d``, ``ConvTranspose2d``, 1-D pooling, resampling (``Upsample``, ``PixelShuffle``) and padding layers.

Each stores PyTorch's arguments (as the tuples PyTorch stores) and calls the ``F`` function.
A transposed convolution is the *gradient* of a convolution with respect to its input: it maps
each input pixel to a ``kernel_size`` patch of the output, so it upsamples (``stride`` > 1).
"""
from __future__ import annotations

import math

from ...errors import ArgumentError, ShapeError, fmt_shape
from .. import functional as F
from .. import init
from ..module import Module
from .conv import _AdaptiveAvgPoolNd, _MaxPoolNd
from ._util import new_param


def _tuple(x, n, name, cls):
    if isinstance(x, int):
        return (x,) * n
    x = tuple(x)
    if len(x) != n or not all(isinstance(v, int) for v in x):
        raise ArgumentError(f"{cls}: {name} must be an int or a tuple of {n} ints, got {x}")
    return x


class _ConvNd(Module):
    _n, _transposed = 1, False

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                 output_padding=0, device=None, dtype=None):
        super().__init__()
        cls, n = type(self).__name__, self._n
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ArgumentError(f"{cls}: in_channels ({in_channels}) and out_channels ({out_channels}) must both be "
                                f"divisible by groups ({groups})")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ArgumentError(f"{cls}: padding_mode must be 'zeros', 'reflect', 'replicate' or 'circular', "
                                f"got {padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _tuple(kernel_size, n, "kernel_size", cls)
        self.stride = _tuple(stride, n, "stride", cls)
        if isinstance(padding, str):
            if padding not in ("same", "valid") or self._transposed:
                raise ArgumentError(f"{cls}: padding must be ints{'' if self._transposed else ', same or valid'}, "
                                    f"got {padding!r}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ArgumentError(f"{cls}: padding='same' is not supported for strided convolutions "
                                    f"(stride={self.stride})")
            self.padding = padding
        else:
            self.padding = _tuple(padding, n, "padding", cls)
        self.dilation = _tuple(dilation, n, "dilation", cls)
        self.output_padding = _tuple(output_padding, n, "output_padding", cls)
        self.transposed, self.padding_mode = self._transposed, padding_mode
        if self._transposed:
            if padding_mode != "zeros":
                raise ArgumentError(f"{cls}: only padding_mode='zeros' is supported, got {padding_mode!r}")
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = new_param(*shape, dtype=dtype, device=device)
        if bias:
            self.bias = new_param(out_channels, dtype=dtype, device=device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """PyTorch's default: ``kaiming_uniform_(a=sqrt(5))``, bias ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _output_padding(self, input, output_size):
        """The ``output_padding`` that makes a transposed convolution's output ``output_size``."""
        if output_size is None:
            return self.output_padding
        n = self._n
        size = tuple(int(s) for s in output_size)[-n:]
        out = []
        for i in range(n):
            h = input.shape[-n + i]
            base = (h - 1) * self.stride[i] - 2 * self.padding[i] + self.dilation[i] * (self.kernel_size[i] - 1) + 1
            extra = size[i] - base
            top = base + max(self.stride[i], self.dilation[i]) - 1
            if not 0 <= extra < max(self.stride[i], self.dilation[i]):
                raise ShapeError(f"{type(self).__name__}: output_size {tuple(size)} is not reachable from input "
                                 f"{fmt_shape(input.shape)}; dim {i} can be {base} to {top}")
            out.append(extra)
        return tuple(out)

    def extra_repr(self):
        n = self._n
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """1-D convolution over ``(N, C_in, L)`` (or unbatched ``(C_in, L)``): weight ``(C_out, C_in/groups, k)``."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device=device, dtype=dtype)

    def forward(self, input):
        if self.padding_mode == "zeros" or self.padding == "valid":
            return F.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
        if self.padding == "same":  # PyTorch puts the odd extra element on the right
            t = self.dilation[0] * (self.kernel_size[0] - 1)
            lo, hi = t // 2, t - t // 2
        else:
            lo = hi = self.padding[0]
        x = F.pad(input, (lo, hi), mode=self.padding_mode)
        return F.conv1d(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)


class ConvTranspose2d(_ConvNd):
    """Transposed 2-D convolution ("deconvolution"): weight ``(C_in, C_out/groups, kh, kw)``.

    Output height ``(H - 1) * stride - 2 * padding + dilation * (kh - 1) + output_padding + 1``;
    ``forward(input, output_size=...)`` picks ``output_padding`` to reach a given size.
    """
    _n, _transposed = 2, True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, device=device, dtype=dtype)

    def forward(self, input, output_size=None):
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose1d(_ConvNd):
    """Transposed 1-D convolution: weight ``(C_in, C_out/groups, k)``; upsamples a sequence by ``stride``."""
    _n, _transposed = 1, True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, device=device, dtype=dtype)

    def forward(self, input, output_size=None):
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups, self.dilation)


class MaxPool1d(_MaxPoolNd):
    """The maximum over each ``kernel_size`` window along the last dim (stride defaults to the kernel size)."""
    _fn = "max_pool1d"


class AvgPool1d(Module):
    """The mean over each ``kernel_size`` window along the last dim (stride defaults to the kernel size)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        self.kernel_size = _tuple(kernel_size, 1, "kernel_size", "AvgPool1d")
        self.stride = _tuple(stride if stride is not None else kernel_size, 1, "stride", "AvgPool1d")
        self.padding = _tuple(padding, 1, "padding", "AvgPool1d")
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Average-pool ``(N, C, L)`` to a fixed length ``output_size`` whatever ``L`` is."""
    _fn = "adaptive_avg_pool1d"


class Upsample(Module):
    """Resize ``(N, C, L)`` or ``(N, C, H, W)`` to ``size`` or by ``scale_factor`` (``F.interpolate``)."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        if (size is None) == (scale_factor is None):
            raise ArgumentError("Upsample: give exactly one of size and scale_factor")
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, (tuple, list)):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor is not None else None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """``Upsample(mode='nearest')`` for images."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample(mode='bilinear', align_corners=True)`` for images."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """``(N, C*r*r, H, W) -> (N, C, H*r, W*r)``: move channels into space (sub-pixel upsampling)."""

    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """``(N, C, H*r, W*r) -> (N, C*r*r, H, W)``: the inverse of ``PixelShuffle``."""

    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


# ------------------------------------------------------------------ padding layers
class _PadNd(Module):
    _n, _mode = 1, "constant"

    def __init__(self, padding, value=0.0):
        super().__init__()
        k = 2 * self._n
        self.padding = _tuple(padding, k, "padding", type(self).__name__)
        if self._mode == "constant":
            self.value = value

    def forward(self, input):
        if input.ndim not in (self._n + 1, self._n + 2):
            raise ShapeError(f"{type(self).__name__}: expected a {self._n + 1}-D or {self._n + 2}-D input, got "
                             f"{fmt_shape(input.shape)}")
        if self._mode == "constant":
            return F.pad(input, self.padding, mode="constant", value=self.value)
        return F.pad(input, self.padding, mode=self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPad(_PadNd):
    def __init__(self, padding, value: float):
        super().__init__(padding, value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class _ZeroPad(_PadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)


def _pad_class(name, n, mode, base, doc):
    return type(name, (base,), {"_n": n, "_mode": mode, "__doc__": doc, "__module__": __name__})


ConstantPad1d = _pad_class("ConstantPad1d", 1, "constant", _ConstantPad, "Pad the last dim with ``value``.")
ConstantPad2d = _pad_class("ConstantPad2d", 2, "constant", _ConstantPad, "Pad the last 2 dims with ``value``.")
ZeroPad1d = _pad_class("ZeroPad1d", 1, "constant", _ZeroPad, "Pad the last dim with zeros.")
ZeroPad2d = _pad_class("ZeroPad2d", 2, "constant", _ZeroPad,
                       "Pad the last 2 dims with zeros: ``padding = (left, right, top, bottom)`` or one int.")
ReflectionPad1d = _pad_class("ReflectionPad1d", 1, "reflect", _PadNd, "Pad the last dim by mirroring (no edge repeat).")
ReflectionPad2d = _pad_class("ReflectionPad2d", 2, "reflect", _PadNd, "Pad the last 2 dims by mirroring.")
ReplicationPad1d = _pad_class("ReplicationPad1d", 1, "replicate", _PadNd, "Pad the last dim by repeating the edge.")
ReplicationPad2d = _pad_class("ReplicationPad2d", 2, "replicate", _PadNd, "Pad the last 2 dims by repeating the edge.")
CircularPad1d = _pad_class("CircularPad1d", 1, "circular", _PadNd, "Pad the last dim by wrapping around.")
CircularPad2d = _pad_class("CircularPad2d", 2, "circular", _PadNd, "Pad the last 2 dims by wrapping around.")
ConstantPad3d = _pad_class("ConstantPad3d", 3, "constant", _ConstantPad, "Pad the last 3 dims with ``value``.")
ZeroPad3d = _pad_class("ZeroPad3d", 3, "constant", _ZeroPad, "Pad the last 3 dims with zeros.")
ReflectionPad3d = _pad_class("ReflectionPad3d", 3, "reflect", _PadNd, "Pad the last 3 dims by mirroring.")
ReplicationPad3d = _pad_class("ReplicationPad3d", 3, "replicate", _PadNd, "Pad the last 3 dims by repeating the edge.")
CircularPad3d = _pad_class("CircularPad3d", 3, "circular", _PadNd, "Pad the last 3 dims by wrapping around.")


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
