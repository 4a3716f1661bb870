"""Convolution layers over one base ``_ConvNd``: ``Conv1d``, ``Conv2d``, ``Conv3d`` and (over
``_ConvTransposeNd``) ``ConvTranspose1d``, ``ConvTranspose2d``, ``ConvTranspose3d``.

Each stores PyTorch's arguments (as the tuples PyTorch stores: ``kernel_size=(3, 3)``), creates
``weight`` and ``bias`` with PyTorch's initialisation, and calls the ``F`` function named by ``_fn``.
``_n`` is the number of spatial dims. A padding mode other than ``'zeros'`` pads first (``F.pad``)
and then convolves without padding. A transposed convolution is the *gradient* of a convolution
with respect to its input: it maps each input pixel to a ``kernel_size`` patch of the output, so it
upsamples (``stride`` > 1); ``forward(input, output_size=...)`` picks ``output_padding`` to reach a size.
"""
from __future__ import annotations

from ... import checks as _c
from ...checks import sizes as ntuple
from ...errors import ArgumentError, ShapeError, fmt_shape
from .. import functional as F
from ..module import Module
from ._layer_helpers import new_param, reset_weight_and_bias


class _ConvNd(Module):
    """The convolution layers' one base: arguments, parameters, initialisation, ``forward`` and repr.

    Non-transposed ``weight``: ``(out_channels, in_channels // groups, *kernel_size)``; transposed:
    ``(in_channels, out_channels // groups, *kernel_size)``. Default init as PyTorch:
    ``kaiming_uniform_(a=sqrt(5))``, bias ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``.
    """
    _n, _transposed, _fn = 2, False, "conv2d"

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None, *, output_padding=0):
        super().__init__()
        cls, n = type(self).__name__, self._n
        _c.size(in_channels, cls, "in_channels", 1), _c.size(out_channels, cls, "out_channels", 1)
        _c.size(groups, cls, "groups", 1)
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ArgumentError(f"{cls}: in_channels ({in_channels}) and out_channels ({out_channels}) must both be "
                                f"divisible by groups ({groups})")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ArgumentError(f"{cls}: padding_mode must be 'zeros', 'reflect', 'replicate' or 'circular', "
                                f"got {padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = ntuple(kernel_size, n, cls, "kernel_size")
        self.stride = ntuple(stride, n, cls, "stride")
        if isinstance(padding, str):
            if padding not in ("same", "valid") or self._transposed:
                raise ArgumentError(f"{cls}: padding must be ints{'' if self._transposed else ', same or valid'}, "
                                    f"got {padding!r}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ArgumentError(f"{cls}: padding='same' is not supported for strided convolutions "
                                    f"(stride={self.stride})")
            self.padding = padding
        else:
            self.padding = ntuple(padding, n, cls, "padding")
        self.dilation = ntuple(dilation, n, cls, "dilation")
        self.output_padding = ntuple(output_padding, n, cls, "output_padding")
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
        reset_weight_and_bias(self.weight, self.bias)  # (shared with Linear: _layer_helpers.py)

    def forward(self, input):
        conv = getattr(F, self._fn)
        if self.padding_mode == "zeros" or self.padding == "valid":
            return conv(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
        # another padding mode: pad first (F.pad's order: last dim first), then convolve without padding
        if self.padding == "same":  # PyTorch puts the odd extra element at the end
            pads = [(t // 2, t - t // 2) for t in (d * (k - 1) for d, k in zip(self.dilation, self.kernel_size))]
        else:
            pads = [(p, p) for p in self.padding]
        x = F.pad(input, sum(reversed(pads), ()), mode=self.padding_mode)
        return conv(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)

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


class _ConvTransposeNd(_ConvNd):
    """A transposed convolution: PyTorch's argument order (``output_padding`` after ``padding``) and
    ``forward(input, output_size=None)``."""
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype, output_padding=output_padding)

    def forward(self, input, output_size=None):
        return getattr(F, self._fn)(input, self.weight, self.bias, self.stride, self.padding,
                                    self._output_padding(input, output_size), self.groups, self.dilation)

    def _output_padding(self, input, output_size):
        """The ``output_padding`` that makes a transposed convolution's output ``output_size``."""
        if output_size is None:
            return self.output_padding
        n = self._n
        cls = type(self).__name__
        size = tuple(_c.size(s, cls, "output_size", None) for s in output_size)[-n:]
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


class Conv1d(_ConvNd):
    """1-D convolution over ``(N, C_in, L)`` (or unbatched ``(C_in, L)``): weight ``(C_out, C_in/groups, k)``."""
    _n, _fn = 1, "conv1d"


class Conv2d(_ConvNd):
    """2-D convolution: each output channel slides a ``(in_channels/groups, kh, kw)`` filter over the input.

    ``weight`` has shape ``(out_channels, in_channels // groups, kh, kw)`` (NCHW layout, as in PyTorch).
    """
    _n, _fn = 2, "conv2d"


class Conv3d(_ConvNd):
    """3-D convolution over ``(N, C, D, H, W)`` volumes: weight ``(C_out, C_in/groups, kd, kh, kw)``."""
    _n, _fn = 3, "conv3d"


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-D convolution: weight ``(C_in, C_out/groups, k)``; upsamples a sequence by ``stride``."""
    _n, _fn = 1, "conv_transpose1d"


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-D convolution ("deconvolution"): weight ``(C_in, C_out/groups, kh, kw)``.

    Output height ``(H - 1) * stride - 2 * padding + dilation * (kh - 1) + output_padding + 1``;
    ``forward(input, output_size=...)`` picks ``output_padding`` to reach a given size.
    """
    _n, _fn = 2, "conv_transpose2d"


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-D convolution: weight ``(C_in, C_out/groups, kd, kh, kw)``; upsamples a volume by ``stride``."""
    _n, _fn = 3, "conv_transpose3d"


# the rest of torch.nn.modules.conv's names (kept in coverage.modules.lazy_layers), found on first use
from ._layer_helpers import rest_from as _rest_from  # noqa: E402

__getattr__ = _rest_from(__name__, "gradlab.nn.coverage.modules.lazy_layers")
