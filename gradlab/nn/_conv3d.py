"""3-D convolution and pooling over ``(N, C, D, H, W)`` volumes, built from the 2-D ops.

A 3-D kernel is a stack of ``kd`` 2-D kernels, one per depth offset: ``conv3d`` takes, for each
offset, the depth slices the kernel sees (``x[:, :, kd*dilation :: stride]``), folds depth into
the batch, runs ``conv2d`` with that 2-D kernel slice, and sums the ``kd`` results. Pooling
does the same with ``max_pool2d`` (then a max over the offsets) or a window sum (then a divide).
So the gradients are the 2-D ops' gradients, and the graph shows ``kd`` conv2d nodes.
"""
from __future__ import annotations

import math

import numpy as np

from .. import ops as O
from .._tensor import Tensor
from ..backend import xp_of
from ..errors import ArgumentError, ShapeError, fmt_shape
from ..ops._util import check_tensor
from ..ops.conv import conv2d
from ..ops.pad import pad as _pad
from ..ops.pool import avg_pool2d, max_pool2d
from ..ops.registry import Sample, register, torch_functional as _torch_f
from ._conv1d import _avg_matrix, _out_sizes

NS = "gradlab.nn.functional"


def _triple(v, op, arg, allow_zero=False):
    t = (v,) * 3 if isinstance(v, int) else tuple(int(a) for a in v)
    if len(t) != 3 or min(t) < (0 if allow_zero else 1):
        raise ArgumentError(f"{op}: {arg} must be {'a non-negative' if allow_zero else 'a positive'} int or 3 of "
                            f"them, got {v!r}")
    return t


def _volume(op, input):
    x = check_tensor(input, op)
    if x.ndim not in (4, 5):
        raise ShapeError(f"{op}: input must be 5-D (N, C, D, H, W) or 4-D (C, D, H, W), got {fmt_shape(x.shape)}")
    return (O.unsqueeze(x, 0), True) if x.ndim == 4 else (x, False)


def _slices(x, k_off, out, stride):
    """Depth slices ``k_off, k_off + stride, ...`` (``out`` of them), with depth folded into channels."""
    s = x[:, :, k_off:k_off + (out - 1) * stride + 1:stride]                  # (N, C, out, H, W)
    return s


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution of ``(N, C_in, D, H, W)`` by ``(C_out, C_in/groups, kd, kh, kw)``."""
    op = "conv3d"
    x, unbatched = _volume(op, input)
    w = check_tensor(weight, op, "weight")
    if w.ndim != 5:
        raise ShapeError(f"{op}: weight must be 5-D (out_channels, in_channels/groups, kd, kh, kw), got "
                         f"{fmt_shape(w.shape)}")
    n, c = x.shape[:2]
    if w.shape[1] * groups != c:
        raise ShapeError(f"{op}: weight {fmt_shape(w.shape)} expects {w.shape[1] * groups} input channels "
                         f"(weight.shape[1]={w.shape[1]} x groups={groups}), but input {fmt_shape(x.shape)} has {c}")
    s, d = _triple(stride, op, "stride"), _triple(dilation, op, "dilation")
    k = tuple(w.shape[2:])
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise ArgumentError(f"{op}: padding must be 'same', 'valid' or ints, got {padding!r}")
        if padding == "same" and s != (1, 1, 1):
            raise ArgumentError(f"{op}: padding='same' needs stride 1, got stride={s}")
        totals = [d[i] * (k[i] - 1) if padding == "same" else 0 for i in range(3)]
        pads = [(t // 2, t - t // 2) for t in totals]
    else:
        pads = [(p, p) for p in _triple(padding, op, "padding", allow_zero=True)]
    if any(p != (0, 0) for p in pads):
        x = _pad(x, pads[2] + pads[1] + pads[0])
    dp, hp, wp = x.shape[2:]
    out_d = (dp - d[0] * (k[0] - 1) - 1) // s[0] + 1
    if out_d < 1 or hp < d[1] * (k[1] - 1) + 1 or wp < d[2] * (k[2] - 1) + 1:
        raise ShapeError(f"{op}: kernel {k} (dilation {d}) is larger than the padded input {fmt_shape(x.shape)}")
    total = None
    for j in range(k[0]):
        sl = _slices(x, j * d[0], out_d, s[0])                                # (N, C, out_d, H, W)
        sl = O.reshape(O.transpose(sl, 1, 2), (n * out_d, c, hp, wp))
        y = conv2d(sl, w[:, :, j], None, (s[1], s[2]), 0, (d[1], d[2]), groups)
        total = y if total is None else total + y
    oh, ow = total.shape[2:]
    out = O.transpose(O.reshape(total, (n, out_d, w.shape[0], oh, ow)), 1, 2)
    if bias is not None:
        out = out + O.reshape(check_tensor(bias, op, "bias"), (1, -1, 1, 1, 1))
    return O.squeeze(out, 0) if unbatched else out


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 3-D convolution of ``(N, C_in, D, H, W)`` by ``(C_in, C_out/groups, kd, kh, kw)``.

    Per depth offset ``j``: ``conv_transpose2d`` of every input slice with the kernel slice ``j``, placed at
    output depths ``i * stride + j * dilation`` (zeros inserted between slices for the stride), summed, then
    ``padding`` cropped from both ends of each dim.
    """
    from ._conv1d import conv_transpose2d
    op = "conv_transpose3d"
    x, unbatched = _volume(op, input)
    w = check_tensor(weight, op, "weight")
    if w.ndim != 5 or w.shape[0] != x.shape[1]:
        raise ShapeError(f"{op}: weight must be 5-D (in_channels, out_channels/groups, kd, kh, kw) with "
                         f"in_channels = {x.shape[1]} (input {fmt_shape(x.shape)}), got {fmt_shape(w.shape)}")
    s, d = _triple(stride, op, "stride"), _triple(dilation, op, "dilation")
    p, op_ = _triple(padding, op, "padding", allow_zero=True), _triple(output_padding, op, "output_padding", True)
    if any(op_[i] >= max(s[i], d[i]) for i in range(3)):
        raise ArgumentError(f"{op}: output_padding {op_} must be smaller than stride {s} or dilation {d}")
    n, c, depth, h, wd = x.shape
    kd = w.shape[2]
    full = (depth - 1) * s[0] + d[0] * (kd - 1) + 1 + op_[0]
    if full - 2 * p[0] < 1:
        raise ShapeError(f"{op}: the output depth {full - 2 * p[0]} is not positive; reduce padding")
    flat = O.reshape(O.transpose(x, 1, 2), (n * depth, c, h, wd))
    total = None
    for j in range(kd):
        y = conv_transpose2d(flat, w[:, :, j], None, s[1:], p[1:], op_[1:], groups, d[1:])   # (N*D, O, H', W')
        y = O.reshape(y, (n, depth) + tuple(y.shape[1:]))                                  # (N, D, O, H', W')
        if s[0] > 1:  # insert s - 1 zero slices after each slice
            y = O.reshape(_pad(O.unsqueeze(y, 2), (0, 0) * 3 + (0, s[0] - 1)),
                          (n, depth * s[0]) + tuple(y.shape[2:]))[:, :(depth - 1) * s[0] + 1]
        lo = j * d[0]
        y = _pad(y, (0, 0) * 3 + (lo, full - lo - y.shape[1]))
        total = y if total is None else total + y
    out = O.transpose(total[:, p[0]:full - p[0]], 1, 2)
    if bias is not None:
        out = out + O.reshape(check_tensor(bias, op, "bias"), (1, -1, 1, 1, 1))
    return O.squeeze(out, 0) if unbatched else out


