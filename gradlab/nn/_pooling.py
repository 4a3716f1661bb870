"""Pooling functions of ``F`` beyond ``max_pool2d``/``avg_pool2d`` (``gradlab.ops.pool``'s): ``max_pool1d``,
``avg_pool1d``, ``max_pool3d``, ``avg_pool3d``, ``adaptive_avg_pool1d/2d/3d``, ``adaptive_max_pool1d/2d/3d``.

* The 1-D pools are the 2-D ones on an image of height 1; the 3-D pools run the 2-D pool on each
  depth offset's slices (``_window_stack``), then take a max over the offsets (or a window sum, then
  a divide), so their gradients are the 2-D ops' gradients.
* ``adaptive_avg_pool2d(x, (OH, OW))`` picks the windows so that the output
  has the requested size: output row ``i`` averages input rows
  ``floor(i*H/OH)`` to ``ceil((i+1)*H/OH)``. Averaging rows and averaging
  columns are each a matrix product, so the whole op is ``Ph @ X @ Pw^T``
  with two small averaging matrices (``_avg_matrix``) -- and its gradient is ``Ph^T @ dY @ Pw``.
* ``adaptive_max_pool`` uses the same windows; they may differ in length by one, so each is gathered
  padded to the longest by repeating its last element (which never changes a maximum), then reduced
  with ``amax``. The gradient goes to the maximum of each window (gather's backward is a scatter-add).
"""
from __future__ import annotations

import math

import numpy as np

from .. import ops as O
from .._tensor import Tensor
from ..backend import xp_of
from ..backend.device import to_host
from ..checks import flag, floating, output_sizes, single, size, sizes as ntuple
from ..errors import ArgumentError, ShapeError, fmt_shape
from ..ops._util import check_tensor
from ..ops.pad import pad as _pad
from ..ops.pool import avg_pool2d, max_pool2d
from ..ops.registry import Sample
from ._conv import _slices, _volume
from ._register import register_table

#: what the pools that gradlab defines on floating tensors only say (listed in gradlab.checks.STRICTER_THAN_PYTORCH)
_FLOAT_POOL = "a floating dtype (gradlab pools floating tensors)"


