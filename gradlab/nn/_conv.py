"""Convolutions of ``F`` beyond ``conv2d`` (which is ``gradlab.ops.conv``'s): ``conv1d``, ``conv3d`` and the
transposed ``conv_transpose1d``, ``conv_transpose2d``, ``conv_transpose3d``, all built from ``conv2d``.

* ``conv1d`` is conv2d on an image of height 1: ``(N, C, L)`` becomes ``(N, C, 1, L)``. One
  implementation, so they share its gradient (and its tests); ``conv_transpose1d`` likewise.
* ``conv_transpose2d`` is conv2d's input-gradient run forwards: each input
  pixel scatters ``W``-weighted copies onto the (larger) output, i.e.
  ``fold(W^T @ X)`` -- the upsampling layer of decoders and GANs.
* A 3-D kernel is a stack of ``kd`` 2-D kernels, one per depth offset: ``conv3d`` takes, for each
  offset, the depth slices the kernel sees (``x[:, :, kd*dilation :: stride]``), folds depth into
  the batch, runs ``conv2d`` with that 2-D kernel slice, and sums the ``kd`` results. So the
  gradients are the 2-D op's gradients, and the graph shows ``kd`` conv2d nodes.

Helpers: ``_volume`` (a 5-D input, batching an unbatched one), ``_volume_args`` (the argument checks of both
3-D convolutions) and ``_slices`` (the depth slices).
"""
from __future__ import annotations