def _pool_geometry(op, x, k, s, p, d, ceil_mode):
    """Output sizes and the right padding that ceil_mode's partial windows need (PyTorch's rule)."""
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
    k = _triple(kernel_size, op, "kernel_size")
    s = k if stride is None or stride == [] else _triple(stride, op, "stride")
    p, d = _triple(padding, op, "padding", allow_zero=True), _triple(dilation, op, "dilation")
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
    k = _triple(kernel_size, op, "kernel_size")
    s = k if stride is None or stride == [] else _triple(stride, op, "stride")
    p = _triple(padding, op, "padding", allow_zero=True)
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
        out = total / Tensor._make(xp_of(x.data).asarray(counts.astype(x.dtype)))
    return O.squeeze(out, 0) if unbatched else out


def adaptive_avg_pool3d(input, output_size):
    """Average-pool a volume to exactly ``output_size`` (None keeps a size): one averaging matrix per dim."""
    op = "adaptive_avg_pool3d"
    x = check_tensor(input, op)
    if x.ndim not in (4, 5):
        raise ShapeError(f"{op}: input must be (N, C, D, H, W) or (C, D, H, W), got {fmt_shape(x.shape)}")
    od, oh, ow = _out_sizes(op, output_size, x.shape[-3:])
    xp = xp_of(x.data)
    pd, ph, pw = (_avg_matrix(n, o, xp, x.dtype) for n, o in zip(x.shape[-3:], (od, oh, ow)))
    y = O.matmul(ph, O.matmul(x, pw.mT))                                      # (..., D, OH, OW)
    y = O.matmul(O.transpose(y, -3, -1), pd.mT)                               # (..., OW, OH, OD)
    return O.transpose(y, -3, -1)


# ------------------------------------------------------------- registry entries
def _conv3d_samples(src):
    g = src.choice([1, 2])
    c, oc = g, g * src.integers(1, 2)
    k = (src.integers(1, 2), src.integers(1, 2), src.integers(1, 2))
    shape = (1, c) + tuple(ki + src.integers(0, 1) for ki in k)
    yield Sample((src.tensor(shape), src.tensor((oc, c // g) + k), src.tensor((oc,))),
                 dict(stride=src.integers(1, 2), padding=src.integers(0, 1), groups=g))
    yield Sample((src.tensor((1, 2, 3, 2)), src.tensor((1, 1, 2, 2, 1))), dict(padding="same"), desc="unbatched, same")


def _convt3d_samples(src):
    g = src.choice([1, 2])
    k = (src.integers(1, 2), src.integers(1, 2), 1)
    st = src.integers(1, 2)
    yield Sample((src.tensor((1, g, src.integers(1, 2), 2, 2)), src.tensor((g, 1) + k), src.tensor((g,))),
                 dict(stride=st, output_padding=st - 1, groups=g))
    yield Sample((src.tensor((1, 2, 2, 2)), src.tensor((1, 1, 2, 2, 2))), dict(padding=1, dilation=(2, 1, 1)),
                 desc="unbatched, dilated, padded")


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


for _fn, _samples, _formula in [
    (conv3d, _conv3d_samples, "sum over depth offsets of conv2d's rule on the depth slices"),
    (conv_transpose3d, _convt3d_samples, "dX = conv3d(dY, W); dW from the 2-D rule per depth offset"),
    (max_pool3d, _pool3d_samples("max"), "dX = zeros; dX[argmax of each window] += dY"),
    (avg_pool3d, _pool3d_samples("avg"), "dX[window] += dY / count"),
    (adaptive_avg_pool3d, _adaptive3d_samples, "dX = Pd^T, Ph^T, Pw^T applied to dY (Y = X averaged along each dim)"),
]:
    register(_fn.__name__, samples=_samples, formula=_formula, namespace=NS, torch=_torch_f(_fn.__name__))(_fn)
del _fn, _samples, _formula
