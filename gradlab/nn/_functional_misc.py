"""More ``F`` functions, composites of gradlab ops: ``local_response_norm``, ``channel_shuffle``, ``rrelu``,
``lp_pool1d/2d``, ``pdist``, ``multilabel_margin_loss``, ``triplet_margin_with_distance_loss``.

* ``local_response_norm`` (AlexNet): each activation is divided by
  ``(k + alpha/size * sum of squares of its `size` neighbouring channels)^beta``.
* ``lp_pool``: ``(sum over the window of x^p)^(1/p)``; p=1 is sum pooling, p -> inf is max pooling.
* ``rrelu``: leaky relu whose negative slope is drawn from ``U(lower, upper)`` per element in
  training, and is the fixed average ``(lower + upper) / 2`` in evaluation.
"""
from __future__ import annotations

import numpy as np

from .. import ops as O
from .._tensor import Tensor
from ..backend import generator, xp_of
from ..backend.device import to_host
from ..errors import ArgumentError, ShapeError, fmt_shape
from ..ops._util import check_tensor
from ..ops.pad import pad as _pad
from ..ops.pool import avg_pool2d
from ..ops.registry import Sample, register, torch_functional as _torch_f
from ._conv1d import avg_pool1d
from ._losses import _REDUCTIONS, _reduce, _reduction
from ._norm import pairwise_distance

