"""``AdaptiveMaxPool1d/2d`` (max-pool to a fixed output size) and ``Bilinear`` (``y = x1^T W x2 + b``)."""
from __future__ import annotations

import math

from .. import functional as F
from .. import init
from ..module import Module
from ._util import new_param


class _AdaptiveMaxPool(Module):
    _fn = None

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input):
        return type(self)._fn(input, self.output_size, self.return_indices)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    """The max over adaptive windows: ``(N, C, L) -> (N, C, output_size)`` for any ``L``."""
    _fn = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    """The max over adaptive windows: ``(N, C, H, W) -> (N, C, *output_size)``; ``1`` is global max pooling."""
    _fn = staticmethod(F.adaptive_max_pool2d)


class Bilinear(Module):
    """``y[o] = x1 @ weight[o] @ x2 + bias[o]``: a learned interaction between two inputs.

    ``weight`` ``(out_features, in1_features, in2_features)``; init ``U(-1/sqrt(in1), 1/sqrt(in1))`` for both.
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = new_param(out_features, in1_features, in2_features, dtype=dtype, device=device)
        if bias:
            self.bias = new_param(out_features, dtype=dtype, device=device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class _MaxUnpool(Module):
    _n, _fn = 1, None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        n = self._n
        tup = (lambda v: (v,) * n if isinstance(v, int) else tuple(v))
        self.kernel_size = tup(kernel_size)
        self.stride = tup(stride if stride is not None else kernel_size)
        self.padding = tup(padding)

    def forward(self, input, indices, output_size=None):
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpool):
    """Undo ``MaxPool1d(return_indices=True)``: each value goes back to its index, zeros elsewhere."""
    _n, _fn = 1, staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpool):
    """Undo ``MaxPool2d(return_indices=True)``: each value goes back to its index, zeros elsewhere."""
    _n, _fn = 2, staticmethod(F.max_unpool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPool):
    """The max over adaptive windows of a volume: ``(N, C, D, H, W) -> (N, C, *output_size)``."""
    _fn = staticmethod(F.adaptive_max_pool3d)
