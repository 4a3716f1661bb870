"""``max_pool2d`` and ``avg_pool2d``: summarize each kernel window by its max or its mean.

**max_pool2d**: the output is the largest entry of each window, so the
gradient goes *only* to that entry (the "argmax"); the others get 0. The
forward pass records, for every output, where its max came from; backward
scatters ``dY`` back to those places, adding where windows overlap and share
a max. Padding is ``-inf``, so it is never picked.

**avg_pool2d**: the mean of each window -- a convolution with a constant
kernel -- built from ``unfold`` + ``sum`` + divide, so its gradient spreads
``dY / count`` evenly over the window. With ``count_include_pad=True`` (the
PyTorch default) zero padding counts in the divisor.

``ceil_mode=True`` rounds the number of windows up (a last, partial window),
as in PyTorch.
"""
from __future__ import annotations

import math

import numpy as np

from .. import checks as _c, ops as O
from .._tensor import Tensor
from ..autograd.function import Op
from ..backend import dtypes as _dt, xp_of
from ..errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from ._util import check_tensor
from .conv import Unfold, pair, strided_view
from .pad import ConstantPad
from .registry import Sample, register

NS = "gradlab.nn.functional"


def _pool_size(size, k, s, p, d, ceil_mode):
    eff = d * (k - 1) + 1
    span = size + 2 * p - eff
    n = (math.ceil(span / s) if ceil_mode else span // s) + 1
    if ceil_mode and (n - 1) * s >= size + p:  # the last window must start inside the input or left padding
        n -= 1
    return n


def _setup(op, input, kernel_size, stride, padding, dilation, ceil_mode):
    x = check_tensor(input, op)
    _c.flag(ceil_mode, op, "ceil_mode")
    if x.ndim not in (3, 4):
        raise ShapeError(f"{op}: input must be (N, C, H, W) or (C, H, W), got {fmt_shape(x.shape)}")
    if not _dt.is_floating(x.dtype):
        raise DTypeError(f"{op}: input has dtype {_dt.dtype_name(x.dtype)}; it needs a floating tensor")
    k = pair(kernel_size, op, "kernel_size")
    s = k if stride is None or (isinstance(stride, (list, tuple)) and not stride) else pair(stride, op, "stride")
    p = pair(padding, op, "padding", allow_zero=True)
    d = pair(dilation, op, "dilation")
    for i in range(2):
        eff = d[i] * (k[i] - 1) + 1
        if p[i] > eff // 2:
            raise ArgumentError(f"{op}: padding {p} must be at most half the (effective) kernel size {k}; "
                                "more padding would create windows with no input in them")
    unbatched = x.ndim == 3
    if unbatched:
        x = O.unsqueeze(x, 0)
    h, w = x.shape[2:]
    oh, ow = _pool_size(h, k[0], s[0], p[0], d[0], ceil_mode), _pool_size(w, k[1], s[1], p[1], d[1], ceil_mode)
    if oh < 1 or ow < 1:
        raise ShapeError(f"{op}: kernel {k} (dilation {d}) does not fit in input {fmt_shape(x.shape)} padded by {p}")
    # padding on each side: (top, bottom, left, right), bottom/right grown for ceil_mode's partial window
    bottom = (oh - 1) * s[0] + d[0] * (k[0] - 1) + 1 - h - p[0]
    right = (ow - 1) * s[1] + d[1] * (k[1] - 1) + 1 - w - p[1]
    pads = (p[0], max(bottom, p[0]), p[1], max(right, p[1]))
    return x, k, s, p, d, (oh, ow), pads, unbatched


def _windows(a, k, s, d, out_hw):
    """``(N, C, Hp, Wp)`` -> a read-only view ``(N, C, OH, OW, kh, kw)`` of every window."""
    sn, sc, sh, sw = a.strides
    return strided_view(a, a.shape[:2] + tuple(out_hw) + tuple(k), (sn, sc, sh * s[0], sw * s[1], sh * d[0], sw * d[1]))


def _padded(a, pads, value):
    t, b, l, r = pads
    if not any(pads):
        return a
    return xp_of(a).pad(a, ((0, 0), (0, 0), (t, b), (l, r)), constant_values=value)


# ------------------------------------------------------------------ max pool
class _Geometry:
    """Where each output's max lives: flat indices into the padded plane, plus the padding to undo."""

    def __init__(self, flat, hw, pads):
        self.flat, self.hw, self.pads = flat, hw, pads
        self.plane = (hw[0] + pads[0] + pads[1], hw[1] + pads[2] + pads[3])


class _Tiles(_Geometry):
    """The everyday case -- stride = kernel, no padding or dilation -- where the windows tile the
    input. ``arg`` is the position of each window's max inside it (row-major), ``out`` the maxima
    until ``MaxPool2d.forward`` takes them; ``flat`` (the general geometry) is made only if asked."""

    def __init__(self, arg, out, k, hw):
        self.arg, self.out, self.k = arg, out, k
        self.hw, self.pads, self.plane = hw, (0, 0, 0, 0), hw
        self._flat = None

    @property
    def flat(self):
        if self._flat is None:
            kh, kw = self.k
            oh, ow = self.arg.shape[2:]
            rows = np.arange(oh)[:, None] * kh + self.arg // kw
            cols = np.arange(ow)[None, :] * kw + self.arg % kw
            self._flat = rows * self.hw[1] + cols
        return self._flat


_SAME_SIZE_INT = {np.dtype(np.float16): np.int16, np.dtype(np.float32): np.int32, np.dtype(np.float64): np.int64}


def _tiles(a, k, s, d, out_hw, pads):
    """Max pooling where the windows tile a NumPy input, in whole-array steps; else None.

    NumPy's ``argmax`` along a short last axis runs a loop per window, so instead the input is
    laid out once as ``(kh*kw, N, C, OH, OW)`` and: the maxima are a running ``maximum``; the
    first position holding the max (PyTorch's rule for ties) is found from the back with ``!=``;
    and each max is read back from that position bit for bit (``maximum`` may return either zero
    of a +0/-0 tie). An input with a NaN takes the general path: ``!=`` cannot find a NaN max.
    """
    bits = _SAME_SIZE_INT.get(a.dtype)
    if s != k or d != (1, 1) or any(pads) or type(a) is not np.ndarray or bits is None or a.size == 0 \
            or k[0] * k[1] > 64 or np.isnan(a.max()):
        return None
    (kh, kw), (oh, ow) = k, out_hw
    n, c, kk = a.shape[0], a.shape[1], kh * kw
    w = np.ascontiguousarray(a[:, :, :oh * kh, :ow * kw].reshape(n, c, oh, kh, ow, kw).transpose(3, 5, 0, 1, 2, 4))
    w = w.reshape(kk, n, c, oh, ow)
    best = w[0].copy()
    for q in range(1, kk):
        np.maximum(best, w[q], out=best)
    arg = np.zeros(best.shape, np.uint8)
    for q in range(kk - 2, -1, -1):  # arg = 0 where w[0] holds the max, else 1 + (the same for w[1:])
        arg = (w[q] != best) * (arg + np.uint8(1))
    out = np.zeros(best.shape, bits)
    wb = w.view(bits)
    for q in range(kk):
        out += wb[q] * (arg == q)
    return _Tiles(arg, out.view(a.dtype), k, a.shape[2:])


def _gather(a, geo, pad_value):
    n, c = a.shape[:2]
    ap = _padded(a, geo.pads, pad_value).reshape(n, c, geo.plane[0] * geo.plane[1])
    flat = geo.flat.reshape(n, c, geo.flat.shape[2] * geo.flat.shape[3])
    return xp_of(a).take_along_axis(ap, flat, axis=2).reshape(geo.flat.shape)


class MaxPool2d(Op):
    name = "max_pool2d"
    formula = "dX = zeros(X.shape); dX[argmax of each window] += dY"

    @staticmethod
    def forward(ctx, x, geo):
        ctx.geo = geo
        if type(geo) is _Tiles and geo.out is not None:  # (max_pool2d found the maxima already)
            out, geo.out = geo.out, None
            return out
        return _gather(x._data, geo, -np.inf)

    def vjp(self, g):
        return PoolScatter.apply(g, self.geo), None

    def jvp(self, t, _):
        return PoolGather.apply(t, self.geo)


def _scatter(g, geo):
    """Add each entry of ``g`` into the input position its window's max came from (summing repeats)."""
    xp = xp_of(g)
    n, c = g.shape[:2]
    hp, wp = geo.plane
    base = (xp.arange(n * c) * (hp * wp))[:, None]
    idx = (base + geo.flat.reshape(n * c, geo.flat.shape[2] * geo.flat.shape[3])).reshape(-1)
    out = xp.bincount(idx, weights=g.reshape(-1), minlength=n * c * hp * wp)
    t, _, l, _ = geo.pads
    out = out.reshape(n, c, hp, wp)[:, :, t:t + geo.hw[0], l:l + geo.hw[1]]
    return xp.ascontiguousarray(out, dtype=g.dtype)


class PoolScatter(Op):
    """Add each ``g`` into the input position its window's max came from (max_pool2d's backward)."""

    name = "max_pool2d_backward"
    formula = "dG = dY[argmax of each window]"

    @staticmethod
    def forward(ctx, g, geo):
        ctx.geo = geo
        return _scatter(g._data, geo)

    def vjp(self, gg):
        return PoolGather.apply(gg, self.geo), None

    def jvp(self, t, _):
        return PoolScatter.apply(t, self.geo)


class PoolGather(Op):
    """Pick the entries at the recorded argmax positions (the adjoint of :class:`PoolScatter`)."""

    name = "max_pool2d_gather"
    formula = "dX = scatter dY back to the argmax positions"

    @staticmethod
    def forward(ctx, x, geo):
        ctx.geo = geo
        return _gather(x._data, geo, 0)

    def vjp(self, g):
        return PoolScatter.apply(g, self.geo), None

    def jvp(self, t, _):
        return PoolGather.apply(t, self.geo)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The max of each ``kernel_size`` window (stride defaults to the kernel size); ``(N, C, H, W)`` or ``(C, H, W)``.

    ``return_indices=True`` also returns, per output, the flat index ``h * W + w`` of its max in the input.
    """
    x, k, s, p, d, out_hw, pads, unbatched = _setup("max_pool2d", input, kernel_size, stride, padding, dilation,
                                                     ceil_mode)
    xp = xp_of(x._data)
    geo = _tiles(x._data, k, s, d, out_hw, pads)
    if geo is None:
        win = _windows(_padded(x._data, pads, -np.inf), k, s, d, out_hw)
        n, c = x.shape[:2]
        arg = xp.argmax(win.reshape(n, c, out_hw[0], out_hw[1], k[0] * k[1]), axis=-1)
        i, j = arg // k[1], arg % k[1]
        rows = xp.arange(out_hw[0])[:, None] * s[0] + i * d[0]
        cols = xp.arange(out_hw[1])[None, :] * s[1] + j * d[1]
        wp = x.shape[3] + pads[2] + pads[3]
        geo = _Geometry(rows * wp + cols, x.shape[2:], pads)
    out = MaxPool2d.apply(x, geo)
    if unbatched:
        out = O.squeeze(out, 0)
    if not return_indices:
        return out
    idx = geo.flat if type(geo) is _Tiles else (rows - pads[0]) * x.shape[3] + (cols - pads[2])
    idx = Tensor._make(idx[0] if unbatched else idx)
    return out, idx


# ------------------------------------------------------------------ avg pool
def _divisor(h, w, k, s, p, out_hw, count_include_pad, xp, dtype):
    """How many entries each window averages: PyTorch's rule (padding counts unless told otherwise)."""
    def axis(size, k, s, p, n):
        start = np.arange(n) * s - p
        end = np.minimum(start + k, size + p)
        with_pad = end - start
        inside = np.minimum(end, size) - np.maximum(start, 0)
        return with_pad, inside
    ph, ih = axis(h, k[0], s[0], p[0], out_hw[0])
    pw, iw = axis(w, k[1], s[1], p[1], out_hw[1])
    div = np.outer(ph, pw) if count_include_pad else np.outer(ih, iw)
    return xp.asarray(div.reshape(-1).astype(dtype))


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """The mean of each window (``unfold`` + ``sum`` / count); padding counts in the mean unless
    ``count_include_pad=False``; ``divisor_override`` replaces the count."""
    x, k, s, p, _, out_hw, pads, unbatched = _setup("avg_pool2d", input, kernel_size, stride, padding, 1, ceil_mode)
    _c.flag(count_include_pad, "avg_pool2d", "count_include_pad")
    h, w = x.shape[2:]
    extra = (pads[1] - p[0], pads[3] - p[1])  # ceil_mode's partial windows: more zeros on the bottom/right
    xe = ConstantPad.apply(x, ((0, 0), (0, 0), (0, extra[0]), (0, extra[1])), 0) if any(extra) else x
    n, c = x.shape[:2]
    cols = Unfold.apply(xe, k, (1, 1), p, s)                       # (N, C*kh*kw, L)
    sums = O.sum(O.reshape(cols, (n, c, k[0] * k[1], out_hw[0] * out_hw[1])), dim=2)  # (N, C, L)
    if divisor_override is not None:
        divisor_override = _c.size(divisor_override, "avg_pool2d", "divisor_override", None)
        if divisor_override == 0:
            raise ArgumentError("avg_pool2d: divisor_override must be non-zero (it replaces the window size as the "
                                "divisor), got 0")
    if divisor_override:
        out = sums / float(divisor_override)
    else:
        out = sums / Tensor._make(_divisor(h, w, k, s, p, out_hw, count_include_pad, xp_of(x._data), x.dtype))
    out = O.reshape(out, (n, c) + tuple(out_hw))
    return O.squeeze(out, 0) if unbatched else out


# -------------------------------------------------------------- registry entries
def _pool_samples(with_dilation):
    def samples(src):
        k = (src.integers(1, 3), src.integers(1, 3))
        s = (src.integers(1, 2), src.integers(1, 3))
        p = (src.integers(0, k[0] // 2), src.integers(0, k[1] // 2))
        kw = dict(stride=s, padding=p, ceil_mode=src.boolean())
        if with_dilation:
            kw["dilation"] = (src.integers(1, 2), 1)
        else:
            kw["count_include_pad"] = src.boolean()
        h, w = k[0] * 2 + src.integers(0, 2), k[1] + src.integers(0, 2)
        yield Sample((src.tensor((src.integers(1, 2), src.integers(1, 2), h, w), distinct=True), k), kw,
                     desc="stride, padding, ceil_mode")
        yield Sample((src.tensor((2, 4, 4), distinct=True), 2), desc="unbatched, default stride")
        if with_dilation:
            yield Sample((src.tensor((1, 1, 5, 5), distinct=True), 3), dict(stride=1, padding=1, return_indices=True),
                         desc="overlapping windows, indices")
        else:
            yield Sample((src.tensor((1, 1, 4, 5)), 3), dict(stride=2, padding=1, divisor_override=4),
                         desc="divisor_override")
    return samples


register("max_pool2d", op=MaxPool2d, samples=_pool_samples(True), namespace=NS,
         torch=lambda torch, *a, **k: torch.nn.functional.max_pool2d(*a, **k))(max_pool2d)
register("avg_pool2d", samples=_pool_samples(False), namespace=NS,
         formula="dX = fold(broadcast(dY / count))   (each window entry gets an equal share)",
         torch=lambda torch, *a, **k: torch.nn.functional.avg_pool2d(*a, **k))(avg_pool2d)
