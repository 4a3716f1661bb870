"""Resampling functions of ``F``: ``interpolate`` (and its old names ``upsample``, ``upsample_nearest``,
``upsample_bilinear``), ``pixel_shuffle``, ``pixel_unshuffle`` and ``channel_shuffle``.

``interpolate`` resizes the spatial dims of ``(N, C, L)`` or ``(N, C, H, W)``.

Resizing one axis by ``nearest`` or ``linear`` interpolation is a *linear map*
from the input length to the output length: each output entry is a fixed
weighted sum of (one or two) input entries. So gradlab builds that map as a
small matrix ``A`` (``out x in``) and resizes with matrix products::

    1-D:  Y = X @ A^T           2-D:  Y = Ah @ X @ Aw^T

The gradient is the same maps transposed (``dX = Ah^T @ dY @ Aw``): each
input entry collects the gradient of every output it contributed to.
The sampling positions follow PyTorch exactly (``align_corners``,
``scale_factor``, ``nearest`` vs ``nearest-exact``). ``mode='area'`` is
adaptive average pooling.
"""
from __future__ import annotations

import math

import numpy as np

from .... import checks as _c, ops as O
from ...._tensor import Tensor
from ....backend import xp_of
from ....errors import ArgumentError, ShapeError, fmt_shape
from ....ops._util import check_tensor
from ....ops.registry import Sample, register
from ..._pooling import adaptive_avg_pool1d, adaptive_avg_pool2d
from ..._register import NS, register_table

_MODES = {"nearest": 1, "nearest-exact": 1, "area": 1, "linear": 1, "bilinear": 2}


