"""``MultiheadAttention``, with PyTorch's parameters, arguments and shapes.

Attention lets every position gather information from every other one::

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d) + mask) V

"Multi-head" runs ``num_heads`` of these side by side on ``embed_dim /
num_heads``-wide slices, so different heads can attend to different things.

**Shapes (``batch_first``).** As in PyTorch, the default ``batch_first=False``
means inputs are ``(seq, batch, embed)``; pass ``batch_first=True`` for
``(batch, seq, embed)`` (what ``TransformerBlock`` and ``GPT`` use). An
unbatched ``(seq, embed)`` input also works.

**Masks.** ``attn_mask`` (``(L, S)`` or ``(batch*heads, L, S)``): a bool mask
marks with ``True`` the pairs that may *not* attend; a float mask is added to
the scores. ``key_padding_mask`` (``(batch, S)``, ``True`` = padding) hides
keys. ``is_causal=True`` (or ``causal=True`` at construction, a gradlab
convenience) hides the future: position ``i`` sees positions ``<= i``.

Returns ``(output, weights)``; ``weights`` (averaged over heads unless
``average_attn_weights=False``) is ``None`` when ``need_weights=False``, which
takes the faster fused ``F.scaled_dot_product_attention`` path.
"""
from __future__ import annotations

import math

import numpy as np

from ... import checks as _c, ops as O
from ..._tensor import Tensor
from ...backend.device import xp_of
from ...errors import ArgumentError, ShapeError, fmt_shape
from ...ops._util import check_tensor
from .. import functional as F, init
from ..module import Module
from ._layer_helpers import new_param
from .linear import Linear


