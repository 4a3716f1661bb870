"""``scaled_dot_product_attention``: the heart of a transformer, as a visible composite.

    scores = Q @ K^T * scale            (scale = 1/sqrt(E) by default)
    scores = masked(scores)             (causal: a query never sees later keys)
    A      = softmax(scores, dim=-1)    (each query's weights over the keys sum to 1)
    out    = dropout(A) @ V

Every line is an ordinary gradlab op, so ``show_graph(out)`` draws the whole
computation and the gradient comes from the ops' own rules. Masked scores are
set to ``-inf`` so that ``exp`` makes their weight exactly 0; a query whose
every key is masked gets all-zero weights (not ``nan``), as in PyTorch.
"""
from __future__ import annotations

import math

import numpy as np

from .. import checks as _c, ops as O
from .._tensor import Tensor
from ..backend import dtypes as _dt, xp_of
from ..errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from ..ops._util import check_tensor
from ..ops.indexing import masked_fill
from ..ops.registry import Sample, register
from ..ops.softmax_ops import softmax
from ._dropout import dropout
from ._register import NS


def _check(q, k, v, attn_mask):
    for name, t in (("query", q), ("key", k), ("value", v)):
        if t.ndim < 2:
            raise ShapeError(f"scaled_dot_product_attention: {name} must be (..., L, E), got {fmt_shape(t.shape)}")
        if not _dt.is_floating(t.dtype):
            raise DTypeError(f"scaled_dot_product_attention: {name} has dtype {_dt.dtype_name(t.dtype)}; "
                             "it needs a floating tensor")
    if q.shape[-1] != k.shape[-1]:
        raise ShapeError(f"scaled_dot_product_attention: query {fmt_shape(q.shape)} and key {fmt_shape(k.shape)} "
                         f"must have the same embedding size (last dim): {q.shape[-1]} vs {k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise ShapeError(f"scaled_dot_product_attention: key {fmt_shape(k.shape)} and value {fmt_shape(v.shape)} "
                         f"must have the same sequence length (dim -2): {k.shape[-2]} vs {v.shape[-2]}")
    if attn_mask is not None:
        scores = tuple(np.broadcast_shapes(q.shape[:-2], k.shape[:-2])) + (q.shape[-2], k.shape[-2])
        try:
            np.broadcast_shapes(tuple(attn_mask.shape), scores)
        except ValueError:
            raise ShapeError(f"scaled_dot_product_attention: attn_mask {fmt_shape(attn_mask.shape)} does not "
                             f"broadcast to the scores' shape {fmt_shape(scores)} (..., L, S)") from None


