"""``embedding`` and ``one_hot``: integer ids in, rows (or one-hot vectors) out.

* ``embedding(ids, W)`` is ``W[ids]``: a row lookup. Its gradient adds ``dY`` into the rows that were
  looked up -- *added*, so an id used twice in a batch gets both gradients (the ``Embedding`` op,
  ``gradlab/ops/embedding_lookup.py``). ``_renorm`` applies ``max_norm`` in place, as PyTorch;
* ``one_hot(t, num_classes)``: ``(...,) -> (..., num_classes)`` int64, not differentiable.
"""
from __future__ import annotations

import numpy as np

from .. import checks as _c
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..backend import dtypes as _dt, xp_of
from ..backend.memory_limit import check_alloc
from ..errors import ArgumentError, DTypeError, IndexOutOfRange, ShapeError, fmt_shape
from ..ops._util import check_tensor, device_mismatch
from ..ops.embedding_lookup import Embedding
from ..ops.registry import Sample, register
from ._register import NS


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of ``weight`` picked by the integer ids in ``input`` (any shape): ``weight[input]``.

    ``padding_idx``: that row gets no gradient. ``max_norm``: rows looked up are first rescaled
    in place to norm at most ``max_norm`` (as PyTorch). ``scale_grad_by_freq``: each id's gradient
    is divided by how often it occurs in the batch. ``sparse`` is accepted and ignored (dense gradient).
    """
    ids = check_tensor(input, "embedding", "input")
    w = check_tensor(weight, "embedding", "weight")
    if type(ids._data) is not type(w._data) and ids.device != w.device:  # same device (PyTorch)
        raise device_mismatch("embedding", w, ids, ("weight", "input"))
    if _dt.category(ids.dtype) != 1:
        raise DTypeError(f"embedding: input holds the ids to look up and must be an integer tensor, got dtype "
                         f"{_dt.dtype_name(ids.dtype)}; use .long()")
    if w.ndim != 2:
        raise ShapeError(f"embedding: weight must be 2-D (num_embeddings, embedding_dim), got {fmt_shape(w.shape)}")
    n = w.shape[0]
    a = ids._data
    if a.size and (a.min() < 0 or a.max() >= n):
        bad = int(a[(a < 0) | (a >= n)].reshape(-1)[0])
        raise IndexOutOfRange(f"embedding: id {bad} is outside [0, {n}) for weight {fmt_shape(w.shape)} with {n} rows")
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise ArgumentError(f"embedding: padding_idx {padding_idx} must be in [-{n}, {n})")
        padding_idx = padding_idx % n
    if max_norm is not None:
        _renorm(w, a, max_norm, norm_type)
    scale = None
    if padding_idx is not None or scale_grad_by_freq:
        xp = xp_of(a)
        s = xp.ones(a.shape, dtype=w.dtype)
        if scale_grad_by_freq:
            s = s / xp.bincount(a.reshape(-1), minlength=n)[a]
        if padding_idx is not None:
            s = s * (a != padding_idx)
        scale = Tensor._make(s.reshape(a.shape + (1,)).astype(w.dtype))
    return Embedding.apply(w, a, scale)


def _renorm(w, ids, max_norm, norm_type):
    """Scale the looked-up rows of ``w`` (in place, no gradient) so their norm is at most ``max_norm``."""
    xp = xp_of(w._data)
    rows = xp.unique(ids.reshape(-1))
    with no_grad():
        norms = xp.linalg.norm(w._data[rows], ord=norm_type, axis=1)
        big = norms > max_norm
        w._data[rows[big]] *= (max_norm / (norms[big] + 1e-7))[:, None].astype(w.dtype)
        w._version.value += 1


def _embedding_samples(src):
    n, d = src.integers(1, 5), src.integers(1, 3)
    ids = src.index_tensor(src.shape(0, 2, 0, 4), n)
    yield Sample((ids, src.tensor((n, d))), desc="repeated ids likely")
    yield Sample((Tensor._make(np.array([[0, 2], [2, 1]])), src.tensor((3, 2))), desc="an id used twice")


register("embedding", samples=_embedding_samples, namespace=NS, op=Embedding,
         torch=lambda torch, *a, **k: torch.nn.functional.embedding(*a, **k))(embedding)


# ------------------------------------------------------------------ one_hot
def one_hot(tensor, num_classes=-1):
    """``(...,) -> (..., num_classes)`` int64 with a 1 at each index; ``num_classes=-1`` uses ``max + 1``."""
    t = check_tensor(tensor, "one_hot", "tensor")
    if _dt.category(t.dtype) != 1:
        raise DTypeError(f"one_hot: tensor must hold integer class indices, got dtype {_dt.dtype_name(t.dtype)}; "
                         "use .long()")
    a = t._data
    xp = xp_of(a)
    num_classes = _c.size(num_classes, "one_hot", "num_classes", -1)
    if num_classes == -1:
        if a.size == 0:
            raise ArgumentError("one_hot: cannot infer num_classes from an empty tensor; pass num_classes=")
        num_classes = int(a.max()) + 1
    if a.size and (a.min() < 0 or a.max() >= num_classes):
        bad = int(a[(a < 0) | (a >= num_classes)].reshape(-1)[0])
        raise IndexOutOfRange(f"one_hot: class {bad} is outside [0, {num_classes}) (num_classes={num_classes})")
    check_alloc("one_hot", a.shape + (num_classes,), np.int64)  # (before the comparison's bool array too)
    out = (a[..., None] == xp.arange(num_classes)).astype(np.int64)
    return Tensor._make(out)


def _one_hot_samples(src):
    c = src.integers(1, 4)
    yield Sample((src.index_tensor(src.shape(0, 2, 1, 4), c), c), desc="given num_classes")
    yield Sample((Tensor._make(np.array([[0, 3], [1, 1]])),), desc="inferred num_classes")


register("one_hot", samples=_one_hot_samples, namespace=NS, differentiable=False, jvp=False,
         formula="not differentiable (integer output)",
         torch=lambda torch, *a, **k: torch.nn.functional.one_hot(*a, **k))(one_hot)
