"""More ``F`` functions, written with existing gradlab ops (so autograd, higher-order gradients and the
graph tools work through them unchanged): ``conv_transpose1d``, ``adaptive_max_pool1d/2d``,
``bilinear``, ``gaussian_nll_loss``, ``multi_margin_loss``, ``alpha_dropout``.

* ``adaptive_max_pool`` picks output cell ``i``'s window as ``floor(i*L/O) .. ceil((i+1)*L/O)``;
  the windows may differ in length by one, so each is gathered padded to the longest by repeating
  its last element (which never changes a maximum), then reduced with ``amax``. The gradient goes
  to the maximum of each window (gather's backward is a scatter-add).
* ``bilinear``: ``y_o = x1^T W_o x2 + b_o``, one ``(in1, in2)`` matrix per output feature.
* ``gaussian_nll_loss``: the negative log-likelihood of ``target`` under ``N(input, var)``,
  ``0.5 * (log var + (input - target)^2 / var)``; ``var`` is clamped at ``eps`` without
  stopping its gradient, as PyTorch does.
"""
from __future__ import annotations

import math

import numpy as np

from .. import ops as O
from .._tensor import Tensor
from ..backend import generator, xp_of
from ..backend.device import to_host
from ..errors import ArgumentError, ShapeError, fmt_shape
from ..factories import tensor as _tensor
from ..ops._util import check_tensor
from ..ops.registry import Sample, register, torch_functional as _torch_f
from ._conv1d import _one, conv_transpose2d
from ._losses import _REDUCTIONS, _reduce, _reduction

