"""Pooling layers, one base per kind with ``_fn`` naming the ``F`` function of each dimension:
``MaxPool1d/2d/3d`` (``_MaxPoolNd``), ``AvgPool1d/2d/3d`` (``_AvgPoolNd``),
``AdaptiveAvgPool1d/2d/3d`` (``_AdaptiveAvgPoolNd``) and ``AdaptiveMaxPool1d/2d/3d`` (``_AdaptiveMaxPoolNd``),
whose bases share ``_AdaptivePoolNd`` (``output_size`` and the repr). The rarer ``LPPool*`` (``_LPPoolNd``) and
``MaxUnpool*`` (``_MaxUnpoolNd``) are in ``nn/coverage/modules/pooling_layers.py``.

A pool has no parameters: it summarises each window (its maximum or mean); the adaptive ones pick
the windows so the output has a fixed size whatever the input's.
"""
from __future__ import annotations

from ...checks import sizes as ntuple
from .. import functional as F
from ..module import Module


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


class MaxPool1d(_MaxPoolNd):
    """The maximum over each ``kernel_size`` window along the last dim (stride defaults to the kernel size)."""
    _fn = "max_pool1d"


class MaxPool2d(_MaxPoolNd):
    """The maximum over each ``kernel_size`` window of an image (stride defaults to the kernel size)."""
    _fn = "max_pool2d"


class MaxPool3d(_MaxPoolNd):
    """The maximum over each ``kernel_size`` window of a volume (stride defaults to the kernel size)."""
    _fn = "max_pool3d"


class _AvgPoolNd(Module):
    """The mean over each ``kernel_size`` window (stride defaults to the kernel size); ``_fn`` names the
    functional of each dimension (``avg_pool1d``, ``avg_pool2d``, ``avg_pool3d``)."""
    _fn = "avg_pool2d"

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        args = (self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)
        if self.divisor_override is not None:  # avg_pool1d takes no divisor_override
            args += (self.divisor_override,)
        return getattr(F, self._fn)(input, *args)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """The mean over each ``kernel_size`` window along the last dim (stride defaults to the kernel size).
    As in PyTorch, it takes no ``divisor_override`` and keeps its sizes as 1-tuples."""
    _fn = "avg_pool1d"

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        def single(value, arg):
            return ntuple(value, 1, "AvgPool1d", arg)
        super().__init__(single(kernel_size, "kernel_size"),
                         single(stride if stride is not None else kernel_size, "stride"),
                         single(padding, "padding"), ceil_mode, count_include_pad)


class AvgPool2d(_AvgPoolNd):
    """The mean over each ``kernel_size`` window of an image (stride defaults to the kernel size)."""
    _fn = "avg_pool2d"


class AvgPool3d(_AvgPoolNd):
    """The mean over each ``kernel_size`` window of a volume (stride defaults to the kernel size)."""
    _fn = "avg_pool3d"


class _AdaptivePoolNd(Module):
    """What the adaptive pools share: a fixed ``output_size`` whatever the input's size, and its repr."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def extra_repr(self):
        return f"output_size={self.output_size}"


class _AdaptiveAvgPoolNd(_AdaptivePoolNd):
    """Average-pool to a fixed ``output_size`` whatever the input's size; ``_fn`` names the functional."""
    _fn = "adaptive_avg_pool2d"

    def forward(self, input):
        return getattr(F, self._fn)(input, self.output_size)


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Average-pool ``(N, C, L)`` to a fixed length ``output_size`` whatever ``L`` is."""
    _fn = "adaptive_avg_pool1d"


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Average-pool ``(N, C, H, W)`` to a fixed ``output_size`` whatever the height and width."""
    _fn = "adaptive_avg_pool2d"


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Average-pool a volume to a fixed ``output_size`` whatever its depth, height and width."""
    _fn = "adaptive_avg_pool3d"


class _AdaptiveMaxPoolNd(_AdaptivePoolNd):
    """Max-pool to a fixed ``output_size`` whatever the input's size; ``_fn`` names the functional."""
    _fn = "adaptive_max_pool2d"

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        return getattr(F, self._fn)(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """The max over adaptive windows: ``(N, C, L) -> (N, C, output_size)`` for any ``L``."""
    _fn = "adaptive_max_pool1d"


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """The max over adaptive windows: ``(N, C, H, W) -> (N, C, *output_size)``; ``1`` is global max pooling."""
    _fn = "adaptive_max_pool2d"


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """The max over adaptive windows of a volume: ``(N, C, D, H, W) -> (N, C, *output_size)``."""
    _fn = "adaptive_max_pool3d"


# the rest of torch.nn.modules.pooling's names (kept in coverage.modules.pooling_layers), found on first use
from ._layer_helpers import rest_from as _rest_from  # noqa: E402

__getattr__ = _rest_from(__name__, "gradlab.nn.coverage.modules.pooling_layers")