def _check_1d(op, input):
    x = check_tensor(input, op)
    if x.ndim not in (2, 3):
        raise ShapeError(f"{op}: input must be (N, C, L) or (C, L), got {fmt_shape(x.shape)}")
    return x


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The max of each window along the last dim of ``(N, C, L)``."""
    x = _check_1d("max_pool1d", input)
    k = single(kernel_size, "max_pool1d", "kernel_size")
    s = k if stride is None or (isinstance(stride, (list, tuple)) and not stride) else single(stride, "max_pool1d",
                                                                                          "stride")
    out = max_pool2d(O.unsqueeze(x, -2), (1, k), (1, s), (0, single(padding, "max_pool1d", "padding")),
                     (1, single(dilation, "max_pool1d", "dilation")), ceil_mode, return_indices)
    if return_indices:
        return O.squeeze(out[0], -2), O.squeeze(out[1], -2)
    return O.squeeze(out, -2)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """The mean of each window along the last dim of ``(N, C, L)``."""
    x = _check_1d("avg_pool1d", input)
    k = single(kernel_size, "avg_pool1d", "kernel_size")
    s = k if stride is None or (isinstance(stride, (list, tuple)) and not stride) else single(stride, "avg_pool1d",
                                                                                          "stride")
    out = avg_pool2d(O.unsqueeze(x, -2), (1, k), (1, s), (0, single(padding, "avg_pool1d", "padding")), ceil_mode,
                     count_include_pad)
    return O.squeeze(out, -2)


def _pool_geometry(op, x, k, s, p, d, ceil_mode):
    """Output sizes and the right padding that ceil_mode's partial windows need (PyTorch's rule)."""
    flag(ceil_mode, op, "ceil_mode")
    outs, extra = [], []
    for i in range(3):
        n = x.shape[2 + i]
        if p[i] * 2 > k[i]:
            raise ArgumentError(f"{op}: padding {p} should be at most half of kernel_size {k}")
        span = n + 2 * p[i] - d[i] * (k[i] - 1) - 1
        o = (span + (s[i] - 1 if ceil_mode else 0)) // s[i] + 1
        if ceil_mode and (o - 1) * s[i] >= n + p[i]:
            o -= 1
        if o < 1:
            raise ShapeError(f"{op}: kernel_size {k} is larger than the (padded) input {fmt_shape(x.shape)}")
        outs.append(o)
        extra.append(max(0, (o - 1) * s[i] + d[i] * (k[i] - 1) + 1 - (n + 2 * p[i])))
    return outs, extra


def _window_stack(x, k, s, d, outs, pool2d):
    """``pool2d`` of each depth offset's slices, as a list of ``(N, C, oD, oH, oW)`` tensors."""
    n, c = x.shape[:2]
    hp, wp = x.shape[3:]
    res = []
    for j in range(k[0]):
        sl = O.reshape(_slices(x, j * d[0], outs[0], s[0]), (n, c * outs[0], hp, wp))
        res.append(O.reshape(pool2d(sl), (n, c, outs[0], outs[1], outs[2])))
    return res


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The max of each ``kernel_size`` window of a volume (stride defaults to the kernel size)."""
    op = "max_pool3d"
    if return_indices:
        raise ArgumentError(f"{op}: return_indices=True is not supported by gradlab")
    x, unbatched = _volume(op, input)
    floating(x, op, "input", what=_FLOAT_POOL)
    k = ntuple(kernel_size, 3, op, "kernel_size", minimum=1)
    s = k if stride is None or stride == [] else ntuple(stride, 3, op, "stride", minimum=1)
    p, d = ntuple(padding, 3, op, "padding", minimum=0), ntuple(dilation, 3, op, "dilation", minimum=1)
    outs, extra = _pool_geometry(op, x, k, s, p, d, ceil_mode)
    x = _pad(x, (p[2], p[2] + extra[2], p[1], p[1] + extra[1], p[0], p[0] + extra[0]), value=-math.inf)
    parts = _window_stack(x, k, s, d, outs, lambda t: max_pool2d(t, k[1:], s[1:], 0, d[1:]))
    out = parts[0] if len(parts) == 1 else O.amax(O.stack(parts, 0), dim=0)
    return O.squeeze(out, 0) if unbatched else out


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """The mean of each window of a volume; padding counts unless ``count_include_pad=False``."""
    op = "avg_pool3d"
    x, unbatched = _volume(op, input)
    floating(x, op, "input", what=_FLOAT_POOL)
    flag(count_include_pad, op, "count_include_pad")
    k = ntuple(kernel_size, 3, op, "kernel_size", minimum=1)
    s = k if stride is None or stride == [] else ntuple(stride, 3, op, "stride", minimum=1)
    p = ntuple(padding, 3, op, "padding", minimum=0)
    if divisor_override is not None:
        divisor_override = size(divisor_override, op, "divisor_override", None)
        if divisor_override == 0:
            raise ArgumentError(f"{op}: divisor_override must be non-zero (it replaces the window size as the "
                                "divisor), got 0")
    one = (1, 1, 1)
    outs, extra = _pool_geometry(op, x, k, s, p, one, ceil_mode)
    spec = (p[2], p[2] + extra[2], p[1], p[1] + extra[1], p[0], p[0] + extra[0])
    xpad = _pad(x, spec)
    area = k[1] * k[2]
    total = None
    for part in _window_stack(xpad, k, s, one, outs, lambda t: avg_pool2d(t, k[1:], s[1:], 0) * area):
        total = part if total is None else total + part
    if divisor_override:
        out = total / divisor_override
    else:  # the count of each window: the padded region (or only the input) that it covers, as PyTorch
        shape = x.shape[2:]
        mask = np.zeros(tuple(shape[i] + 2 * p[i] + extra[i] for i in range(3)))
        if count_include_pad:
            mask[:shape[0] + 2 * p[0], :shape[1] + 2 * p[1], :shape[2] + 2 * p[2]] = 1
        else:
            mask[p[0]:p[0] + shape[0], p[1]:p[1] + shape[1], p[2]:p[2] + shape[2]] = 1
        counts = np.zeros(outs)
        for a in range(k[0]):
            for b in range(k[1]):
                for c in range(k[2]):
                    counts += mask[a:a + (outs[0] - 1) * s[0] + 1:s[0], b:b + (outs[1] - 1) * s[1] + 1:s[1],
                                   c:c + (outs[2] - 1) * s[2] + 1:s[2]]
        out = total / Tensor._make(xp_of(x._data).asarray(counts.astype(x.dtype)))
    return O.squeeze(out, 0) if unbatched else out


def _avg_matrix(size, out, xp, dtype):
    """``(out, size)``: row ``i`` averages inputs ``floor(i*size/out)`` .. ``ceil((i+1)*size/out) - 1``."""
    m = np.zeros((out, size))
    for i in range(out):
        a, b = (i * size) // out, -(-((i + 1) * size) // out)
        m[i, a:b] = 1.0 / (b - a)
    return Tensor._make(xp.asarray(m.astype(dtype)))


def _out_sizes(op, output_size, in_sizes):
    """``output_size`` checked (``gradlab.checks.output_sizes``: ints, or None to keep a size where the
    input has more than one spatial dim, as PyTorch) with each None replaced by the input's size."""
    n = len(in_sizes)
    sizes = output_sizes(output_size, n, op, "output_size", none_ok=n > 1)
    return tuple(i if o is None else o for o, i in zip(sizes, in_sizes))