class MultiheadAttention(Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None, *, causal=False):
        super().__init__()
        _c.size(embed_dim, "MultiheadAttention", "embed_dim", 1), _c.size(num_heads, "MultiheadAttention", "num_heads", 1)
        _c.probability(dropout, "MultiheadAttention", "dropout")
        if embed_dim % num_heads:
            raise ArgumentError(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by num_heads "
                                f"({num_heads}); each head gets embed_dim // num_heads features")
        if add_bias_kv or add_zero_attn or (kdim not in (None, embed_dim)) or (vdim not in (None, embed_dim)):
            raise ArgumentError("MultiheadAttention: add_bias_kv, add_zero_attn and kdim/vdim != embed_dim are not "
                                "supported in gradlab; project keys and values to embed_dim first")
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.kdim = self.vdim = embed_dim
        self._qkv_same_embed_dim = True
        self.head_dim = embed_dim // num_heads
        self.dropout, self.batch_first, self.causal = float(dropout), batch_first, causal
        self.in_proj_weight = new_param(3 * embed_dim, embed_dim, dtype=dtype, device=device)
        if bias:
            self.in_proj_bias = new_param(3 * embed_dim, dtype=dtype, device=device)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        self._reset_parameters()

    def _reset_parameters(self):
        init.xavier_uniform_(self.in_proj_weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        is_causal = bool(is_causal or self.causal)
        for t, n in ((query, "query"), (key, "key"), (value, "value")):
            check_tensor(t, "MultiheadAttention", n)
        self_attn = query is key and key is value
        batched = query.ndim == 3
        if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
            raise ShapeError(f"MultiheadAttention: query, key and value must all be 2-D (unbatched) or 3-D, got "
                             f"{fmt_shape(query.shape)}, {fmt_shape(key.shape)}, {fmt_shape(value.shape)}")
        if query.shape[-1] != self.embed_dim:
            raise ShapeError(f"MultiheadAttention: the query's last dim is {query.shape[-1]} but embed_dim is "
                             f"{self.embed_dim} (shape {fmt_shape(query.shape)}; batch_first={self.batch_first})")
        if not batched:
            query, key, value = (O.unsqueeze(t, 0) for t in (query, key, value))
        elif not self.batch_first:  # (L, N, E) -> (N, L, E)
            query, key, value = (O.transpose(t, 0, 1) for t in (query, key, value))
        if self_attn:
            key = value = query
        n, L, E = query.shape
        S = key.shape[1]
        H, D = self.num_heads, self.head_dim
        # Three products against slices of the packed (3E, E) weight. (One product with the whole weight,
        # then slicing its output, computes the same; but slicing the big output costs more in backward,
        # where each slice's gradient is scattered into a zero array of the full output's size.)
        w, b = self.in_proj_weight, self.in_proj_bias
        q = F.linear(query, w[:E], None if b is None else b[:E])
        k = F.linear(key, w[E:2 * E], None if b is None else b[E:2 * E])
        v = F.linear(value, w[2 * E:], None if b is None else b[2 * E:])
        q = O.transpose(O.reshape(q, (n, L, H, D)), 1, 2)
        k = O.transpose(O.reshape(k, (n, S, H, D)), 1, 2)
        v = O.transpose(O.reshape(v, (n, S, H, D)), 1, 2)
        mask = self._mask(attn_mask, key_padding_mask, is_causal, n, L, S, query)
        p = self.dropout if self.training else 0.0
        if not need_weights:
            if mask is None and is_causal:
                out = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
            else:
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
            weights = None
        else:
            scores = O.matmul(q * (1.0 / math.sqrt(D)), O.transpose(k, -2, -1))
            if mask is not None:
                scores = scores + mask
            weights = F.softmax(scores, dim=-1)
            if p > 0:
                weights = F.dropout(weights, p, True)
            out = O.matmul(weights, v)
            if average_attn_weights:
                weights = O.mean(weights, dim=1)
            if not batched:
                weights = O.squeeze(weights, 0)
        out = O.reshape(O.transpose(out, 1, 2), (n, L, E))
        out = self.out_proj(out)
        if not batched:
            out = O.squeeze(out, 0)
        elif not self.batch_first:
            out = O.transpose(out, 0, 1)
        return out, weights

    def _mask(self, attn_mask, key_padding_mask, is_causal, n, L, S, like):
        """One additive float mask broadcastable to (N, H, L, S), or None."""
        xp = xp_of(like._data)
        dtype = like.dtype
        mask = None
        if attn_mask is not None:
            mask = _additive(attn_mask, dtype, xp)
            if mask.ndim == 3:
                if mask.shape[0] != n * self.num_heads:
                    raise ShapeError(f"MultiheadAttention: a 3-D attn_mask must have shape (batch*heads, L, S) = "
                                     f"({n * self.num_heads}, {L}, {S}), got {fmt_shape(mask.shape)}")
                mask = O.reshape(mask, (n, self.num_heads, L, S))
            elif tuple(mask.shape) != (L, S):
                raise ShapeError(f"MultiheadAttention: a 2-D attn_mask must have shape (L, S) = ({L}, {S}), got "
                                 f"{fmt_shape(mask.shape)}")
        elif is_causal:
            mask = Tensor._make(xp.triu(xp.full((L, S), -xp.inf, dtype=dtype), 1))
        if key_padding_mask is not None:
            kpm = _additive(key_padding_mask, dtype, xp)
            if tuple(kpm.shape) != (n, S):
                raise ShapeError(f"MultiheadAttention: key_padding_mask must have shape (batch, S) = ({n}, {S}), "
                                 f"got {fmt_shape(kpm.shape)}")
            kpm = O.reshape(kpm, (n, 1, 1, S))
            mask = kpm if mask is None else mask + kpm
        return mask

    def extra_repr(self):
        s = f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.batch_first:
            s += ", batch_first=True"
        if self.causal:
            s += ", causal=True"
        return s


def _additive(mask, dtype, xp):
    """A bool mask (True = blocked) becomes 0 / -inf; a float mask is used as is."""
    if isinstance(mask, Tensor):
        if mask.dtype == np.bool_:
            return Tensor._make(xp.where(mask._data, xp.asarray(-xp.inf, dtype=dtype), xp.asarray(0, dtype=dtype)))
        return mask if mask.dtype == dtype else O.to(mask, dtype)
    arr = xp.asarray(mask)
    if arr.dtype == np.bool_:
        arr = xp.where(arr, -xp.inf, 0.0)
    return Tensor._make(arr.astype(dtype))