NS = "gradlab.nn.functional"


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 1-D convolution of ``(N, C_in, L)`` by ``(C_in, C_out/groups, k)`` (conv_transpose2d on
    height-1 images). Output length ``(L - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``."""
    op = "conv_transpose1d"
    x, w = check_tensor(input, op), check_tensor(weight, op, "weight")
    if x.ndim not in (2, 3):
        raise ShapeError(f"{op}: input must be 3-D (N, C, L) or 2-D (C, L), got {fmt_shape(x.shape)}")
    if w.ndim != 3:
        raise ShapeError(f"{op}: weight must be 3-D (in_channels, out_channels/groups, k), got {fmt_shape(w.shape)}")
    out = conv_transpose2d(O.unsqueeze(x, -2), O.unsqueeze(w, -2), bias, (1, _one(stride, op, "stride")),
                           (0, _one(padding, op, "padding")), (0, _one(output_padding, op, "output_padding")),
                           groups, (1, _one(dilation, op, "dilation")))
    return O.squeeze(out, -2)


def _on(like, arr):
    """An index/mask array as a tensor on ``like``'s device."""
    return Tensor._make(xp_of(like.data).asarray(arr))


def _windows(n, out):
    """``(out, kmax)`` input indices of adaptive window ``i``, padded by repeating the window's last index."""
    starts = [(i * n) // out for i in range(out)]
    ends = [-((-(i + 1) * n) // out) for i in range(out)]
    k = max(e - s for s, e in zip(starts, ends))
    return np.array([[min(s + j, e - 1) for j in range(k)] for s, e in zip(starts, ends)], dtype=np.int64)


def _adaptive_max(op, input, output_size, return_indices, k):
    x = check_tensor(input, op)
    if x.ndim not in (k + 1, k + 2):
        want = "(N, C, L) or (C, L)" if k == 1 else "(N, C, H, W) or (C, H, W)"
        raise ShapeError(f"{op}: input must be {want}, got {fmt_shape(x.shape)}")
    sizes = (output_size,) * k if isinstance(output_size, int) or output_size is None else tuple(output_size)
    if len(sizes) != k:
        raise ArgumentError(f"{op}: output_size must be an int or a tuple of {k}, got {output_size!r}")
    ins = x.shape[-k:]
    sizes = tuple(ins[i] if s is None else int(s) for i, s in enumerate(sizes))
    if any(s <= 0 for s in sizes) or any(n == 0 for n in ins):
        raise ShapeError(f"{op}: output_size {sizes} must be positive and input {fmt_shape(x.shape)} non-empty")
    if k == 1:
        idx = _windows(ins[0], sizes[0])                                    # (O, k)
        g = x[..., _on(x, idx)]                                            # (..., O, k)
        out = O.amax(g, dim=-1)
        if not return_indices:
            return out
        a = to_host(g.data)
        loc = np.take_along_axis(np.broadcast_to(idx, a.shape), a.argmax(-1)[..., None], -1)[..., 0]
        return out, Tensor._make(xp_of(x.data).asarray(loc))
    ih, iw = _windows(ins[0], sizes[0]), _windows(ins[1], sizes[1])
    g = x[..., _on(x, ih[:, :, None, None]), _on(x, iw[None, None])]    # (..., OH, kh, OW, kw)
    out = O.amax(g, dim=(-3, -1))
    if not return_indices:
        return out
    a = np.moveaxis(to_host(g.data), -3, -2)                                # (..., OH, OW, kh, kw)
    flat = a.reshape(a.shape[:-2] + (-1,)).argmax(-1)
    r, c = np.divmod(flat, iw.shape[1])
    rows = np.take_along_axis(np.broadcast_to(ih[:, None, :], flat.shape[:-2] + (sizes[0], sizes[1], ih.shape[1])),
                              r[..., None], -1)[..., 0]
    cols = np.take_along_axis(np.broadcast_to(iw[None, :, :], flat.shape[:-2] + (sizes[0], sizes[1], iw.shape[1])),
                              c[..., None], -1)[..., 0]
    return out, Tensor._make(xp_of(x.data).asarray((rows * ins[1] + cols).astype(np.int64)))


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """The max of each adaptive window along the last dim: ``(N, C, L) -> (N, C, output_size)``."""
    return _adaptive_max("adaptive_max_pool1d", input, output_size, return_indices, 1)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """The max of each adaptive window: ``(N, C, H, W) -> (N, C, OH, OW)`` (``None`` keeps that size)."""
    return _adaptive_max("adaptive_max_pool2d", input, output_size, return_indices, 2)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """The max of each adaptive window of a volume: ``(N, C, D, H, W) -> (N, C, OD, OH, OW)``."""
    op = "adaptive_max_pool3d"
    x = check_tensor(input, op)
    if x.ndim not in (4, 5):
        raise ShapeError(f"{op}: input must be (N, C, D, H, W) or (C, D, H, W), got {fmt_shape(x.shape)}")
    sizes = (output_size,) * 3 if isinstance(output_size, int) or output_size is None else tuple(output_size)
    if len(sizes) != 3:
        raise ArgumentError(f"{op}: output_size must be an int or a tuple of 3, got {output_size!r}")
    ins = x.shape[-3:]
    sizes = tuple(ins[i] if s is None else int(s) for i, s in enumerate(sizes))
    if any(s <= 0 for s in sizes) or any(n == 0 for n in ins):
        raise ShapeError(f"{op}: output_size {sizes} must be positive and input {fmt_shape(x.shape)} non-empty")
    wd, wh, ww = (_windows(n, o) for n, o in zip(ins, sizes))
    g = x[..., _on(x, wd[:, :, None, None, None, None]), _on(x, wh[None, None, :, :, None, None]),
          _on(x, ww[None, None, None, None])]                             # (..., OD, kd, OH, kh, OW, kw)
    out = O.amax(g, dim=(-5, -3, -1))
    if not return_indices:
        return out
    a = to_host(g.data)
    lead = a.ndim - 6
    a = np.transpose(a, tuple(range(lead)) + tuple(lead + i for i in (0, 2, 4, 1, 3, 5)))
    flat = a.reshape(a.shape[:lead + 3] + (-1,)).argmax(-1)
    i, j, l_ = np.unravel_index(flat, (wd.shape[1], wh.shape[1], ww.shape[1]))
    d = wd[np.arange(sizes[0])[:, None, None], i]
    h = wh[np.arange(sizes[1])[:, None], j]
    w = ww[np.arange(sizes[2]), l_]
    return out, Tensor._make(xp_of(x.data).asarray(((d * ins[1] + h) * ins[2] + w).astype(np.int64)))


def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = input1 @ weight[o] @ input2 + bias[o]`` with ``weight`` ``(out, in1, in2)``."""
    op = "bilinear"
    a, b, w = check_tensor(input1, op, "input1"), check_tensor(input2, op, "input2"), check_tensor(weight, op, "weight")
    if w.ndim != 3 or a.shape[-1] != w.shape[1] or b.shape[-1] != w.shape[2] or a.shape[:-1] != b.shape[:-1]:
        raise ShapeError(f"{op}: input1 {fmt_shape(a.shape)} and input2 {fmt_shape(b.shape)} must share their "
                         f"leading dims and match weight {fmt_shape(w.shape)} = (out, in1, in2)")
    out, n1, n2 = w.shape
    t = O.matmul(a, O.reshape(O.permute(w, (1, 0, 2)), (n1, out * n2)))    # (..., out*in2)
    y = O.sum(O.reshape(t, tuple(a.shape[:-1]) + (out, n2)) * O.unsqueeze(b, -2), dim=-1)
    return y if bias is None else y + bias


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """``0.5 * (log(var) + (input - target)^2 / var)`` (+ ``0.5 log(2 pi)`` with ``full``): regression that
    also predicts its own uncertainty ``var`` (same shape as input, or one per sample)."""
    op = "gaussian_nll_loss"
    x = check_tensor(input, op)
    if not isinstance(var, Tensor):
        var = O.full_like(x, float(var))
    if tuple(var.shape) != tuple(x.shape):
        if tuple(x.shape[:-1]) == tuple(var.shape):
            var = O.unsqueeze(var, -1)
        elif not (tuple(x.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ShapeError(f"{op}: var {fmt_shape(var.shape)} must have the shape of input {fmt_shape(x.shape)}, "
                             "or that shape with the last dim 1 or dropped (one variance per sample)")
    if reduction not in _REDUCTIONS:
        raise ArgumentError(f"{op}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
    if bool(to_host(var.data < 0).any()):
        raise ArgumentError(f"{op}: var has negative entries; a variance must be >= 0")
    v = var + (O.clamp(var, min=eps) - var).detach()   # clamp the value, keep the gradient (as PyTorch)
    loss = 0.5 * (O.log(v) + (x - target) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """Multi-class hinge loss: ``sum_{i != y} max(0, margin - x[y] + x[i])^p / C`` per sample (times
    ``weight[y]``), ``p`` 1 or 2. The correct class must win by ``margin`` to cost nothing."""
    op = "multi_margin_loss"
    x = check_tensor(input, op)
    red = _reduction(op, reduction, size_average, reduce)
    if p not in (1, 2):
        raise ArgumentError(f"{op}: only p == 1 and p == 2 are supported, got {p}")
    unbatched = x.ndim == 1
    if unbatched:
        x = O.unsqueeze(x, 0)
    t = target if isinstance(target, Tensor) else _tensor(np.asarray(target))
    t = O.reshape(t, (-1,))
    if x.ndim != 2 or t.shape[0] != x.shape[0]:
        raise ShapeError(f"{op}: input must be (N, C) or (C,) and target (N,), got input {fmt_shape(input.shape)} "
                         f"and target {fmt_shape(target.shape)}")
    c = x.shape[1]
    ti = to_host(t.data).astype(np.int64)
    xp = xp_of(x.data)
    if ti.size and (ti.min() < 0 or ti.max() >= c):
        raise ArgumentError(f"{op}: target values must be class indices in [0, {c}), got {ti.tolist()}")
    idx = Tensor._make(xp.asarray(ti[:, None]))
    xy = O.gather(x, 1, idx)                                                 # (N, 1)
    m = O.relu(margin - xy + x)
    if p == 2:
        m = m * m
    if weight is not None:
        m = m * O.reshape(check_tensor(weight, op, "weight")[_on(x, ti)], (-1, 1))
    others = Tensor._make(xp.asarray((np.arange(c)[None, :] != ti[:, None]).astype(x.dtype)))  # drop i == y
    loss = O.sum(m * others, dim=1) / c
    if unbatched:
        loss = O.squeeze(loss, 0)
    return _reduce(loss, red)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: dropped units are set to SELU's negative saturation value and the result
    is scaled and shifted so inputs of mean 0, variance 1 keep them. The identity unless ``training``."""
    x = check_tensor(input, "alpha_dropout")
    if not 0.0 <= p <= 1.0:
        raise ArgumentError(f"alpha_dropout: probability p has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return x
    if p == 1:
        return x * 0.0
    alpha = -1.7580993408473766
    a = ((1 - p) * (1 + p * alpha ** 2)) ** -0.5
    b = -a * alpha * p
    xp = xp_of(x.data)
    keep = Tensor._make(xp.asarray(generator().random(x.shape) >= p).astype(x.dtype))  # gradlab.manual_seed
    return (x * keep + alpha * (1 - keep)) * a + b


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """``alpha_dropout`` that drops whole channels (one draw per sample and channel, dim 1)."""
    x = check_tensor(input, "feature_alpha_dropout")
    if not 0.0 <= p <= 1.0:
        raise ArgumentError(f"feature_alpha_dropout: probability p has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return x
    if p == 1:
        return x * 0.0
    alpha = -1.7580993408473766
    a = ((1 - p) * (1 + p * alpha ** 2)) ** -0.5
    b = -a * alpha * p
    shape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2) if x.ndim >= 2 else tuple(x.shape)
    keep = Tensor._make(xp_of(x.data).asarray(generator().random(shape) >= p).astype(x.dtype))
    return (x * keep + alpha * (1 - keep)) * a + b


# ------------------------------------------------------------- registry entries
def _convt1d_samples(src):
    g = src.choice([1, 2])
    cin, cog, k, s = g * src.integers(1, 2), src.integers(1, 2), src.integers(1, 3), src.integers(1, 2)
    yield Sample((src.tensor((src.integers(1, 2), cin, src.integers(1, 4))), src.tensor((cin, cog, k)),
                  src.tensor((g * cog,))), dict(stride=s, output_padding=s - 1, groups=g))
    yield Sample((src.tensor((2, 3)), src.tensor((2, 1, 2))), dict(dilation=2, padding=1), desc="unbatched, dilated")


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


def _bilinear_samples(src):
    lead = src.shape(1, 2, 1, 3)
    n1, n2, o = src.integers(1, 3), src.integers(1, 3), src.integers(1, 3)
    yield Sample((src.tensor(lead + (n1,)), src.tensor(lead + (n2,)), src.tensor((o, n1, n2)), src.tensor((o,))))


def _gauss_samples(src):
    shape = (src.integers(1, 3), src.integers(1, 3))
    red = src.choice(_REDUCTIONS)
    yield Sample((src.tensor(shape), src.tensor(shape), src.tensor(shape, 0.2, 2)),
                 dict(reduction=red, full=src.boolean()))
    yield Sample((src.tensor(shape), src.tensor(shape), src.tensor(shape[:1], 0.2, 2)), desc="one var per sample")


def _margin_samples(src):
    n, c = src.integers(1, 3), src.integers(2, 4)
    t = Tensor._make(np.array([src.integers(0, c - 1) for _ in range(n)], dtype=np.int64))
    yield Sample((src.tensor((n, c)), t), dict(p=src.choice([1, 2]), margin=src.choice([0.7, 1.3]),
                                                reduction=src.choice(_REDUCTIONS)))
    yield Sample((src.tensor((n, c)), t), dict(weight=src.tensor((c,), 0.5, 2, requires_grad=False)), desc="weight")


def _alpha_samples(src):
    yield Sample((src.tensor(src.shape(0, 3, 1, 4)),), dict(p=0.5, training=False), desc="eval mode: identity")


for _fn, _samples, _formula in [
    (conv_transpose1d, _convt1d_samples, "conv_transpose2d's rule on height-1 images"),
    (adaptive_max_pool1d, _amax_samples(1), "dX = zeros; dX[argmax of each window] += dY"),
    (adaptive_max_pool2d, _amax_samples(2), "dX = zeros; dX[argmax of each window] += dY"),
    (adaptive_max_pool3d, _amax_samples(3), "dX = zeros; dX[argmax of each window] += dY"),
    (bilinear, _bilinear_samples, "dx1 = dy W x2 ; dx2 = dy W^T x1 ; dW_o = dy_o x1 x2^T ; db = dy"),
    (gaussian_nll_loss, _gauss_samples, "dinput = (input - target) / var ; dvar = 0.5 (1/var - d^2/var^2)"),
    (multi_margin_loss, _margin_samples, "dx_i = p m_i^(p-1) [m_i > 0] / C ; dx_y = -sum_i dx_i"),
    (alpha_dropout, _alpha_samples, "dX = a * mask * dY"),
    (feature_alpha_dropout, _alpha_samples, "dX = a * mask * dY   (one mask value per channel)"),
]:
    register(_fn.__name__, samples=_samples, formula=_formula, namespace=NS, torch=_torch_f(_fn.__name__))(_fn)
del _fn, _samples, _formula
