"""``F.embedding_bag``: look up a *bag* of ids and reduce it to one vector (sum, mean or max).

A bag is a row of a 2-D ``input`` ``(B, n)``, or, for a 1-D ``input``, the slice
``input[offsets[b]:offsets[b+1]]`` (bags of different sizes packed end to end, as in PyTorch's
text-classification tutorial). Written as ``embedding`` (one gathered row per id) followed by a
``(bags, ids)`` matrix product for sum/mean -- so the gradient of ``weight`` is the usual
scatter-add of an embedding -- or a padded gather and ``amax`` for max.
"""
from __future__ import annotations

import numpy as np

from .... import checks as _c, ops as O
from ...._tensor import Tensor
from ....backend import xp_of
from ....backend.device import to_host
from ....errors import ArgumentError, ShapeError, fmt_shape
from ....ops._util import check_tensor
from ....ops.registry import Sample, register
from ..._embedding import embedding


def _bags(op, ids, offsets, include_last_offset):
    """``(flat ids, list of (start, end) per bag)``."""
    if ids.ndim == 2:
        if offsets is not None:
            raise ArgumentError(f"{op}: offsets must be None when input is 2-D {fmt_shape(ids.shape)} (each row is a "
                                "bag)")
        b, n = ids.shape
        return ids.reshape(-1), [(i * n, (i + 1) * n) for i in range(b)]
    if ids.ndim != 1:
        raise ShapeError(f"{op}: input must be 1-D (with offsets) or 2-D (B, n), got {fmt_shape(ids.shape)}")
    if offsets is None:
        raise ArgumentError(f"{op}: a 1-D input needs offsets (where each bag starts)")
    off = to_host(offsets._data).astype(np.int64).reshape(-1)
    if off.size == 0 or off[0] != 0 or np.any(np.diff(off) < 0) or off[-1] > ids.shape[0]:
        raise ArgumentError(f"{op}: offsets must start at 0, not decrease, and stay within the input's "
                            f"{ids.shape[0]} ids; got {off.tolist()}")
    ends = list(off[1:]) if include_last_offset else list(off[1:]) + [ids.shape[0]]
    starts = list(off[:-1]) if include_last_offset else list(off)
    return ids, [(int(s), int(e)) for s, e in zip(starts, ends)]


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sum, mean or max of the embedding rows of each bag of ids: ``(bags, embedding_dim)``.

    ``per_sample_weights`` (same shape as ``input``, mode ``'sum'`` only) weights each id; ids equal to
    ``padding_idx`` are left out of their bag; an empty bag gives zeros.
    """
    op = "embedding_bag"
    ids = _c.integer_tensor(check_tensor(input, op, "input"), op, "input")
    w = _c.floating(check_tensor(weight, op, "weight"), op, "weight")
    if offsets is not None:
        offsets = _c.integer_tensor(check_tensor(offsets, op, "offsets"), op, "offsets")
    if per_sample_weights is not None:
        per_sample_weights = check_tensor(per_sample_weights, op, "per_sample_weights")
        _c.same_dtype(op, weight=w, per_sample_weights=per_sample_weights)
    if padding_idx is not None:
        padding_idx = _c.size(padding_idx, op, "padding_idx", None)
        n = w.shape[0] if w.ndim == 2 else 0
        if not -n <= padding_idx < n:
            raise ArgumentError(f"{op}: padding_idx must be within the number of embeddings, {-n} through {n - 1}, "
                                f"got {padding_idx}")
    if mode not in ("sum", "mean", "max"):
        raise ArgumentError(f"{op}: mode must be 'sum', 'mean' or 'max', got {mode!r}")
    if per_sample_weights is not None and mode != "sum":
        raise ArgumentError(f"{op}: per_sample_weights is only supported for mode='sum', got mode={mode!r}")
    flat, bags = _bags(op, to_host(ids._data), offsets, include_last_offset)
    if per_sample_weights is not None and tuple(per_sample_weights.shape) != tuple(ids.shape):
        raise ShapeError(f"{op}: per_sample_weights {fmt_shape(per_sample_weights.shape)} must have the shape of "
                         f"input {fmt_shape(ids.shape)}")
    n = w.shape[0] if w.ndim == 2 else 0
    pad = None if padding_idx is None else padding_idx % n
    keep = np.ones(flat.shape[0], dtype=bool) if pad is None else np.asarray(flat) != pad
    rows = embedding(O.reshape(ids, (-1,)), w, max_norm=max_norm, norm_type=norm_type,
                     scale_grad_by_freq=scale_grad_by_freq)                              # (T, D)
    xp = xp_of(w._data)
    if mode == "max":
        k = max([int(keep[s:e].sum()) for s, e in bags] + [1])
        idx = np.zeros((len(bags), k), dtype=np.int64)
        empty = np.zeros((len(bags), 1), dtype=bool)
        for b, (s, e) in enumerate(bags):
            members = np.arange(s, e)[keep[s:e]]
            if members.size == 0:
                empty[b] = True
                continue
            idx[b] = np.concatenate([members, np.repeat(members[-1], k - members.size)])
        if rows.shape[0] == 0:
            return Tensor._make(xp.zeros((len(bags), w.shape[1]), dtype=w.dtype))
        out = O.amax(rows[Tensor._make(xp.asarray(idx))], dim=1)                         # (B, D)
        return out * Tensor._make(xp.asarray(~empty).astype(w.dtype)) if empty.any() else out
    m = np.zeros((len(bags), flat.shape[0]), dtype=np.float64)
    for b, (s, e) in enumerate(bags):
        m[b, s:e] = keep[s:e]
        if mode == "mean" and keep[s:e].any():
            m[b, s:e] /= keep[s:e].sum()
    if per_sample_weights is not None:
        rows = rows * O.unsqueeze(O.reshape(per_sample_weights, (-1,)), -1)
    return O.matmul(Tensor._make(xp.asarray(m.astype(w.dtype))), rows)


def _bag_samples(src):
    n, d = src.integers(2, 5), src.integers(1, 3)
    ids = Tensor._make(np.array([src.integers(0, n - 1) for _ in range(6)], dtype=np.int64))
    offsets = Tensor._make(np.array([0, src.integers(0, 3), 4], dtype=np.int64))
    yield Sample((ids, src.tensor((n, d))), dict(offsets=offsets, mode=src.choice(["sum", "mean"])),
                 desc="1-D input with offsets (an empty bag allowed)")
    yield Sample((Tensor._make(ids._data.reshape(2, 3)), src.tensor((n, d), distinct=True)), dict(mode="max"),
                 desc="2-D input, max")
    yield Sample((ids, src.tensor((n, d))), dict(offsets=offsets, mode="sum", per_sample_weights=src.tensor((6,)),
                                                 padding_idx=0), desc="weighted, padding left out")


register("embedding_bag", samples=_bag_samples, namespace="gradlab.nn.functional",
         formula="dW[id] += sum over the bags holding id of M[bag, id] * dY[bag]   (Y = M @ W[ids])",
         torch=lambda torch, *a, **k: torch.nn.functional.embedding_bag(*a, **k))(embedding_bag)
