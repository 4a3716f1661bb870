"""``linear``, ``dropout``, ``embedding``, ``one_hot``: the everyday layers' functions.

* ``linear(x, W, b) = x @ W^T + b``: ``W`` is stored ``(out_features, in_features)``
  as in PyTorch, so each *row* of ``W`` is one output unit's weights.
* ``dropout`` zeroes each entry with probability ``p`` and scales the survivors
  by ``1 / (1 - p)``, so the expected value is unchanged and evaluation
  (``training=False``) needs no rescaling. The mask is drawn from gradlab's one
  seeded generator: ``gradlab.manual_seed(n)`` makes it reproducible.
* ``embedding(ids, W)`` is ``W[ids]``: a row lookup. Its gradient adds ``dY``
  into the rows that were looked up -- *added*, so an id used twice in a batch
  gets both gradients. (On arrays that scatter-add is a sort of the ids and one
  sum per run of equal ids: ``_rows_added``.)
"""
from __future__ import annotations

import numpy as np

from .. import ops as O
from ..autograd.function import Op
from ..amp.state import autocast_args as _autocast_args, state as _amp  # autocast policy (gradlab.amp)
from ..autograd.grad_mode import no_grad
from ..backend import dtypes as _dt
from ..backend import generator, xp_of
from ..backend.arrays import scatter_add
from ..errors import ArgumentError, DTypeError, IndexOutOfRange, ShapeError, fmt_shape
from .._tensor import Tensor
from ..ops._util import check_tensor, device_mismatch
from ..ops.indexing import IndexAddZeros
from ..ops.registry import Sample, register

NS = "gradlab.nn.functional"


# ------------------------------------------------------------------- linear
def linear(input, weight, bias=None):
    """``input @ weight^T + bias`` with ``weight`` of shape ``(out_features, in_features)``."""
    x = check_tensor(input, "linear")
    w = check_tensor(weight, "linear", "weight")
    if _amp.enabled:
        x, w, bias = _autocast_args("linear", x, w, bias)
    if x.dtype != w.dtype:  # PyTorch: "mat1 and mat2 must have the same dtype"
        raise DTypeError(f"linear: input {fmt_shape(x.shape)} has dtype {x.dtype} but weight {fmt_shape(w.shape)} "
                         f"has dtype {w.dtype}; convert the input with x.to({w.dtype}) (NumPy data is float64: "
                         f"use x.float()), or the layer with .double()")
    if w.ndim not in (1, 2):
        raise ShapeError(f"linear: weight must be (out_features, in_features), got {fmt_shape(w.shape)}")
    if x.ndim == 0 or x.shape[-1] != w.shape[-1]:
        raise ShapeError(f"linear: input {fmt_shape(x.shape)} has {x.shape[-1] if x.ndim else 0} features in its "
                         f"last dim but weight {fmt_shape(w.shape)} expects {w.shape[-1]} (in_features = "
                         "weight.shape[1])")
    lead = None
    if x.ndim > 2 and w.ndim == 2:  # (B, T, in) -> (B*T, in): one large matrix product, not B small ones
        lead = x.shape[:-1]
        x = O.reshape(x, (-1, x.shape[-1]))
    out = O.matmul(x, w.mT if w.ndim == 2 else w)
    if bias is not None:
        b = check_tensor(bias, "linear", "bias")
        out = out + b
    if lead is not None:
        out = O.reshape(out, lead + (w.shape[0],))
    return out


def _linear_samples(src):
    lead = src.shape(0, 2, 1, 3)
    i, o = src.integers(1, 4), src.integers(1, 4)
    yield Sample((src.tensor(lead + (i,)), src.tensor((o, i)), src.tensor((o,))), desc="with bias")
    yield Sample((src.tensor((2, i)), src.tensor((o, i))), desc="no bias")


register("linear", samples=_linear_samples, namespace=NS,
         formula="dX = dY @ W ; dW = dY^T @ X ; db = sum(dY over batch dims)",
         torch=lambda torch, *a, **k: torch.nn.functional.linear(*a, **k))(linear)