NS = "gradlab.nn.functional"


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """``x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta`` (channels are dim 1)."""
    x = check_tensor(input, "local_response_norm")
    if x.ndim < 3:
        raise ShapeError(f"local_response_norm: expected a 3-D or higher input (N, C, ...), got {fmt_shape(x.shape)}")
    if x.numel() == 0:
        return x
    c = x.shape[1]
    sq = _pad(x * x, (0, 0) * (x.ndim - 2) + (size // 2, (size - 1) // 2))
    total = sq[:, 0:c]
    for j in range(1, size):
        total = total + sq[:, j:j + c]
    return x / (total * (alpha / size) + k) ** beta


def channel_shuffle(input, groups):
    """``(N, g*c, *) -> (N, c*g, *)``: interleave the channels of ``groups`` groups (ShuffleNet)."""
    x = check_tensor(input, "channel_shuffle")
    if x.ndim < 3 or groups < 1 or x.shape[1] % groups:
        raise ShapeError(f"channel_shuffle: groups={groups} must divide the channels (dim 1) of a 3-D or higher "
                         f"input, got {fmt_shape(x.shape)}")
    n, c = x.shape[0], x.shape[1]
    rest = tuple(x.shape[2:])
    y = O.transpose(O.reshape(x, (n, groups, c // groups) + rest), 1, 2)
    return O.reshape(y, (n, c) + rest)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky relu: slope ``U(lower, upper)`` per negative element in training, else the mean slope."""
    x = check_tensor(input, "rrelu")
    if not training:
        return O.leaky_relu(x, (lower + upper) / 2)
    xp = xp_of(x.data)
    slope = Tensor._make(xp.asarray(generator().uniform(lower, upper, x.shape)).astype(x.dtype))
    return O.where(x >= 0, x, x * slope)


def _lp(x, out, p, area):
    return (O.sign(out) * O.relu(O.abs(out)) * area) ** (1.0 / p)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over each window of x^p)^(1/p)`` along the last dim."""
    x = check_tensor(input, "lp_pool1d")
    k = kernel_size if isinstance(kernel_size, int) else int(kernel_size[0])
    out = avg_pool1d(x ** norm_type, k, stride, 0, ceil_mode)
    return _lp(x, out, norm_type, k)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over each window of x^p)^(1/p)`` over the last two dims."""
    x = check_tensor(input, "lp_pool2d")
    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
    out = avg_pool2d(x ** norm_type, (kh, kw), stride if stride is not None else (kh, kw), 0, ceil_mode)
    return _lp(x, out, norm_type, kh * kw)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over each window of x^p)^(1/p)`` over the last three dims."""
    from ._conv3d import avg_pool3d
    x = check_tensor(input, "lp_pool3d")
    k = (kernel_size,) * 3 if isinstance(kernel_size, int) else tuple(kernel_size)
    out = avg_pool3d(x ** norm_type, k, stride, 0, ceil_mode)
    return _lp(x, out, norm_type, k[0] * k[1] * k[2])


def pdist(input, p=2):
    """The ``p``-norm distance between every pair of rows ``i < j`` of ``(N, M)``: ``N*(N-1)/2`` values."""
    x = check_tensor(input, "pdist")
    if x.ndim != 2:
        raise ShapeError(f"pdist: input must be 2-D (N, M), got {fmt_shape(x.shape)}")
    i, j = np.triu_indices(x.shape[0], 1)
    xp = xp_of(x.data)
    return O.norm(x[Tensor._make(xp.asarray(i))] - x[Tensor._make(xp.asarray(j))], p, dim=-1)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-label hinge loss: every labelled class ``j`` should beat every other class ``i`` by 1;
    ``sum max(0, 1 - (x[j] - x[i])) / C``. ``target`` lists the labels, ended by -1 (as PyTorch)."""
    op = "multilabel_margin_loss"
    x = check_tensor(input, op)
    red = _reduction(op, reduction, size_average, reduce)
    t = (to_host(target.data) if isinstance(target, Tensor) else np.asarray(target)).astype(np.int64)
    if t.shape != tuple(x.shape) or x.ndim not in (1, 2):
        raise ShapeError(f"{op}: input (N, C) or (C,) and target of the same shape expected, got input "
                         f"{fmt_shape(x.shape)} and target {fmt_shape(t.shape)}")
    unbatched = x.ndim == 1
    if unbatched:
        x, t = O.unsqueeze(x, 0), t[None]
    n, c = x.shape
    is_t = np.zeros((n, c), dtype=bool)
    for r in range(n):
        for v in t[r]:
            if v < 0:
                break
            if v >= c:
                raise ArgumentError(f"{op}: target label {v} is out of range for {c} classes")
            is_t[r, v] = True
    pairs = Tensor._make(xp_of(x.data).asarray((is_t[:, :, None] & ~is_t[:, None, :]).astype(x.dtype)))
    m = O.relu(1 - O.unsqueeze(x, 2) + O.unsqueeze(x, 1))                  # (N, j, i)
    loss = O.sum(m * pairs, dim=(1, 2)) / c
    return _reduce(O.squeeze(loss, 0) if unbatched else loss, red)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with any ``distance_function`` (default ``pairwise_distance``)."""
    op = "triplet_margin_with_distance_loss"
    if margin <= 0:
        raise ArgumentError(f"{op}: margin must be greater than 0, got {margin}")
    if reduction not in _REDUCTIONS:
        raise ArgumentError(f"{op}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
    d = distance_function if distance_function is not None else pairwise_distance
    dp, dn = d(anchor, positive), d(anchor, negative)
    if swap:
        dn = O.minimum(dn, d(positive, negative))
    return _reduce(O.clamp(dp - dn + margin, min=0), reduction)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """The old name of ``F.interpolate`` (deprecated in PyTorch, still found in older code)."""
    from ._resample import interpolate
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """``interpolate(mode='nearest')`` (an old PyTorch name)."""
    return upsample(input, size, scale_factor, "nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """``interpolate(mode='bilinear', align_corners=True)`` (an old PyTorch name)."""
    return upsample(input, size, scale_factor, "bilinear", True)


# ------------------------------------------------------------- registry entries
def _lrn_samples(src):
    yield Sample((src.tensor((src.integers(1, 2), src.integers(1, 5), src.integers(1, 3))), src.integers(1, 4)),
                 dict(alpha=0.5, beta=0.75, k=1.0))
    yield Sample((src.tensor((1, 4, 2, 2)), 3), desc="4-D")


def _shuffle_samples(src):
    g = src.integers(1, 3)
    yield Sample((src.tensor((src.integers(1, 2), g * src.integers(1, 2), src.integers(1, 3))), g))


def _rrelu_samples(src):
    yield Sample((src.tensor(src.shape(0, 3, 1, 4), away_from=0.0),), dict(lower=0.1, upper=0.3),
                 desc="eval mode: the mean slope")


def _lp_samples(k):
    def samples(src):
        shape = (src.integers(1, 2), 2 if k < 3 else 1) + tuple(src.integers(2, 4 if k < 3 else 3) for _ in range(k))
        yield Sample((src.tensor(shape, 0.2, 2), src.choice([1, 2, 3]), 2), dict(stride=1))
    return samples


def _pdist_samples(src):
    yield Sample((src.tensor((src.integers(2, 4), src.integers(1, 3)), distinct=True),), dict(p=src.choice([1, 2])))


def _mlm_samples(src):
    n, c = src.integers(1, 3), src.integers(2, 4)
    t = np.full((n, c), -1, dtype=np.int64)
    for r in range(n):
        labels = sorted({src.integers(0, c - 1) for _ in range(src.integers(1, c))})
        t[r, :len(labels)] = labels
    yield Sample((src.tensor((n, c), -0.4, 0.4), Tensor._make(t)), dict(reduction=src.choice(_REDUCTIONS)))


def _twd_samples(src):
    shape = (src.integers(1, 3), src.integers(1, 3))
    yield Sample((src.tensor(shape), src.tensor(shape), src.tensor(shape)),
                 dict(margin=src.choice([0.5, 2.0]), swap=src.boolean(), reduction=src.choice(_REDUCTIONS)))


def _upsample_samples(src):
    yield Sample((src.tensor((1, 2, src.integers(1, 3), src.integers(1, 3))),), dict(scale_factor=2))


for _fn, _samples, _formula in [
    (local_response_norm, _lrn_samples, "y = x / D^beta, D = k + alpha/size * window_sum(x^2): dx via the chain rule"),
    (channel_shuffle, _shuffle_samples, "dX = the inverse shuffle of dY"),
    (rrelu, _rrelu_samples, "dx = dy where x >= 0, else slope * dy"),
    (lp_pool1d, _lp_samples(1), "dx = x^(p-1) * S^(1/p - 1) * dy   (S = window sum of x^p)"),
    (lp_pool2d, _lp_samples(2), "dx = x^(p-1) * S^(1/p - 1) * dy   (S = window sum of x^p)"),
    (lp_pool3d, _lp_samples(3), "dx = x^(p-1) * S^(1/p - 1) * dy   (S = window sum of x^p)"),
    (pdist, _pdist_samples, "d||x_i - x_j|| / dx_i = the unit difference (p=2)"),
    (multilabel_margin_loss, _mlm_samples, "dx_j -= [m > 0] / C ; dx_i += [m > 0] / C for each (label j, other i)"),
    (triplet_margin_with_distance_loss, _twd_samples, "dL = [L > 0] (d d(a,p) - d d(a,n))"),
    (upsample, _upsample_samples, "interpolate's rule: dX = P^T dY"),
    (upsample_nearest, _upsample_samples, "interpolate's rule: dX = P^T dY"),
    (upsample_bilinear, _upsample_samples, "interpolate's rule: dX = P^T dY"),
]:
    register(_fn.__name__, samples=_samples, formula=_formula, namespace=NS, torch=_torch_f(_fn.__name__))(_fn)
del _fn, _samples, _formula
