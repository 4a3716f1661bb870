"""``TransformerBlock`` (pre-norm) and a small ``GPT``: the course's final model.

A pre-norm block normalises *before* each sub-layer and adds the result back::

    x = x + attn(ln_1(x))        # tokens exchange information
    x = x + mlp(ln_2(x))         # each token is transformed on its own

The residual path ``x + ...`` is a gradient highway: backward sends the
gradient straight through the additions, so deep stacks still train.

``GPT`` = token embedding + position embedding, ``n_layer`` blocks with causal
attention, a final LayerNorm and a linear head to vocabulary logits; the head
can share (``tie_weights=True``) the token embedding matrix.
"""
from __future__ import annotations

import math

import numpy as np

from ... import ops as O
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...backend import random as _random
from ...errors import ArgumentError, ShapeError, fmt_shape
from ...factories import arange
from .. import functional as F, init
from ..module import Module
from .activation import GELU
from .attention import MultiheadAttention
from .container import ModuleList, Sequential
from .dropout import Dropout
from .embedding import Embedding
from .linear import Linear
from .normalization import LayerNorm


class TransformerBlock(Module):
    """A pre-norm transformer block over ``(batch, seq, d_model)`` inputs."""

    def __init__(self, d_model, n_head, dim_feedforward=None, dropout=0.0, causal=True, bias=True,
                 activation="gelu", device=None, dtype=None):
        super().__init__()
        dim_feedforward = dim_feedforward or 4 * d_model
        kw = dict(device=device, dtype=dtype)
        self.causal = causal
        self.ln_1 = LayerNorm(d_model, bias=bias, **kw)
        self.attn = MultiheadAttention(d_model, n_head, dropout=dropout, bias=bias, batch_first=True, **kw)
        self.ln_2 = LayerNorm(d_model, bias=bias, **kw)
        act = GELU(approximate="tanh") if activation == "gelu_tanh" else GELU() if activation == "gelu" else activation
        if not isinstance(act, Module):
            raise ArgumentError(f"TransformerBlock: activation must be 'gelu', 'gelu_tanh' or a Module, got {act!r}")
        self.mlp = Sequential(Linear(d_model, dim_feedforward, bias=bias, **kw), act,
                              Linear(dim_feedforward, d_model, bias=bias, **kw))
        self.dropout = Dropout(dropout)

    def forward(self, x, attn_mask=None, key_padding_mask=None):
        h = self.ln_1(x)
        a, _ = self.attn(h, h, h, need_weights=False, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                         is_causal=self.causal)
        x = x + self.dropout(a)
        x = x + self.dropout(self.mlp(self.ln_2(x)))
        return x


class GPT(Module):
    """A small decoder-only transformer that predicts the next token.

    ``model(idx)`` with ``idx`` of shape ``(batch, T)`` (integer tokens, ``T <=
    block_size``) returns logits ``(batch, T, vocab_size)``; ``model(idx,
    targets)`` returns ``(logits, loss)`` with the mean cross-entropy over the
    positions whose target is not ``-100`` (``ignore_index``, as in PyTorch).

    The MLP uses GPT-2's tanh approximation of GELU (``activation="gelu_tanh"``;
    pass ``"gelu"`` for the exact one). Initialisation follows GPT-2: weights ``N(0, 0.02)``, biases zero, and the
    projections back into the residual stream scaled by ``1/sqrt(2 * n_layer)``
    so the residual sum does not grow with depth.
    """

    def __init__(self, vocab_size, block_size, n_layer=4, n_head=4, n_embd=128, dropout=0.0, tie_weights=True,
                 bias=True, dim_feedforward=None, activation="gelu_tanh", device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.vocab_size, self.block_size = vocab_size, block_size
        self.n_layer, self.n_head, self.n_embd = n_layer, n_head, n_embd
        self.tie_weights = tie_weights
        self.tok_emb = Embedding(vocab_size, n_embd, **kw)
        self.pos_emb = Embedding(block_size, n_embd, **kw)
        self.drop = Dropout(dropout)
        self.blocks = ModuleList([TransformerBlock(n_embd, n_head, dim_feedforward, dropout, True, bias, activation, **kw)
                                  for _ in range(n_layer)])
        self.ln_f = LayerNorm(n_embd, bias=bias, **kw)
        self.head = Linear(n_embd, vocab_size, bias=False, **kw)
        self._init_weights()
        if tie_weights:
            self.head.weight = self.tok_emb.weight

    def _init_weights(self):
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                init.zeros_(p)
            elif ".ln_" in name or name.startswith("ln_f"):
                init.ones_(p)
            else:
                std = 0.02
                if name.endswith("out_proj.weight") or name.endswith("mlp.2.weight"):
                    std = 0.02 / math.sqrt(2 * self.n_layer)
                init.normal_(p, 0.0, std)

    def forward(self, idx, targets=None):
        if idx.ndim != 2:
            raise ShapeError(f"GPT: idx must have shape (batch, T), got {fmt_shape(idx.shape)}")
        T = idx.shape[1]
        if T > self.block_size:
            raise ShapeError(f"GPT: sequence length {T} exceeds block_size {self.block_size}; crop the input to "
                             f"the last {self.block_size} tokens")
        pos = arange(T, device=idx.device)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        if targets is None:
            return logits
        loss = F.cross_entropy(O.reshape(logits, (-1, self.vocab_size)), O.reshape(targets, (-1,)),
                               ignore_index=-100)
        return logits, loss

    @no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, do_sample=True, top_k=None):
        """Extend ``idx`` (batch, T) by ``max_new_tokens`` tokens, one at a time.

        Each step feeds the last ``block_size`` tokens, takes the logits at the
        last position, divides by ``temperature`` (lower = more conservative),
        optionally keeps the ``top_k`` most likely tokens, and samples (with the
        generator ``gradlab.manual_seed`` seeds) or, with ``do_sample=False``,
        takes the most likely token (greedy).
        """
        from ...backend.device import CPU, to_device_array, to_host
        dev = idx.device if isinstance(idx, Tensor) else CPU  # sampling runs on the host, the model on its device
        out = to_host(idx._data if isinstance(idx, Tensor) else np.asarray(idx)).astype(np.int64)
        gen = _random.generator()
        for _ in range(int(max_new_tokens)):
            ctx = Tensor._make(to_device_array(out[:, -self.block_size:], dev))
            logits = to_host(self(ctx)._data[:, -1, :]).astype(np.float64)
            if not do_sample:
                nxt = logits.argmax(-1)
            else:
                logits = logits / max(float(temperature), 1e-8)
                if top_k is not None:
                    k = min(int(top_k), logits.shape[-1])
                    kth = np.sort(logits, axis=-1)[:, -k][:, None]
                    logits = np.where(logits < kth, -np.inf, logits)
                probs = np.exp(logits - logits.max(-1, keepdims=True))
                probs /= probs.sum(-1, keepdims=True)
                u = gen.random((probs.shape[0], 1))
                nxt = np.minimum((np.cumsum(probs, -1) < u).sum(-1), probs.shape[-1] - 1)
            out = np.concatenate([out, nxt[:, None].astype(np.int64)], axis=1)
        return Tensor._make(to_device_array(out, dev))

    def extra_repr(self):
        return (f"vocab_size={self.vocab_size}, block_size={self.block_size}, n_layer={self.n_layer}, "
                f"n_head={self.n_head}, n_embd={self.n_embd}, tie_weights={self.tie_weights}")