# ------------------------------------------------------------------ dropout
class Dropout(Op):
    name = "dropout"
    formula = "dX = dY * mask / (1 - p)   (the same mask as the forward pass)"

    @staticmethod
    def forward(ctx, x, mask):
        ctx.save_for_backward(mask)
        ctx.mask = mask
        return x.data * mask.data

    def vjp(self, g):
        (mask,) = self.saved_tensors
        return g * mask, None

    def vjp_arrays(self, g):
        (mask,) = self.saved_arrays
        return g * mask, None

    def jvp(self, t, _):
        return t * self.mask


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each entry with probability ``p`` (scaling the rest by ``1/(1-p)``) when ``training``; else identity.

    ``inplace`` is accepted for PyTorch compatibility; gradlab always returns a new tensor.
    """
    x = check_tensor(input, "dropout")
    if not 0.0 <= p <= 1.0:
        raise ArgumentError(f"dropout: p is the probability of zeroing an entry and must be in [0, 1], got {p}")
    if not training or p == 0:
        return x
    if not _dt.is_floating(x.dtype):
        raise DTypeError(f"dropout: input has dtype {_dt.dtype_name(x.dtype)}; dropout needs a floating tensor")
    xp = xp_of(x.data)
    if p == 1:
        m = xp.zeros(x.shape, dtype=x.dtype)
    else:
        keep = generator().random(x.shape) >= p
        m = xp.asarray(keep).astype(x.dtype) * x.dtype.type(1.0 / (1.0 - p))
    return Dropout.apply(x, Tensor._make(m))


def _channel_dropout(name, k, input, p, training):
    """Zero whole channels: one draw per (sample, channel), shared by its ``k`` spatial dims."""
    x = check_tensor(input, name)
    if x.ndim not in (k + 1, k + 2):
        raise ShapeError(f"{name}: input must be (N, C, {k} spatial dims) or unbatched (C, ...), got "
                         f"{fmt_shape(x.shape)}")
    if not 0.0 <= p <= 1.0:
        raise ArgumentError(f"{name}: p must be in [0, 1], got {p}")
    if not training or p == 0:
        return x
    xp = xp_of(x.data)
    shape = x.shape[:x.ndim - k] + (1,) * k
    if p == 1:
        m = xp.zeros(shape, dtype=x.dtype)
    else:
        m = xp.asarray(generator().random(shape) >= p).astype(x.dtype) * x.dtype.type(1.0 / (1.0 - p))
    return Dropout.apply(x, Tensor._make(m))


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero entire channels of ``(N, C, L)`` with probability ``p`` (survivors scaled by ``1/(1-p)``)."""
    return _channel_dropout("dropout1d", 1, input, p, training)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero entire channels (feature maps) of ``(N, C, H, W)`` with probability ``p``."""
    return _channel_dropout("dropout2d", 2, input, p, training)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero entire channels of ``(N, C, D, H, W)`` with probability ``p``."""
    return _channel_dropout("dropout3d", 3, input, p, training)


def _dropout_samples(src):
    shape = src.shape(0, 3, 0, 4)
    yield Sample((src.tensor(shape),), dict(p=0.5, training=False), desc="eval mode: identity")
    yield Sample((src.tensor(shape),), dict(p=0.0), desc="p=0")
    yield Sample((src.tensor(shape), 1.0), desc="p=1: all zero")


register("dropout", samples=_dropout_samples, namespace=NS, op=Dropout,
         torch=lambda torch, *a, **k: torch.nn.functional.dropout(*a, **k))(dropout)


def _channel_dropout_samples(k):
    def samples(src):
        shape = (src.integers(1, 2), src.integers(1, 3)) + (2,) * k
        yield Sample((src.tensor(shape),), dict(p=0.5, training=False), desc="eval mode: identity")
        yield Sample((src.tensor(shape), 1.0), desc="p=1: all zero")
    return samples


for _k, _fn in ((1, dropout1d), (2, dropout2d), (3, dropout3d)):
    register(_fn.__name__, samples=_channel_dropout_samples(_k), namespace=NS, op=Dropout,
             torch=(lambda name: lambda torch, *a, **kw: getattr(torch.nn.functional, name)(*a, **kw))(_fn.__name__))(_fn)
del _k, _fn


# ---------------------------------------------------------------- embedding
class Embedding(Op):
    name = "embedding"
    formula = "dW = zeros(W.shape); dW[ids] += dY   (repeated ids add up; padding_idx gets none)"

    @staticmethod
    def forward(ctx, weight, ids, scale):
        ctx.ids, ctx.scale, ctx.n = ids, scale, weight.shape[0]
        return weight.data[ids]

    def vjp(self, g):
        if self.scale is not None:
            g = g * self.scale
        return IndexAddZeros.apply(g, self.ids, (self.n,) + tuple(g.shape[self.ids.ndim:])), None, None

    def vjp_arrays(self, g):
        if self.scale is not None:
            g = g * self.scale.data
        return _rows_added(self.ids, g.reshape(self.ids.size, g.shape[-1]), self.n), None, None

    def jvp(self, t, *_):
        return Embedding.apply(t, self.ids, None)