def _matrix(mode, n_in, n_out, scale_factor, align_corners):
    """The ``(n_out, n_in)`` interpolation matrix for one axis, with PyTorch's sampling positions."""
    m = np.zeros((n_out, n_in))
    dst = np.arange(n_out, dtype=np.float64)
    if align_corners:
        scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        scale = 1.0 / scale_factor if scale_factor else n_in / n_out
    if mode in ("nearest", "nearest-exact"):
        shift = 0.5 if mode == "nearest-exact" else 0.0
        src = np.minimum(np.floor((dst + shift) * np.float32(scale)).astype(np.int64), n_in - 1)
        m[np.arange(n_out), src] = 1.0
        return m
    src = dst * scale if align_corners else np.maximum((dst + 0.5) * scale - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    lam = src - i0
    np.add.at(m, (np.arange(n_out), i0), 1 - lam)
    np.add.at(m, (np.arange(n_out), i1), lam)
    return m


def _sizes(op, x, size, scale_factor, k):
    if (size is None) == (scale_factor is None):
        raise ArgumentError(f"{op}: give exactly one of size= and scale_factor=")
    if size is not None:
        sizes = _c.sizes(size, k, op, "size", 0)
        factors = (None,) * k
    else:
        factors = (float(_c.positive(scale_factor, op, "scale_factor")),) * k \
            if not isinstance(scale_factor, (list, tuple)) else \
            tuple(float(_c.positive(f, op, "scale_factor")) for f in scale_factor)
        sizes = tuple(int(math.floor(n * f)) for n, f in zip(x.shape[2:], factors))
    if len(sizes) != k or len(factors) != k:
        raise ArgumentError(f"{op}: input {fmt_shape(x.shape)} has {k} spatial dim(s); size/scale_factor must "
                            f"give {k} value(s)")
    if min(sizes) < 1:
        raise ArgumentError(f"{op}: the output size {sizes} must be positive")
    return sizes, factors


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize ``(N, C, L)`` (modes nearest, nearest-exact, linear, area) or ``(N, C, H, W)`` (nearest,
    nearest-exact, bilinear, area) to ``size`` or by ``scale_factor``."""
    op = "interpolate"
    x = check_tensor(input, op)
    if x.ndim not in (3, 4):
        raise ShapeError(f"{op}: input must be (N, C, L) or (N, C, H, W), got {fmt_shape(x.shape)}")
    _c.floating(x, op, "input", what="a floating dtype (interpolation computes weighted means)")
    k = x.ndim - 2
    if mode not in _MODES or (mode in ("linear", "bilinear") and _MODES[mode] != k):
        ok = "nearest, nearest-exact, area, " + ("linear" if k == 1 else "bilinear")
        raise ArgumentError(f"{op}: mode {mode!r} is not available for a {k}-D resize of input {fmt_shape(x.shape)}; "
                            f"use one of: {ok}")
    if align_corners is not None:
        align_corners = _c.flag(align_corners, op, "align_corners")
    if align_corners is not None and mode not in ("linear", "bilinear"):
        raise ArgumentError(f"{op}: align_corners only applies to the linear modes, not {mode!r}")
    if antialias:
        raise ArgumentError(f"{op}: antialias=True is not supported by gradlab")
    sizes, factors = _sizes(op, x, size, scale_factor, k)
    if recompute_scale_factor:
        factors = (None,) * k
    if mode == "area":
        return adaptive_avg_pool1d(x, sizes[0]) if k == 1 else adaptive_avg_pool2d(x, sizes)
    xp = xp_of(x._data)
    mats = [Tensor._make(xp.asarray(_matrix(mode, n, o, f, bool(align_corners)).astype(x.dtype)))
            for n, o, f in zip(x.shape[2:], sizes, factors)]
    if k == 1:
        return O.matmul(x, mats[0].mT)
    return O.matmul(O.matmul(mats[0], x), mats[1].mT)


def _interp_samples(src):
    n = src.integers(1, 2)
    yield Sample((src.tensor((n, 2, src.integers(1, 4), src.integers(1, 4))),),
                 dict(size=(src.integers(1, 5), src.integers(1, 5)), mode=src.choice(["nearest", "nearest-exact", "area"])),
                 desc="2-D nearest / area to a size")
    yield Sample((src.tensor((n, 2, src.integers(2, 4), src.integers(2, 4))),),
                 dict(scale_factor=src.choice([0.5, 1.5, 2.0]), mode="bilinear", align_corners=src.boolean()),
                 desc="bilinear by a scale factor")
    yield Sample((src.tensor((n, 2, src.integers(1, 5))),),
                 dict(size=src.integers(1, 6), mode="linear", align_corners=src.boolean()), desc="1-D linear")
    yield Sample((src.tensor((1, 1, 3)),), dict(scale_factor=2), desc="1-D nearest, default mode")


register("interpolate", samples=_interp_samples, namespace=NS,
         formula="dX = Ah^T @ dY @ Aw   (Y = Ah @ X @ Aw^T, A = the per-axis interpolation matrices)",
         torch=lambda torch, *a, **k: torch.nn.functional.interpolate(*a, **k))(interpolate)


# ------------------------------------------------------------ pixel (un)shuffle
def pixel_shuffle(input, upscale_factor):
    """``(*, C*r*r, H, W) -> (*, C, H*r, W*r)``: move channel blocks into space (sub-pixel upsampling)."""
    x = check_tensor(input, "pixel_shuffle")
    r = _c.size(upscale_factor, "pixel_shuffle", "upscale_factor", 1)
    if x.ndim < 3 or x.shape[-3] % (r * r):
        raise ShapeError(f"pixel_shuffle: input {fmt_shape(x.shape)} needs at least 3 dims and a channel count "
                         f"(dim -3) divisible by upscale_factor^2 = {r * r}")
    lead, (c, h, w) = x.shape[:-3], x.shape[-3:]
    n = len(lead)
    y = O.reshape(x, lead + (c // (r * r), r, r, h, w))
    y = O.permute(y, tuple(range(n)) + tuple(n + i for i in (0, 3, 1, 4, 2)))
    return O.reshape(y, lead + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """``(*, C, H*r, W*r) -> (*, C*r*r, H, W)``: the inverse of :func:`pixel_shuffle`."""
    x = check_tensor(input, "pixel_unshuffle")
    r = _c.size(downscale_factor, "pixel_unshuffle", "downscale_factor", 1)
    if x.ndim < 3 or x.shape[-2] % r or x.shape[-1] % r:
        raise ShapeError(f"pixel_unshuffle: input {fmt_shape(x.shape)} needs at least 3 dims and H, W divisible "
                         f"by downscale_factor = {r}")
    lead, (c, h, w) = x.shape[:-3], x.shape[-3:]
    n = len(lead)
    y = O.reshape(x, lead + (c, h // r, r, w // r, r))
    y = O.permute(y, tuple(range(n)) + tuple(n + i for i in (0, 2, 4, 1, 3)))
    return O.reshape(y, lead + (c * r * r, h // r, w // r))


def _shuffle_samples(src):
    r = src.integers(1, 2)
    yield Sample((src.tensor((src.integers(1, 2), src.integers(1, 2) * r * r, src.integers(1, 3), src.integers(1, 3))),
                  r))
    yield Sample((src.tensor((8, 2, 3)), 2), desc="unbatched")


def _unshuffle_samples(src):
    r = src.integers(1, 2)
    yield Sample((src.tensor((src.integers(1, 2), src.integers(1, 2), 2 * r, 3 * r)), r))
    yield Sample((src.tensor((1, 4, 2)), 2), desc="unbatched")


register("pixel_shuffle", samples=_shuffle_samples, namespace=NS, formula="dX = pixel_unshuffle(dY, r)",
         torch=lambda torch, *a, **k: torch.nn.functional.pixel_shuffle(*a, **k))(pixel_shuffle)
def _torch_pixel_unshuffle(torch, input, *a, **k):
    """The oracle: PyTorch's ``pixel_unshuffle``, except that an input with no elements gets the documented
    ``(*, C*r*r, H/r, W/r)`` shape, which PyTorch's meta backend (what ``torch.compile`` traces with) and its CUDA
    kernel give; its CPU kernel returns a copy of the input's shape instead (pytorch/pytorch#192816)."""
    if input.numel() == 0:
        out = torch.nn.functional.pixel_unshuffle(input.to("meta"), *a, **k)
        return torch.empty(out.shape, dtype=out.dtype)
    return torch.nn.functional.pixel_unshuffle(input, *a, **k)


register("pixel_unshuffle", samples=_unshuffle_samples, namespace=NS, formula="dX = pixel_shuffle(dY, r)",
         torch=_torch_pixel_unshuffle)(pixel_unshuffle)


def channel_shuffle(input, groups):
    """``(N, g*c, *) -> (N, c*g, *)``: interleave the channels of ``groups`` groups (ShuffleNet)."""
    x = check_tensor(input, "channel_shuffle")
    groups = _c.size(groups, "channel_shuffle", "groups", 1)
    if x.ndim < 3 or x.shape[1] % groups:
        raise ShapeError(f"channel_shuffle: groups={groups} must divide the channels (dim 1) of a 3-D or higher "
                         f"input, got {fmt_shape(x.shape)}")
    n, c = x.shape[0], x.shape[1]
    rest = tuple(x.shape[2:])
    y = O.transpose(O.reshape(x, (n, groups, c // groups) + rest), 1, 2)
    return O.reshape(y, (n, c) + rest)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """The old name of ``F.interpolate`` (deprecated in PyTorch, still found in older code)."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """``interpolate(mode='nearest')`` (an old PyTorch name)."""
    return upsample(input, size, scale_factor, "nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """``interpolate(mode='bilinear', align_corners=True)`` (an old PyTorch name)."""
    return upsample(input, size, scale_factor, "bilinear", True)


def _channel_shuffle_samples(src):
    g = src.integers(1, 3)
    yield Sample((src.tensor((src.integers(1, 2), g * src.integers(1, 2), src.integers(1, 3))), g))


def _upsample_samples(src):
    yield Sample((src.tensor((1, 2, src.integers(1, 3), src.integers(1, 3))),), dict(scale_factor=2))


register_table([
    (channel_shuffle, _channel_shuffle_samples, "dX = the inverse shuffle of dY"),
    (upsample, _upsample_samples, "interpolate's rule: dX = P^T dY"),
    (upsample_nearest, _upsample_samples, "interpolate's rule: dX = P^T dY"),
    (upsample_bilinear, _upsample_samples, "interpolate's rule: dX = P^T dY"),
])