def _adaptive_input(op, input, k):
    """The input of a ``k``-D adaptive pool: a floating ``(N, C, *k dims)`` or ``(C, *k dims)`` tensor."""
    x = check_tensor(input, op)
    if x.ndim not in (k + 1, k + 2):
        want = {1: "(N, C, L) or (C, L)", 2: "(N, C, H, W) or (C, H, W)", 3: "(N, C, D, H, W) or (C, D, H, W)"}[k]
        raise ShapeError(f"{op}: input must be {want}, got {fmt_shape(x.shape)}")
    floating(x, op, "input", what="a floating dtype (adaptive pooling averages or compares floats)")
    return x


def adaptive_avg_pool2d(input, output_size):
    """Average-pool ``(N, C, H, W)`` (or ``(C, H, W)``) to exactly ``output_size`` (None keeps a size)."""
    x = _adaptive_input("adaptive_avg_pool2d", input, 2)
    oh, ow = _out_sizes("adaptive_avg_pool2d", output_size, x.shape[-2:])
    if 0 in x.shape[-2:]:
        raise ShapeError(f"adaptive_avg_pool2d: input {fmt_shape(x.shape)} has an empty spatial dim; each output "
                         f"averages at least one input position")
    xp = xp_of(x._data)
    ph = _avg_matrix(x.shape[-2], oh, xp, x.dtype)
    pw = _avg_matrix(x.shape[-1], ow, xp, x.dtype)
    return O.matmul(O.matmul(ph, x), pw.mT)


def adaptive_avg_pool1d(input, output_size):
    """Average-pool the last dim of ``(N, C, L)`` (or ``(C, L)``) to exactly ``output_size``."""
    x = _adaptive_input("adaptive_avg_pool1d", input, 1)
    (o,) = _out_sizes("adaptive_avg_pool1d", output_size, x.shape[-1:])
    return O.matmul(x, _avg_matrix(x.shape[-1], o, xp_of(x._data), x.dtype).mT)


def adaptive_avg_pool3d(input, output_size):
    """Average-pool a volume to exactly ``output_size`` (None keeps a size): one averaging matrix per dim."""
    op = "adaptive_avg_pool3d"
    x = _adaptive_input(op, input, 3)
    od, oh, ow = _out_sizes(op, output_size, x.shape[-3:])
    xp = xp_of(x._data)
    pd, ph, pw = (_avg_matrix(n, o, xp, x.dtype) for n, o in zip(x.shape[-3:], (od, oh, ow)))
    y = O.matmul(ph, O.matmul(x, pw.mT))                                      # (..., D, OH, OW)
    y = O.matmul(O.transpose(y, -3, -1), pd.mT)                               # (..., OW, OH, OD)
    return O.transpose(y, -3, -1)


def _on(like, arr):
    """An index/mask array as a tensor on ``like``'s device."""
    return Tensor._make(xp_of(like._data).asarray(arr))