def _rows_added(ids, g2, n):
    """``zeros((n, d))`` with each row ``g2[i]`` added into row ``ids[i]`` (repeated ids add up).

    ``np.add.at`` does exactly this but one element at a time (several ms for a GPT batch).
    Instead: sort the ids (stably), and ``np.add.reduceat`` sums each run of equal ids in one
    vectorized pass; on CuPy the backend's ``scatter_add`` (a GPU atomic add) does it.
    """
    xp = xp_of(g2)
    ids = ids.reshape(-1)
    out = xp.zeros((n,) + g2.shape[1:], dtype=g2.dtype)
    if ids.size == 0:
        return out
    if isinstance(g2, np.ndarray):  # NumPy (and the simulated device, a NumPy subclass)
        order = xp.argsort(ids, kind="stable")
        s = ids[order]
        starts = xp.flatnonzero(xp.concatenate((xp.ones(1, dtype=bool), s[1:] != s[:-1])))
        out[s[starts]] = np.add.reduceat(g2[order], starts, axis=0)
    else:  # CuPy
        scatter_add(out, ids, g2)
    return out


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of ``weight`` picked by the integer ids in ``input`` (any shape): ``weight[input]``.

    ``padding_idx``: that row gets no gradient. ``max_norm``: rows looked up are first rescaled
    in place to norm at most ``max_norm`` (as PyTorch). ``scale_grad_by_freq``: each id's gradient
    is divided by how often it occurs in the batch. ``sparse`` is accepted and ignored (dense gradient).
    """
    ids = check_tensor(input, "embedding", "input")
    w = check_tensor(weight, "embedding", "weight")
    if type(ids.data) is not type(w.data) and ids.device != w.device:  # same device (PyTorch)
        raise device_mismatch("embedding", w, ids, ("weight", "input"))
    if _dt.category(ids.dtype) != 1:
        raise DTypeError(f"embedding: input holds the ids to look up and must be an integer tensor, got dtype "
                         f"{_dt.dtype_name(ids.dtype)}; use .long()")
    if w.ndim != 2:
        raise ShapeError(f"embedding: weight must be 2-D (num_embeddings, embedding_dim), got {fmt_shape(w.shape)}")
    n = w.shape[0]
    a = ids.data
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
    xp = xp_of(w.data)
    rows = xp.unique(ids.reshape(-1))
    with no_grad():
        norms = xp.linalg.norm(w.data[rows], ord=norm_type, axis=1)
        big = norms > max_norm
        w.data[rows[big]] *= (max_norm / (norms[big] + 1e-7))[:, None].astype(w.dtype)
        w._version.value += 1


def _embedding_samples(src):
    n, d = src.integers(1, 5), src.integers(1, 3)
    ids = src.index_tensor(src.shape(0, 2, 0, 4), n)
    yield Sample((ids, src.tensor((n, d))), desc="repeated ids likely")
    yield Sample((Tensor._make(np.array([[0, 2], [2, 1]])), src.tensor((3, 2))), desc="an id used twice")
    # padding_idx and scale_grad_by_freq change the gradient on purpose (it is no longer the
    # derivative), so gradcheck cannot check them: tests/test_functional.py compares them with PyTorch.


register("embedding", samples=_embedding_samples, namespace=NS, op=Embedding,
         torch=lambda torch, *a, **k: torch.nn.functional.embedding(*a, **k))(embedding)


# ------------------------------------------------------------------ one_hot
def one_hot(tensor, num_classes=-1):
    """``(...,) -> (..., num_classes)`` int64 with a 1 at each index; ``num_classes=-1`` uses ``max + 1``."""
    t = check_tensor(tensor, "one_hot", "tensor")
    if _dt.category(t.dtype) != 1:
        raise DTypeError(f"one_hot: tensor must hold integer class indices, got dtype {_dt.dtype_name(t.dtype)}; "
                         "use .long()")
    a = t.data
    xp = xp_of(a)
    if num_classes == -1:
        if a.size == 0:
            raise ArgumentError("one_hot: cannot infer num_classes from an empty tensor; pass num_classes=")
        num_classes = int(a.max()) + 1
    if a.size and (a.min() < 0 or a.max() >= num_classes):
        bad = int(a[(a < 0) | (a >= num_classes)].reshape(-1)[0])
        raise IndexOutOfRange(f"one_hot: class {bad} is outside [0, {num_classes}) (num_classes={num_classes})")
    out = (a[..., None] == xp.arange(num_classes)).astype(np.int64)
    return Tensor._make(out)


def _one_hot_samples(src):
    c = src.integers(1, 4)
    yield Sample((src.index_tensor(src.shape(0, 2, 1, 4), c), c), desc="given num_classes")
    yield Sample((Tensor._make(np.array([[0, 3], [1, 1]])),), desc="inferred num_classes")


register("one_hot", samples=_one_hot_samples, namespace=NS, differentiable=False, jvp=False,
         formula="not differentiable (integer output)",
         torch=lambda torch, *a, **k: torch.nn.functional.one_hot(*a, **k))(one_hot)