def _repeat_heads(t, r):
    """``(..., H, S, E) -> (..., H*r, S, E)``, each head repeated ``r`` times in a row (repeat_interleave)."""
    s = t.shape
    t = O.broadcast_to(O.unsqueeze(t, -3), s[:-2] + (r,) + s[-2:])
    return O.reshape(t, s[:-3] + (s[-3] * r,) + s[-2:])


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """``softmax(Q K^T * scale + mask) @ V`` over the last two dims; Q is (..., L, E), K (..., S, E), V (..., S, Ev).

    ``attn_mask``: bool (True = may attend) or float (added to the scores), broadcasting to (..., L, S).
    ``is_causal``: query i attends to keys 0..i only. ``enable_gqa``: key/value may have fewer heads
    (dim -3) than query; each is then shared by a group of query heads.
    """
    op = "scaled_dot_product_attention"
    q, k, v = (check_tensor(t, op, n) for t, n in ((query, "query"), (key, "key"), (value, "value")))
    mask = None if attn_mask is None else check_tensor(attn_mask, op, "attn_mask")
    is_causal = _c.flag(is_causal, op, "is_causal")
    if mask is not None and mask.dtype != _dt.bool_ and mask.dtype != q.dtype and not _dt.is_floating(mask.dtype):
        raise DTypeError(f"{op}: attn_mask has dtype {_dt.dtype_name(mask.dtype)}; it must be bool (True = may "
                         f"attend) or floating (added to the scores). An integer mask would be added as a bias, not "
                         f"mask: use attn_mask.bool()")
    _check(q, k, v, mask)
    if is_causal and mask is not None:
        raise ArgumentError(f"{op}: pass either attn_mask or is_causal=True, not both")
    if enable_gqa and q.ndim >= 3 and k.shape[-3] != q.shape[-3]:
        hq, hk = q.shape[-3], k.shape[-3]
        if hq % hk or v.shape[-3] != hk:
            raise ShapeError(f"{op}: with enable_gqa the query heads ({hq}) must be a multiple of the key/value "
                             f"heads ({hk}, {v.shape[-3]})")
        k, v = _repeat_heads(k, hq // hk), _repeat_heads(v, hq // hk)
    try:  # (here, not deep in the matmuls below, so that the message names this function and the inputs)
        np.broadcast_shapes(tuple(q.shape[:-2]), tuple(k.shape[:-2]), tuple(v.shape[:-2]))
    except ValueError:
        raise ShapeError(f"{op}: the batch dims of query {fmt_shape(q.shape)}, key {fmt_shape(k.shape)} and value "
                         f"{fmt_shape(v.shape)} do not broadcast (each pair of sizes must match or one be 1)") from None
    L, S = q.shape[-2], k.shape[-2]
    sc = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    scores = O.matmul(q, k.mT) * sc
    xp = xp_of(scores._data)
    if is_causal:  # -inf above the diagonal: key j > query i (masked_fill's copy-and-fill, the fastest here)
        scores = masked_fill(scores, Tensor._make(xp.triu(xp.ones((L, S), dtype=bool), 1)), float("-inf"))
    elif mask is not None:
        if mask.dtype == _dt.bool_:
            scores = O.where(mask, scores, float("-inf"))
        else:
            scores = scores + mask
    dead = None
    if mask is not None and not is_causal:  # (a causal row i keeps keys 0..i: never fully masked)
        # rows where every key is masked: softmax would give 0/0; PyTorch gives zero weights instead.
        # (Such a row starts with -inf: the full-size check only runs when some first key is masked;
        # a causal float mask never masks it. The full check cost 0.3 ms on (32, 4, 64, 64).)
        d = scores._data
        rows = xp.all(xp.isneginf(d), axis=-1, keepdims=True) if S == 0 or xp.isneginf(d[..., :1]).any() else None
        if rows is not None and rows.any():
            dead = Tensor._make(rows)
            scores = O.where(dead, 0.0, scores)
    attn = softmax(scores, dim=-1)
    if dead is not None:
        attn = O.where(dead, 0.0, attn)
    if dropout_p > 0:
        attn = dropout(attn, dropout_p, training=True)
    return O.matmul(attn, v)


def _sdpa_samples(src):
    b = src.shape(0, 2, 1, 2)
    L, S, E, Ev = src.integers(1, 3), src.integers(1, 3), src.integers(1, 3), src.integers(1, 3)
    yield Sample((src.tensor(b + (L, E)), src.tensor(b + (S, E)), src.tensor(b + (S, Ev))), desc="plain")
    yield Sample((src.tensor((1, 3, 2)), src.tensor((1, 3, 2)), src.tensor((1, 3, 2))), dict(is_causal=True),
                 desc="causal")
    m = Tensor._make(src.rng.random((L, S)) > 0.4)
    yield Sample((src.tensor((2, L, E)), src.tensor((2, S, E)), src.tensor((2, S, Ev))), dict(attn_mask=m),
                 desc="bool mask (fully masked rows possible)")
    yield Sample((src.tensor((L, E)), src.tensor((S, E)), src.tensor((S, Ev))),
                 dict(attn_mask=src.tensor((L, S), requires_grad=False), scale=0.7), desc="float mask, scale")
    yield Sample((src.tensor((1, 2, 2, 2)), src.tensor((1, 1, 2, 2)), src.tensor((1, 1, 2, 1))),
                 dict(enable_gqa=True), desc="grouped-query attention")


register("scaled_dot_product_attention", samples=_sdpa_samples, namespace=NS,
         formula="composite: matmul -> scale -> mask -> softmax -> dropout -> matmul (each op's own rule)",
         torch=lambda torch, *a, **k: torch.nn.functional.scaled_dot_product_attention(*a, **k))(
    scaled_dot_product_attention)
