"""1-D convolution and pooling, transposed convolution, and adaptive average pooling.

* ``conv1d``, ``max_pool1d``, ``avg_pool1d`` are their 2-D versions on an
  image of height 1: ``(N, C, L)`` becomes ``(N, C, 1, L)``. One
  implementation, so they share its gradient (and its tests).
* ``conv_transpose2d`` is conv2d's input-gradient run forwards: each input
  pixel scatters ``W``-weighted copies onto the (larger) output, i.e.
  ``fold(W^T @ X)`` -- the upsampling layer of decoders and GANs.
* ``adaptive_avg_pool2d(x, (OH, OW))`` picks the windows so that the output
  has the requested size: output row ``i`` averages input rows
  ``floor(i*H/OH)`` to ``ceil((i+1)*H/OH)``. Averaging rows and averaging
  columns are each a matrix product, so the whole op is ``Ph @ X @ Pw^T``
  with two small averaging matrices -- and its gradient is ``Ph^T @ dY @ Pw``.
"""
from __future__ import annotations

import numpy as np

from .. import ops as O
from ..backend import xp_of
from ..errors import ArgumentError, ShapeError, fmt_shape
from .._tensor import Tensor
from ..ops._util import check_tensor
from ..ops.conv import Fold, conv2d, pair
from ..ops.pool import avg_pool2d, max_pool2d
from ..ops.registry import Sample, register, torch_functional as _torch_f

NS = "gradlab.nn.functional"


