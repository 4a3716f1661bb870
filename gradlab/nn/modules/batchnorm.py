"""``BatchNorm1d``/``BatchNorm2d`` (the pooling layers live with the other pools in ``conv.py``).

Batch norm normalizes each channel with the statistics *of the batch* while training, and keeps
running averages of them for evaluation (``model.eval()``), when a batch may be a single sample.
That train/eval switch is the classic source of "my model is worse at test time" bugs: forget
``model.eval()`` and every test batch is normalized with its own statistics.
"""
from __future__ import annotations

from ...backend import dtypes as _dt
from ...errors import ShapeError, fmt_shape
from ..._tensor import Tensor
from ...factories import ones, tensor, zeros
from .. import functional as F
from .. import init
from ..module import Module
from ._util import new_param


class _BatchNorm(Module):
    _ndims = ()  # the input ranks this layer accepts

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats, self._has_bias = affine, track_running_stats, affine and bias
        if affine:
            self.weight = new_param(num_features, dtype=dtype, device=device)
            if bias:
                self.bias = new_param(num_features, dtype=dtype, device=device)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            dt = _dt.as_dtype(dtype) or _dt.get_default_dtype()
            self.register_buffer("running_mean", zeros(num_features, dtype=dt, device=device))
            self.register_buffer("running_var", ones(num_features, dtype=dt, device=device))
            self.register_buffer("num_batches_tracked", tensor(0, device=device))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1.0)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        if isinstance(input, Tensor) and input.ndim not in self._ndims:
            want = " or ".join(f"{n}-D" for n in self._ndims)
            raise ShapeError(f"{type(self).__name__}: expected {want} input (N, C{', L' if 3 in self._ndims else ''}"
                             f"{', H, W' if 4 in self._ndims else ''}), got shape {fmt_shape(input.shape)}")
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average, as PyTorch
                momentum = 1.0 / int(self.num_batches_tracked.item())
        # train: the batch's statistics (updating the running ones); eval: the running ones, if tracked
        use_batch = self.training or not self.track_running_stats
        return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias, use_batch,
                            momentum, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self._has_bias}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch norm over ``(N, C)`` or ``(N, C, L)`` inputs: one mean/variance per channel ``C``."""
    _ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over ``(N, C, H, W)`` images: one mean/variance per channel, over batch and pixels."""
    _ndims = (4,)