def _windows(n, out):
    """``(out, kmax)`` input indices of adaptive window ``i``, padded by repeating the window's last index."""
    starts = [(i * n) // out for i in range(out)]
    ends = [-((-(i + 1) * n) // out) for i in range(out)]
    k = max(e - s for s, e in zip(starts, ends))
    return np.array([[min(s + j, e - 1) for j in range(k)] for s, e in zip(starts, ends)], dtype=np.int64)


def _adaptive_max(op, input, output_size, return_indices, k):
    x = _adaptive_input(op, input, k)
    ins = x.shape[-k:]
    sizes = _out_sizes(op, output_size, ins)
    if any(n == 0 for n in ins):
        raise ShapeError(f"{op}: output_size {sizes} must be positive and input {fmt_shape(x.shape)} non-empty")
    if k == 1:
        idx = _windows(ins[0], sizes[0])                                    # (O, k)
        g = x[..., _on(x, idx)]                                            # (..., O, k)
        out = O.amax(g, dim=-1)
        if not return_indices:
            return out
        a = to_host(g._data)
        loc = np.take_along_axis(np.broadcast_to(idx, a.shape), a.argmax(-1)[..., None], -1)[..., 0]
        return out, Tensor._make(xp_of(x._data).asarray(loc))
    ih, iw = _windows(ins[0], sizes[0]), _windows(ins[1], sizes[1])
    g = x[..., _on(x, ih[:, :, None, None]), _on(x, iw[None, None])]    # (..., OH, kh, OW, kw)
    out = O.amax(g, dim=(-3, -1))
    if not return_indices:
        return out
    a = np.moveaxis(to_host(g._data), -3, -2)                                # (..., OH, OW, kh, kw)
    flat = a.reshape(a.shape[:-2] + (-1,)).argmax(-1)
    r, c = np.divmod(flat, iw.shape[1])
    rows = np.take_along_axis(np.broadcast_to(ih[:, None, :], flat.shape[:-2] + (sizes[0], sizes[1], ih.shape[1])),
                              r[..., None], -1)[..., 0]
    cols = np.take_along_axis(np.broadcast_to(iw[None, :, :], flat.shape[:-2] + (sizes[0], sizes[1], iw.shape[1])),
                              c[..., None], -1)[..., 0]
    return out, Tensor._make(xp_of(x._data).asarray((rows * ins[1] + cols).astype(np.int64)))


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """The max of each adaptive window along the last dim: ``(N, C, L) -> (N, C, output_size)``."""
    return _adaptive_max("adaptive_max_pool1d", input, output_size, return_indices, 1)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """The max of each adaptive window: ``(N, C, H, W) -> (N, C, OH, OW)`` (``None`` keeps that size)."""
    return _adaptive_max("adaptive_max_pool2d", input, output_size, return_indices, 2)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """The max of each adaptive window of a volume: ``(N, C, D, H, W) -> (N, C, OD, OH, OW)``."""
    op = "adaptive_max_pool3d"
    x = _adaptive_input(op, input, 3)
    ins = x.shape[-3:]
    sizes = _out_sizes(op, output_size, ins)
    if any(n == 0 for n in ins):
        raise ShapeError(f"{op}: output_size {sizes} must be positive and input {fmt_shape(x.shape)} non-empty")
    wd, wh, ww = (_windows(n, o) for n, o in zip(ins, sizes))
    g = x[..., _on(x, wd[:, :, None, None, None, None]), _on(x, wh[None, None, :, :, None, None]),
          _on(x, ww[None, None, None, None])]                             # (..., OD, kd, OH, kh, OW, kw)
    out = O.amax(g, dim=(-5, -3, -1))
    if not return_indices:
        return out
    a = to_host(g._data)
    lead = a.ndim - 6
    a = np.transpose(a, tuple(range(lead)) + tuple(lead + i for i in (0, 2, 4, 1, 3, 5)))
    flat = a.reshape(a.shape[:lead + 3] + (-1,)).argmax(-1)
    i, j, l_ = np.unravel_index(flat, (wd.shape[1], wh.shape[1], ww.shape[1]))
    d = wd[np.arange(sizes[0])[:, None, None], i]
    h = wh[np.arange(sizes[1])[:, None], j]
    w = ww[np.arange(sizes[2]), l_]
    return out, Tensor._make(xp_of(x._data).asarray(((d * ins[1] + h) * ins[2] + w).astype(np.int64)))


def _pool1d_samples(kind):
    def samples(src):
        k, s = src.integers(1, 3), src.integers(1, 2)
        kw = dict(stride=s, padding=src.integers(0, k // 2), ceil_mode=src.boolean())
        if kind == "avg":
            kw["count_include_pad"] = src.boolean()
        yield Sample((src.tensor((src.integers(1, 2), 2, 2 * k + src.integers(0, 2)), distinct=True), k), kw)
        yield Sample((src.tensor((2, 6), distinct=True), 2), desc="unbatched")
    return samples


def _adaptive_samples(dims):
    def samples(src):
        size = tuple(src.integers(1, 5) for _ in range(dims))
        out = tuple(src.integers(1, 4) for _ in range(dims))
        yield Sample((src.tensor((src.integers(1, 2), 2) + size), out if dims == 2 else out[0]),
                     desc="overlapping windows when out does not divide the size")
        if dims == 2:
            yield Sample((src.tensor((2, 4, 5)), (None, 2)), desc="unbatched, None keeps H")
            yield Sample((src.tensor((1, 3, 4, 4)), 1), desc="global average pooling")
    return samples


def _pool3d_samples(kind):
    def samples(src):
        k = src.integers(1, 2)
        shape = (1, 1) + tuple(2 * k + src.integers(0, 1) for _ in range(2)) + (k + 1,)
        kw = dict(stride=src.integers(1, 2), padding=src.integers(0, k // 2), ceil_mode=src.boolean())
        if kind == "avg":
            kw["count_include_pad"] = src.boolean()
        yield Sample((src.tensor(shape, distinct=True), k), kw)
        yield Sample((src.tensor((1, 3, 3, 2), distinct=True), 2), dict(stride=1), desc="unbatched, overlapping")
    return samples


def _adaptive3d_samples(src):
    shape = (1, 2) + tuple(src.integers(1, 3) for _ in range(3))
    yield Sample((src.tensor(shape), tuple(src.integers(1, 3) for _ in range(3))))


def _amax_samples(k):
    def samples(src):
        big = 5 if k < 3 else 3  # a volume's size grows fast: keep gradcheck cheap
        size = tuple(src.integers(1, big) for _ in range(k))
        out = tuple(src.integers(1, big - 1) for _ in range(k))
        yield Sample((src.tensor((src.integers(1, 2), 2) + size, distinct=True), out if k > 1 else out[0]),
                     desc="windows overlap when out does not divide the size")
        yield Sample((src.tensor((2,) + (big - 1,) * k, distinct=True), 2), dict(return_indices=True),
                     desc="unbatched")
    return samples


register_table([
    (max_pool1d, _pool1d_samples("max"), "dX = zeros; dX[argmax of each window] += dY"),
    (avg_pool1d, _pool1d_samples("avg"), "dX = fold(dY / count)"),
    (max_pool3d, _pool3d_samples("max"), "dX = zeros; dX[argmax of each window] += dY"),
    (avg_pool3d, _pool3d_samples("avg"), "dX[window] += dY / count"),
    (adaptive_avg_pool2d, _adaptive_samples(2), "dX = Ph^T @ dY @ Pw   (Y = Ph @ X @ Pw^T)"),
    (adaptive_avg_pool1d, _adaptive_samples(1), "dX = dY @ P   (Y = X @ P^T)"),
    (adaptive_avg_pool3d, _adaptive3d_samples, "dX = Pd^T, Ph^T, Pw^T applied to dY (Y = X averaged along each dim)"),
    (adaptive_max_pool1d, _amax_samples(1), "dX = zeros; dX[argmax of each window] += dY"),
    (adaptive_max_pool2d, _amax_samples(2), "dX = zeros; dX[argmax of each window] += dY"),
    (adaptive_max_pool3d, _amax_samples(3), "dX = zeros; dX[argmax of each window] += dY"),
])