def _one(v, op, arg):
    if isinstance(v, (list, tuple)):
        if len(v) != 1:
            raise ArgumentError(f"{op}: {arg} must be an int or a 1-tuple, got {tuple(v)}")
        v = v[0]
    return int(v)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution of ``(N, C, L)`` (or ``(C, L)``) by ``(OC, C/groups, k)``: conv2d on height-1 images."""
    x, w = check_tensor(input, "conv1d"), check_tensor(weight, "conv1d", "weight")
    if x.ndim not in (2, 3):
        raise ShapeError(f"conv1d: input must be 3-D (N, C, L) (or 2-D (C, L) unbatched), got {fmt_shape(x.shape)}")
    if w.ndim != 3:
        raise ShapeError(f"conv1d: weight must be 3-D (out_channels, in_channels/groups, k), got {fmt_shape(w.shape)}")
    c = x.shape[-2]
    if w.shape[1] * groups != c:
        raise ShapeError(f"conv1d: weight {fmt_shape(w.shape)} expects {w.shape[1] * groups} input channels "
                         f"(weight.shape[1]={w.shape[1]} x groups={groups}), but input {fmt_shape(x.shape)} has {c}")
    pad = padding if isinstance(padding, str) else (0, _one(padding, "conv1d", "padding"))
    out = conv2d(O.unsqueeze(x, -2), O.unsqueeze(w, -2), bias, stride=(1, _one(stride, "conv1d", "stride")),
                 padding=pad, dilation=(1, _one(dilation, "conv1d", "dilation")), groups=groups)
    return O.squeeze(out, -2)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed convolution of ``(N, C_in, H, W)`` by ``(C_in, C_out/groups, kh, kw)``: ``fold(W^T @ X)``.

    Output size ``(H - 1) * stride - 2 * padding + dilation * (kh - 1) + output_padding + 1`` (likewise W).
    """
    op = "conv_transpose2d"
    x, w = check_tensor(input, op), check_tensor(weight, op, "weight")
    if x.ndim not in (3, 4):
        raise ShapeError(f"{op}: input must be 4-D (N, C, H, W) or 3-D (C, H, W), got {fmt_shape(x.shape)}")
    if w.ndim != 4:
        raise ShapeError(f"{op}: weight must be 4-D (in_channels, out_channels/groups, kH, kW), got {fmt_shape(w.shape)}")
    unbatched = x.ndim == 3
    if unbatched:
        x = O.unsqueeze(x, 0)
    n, c, h, wd = x.shape
    cin, cog, kh, kw = w.shape
    if cin != c or c % groups:
        raise ShapeError(f"{op}: weight {fmt_shape(w.shape)} expects {cin} input channels (weight.shape[0]) but "
                         f"input {fmt_shape(x.shape)} has {c}" + (f"; groups={groups} must divide it" if c % groups else ""))
    s, p = pair(stride, op, "stride"), pair(padding, op, "padding", allow_zero=True)
    d, op_ = pair(dilation, op, "dilation"), pair(output_padding, op, "output_padding", allow_zero=True)
    if op_[0] >= max(s[0], d[0]) or op_[1] >= max(s[1], d[1]):
        raise ArgumentError(f"{op}: output_padding {op_} must be smaller than stride {s} or dilation {d}")
    hout = (h - 1) * s[0] - 2 * p[0] + d[0] * (kh - 1) + op_[0] + 1
    wout = (wd - 1) * s[1] - 2 * p[1] + d[1] * (kw - 1) + op_[1] + 1
    if hout < 1 or wout < 1:
        raise ShapeError(f"{op}: the output size ({hout}, {wout}) is not positive; reduce padding")
    g = groups
    wg = O.reshape(w, (g, cin // g, cog * kh * kw))                          # (G, Cin/G, Cout/G*kk)
    xg = O.reshape(x, (n, g, cin // g, h * wd))                               # (N, G, Cin/G, L)
    cols = O.reshape(O.matmul(wg.mT, xg), (n, g * cog * kh * kw, h * wd))   # (N, Cout*kk, L)
    out = Fold.apply(cols, (hout, wout), (kh, kw), d, p, s)
    if bias is not None:
        out = out + O.reshape(check_tensor(bias, op, "bias"), (1, -1, 1, 1))
    return O.squeeze(out, 0) if unbatched else out


def _check_1d(op, input):
    x = check_tensor(input, op)
    if x.ndim not in (2, 3):
        raise ShapeError(f"{op}: input must be (N, C, L) or (C, L), got {fmt_shape(x.shape)}")
    return x


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The max of each window along the last dim of ``(N, C, L)``."""
    x = _check_1d("max_pool1d", input)
    k = _one(kernel_size, "max_pool1d", "kernel_size")
    s = k if stride is None or (isinstance(stride, (list, tuple)) and not stride) else _one(stride, "max_pool1d",
                                                                                          "stride")
    out = max_pool2d(O.unsqueeze(x, -2), (1, k), (1, s), (0, _one(padding, "max_pool1d", "padding")),
                     (1, _one(dilation, "max_pool1d", "dilation")), ceil_mode, return_indices)
    if return_indices:
        return O.squeeze(out[0], -2), O.squeeze(out[1], -2)
    return O.squeeze(out, -2)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """The mean of each window along the last dim of ``(N, C, L)``."""
    x = _check_1d("avg_pool1d", input)
    k = _one(kernel_size, "avg_pool1d", "kernel_size")
    s = k if stride is None or (isinstance(stride, (list, tuple)) and not stride) else _one(stride, "avg_pool1d",
                                                                                          "stride")
    out = avg_pool2d(O.unsqueeze(x, -2), (1, k), (1, s), (0, _one(padding, "avg_pool1d", "padding")), ceil_mode,
                     count_include_pad)
    return O.squeeze(out, -2)


def _avg_matrix(size, out, xp, dtype):
    """``(out, size)``: row ``i`` averages inputs ``floor(i*size/out)`` .. ``ceil((i+1)*size/out) - 1``."""
    m = np.zeros((out, size))
    for i in range(out):
        a, b = (i * size) // out, -(-((i + 1) * size) // out)
        m[i, a:b] = 1.0 / (b - a)
    return Tensor._make(xp.asarray(m.astype(dtype)))


def _out_sizes(op, output_size, in_sizes):
    sizes = (output_size,) * len(in_sizes) if isinstance(output_size, int) or output_size is None else tuple(output_size)
    if len(sizes) != len(in_sizes):
        raise ArgumentError(f"{op}: output_size must have {len(in_sizes)} entries, got {output_size!r}")
    sizes = tuple(i if o is None else int(o) for o, i in zip(sizes, in_sizes))
    if min(sizes) < 1:
        raise ArgumentError(f"{op}: output_size must be positive, got {output_size!r}")
    return sizes


def adaptive_avg_pool2d(input, output_size):
    """Average-pool ``(N, C, H, W)`` (or ``(C, H, W)``) to exactly ``output_size`` (None keeps a size)."""
    x = check_tensor(input, "adaptive_avg_pool2d")
    if x.ndim not in (3, 4):
        raise ShapeError(f"adaptive_avg_pool2d: input must be (N, C, H, W) or (C, H, W), got {fmt_shape(x.shape)}")
    oh, ow = _out_sizes("adaptive_avg_pool2d", output_size, x.shape[-2:])
    xp = xp_of(x.data)
    ph = _avg_matrix(x.shape[-2], oh, xp, x.dtype)
    pw = _avg_matrix(x.shape[-1], ow, xp, x.dtype)
    return O.matmul(O.matmul(ph, x), pw.mT)


def adaptive_avg_pool1d(input, output_size):
    """Average-pool the last dim of ``(N, C, L)`` (or ``(C, L)``) to exactly ``output_size``."""
    x = _check_1d("adaptive_avg_pool1d", input)
    (o,) = _out_sizes("adaptive_avg_pool1d", output_size, x.shape[-1:])
    return O.matmul(x, _avg_matrix(x.shape[-1], o, xp_of(x.data), x.dtype).mT)


# ------------------------------------------------------------- registry entries
def _conv1d_samples(src):
    g = src.choice([1, 2])
    c, oc, k = g * src.integers(1, 2), g * src.integers(1, 2), src.integers(1, 3)
    d, s, p = src.integers(1, 2), src.integers(1, 2), src.integers(0, 2)
    length = d * (k - 1) + 1 + src.integers(0, 3)
    yield Sample((src.tensor((src.integers(1, 2), c, length)), src.tensor((oc, c // g, k)), src.tensor((oc,))),
                 dict(stride=s, padding=p, dilation=d, groups=g))
    yield Sample((src.tensor((2, 5)), src.tensor((3, 2, 2))), dict(padding="same"), desc="unbatched, 'same'")


def _convt_samples(src):
    g = src.choice([1, 2])
    cin, cog = g * src.integers(1, 2), src.integers(1, 2)
    k = (src.integers(1, 3), src.integers(1, 2))
    s, p = (src.integers(1, 2), src.integers(1, 2)), (src.integers(0, (k[0] - 1) // 2), 0)
    yield Sample((src.tensor((src.integers(1, 2), cin, src.integers(1, 3), src.integers(1, 3))),
                  src.tensor((cin, cog, k[0], k[1])), src.tensor((g * cog,))),
                 dict(stride=s, padding=p, output_padding=(s[0] - 1, 0), groups=g))
    yield Sample((src.tensor((2, 2, 2)), src.tensor((2, 1, 2, 2))), dict(dilation=2), desc="unbatched, dilated")


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


for _fn, _samples, _formula in [
    (conv1d, _conv1d_samples, "conv2d's rule on height-1 images"),
    (conv_transpose2d, _convt_samples, "dX = conv2d(dY, W) ; dW = sum_n X @ unfold(dY)^T   (the adjoint pair)"),
    (max_pool1d, _pool1d_samples("max"), "dX = zeros; dX[argmax of each window] += dY"),
    (avg_pool1d, _pool1d_samples("avg"), "dX = fold(dY / count)"),
    (adaptive_avg_pool2d, _adaptive_samples(2), "dX = Ph^T @ dY @ Pw   (Y = Ph @ X @ Pw^T)"),
    (adaptive_avg_pool1d, _adaptive_samples(1), "dX = dY @ P   (Y = X @ P^T)"),
]:
    register(_fn.__name__, samples=_samples, formula=_formula, namespace=NS, torch=_torch_f(_fn.__name__))(_fn)
del _fn, _samples, _formula
