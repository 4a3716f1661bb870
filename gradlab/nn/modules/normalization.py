"""Normalization layers: ``BatchNorm1d/2d/3d``, ``InstanceNorm1d/2d/3d`` (over one base ``_NormBase``),
``LayerNorm``, ``GroupNorm`` and ``RMSNorm``.

The normalizations differ only in *which* elements share one mean and variance:
batch norm a channel across the batch, layer norm a sample's features, instance norm one
(sample, channel) over its positions, group norm a (sample, group of channels); RMS norm
only rescales (no mean subtracted, no bias).

Batch norm normalizes each channel with the statistics *of the batch* while training, and keeps
running averages of them for evaluation (``model.eval()``), when a batch may be a single sample.
That train/eval switch is the classic source of "my model is worse at test time" bugs: forget
``model.eval()`` and every test batch is normalized with its own statistics. Layer norm does not
mix samples, so it behaves the same in training and evaluation, which is why transformers use it.

Shared pieces: ``_affine_params`` (the learned scale ``weight``, ones, and shift ``bias``, zeros, or
``None`` for each one switched off) and ``_reset_affine``; ``_NormBase`` adds the running statistics.
"""
from __future__ import annotations

from ... import checks as _c, ops as O
from ..._tensor import Tensor
from ...autograd.inplace import bump_version
from ...backend import dtypes as _dt
from ...errors import ArgumentError, ShapeError, fmt_shape
from ...factories import ones, tensor, zeros
from .. import functional as F, init
from ..module import Module
from ._layer_helpers import new_param


def _affine_params(module, shape, weight, bias, dtype, device):
    """Register ``weight`` and ``bias`` of ``shape`` (``False``: registered as ``None``; ``bias=None``: no bias
    at all, as RMSNorm); ``reset_parameters`` fills them with ones and zeros."""
    if weight:
        module.weight = new_param(*shape, dtype=dtype, device=device)
    else:
        module.register_parameter("weight", None)
    if bias is not None:
        if weight and bias:
            module.bias = new_param(*shape, dtype=dtype, device=device)
        else:
            module.register_parameter("bias", None)


def _reset_affine(module):
    """``weight = 1``, ``bias = 0`` (where they exist): the normalization starts as a plain standardization."""
    if module.weight is not None:
        init.ones_(module.weight)
    if getattr(module, "bias", None) is not None:
        init.zeros_(module.bias)


class _NormBase(Module):
    """What batch norm and instance norm share: ``num_features`` channels, an optional affine per channel,
    optional running statistics (``running_mean``, ``running_var``, ``num_batches_tracked`` buffers)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True):
        super().__init__()
        _c.arguments(type(self).__name__, num_features=(num_features, "size"), eps=(eps, "number"),
                     momentum=(momentum, "number?"))
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats, self._has_bias = affine, track_running_stats, affine and bias
        _affine_params(self, (num_features,), affine, bias, dtype, device)
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
        _reset_affine(self)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self._has_bias}, track_running_stats={self.track_running_stats}")


def _count_batch(t):
    """``t += 1`` for the batch counter ``num_batches_tracked``, as ``t.add_(1)`` does it: the array changed in
    place and the version bumped. Why not ``add_``: an in-place op through the engine (checks, views, a
    result tensor) for one integer took about as long as a small layer's whole running-statistics update
    (three BatchNorm layers in a WaveNet step); a counter someone made part of a graph, or an inference
    tensor (which ``add_`` refuses outside inference mode), still takes ``add_``."""
    if t._requires_grad or t._is_inference or t.grad_fn is not None:
        t.add_(1)
        return
    t._data += 1
    bump_version(t)


class _BatchNorm(_NormBase):
    _ndims = ()  # the input ranks this layer accepts

    def forward(self, input):
        if isinstance(input, Tensor) and input.ndim not in self._ndims:
            want = " or ".join(f"{n}-D" for n in self._ndims)
            raise ShapeError(f"{type(self).__name__}: expected {want} input (N, C{', L' if 3 in self._ndims else ''}"
                             f"{', H, W' if 4 in self._ndims else ''}), got shape {fmt_shape(input.shape)}")
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            _count_batch(self.num_batches_tracked)
            if self.momentum is None:  # a cumulative moving average, as PyTorch
                momentum = 1.0 / int(self.num_batches_tracked.item())
        # train: the batch's statistics (updating the running ones); eval: the running ones, if tracked
        use_batch = self.training or not self.track_running_stats
        return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias, use_batch,
                            momentum, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch norm over ``(N, C)`` or ``(N, C, L)`` inputs: one mean/variance per channel ``C``."""
    _ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over ``(N, C, H, W)`` images: one mean/variance per channel, over batch and pixels."""
    _ndims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch norm over ``(N, C, D, H, W)`` volumes: one mean/variance per channel, over batch and voxels."""
    _ndims = (5,)


