"""The rarer pooling layers: ``LPPool1d/2d/3d`` (``(sum of x^p over each window)^(1/p)``) and
``MaxUnpool1d/2d`` (undo a max pool with its indices): one base per family, ``_LPPoolNd`` and
``_MaxUnpoolNd``.
"""
from __future__ import annotations

from ....checks import sizes as ntuple
from ... import functional as F
from ...module import Module


class _LPPoolNd(Module):
    """``(sum over each window of x^p)^(1/p)``; ``_fn`` names the functional of each dimension."""
    _fn = "lp_pool2d"

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input):
        return getattr(F, self._fn)(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """``(sum over each window of x^p)^(1/p)`` along the last dim (``norm_type`` = p)."""
    _fn = "lp_pool1d"


class LPPool2d(_LPPoolNd):
    """``(sum over each window of x^p)^(1/p)`` over the last two dims (``norm_type`` = p)."""
    _fn = "lp_pool2d"


class LPPool3d(_LPPoolNd):
    """``(sum over each window of x^p)^(1/p)`` over the last three dims (``norm_type`` = p)."""
    _fn = "lp_pool3d"


class _MaxUnpoolNd(Module):
    """Undo a max pool of ``_n`` dims with its indices; ``_fn`` names the functional."""
    _n, _fn = 1, "max_unpool1d"

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        n, cls = self._n, type(self).__name__
        self.kernel_size = ntuple(kernel_size, n, cls, "kernel_size")
        self.stride = ntuple(stride if stride is not None else kernel_size, n, cls, "stride")
        self.padding = ntuple(padding, n, cls, "padding")

    def forward(self, input, indices, output_size=None):
        return getattr(F, self._fn)(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Undo ``MaxPool1d(return_indices=True)``: each value goes back to its index, zeros elsewhere."""
    _n, _fn = 1, "max_unpool1d"


class MaxUnpool2d(_MaxUnpoolNd):
    """Undo ``MaxPool2d(return_indices=True)``: each value goes back to its index, zeros elsewhere."""
    _n, _fn = 2, "max_unpool2d"
