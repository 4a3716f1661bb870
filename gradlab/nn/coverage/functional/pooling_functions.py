"""The rarer pooling functions of ``F``: ``lp_pool1d/2d/3d`` and ``max_unpool1d/2d``.

* ``lp_pool``: ``(sum over the window of x^p)^(1/p)``; p=1 is sum pooling, p -> inf is max pooling.
* ``max_unpool``, the partial inverse of max pooling: ``max_pool2d(x, k, return_indices=True)`` keeps
  each window's maximum and *where* it was; ``max_unpool2d`` puts every value back at that place in a
  zero tensor of the input's size (the other positions stay 0). It is a scatter, so its gradient is
  the matching gather. Used by encoder-decoder networks (SegNet) to undo pooling with the encoder's
  own indices.
"""
from __future__ import annotations

from .... import checks as _c, ops as O
from ...._tensor import Tensor
from ....backend import xp_of
from ....checks import sizes as ntuple
from ....errors import ArgumentError, ArgumentTypeError, ShapeError, fmt_shape
from ....ops._util import check_tensor
from ....ops.pool import avg_pool2d, max_pool2d
from ....ops.registry import Sample, register
from ..._pooling import avg_pool1d, avg_pool3d, max_pool1d
from ..._register import NS, register_table, torch_f


def _lp(x, out, p, area):
    return (O.sign(out) * O.relu(O.abs(out)) * area) ** (1.0 / p)


def _lp_args(op, input, norm_type, kernel_size, stride, n):
    """The checked ``(x, p, kernel_size, stride)`` of an ``n``-D lp_pool (stride defaults to the kernel)."""
    x = check_tensor(input, op)
    p = _c.number(norm_type, op, "norm_type", tensor_ok=False)
    k = ntuple(kernel_size, n, op, "kernel_size", minimum=1)
    s = k if stride is None else ntuple(stride, n, op, "stride", minimum=1)
    return x, p, k, s


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over each window of x^p)^(1/p)`` along the last dim."""
    x, p, k, s = _lp_args("lp_pool1d", input, norm_type, kernel_size, stride, 1)
    out = avg_pool1d(x ** p, k[0], s[0], 0, ceil_mode)
    return _lp(x, out, p, k[0])


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over each window of x^p)^(1/p)`` over the last two dims."""
    x, p, k, s = _lp_args("lp_pool2d", input, norm_type, kernel_size, stride, 2)
    out = avg_pool2d(x ** p, k, s, 0, ceil_mode)
    return _lp(x, out, p, k[0] * k[1])


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over each window of x^p)^(1/p)`` over the last three dims."""
    x, p, k, s = _lp_args("lp_pool3d", input, norm_type, kernel_size, stride, 3)
    out = avg_pool3d(x ** p, k, s, 0, ceil_mode)
    return _lp(x, out, p, k[0] * k[1] * k[2])


def _lp_samples(k):
    def samples(src):
        shape = (src.integers(1, 2), 2 if k < 3 else 1) + tuple(src.integers(2, 4 if k < 3 else 3) for _ in range(k))
        yield Sample((src.tensor(shape, 0.2, 2), src.choice([1, 2, 3]), 2), dict(stride=1))
    return samples


def _unpool(op, input, indices, kernel_size, stride, padding, output_size, n):
    x = check_tensor(input, op)
    idx = check_tensor(indices, op, "indices")
    _c.floating(x, op, "input")
    _c.integer_tensor(idx, op, "indices", int64_only=True)
    if x.ndim not in (n + 1, n + 2) or tuple(idx.shape) != tuple(x.shape):
        raise ShapeError(f"{op}: input must be {n + 2}-D (or {n + 1}-D unbatched) and indices of the same shape, "
                         f"got input {fmt_shape(x.shape)} and indices {fmt_shape(idx.shape)}")
    k = ntuple(kernel_size, n, op, "kernel_size")
    s = k if stride is None else ntuple(stride, n, op, "stride")
    p = ntuple(padding, n, op, "padding")
    ins = x.shape[-n:]
    default = tuple((ins[i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(n))
    size = default if output_size is None else _unpool_size(op, output_size, default, s, n)
    if min(size) < 1:
        raise ArgumentError(f"{op}: kernel_size {k}, stride {s} and padding {p} give the output size {size} for "
                            f"input {fmt_shape(x.shape)}; it must be positive")
    lead = tuple(x.shape[:-n])
    total = 1
    for v in size:
        total *= v
    flat_idx = O.reshape(idx, lead + (-1,))
    if int(flat_idx._data.max(initial=0)) >= total or int(flat_idx._data.min(initial=0)) < 0:
        raise ShapeError(f"{op}: an index in indices is outside the output of size {size} (valid: 0 to "
                         f"{total - 1}); pass the indices and the output_size of the tensor that was pooled")
    zeros = Tensor._make(xp_of(x._data).zeros(lead + (total,), dtype=x.dtype))
    out = O.scatter(zeros, -1, flat_idx, O.reshape(x, lead + (-1,)))
    return O.reshape(out, lead + size)


def _unpool_size(op, output_size, default, stride, n):
    """``output_size`` (``n`` sizes, or ``n + 2`` with the batch and channel dims) checked as PyTorch does:
    each strictly between ``default - stride`` and ``default + stride`` (the sizes a pool maps to ``input``)."""
    if not isinstance(output_size, (tuple, list)):
        raise ArgumentTypeError(f"{op}: output_size must be a tuple of {n} ints, got {type(output_size).__name__} "
                                f"{output_size!r}")
    size = tuple(output_size)
    if len(size) == n + 2:
        size = size[2:]
    if len(size) != n:
        raise ArgumentError(f"{op}: output_size must have {n} or {n + 2} entries, got {output_size!r}")
    size = tuple(_c.size(v, op, "output_size", None) for v in size)
    for d in range(n):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < size[d] < hi:
            raise ArgumentError(f"{op}: invalid output_size {size}: dim {d} must be between {lo} and {hi} "
                                f"(exclusive) for this input, kernel_size and stride")
    return size


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