class _InstanceNorm(_NormBase):
    """Instance norm: PyTorch's defaults (no affine, no running statistics) and the (un)batched forward."""
    _ndim = 3  # the batched input rank

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input):
        cls, n = type(self).__name__, self._ndim
        if input.ndim not in (n - 1, n):
            raise ShapeError(f"{cls}: expected a {n}-D (N, C, ...) or {n - 1}-D unbatched input, got "
                             f"{fmt_shape(input.shape)}")
        unbatched = input.ndim == n - 1
        x = O.unsqueeze(input, 0) if unbatched else input
        if x.shape[1] != self.num_features and (self.affine or self.track_running_stats):
            raise ShapeError(f"{cls}: expected {self.num_features} channels (num_features) in dim 1, got input "
                             f"{fmt_shape(x.shape)}")
        use_input_stats = self.training or not self.track_running_stats
        y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias, use_input_stats,
                            0.1 if self.momentum is None else self.momentum, self.eps)
        return O.squeeze(y, 0) if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    """Normalize each (sample, channel) of ``(N, C, L)`` over its ``L`` positions (no learned scale by default)."""
    _ndim = 3


class InstanceNorm2d(_InstanceNorm):
    """Normalize each (sample, channel) of ``(N, C, H, W)`` over its pixels (used in style transfer)."""
    _ndim = 4


class InstanceNorm3d(_InstanceNorm):
    """Normalize each (sample, channel) of ``(N, C, D, H, W)`` over its voxels."""
    _ndim = 5


class LayerNorm(Module):
    """Normalise each sample over its last ``len(normalized_shape)`` dims to mean 0, variance 1, then scale
    by ``weight`` and shift by ``bias`` (shape ``normalized_shape``)."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _c.shape(normalized_shape, type(self).__name__, "normalized_shape")
        self.eps, self.elementwise_affine = _c.number(eps, type(self).__name__, "eps"), elementwise_affine
        _affine_params(self, self.normalized_shape, elementwise_affine, bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalize each sample's channels in ``num_groups`` groups (over the group's channels and positions),
    then scale and shift each channel by ``weight``/``bias`` (shape ``(num_channels,)``).

    Independent of the batch size, so it works for batches of one (where batch norm fails).
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__()
        _c.arguments("GroupNorm", num_groups=(num_groups, "count"), num_channels=(num_channels, "size"),
                     eps=(eps, "number"))
        if num_channels % num_groups:
            raise ArgumentError(f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups "
                                f"({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        _affine_params(self, (num_channels,), affine, bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the last ``len(normalized_shape)`` dims.

    Cheaper than LayerNorm (no mean, no bias); ``eps=None`` uses the dtype's machine epsilon.
    """

    def __init__(self, normalized_shape, eps=None, elementwise_affine: bool = True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _c.shape(normalized_shape, type(self).__name__, "normalized_shape")
        self.eps, self.elementwise_affine = _c.arguments("RMSNorm", eps=(eps, "number?")), elementwise_affine
        _affine_params(self, self.normalized_shape, elementwise_affine, None, dtype, device)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


# the rest of torch.nn.modules.normalization's names (kept in coverage.modules.normalization_layers), found on first use
from ._layer_helpers import rest_from as _rest_from  # noqa: E402

__getattr__ = _rest_from(__name__, "gradlab.nn.coverage.modules.normalization_layers")