from .. import checks as _c, ops as O
from ..checks import single, sizes as ntuple
from ..errors import ArgumentError, ShapeError, fmt_shape
from ..ops._util import check_tensor
from ..ops.conv import Fold, conv2d, pair
from ..ops.pad import pad as _pad
from ..ops.registry import Sample
from ._register import register_table


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution of ``(N, C, L)`` (or ``(C, L)``) by ``(OC, C/groups, k)``: conv2d on height-1 images."""
    x, w = check_tensor(input, "conv1d"), check_tensor(weight, "conv1d", "weight")
    groups = _c.size(groups, "conv1d", "groups", 1)
    if x.ndim not in (2, 3):
        raise ShapeError(f"conv1d: input must be 3-D (N, C, L) (or 2-D (C, L) unbatched), got {fmt_shape(x.shape)}")
    if w.ndim != 3:
        raise ShapeError(f"conv1d: weight must be 3-D (out_channels, in_channels/groups, k), got {fmt_shape(w.shape)}")
    c = x.shape[-2]
    if w.shape[1] * groups != c:
        raise ShapeError(f"conv1d: weight {fmt_shape(w.shape)} expects {w.shape[1] * groups} input channels "
                         f"(weight.shape[1]={w.shape[1]} x groups={groups}), but input {fmt_shape(x.shape)} has {c}")
    pad = padding if isinstance(padding, str) else (0, single(padding, "conv1d", "padding"))
    out = conv2d(O.unsqueeze(x, -2), O.unsqueeze(w, -2), bias, stride=(1, single(stride, "conv1d", "stride")),
                 padding=pad, dilation=(1, single(dilation, "conv1d", "dilation")), groups=groups)
    return O.squeeze(out, -2)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed convolution of ``(N, C_in, H, W)`` by ``(C_in, C_out/groups, kh, kw)``: ``fold(W^T @ X)``.

    Output size ``(H - 1) * stride - 2 * padding + dilation * (kh - 1) + output_padding + 1`` (likewise W).
    """
    op = "conv_transpose2d"
    x, w = check_tensor(input, op), check_tensor(weight, op, "weight")
    groups = _c.size(groups, op, "groups", 1)
    _c.same_dtype(op, hint="convert one, e.g. weight.to(input.dtype); " + _c.PARAMS_HINT, input=x, weight=w)  # (PyTorch adds any bias to the result: its dtype is free here)
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


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 1-D convolution of ``(N, C_in, L)`` by ``(C_in, C_out/groups, k)`` (conv_transpose2d on
    height-1 images). Output length ``(L - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``."""
    op = "conv_transpose1d"
    x, w = check_tensor(input, op), check_tensor(weight, op, "weight")
    groups = _c.size(groups, op, "groups", 1)
    if x.ndim not in (2, 3):
        raise ShapeError(f"{op}: input must be 3-D (N, C, L) or 2-D (C, L), got {fmt_shape(x.shape)}")
    if w.ndim != 3:
        raise ShapeError(f"{op}: weight must be 3-D (in_channels, out_channels/groups, k), got {fmt_shape(w.shape)}")
    out = conv_transpose2d(O.unsqueeze(x, -2), O.unsqueeze(w, -2), bias, (1, single(stride, op, "stride")),
                           (0, single(padding, op, "padding")), (0, single(output_padding, op, "output_padding")),
                           groups, (1, single(dilation, op, "dilation")))
    return O.squeeze(out, -2)


def _volume(op, input):
    x = check_tensor(input, op)
    if x.ndim not in (4, 5):
        raise ShapeError(f"{op}: input must be 5-D (N, C, D, H, W) or 4-D (C, D, H, W), got {fmt_shape(x.shape)}")
    return (O.unsqueeze(x, 0), True) if x.ndim == 4 else (x, False)


def _volume_args(op, input, weight, bias, groups):
    """The checks ``conv3d`` and ``conv_transpose3d`` share: ``(x, unbatched, weight, bias, groups)`` with
    ``x`` batched by ``_volume``, ``groups`` a size >= 1, and the bias, like the weight, of the input's dtype
    (unlike conv_transpose1d/2d, PyTorch checks the bias of conv_transpose3d too)."""
    x, unbatched = _volume(op, input)
    w = check_tensor(weight, op, "weight")
    groups = _c.size(groups, op, "groups", 1)
    b = None if bias is None else check_tensor(bias, op, "bias")
    _c.same_dtype(op, hint="convert one, e.g. weight.to(input.dtype); " + _c.PARAMS_HINT, input=x, weight=w)
    _c.same_dtype(op, input=x, bias=b)
    return x, unbatched, w, b, groups


def _slices(x, k_off, out, stride):
    """Depth slices ``k_off, k_off + stride, ...`` (``out`` of them), with depth folded into channels."""
    s = x[:, :, k_off:k_off + (out - 1) * stride + 1:stride]                  # (N, C, out, H, W)
    return s


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution of ``(N, C_in, D, H, W)`` by ``(C_out, C_in/groups, kd, kh, kw)``."""
    op = "conv3d"
    x, unbatched, w, b, groups = _volume_args(op, input, weight, bias, groups)
    if w.ndim != 5:
        raise ShapeError(f"{op}: weight must be 5-D (out_channels, in_channels/groups, kd, kh, kw), got "
                         f"{fmt_shape(w.shape)}")
    _c.conv_weight(w, groups, op)
    n, c = x.shape[:2]
    if w.shape[1] * groups != c:
        raise ShapeError(f"{op}: weight {fmt_shape(w.shape)} expects {w.shape[1] * groups} input channels "
                         f"(weight.shape[1]={w.shape[1]} x groups={groups}), but input {fmt_shape(x.shape)} has {c}")
    s, d = ntuple(stride, 3, op, "stride", minimum=1), ntuple(dilation, 3, op, "dilation", minimum=1)
    k = tuple(w.shape[2:])
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise ArgumentError(f"{op}: padding must be 'same', 'valid' or ints, got {padding!r}")
        if padding == "same" and s != (1, 1, 1):
            raise ArgumentError(f"{op}: padding='same' needs stride 1, got stride={s}")
        totals = [d[i] * (k[i] - 1) if padding == "same" else 0 for i in range(3)]
        pads = [(t // 2, t - t // 2) for t in totals]
    else:
        pads = [(p, p) for p in ntuple(padding, 3, op, "padding", minimum=0)]
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
    if b is not None:
        out = out + O.reshape(b, (1, -1, 1, 1, 1))
    return O.squeeze(out, 0) if unbatched else out


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 3-D convolution of ``(N, C_in, D, H, W)`` by ``(C_in, C_out/groups, kd, kh, kw)``.

    Per depth offset ``j``: ``conv_transpose2d`` of every input slice with the kernel slice ``j``, placed at
    output depths ``i * stride + j * dilation`` (zeros inserted between slices for the stride), summed, then
    ``padding`` cropped from both ends of each dim.
    """
    op = "conv_transpose3d"
    x, unbatched, w, b, groups = _volume_args(op, input, weight, bias, groups)
    if w.ndim != 5 or w.shape[0] != x.shape[1]:
        raise ShapeError(f"{op}: weight must be 5-D (in_channels, out_channels/groups, kd, kh, kw) with "
                         f"in_channels = {x.shape[1]} (input {fmt_shape(x.shape)}), got {fmt_shape(w.shape)}")
    s, d = ntuple(stride, 3, op, "stride", minimum=1), ntuple(dilation, 3, op, "dilation", minimum=1)
    p, op_ = ntuple(padding, 3, op, "padding", minimum=0), ntuple(output_padding, 3, op, "output_padding", minimum=0)
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
    if b is not None:
        out = out + O.reshape(b, (1, -1, 1, 1, 1))
    return O.squeeze(out, 0) if unbatched else out


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


# ------------------------------------------------------------- registry entries
def _convt1d_samples(src):
    g = src.choice([1, 2])
    cin, cog, k, s = g * src.integers(1, 2), src.integers(1, 2), src.integers(1, 3), src.integers(1, 2)
    yield Sample((src.tensor((src.integers(1, 2), cin, src.integers(1, 4))), src.tensor((cin, cog, k)),
                  src.tensor((g * cog,))), dict(stride=s, output_padding=s - 1, groups=g))
    yield Sample((src.tensor((2, 3)), src.tensor((2, 1, 2))), dict(dilation=2, padding=1), desc="unbatched, dilated")


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


register_table([
    (conv1d, _conv1d_samples, "conv2d's rule on height-1 images"),
    (conv_transpose1d, _convt1d_samples, "conv_transpose2d's rule on height-1 images"),
    (conv_transpose2d, _convt_samples, "dX = conv2d(dY, W) ; dW = sum_n X @ unfold(dY)^T   (the adjoint pair)"),
    (conv3d, _conv3d_samples, "sum over depth offsets of conv2d's rule on the depth slices"),
    (conv_transpose3d, _convt3d_samples, "dX = conv3d(dY, W); dW from the 2-D rule per depth offset"),
])
