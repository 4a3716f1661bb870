"""The rarer pooling functions of ``F``: ``lp_pool1d/2d/3d`` and ``max_unpool1d/2d``.

* ``lp_pool``: ``(sum over the window of x^p)^(1/p)``; p=1 is sum pooling, p -> inf is max pooling.
* ``max_unpool``, the partial inverse of max pooling: ``max_pool2d(x, k, return_indices=True)`` keeps
  each window's maximum and *where* it was; ``max_unpool2d`` puts every value back at that place in a
  zero tensor of the input's size (the other positions stay 0). It is a scatter, so its gradient is
  the matching gather. Used by encoder-decoder networks (SegNet) to undo pooling with the encoder's
  own indices.
"""
from __future__ import annotations

from .... import ops as O
from ...._tensor import Tensor
from ....backend import xp_of
from ....errors import ShapeError, fmt_shape
from ....ops._util import check_tensor
from ....ops.pool import avg_pool2d, max_pool2d
from ....ops.registry import Sample, register
from ..._pooling import avg_pool1d, avg_pool3d, max_pool1d
from ....checks import sizes as ntuple
from ..._register import NS, register_table, torch_f


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
    x = check_tensor(input, "lp_pool3d")
    k = (kernel_size,) * 3 if isinstance(kernel_size, int) else tuple(kernel_size)
    out = avg_pool3d(x ** norm_type, k, stride, 0, ceil_mode)
    return _lp(x, out, norm_type, k[0] * k[1] * k[2])


def _lp_samples(k):
    def samples(src):
        shape = (src.integers(1, 2), 2 if k < 3 else 1) + tuple(src.integers(2, 4 if k < 3 else 3) for _ in range(k))
        yield Sample((src.tensor(shape, 0.2, 2), src.choice([1, 2, 3]), 2), dict(stride=1))
    return samples


def _unpool(op, input, indices, kernel_size, stride, padding, output_size, n):
    x = check_tensor(input, op)
    idx = check_tensor(indices, op, "indices")
    if x.ndim not in (n + 1, n + 2) or tuple(idx.shape) != tuple(x.shape):
        raise ShapeError(f"{op}: input must be {n + 2}-D (or {n + 1}-D unbatched) and indices of the same shape, "
                         f"got input {fmt_shape(x.shape)} and indices {fmt_shape(idx.shape)}")
    k = ntuple(kernel_size, n, op, "kernel_size")
    s = k if stride is None else ntuple(stride, n, op, "stride")
    p = ntuple(padding, n, op, "padding")
    ins = x.shape[-n:]
    default = tuple((ins[i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(n))
    size = default if output_size is None else tuple(int(v) for v in output_size)[-n:]
    lead = tuple(x.shape[:-n])
    total = 1
    for v in size:
        total *= v
    flat_idx = O.reshape(idx, lead + (-1,))
    if int(flat_idx.data.max(initial=0)) >= total:
        raise ShapeError(f"{op}: an index in indices is outside the output of size {size}; pass the output_size "
                         "of the tensor that was pooled")
    zeros = Tensor._make(xp_of(x.data).zeros(lead + (total,), dtype=x.dtype))
    out = O.scatter(zeros, -1, flat_idx, O.reshape(x, lead + (-1,)))
    return O.reshape(out, lead + size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Put each value of ``(N, C, L)`` back at its ``indices`` in a zero ``(N, C, L_out)`` tensor."""
    return _unpool("max_unpool1d", input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Put each value of ``(N, C, H, W)`` back at its flat ``indices`` in a zero ``(N, C, H_out, W_out)`` tensor."""
    return _unpool("max_unpool2d", input, indices, kernel_size, stride, padding, output_size, 2)


def _unpool_samples(n):
    def samples(src):
        shape = (src.integers(1, 2), 2) + (4,) * n
        t = src.tensor(shape, distinct=True, requires_grad=False)
        _, idx = (max_pool1d if n == 1 else max_pool2d)(t, 2, return_indices=True)
        yield Sample((src.tensor(tuple(idx.shape)), idx, 2))
        if n == 2:
            yield Sample((src.tensor(tuple(idx.shape)), idx, 2), dict(output_size=(5, 5)), desc="output_size")
    return samples


for _fn, _n in ((max_unpool1d, 1), (max_unpool2d, 2)):
    register(_fn.__name__, samples=_unpool_samples(_n), namespace=NS, torch=torch_f(_fn.__name__),
             formula="dX = dY.flatten(-n)[indices]   (Y = zeros.scatter(indices, X))")(_fn)
del _fn, _n

register_table([
    (lp_pool1d, _lp_samples(1), "dx = x^(p-1) * S^(1/p - 1) * dy   (S = window sum of x^p)"),
    (lp_pool2d, _lp_samples(2), "dx = x^(p-1) * S^(1/p - 1) * dy   (S = window sum of x^p)"),
    (lp_pool3d, _lp_samples(3), "dx = x^(p-1) * S^(1/p - 1) * dy   (S = window sum of x^p)"),
])
