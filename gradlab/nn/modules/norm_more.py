"""``GroupNorm``, ``RMSNorm``, ``InstanceNorm1d/2d``, channel dropout, distances and ``Unflatten``.

The normalizations differ only in *which* elements share one mean and variance:
batch norm a channel across the batch, layer norm a sample's features, instance norm one
(sample, channel) over its positions, group norm a (sample, group of channels); RMS norm
only rescales (no mean subtracted, no bias).
"""
from __future__ import annotations

from ... import ops as O
from ...backend import dtypes as _dt
from ...errors import ArgumentError, ShapeError, fmt_shape
from ...factories import ones, tensor, zeros
from .. import functional as F
from .. import init
from ..module import Module
from ._util import new_param
from .batchnorm import _BatchNorm


class GroupNorm(Module):
    """Normalize each sample's channels in ``num_groups`` groups (over the group's channels and positions),
    then scale and shift each channel by ``weight``/``bias`` (shape ``(num_channels,)``).

    Independent of the batch size, so it works for batches of one (where batch norm fails).
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__()
        if num_groups < 1 or num_channels % num_groups:
            raise ArgumentError(f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups "
                                f"({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        if affine:
            self.weight = new_param(num_channels, dtype=dtype, device=device)
            if bias:
                self.bias = new_param(num_channels, dtype=dtype, device=device)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

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
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(s) for s in normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = new_param(*self.normalized_shape, dtype=dtype, device=device)
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class _InstanceNorm(Module):
    _ndim = 3  # the batched input rank

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None, *, bias: bool = True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
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

    def reset_parameters(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1.0)
            self.num_batches_tracked.zero_()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

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

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """Normalize each (sample, channel) of ``(N, C, L)`` over its ``L`` positions (no learned scale by default)."""
    _ndim = 3


class InstanceNorm2d(_InstanceNorm):
    """Normalize each (sample, channel) of ``(N, C, H, W)`` over its pixels (used in style transfer)."""
    _ndim = 4


class _DropoutNd(Module):
    _fn = None

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ArgumentError(f"{type(self).__name__}: probability p has to be between 0 and 1, but got {p}")
        self.p, self.inplace = float(p), inplace

    def forward(self, input):
        return type(self)._fn(input, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_DropoutNd):
    """Zero whole channels of ``(N, C, L)`` with probability ``p`` in training (neighbouring positions are
    correlated, so dropping single elements regularizes little)."""
    _fn = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zero whole feature maps of ``(N, C, H, W)`` with probability ``p`` in training."""
    _fn = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    """Zero whole channels of ``(N, C, D, H, W)`` with probability ``p`` in training."""
    _fn = staticmethod(F.dropout3d)


class CosineSimilarity(Module):
    """``<x1, x2> / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim``."""

    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """``||x1 - x2 + eps||_p`` along the last dim (one distance per row)."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size`` (the inverse of ``Flatten``): ``(N, 12) -> (N, 3, 4)``."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)) or not all(isinstance(s, int) for s in unflattened_size):
            raise ArgumentError(f"Unflatten: unflattened_size must be a tuple or list of ints, got "
                                f"{unflattened_size!r}")
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input):
        d = self.dim + input.ndim if self.dim < 0 else self.dim
        if not 0 <= d < input.ndim:
            raise ShapeError(f"Unflatten: dim {self.dim} is out of range for input {fmt_shape(input.shape)}")
        sizes = tuple(self.unflattened_size)
        known = 1
        for s in sizes:
            known *= s if s != -1 else 1
        n = input.shape[d]
        if (-1 not in sizes and known != n) or (-1 in sizes and (known == 0 or n % known)):
            raise ShapeError(f"Unflatten: cannot split dim {self.dim} of size {n} (input {fmt_shape(input.shape)}) "
                             f"into {sizes}: their product must be {n}")
        return O.reshape(input, tuple(input.shape[:d]) + sizes + tuple(input.shape[d + 1:]))

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks: keeps inputs of mean 0 and variance 1 at mean 0 and variance 1 in training
    (dropped units take SELU's negative saturation value, then an affine correction)."""
    _fn = staticmethod(F.alpha_dropout)


class InstanceNorm3d(_InstanceNorm):
    """Normalize each (sample, channel) of ``(N, C, D, H, W)`` over its voxels."""
    _ndim = 5


class BatchNorm3d(_BatchNorm):
    """Batch norm over ``(N, C, D, H, W)`` volumes: one mean/variance per channel, over batch and voxels."""
    _ndims = (5,)


class FeatureAlphaDropout(_DropoutNd):
    """``AlphaDropout`` that drops whole channels (for SELU convolutional networks)."""
    _fn = staticmethod(F.feature_alpha_dropout)
