"""``interpolate``: resize the spatial dims of ``(N, C, L)`` or ``(N, C, H, W)``.

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

from .. import ops as O
from ..backend import xp_of
from ..errors import ArgumentError, ShapeError, fmt_shape
from .._tensor import Tensor
from ..ops._util import check_tensor
from ..ops.registry import Sample, register
from ._conv1d import adaptive_avg_pool1d, adaptive_avg_pool2d

NS = "gradlab.nn.functional"
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
        sizes = (size,) * k if isinstance(size, int) else tuple(int(s) for s in size)
        factors = (None,) * k
    else:
        factors = (float(scale_factor),) * k if not isinstance(scale_factor, (list, tuple)) else \
            tuple(float(f) for f in scale_factor)
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
    k = x.ndim - 2
    if mode not in _MODES or (mode in ("linear", "bilinear") and _MODES[mode] != k):
        ok = "nearest, nearest-exact, area, " + ("linear" if k == 1 else "bilinear")
        raise ArgumentError(f"{op}: mode {mode!r} is not available for a {k}-D resize of input {fmt_shape(x.shape)}; "
                            f"use one of: {ok}")
    if align_corners is not None and mode not in ("linear", "bilinear"):
        raise ArgumentError(f"{op}: align_corners only applies to the linear modes, not {mode!r}")
    if antialias:
        raise ArgumentError(f"{op}: antialias=True is not supported by gradlab")
    sizes, factors = _sizes(op, x, size, scale_factor, k)
    if recompute_scale_factor:
        factors = (None,) * k
    if mode == "area":
        return adaptive_avg_pool1d(x, sizes[0]) if k == 1 else adaptive_avg_pool2d(x, sizes)
    xp = xp_of(x.data)
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
