"""``F.max_unpool1d/2d``: the partial inverse of max pooling.

``max_pool2d(x, k, return_indices=True)`` keeps each window's maximum and *where* it was;
``max_unpool2d`` puts every value back at that place in a zero tensor of the input's size (the
other positions stay 0). It is a scatter, so its gradient is the matching gather. Used by
encoder-decoder networks (SegNet) to undo pooling with the encoder's own indices.
"""
from __future__ import annotations

from .. import ops as O
from .._tensor import Tensor
from ..backend import xp_of
from ..errors import ShapeError, fmt_shape
from ..ops._util import check_tensor
from ..ops.registry import Sample, register


def _tup(v, n):
    return (v,) * n if isinstance(v, int) else tuple(int(a) for a in v)


def _unpool(op, input, indices, kernel_size, stride, padding, output_size, n):
    x = check_tensor(input, op)
    idx = check_tensor(indices, op, "indices")
    if x.ndim not in (n + 1, n + 2) or tuple(idx.shape) != tuple(x.shape):
        raise ShapeError(f"{op}: input must be {n + 2}-D (or {n + 1}-D unbatched) and indices of the same shape, "
                         f"got input {fmt_shape(x.shape)} and indices {fmt_shape(idx.shape)}")
    k = _tup(kernel_size, n)
    s = k if stride is None else _tup(stride, n)
    p = _tup(padding, n)
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
        from .functional import max_pool1d, max_pool2d
        shape = (src.integers(1, 2), 2) + (4,) * n
        t = src.tensor(shape, distinct=True, requires_grad=False)
        _, idx = (max_pool1d if n == 1 else max_pool2d)(t, 2, return_indices=True)
        yield Sample((src.tensor(tuple(idx.shape)), idx, 2))
        if n == 2:
            yield Sample((src.tensor(tuple(idx.shape)), idx, 2), dict(output_size=(5, 5)), desc="output_size")
    return samples


for _fn, _n in ((max_unpool1d, 1), (max_unpool2d, 2)):
    register(_fn.__name__, samples=_unpool_samples(_n), namespace="gradlab.nn.functional",
             formula="dX = dY.flatten(-n)[indices]   (Y = zeros.scatter(indices, X))",
             torch=(lambda name: lambda torch, *a, **k: getattr(torch.nn.functional, name)(*a, **k))(_fn.__name__))(_fn)
del _fn, _n
