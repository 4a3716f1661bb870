"""``index_add``, ``index_copy`` and ``index_fill`` (and their in-place ``_`` forms): whole slices along one dim
picked by a 1-D index, as in GNN message passing (``out.index_add_(0, dst, messages)``) and embedding updates.

Each is ``scatter``/``scatter_add``/``where`` with the 1-D index broadcast over the other dims, so the
gradients come from those ops; the in-place forms copy the result back into ``self`` with ``copy_``
(recorded like any in-place change).
"""
from __future__ import annotations

import numpy as np

from .. import ops as O
from .._tensor import Tensor
from ..errors import DTypeError, IndexOutOfRange, ShapeError, fmt_shape
from ._util import check_tensor, one_dim
from .registry import Sample, register


def _index_arg(op, x, dim, index):
    idx = check_tensor(index, op, "index")
    if idx.dtype.kind not in "iu":
        raise DTypeError(f"{op}: index must be an integer tensor (int64), got dtype {idx.dtype}; use index.long()")
    if idx.ndim > 1:
        raise ShapeError(f"{op}: index must be 1-D (or 0-d), got shape {fmt_shape(idx.shape)}")
    d = one_dim(dim, max(x.ndim, 1), op)
    n = x.shape[d] if x.ndim else 1
    a = np.asarray(idx.cpu().data).reshape(-1)
    if a.size and (a.min() < -n or a.max() >= n):
        raise IndexOutOfRange(f"{op}: index holds {int(a.max()) if a.max() >= n else int(a.min())}, outside "
                              f"[-{n}, {n}) for dim {d} of input {fmt_shape(x.shape)}")
    return d, Tensor._make(np.where(a < 0, a + n, a).astype(np.int64)).to(x.device)


def _spread(op, x, d, idx, source):
    """The index repeated over the source's other dims (what scatter wants), after checking the source's shape."""
    src = check_tensor(source, op, "source")
    want = x.shape[:d] + (idx.shape[0],) + x.shape[d + 1:]
    if tuple(src.shape) != want and not (x.ndim == 0 and src.numel() == idx.shape[0]):
        raise ShapeError(f"{op}: source has shape {fmt_shape(src.shape)} but must be {fmt_shape(want)} (input "
                         f"{fmt_shape(x.shape)} with dim {d} replaced by the index length {idx.shape[0]})")
    view = [1] * x.ndim
    view[d] = idx.shape[0]
    return O.expand(O.reshape(idx, tuple(view)), *want), src


def _samples(with_source=True):
    def samples(src):
        x = src.tensor((4, 3))
        idx = Tensor._make(np.array([2, 0, 2] if with_source else [3, 1]))
        if with_source:
            yield Sample((x, 0, idx, src.tensor((3, 3))))
            yield Sample((src.tensor((2, 5)), 1, Tensor._make(np.array([4, 1])), src.tensor((2, 2))))
        else:
            yield Sample((x, 0, idx, 1.5))
    return samples


@register(samples=_samples(), formula="dInput = dY, dSource = dY picked at index",
          torch=lambda torch, x, dim, idx, s: torch.index_add(x, dim, idx, s))
def index_add(input, dim, index, source, *, alpha=1):
    """``input`` with ``alpha * source[i]`` added to slice ``index[i]`` along ``dim`` (repeats add up)."""
    x = check_tensor(input, "index_add")
    d, idx = _index_arg("index_add", x, dim, index)
    full, src = _spread("index_add", x, d, idx, source)
    return O.scatter_add(x, d, full, src if alpha == 1 else src * alpha)


@register(samples=lambda src: [Sample((src.tensor((4, 3)), 0, Tensor._make(np.array([2, 0])), src.tensor((2, 3))))],
          formula="dInput = dY with the copied slices zeroed, dSource = dY picked at index",
          torch=lambda torch, x, dim, idx, s: torch.index_copy(x, dim, idx, s))
def index_copy(input, dim, index, source):
    """``input`` with slice ``index[i]`` along ``dim`` replaced by ``source[i]``."""
    x = check_tensor(input, "index_copy")
    d, idx = _index_arg("index_copy", x, dim, index)
    full, src = _spread("index_copy", x, d, idx, source)
    return O.scatter(x, d, full, src)


@register(samples=_samples(False), formula="dInput = dY with the filled slices zeroed",
          torch=lambda torch, x, dim, idx, v: torch.index_fill(x, dim, idx, v))
def index_fill(input, dim, index, value):
    """``input`` with the slices ``index`` along ``dim`` set to ``value``."""
    x = check_tensor(input, "index_fill")
    d, idx = _index_arg("index_fill", x, dim, index)
    hit = np.zeros(x.shape[d] if x.ndim else 1, dtype=bool)
    hit[np.asarray(idx.cpu().data)] = True
    view = [1] * x.ndim
    if x.ndim:
        view[d] = x.shape[d]
    mask = Tensor._make(hit.reshape(tuple(view)) if x.ndim else hit.reshape(())).to(x.device)
    fill = value.to(x.dtype) if isinstance(value, Tensor) else O.full_like(x, value)
    return O.where(mask, fill, x)


def _inplace(fn):
    def method(self, *args, **kwargs):
        return self.copy_(fn(self, *args, **kwargs))
    method.__name__ = fn.__name__ + "_"
    method.__doc__ = f"In-place ``{fn.__name__}``: ``self.copy_({fn.__name__}(self, ...))``."
    return method


INDEX_METHODS = ["index_add", "index_copy", "index_fill"]


def install_inplace():
    for fn in (index_add, index_copy, index_fill):
        if not hasattr(Tensor, fn.__name__ + "_"):
            setattr(Tensor, fn.__name__ + "_", _inplace(fn))
