"""PyTorch's transformer layers (over ``MultiheadAttention``): ``TransformerEncoderLayer``,
``TransformerEncoder``, ``TransformerDecoderLayer``, ``TransformerDecoder`` and ``Transformer``
(encoder-decoder). (The course's own pre-norm block and ``GPT`` are in ``gpt.py``.)

One encoder layer is two sub-blocks, each wrapped in a residual connection and a LayerNorm:

* self-attention: every position mixes in information from the other positions;
* feed-forward: ``linear2(dropout(activation(linear1(x))))``, applied to each position alone.

``norm_first=False`` (the original "post-norm" transformer) computes
``x = norm1(x + sa(x)); x = norm2(x + ff(x))``; ``norm_first=True`` ("pre-norm", what GPT-2
uses and what trains more stably when deep) computes ``x = x + sa(norm1(x)); x = x + ff(norm2(x))``.
Parameter names match PyTorch (``self_attn.in_proj_weight``, ``linear1.weight``, ``norm1.bias``...),
so a PyTorch ``state_dict`` loads unchanged.

A decoder layer adds a third sub-block between self-attention and feed-forward:
*cross-attention*, where the target positions (queries) read the encoder's output
``memory`` (keys and values). Decoder self-attention is usually causal (``tgt_mask =
Transformer.generate_square_subsequent_mask(T)``), so position ``i`` cannot peek at later
target tokens while training on whole sequences at once.

Parameter names match PyTorch (``multihead_attn.in_proj_weight``, ``norm3.weight``...).
"""
from __future__ import annotations

import copy
import math

from ... import checks as _c, ops as O
from ...backend import dtypes as _dt
from ...errors import ArgumentError, ShapeError, fmt_shape
from ...factories import full
from .. import functional as F, init
from ..module import Module
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .normalization import LayerNorm

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _activation(activation, cls):
    """The feed-forward nonlinearity of an encoder or decoder layer: ``'relu'``, ``'gelu'`` or any callable."""
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise ArgumentError(f"{cls}: activation should be 'relu' or 'gelu' (or a callable), not {activation!r}")
        return _ACTIVATIONS[activation]
    if not callable(activation):
        raise ArgumentError(f"{cls}: activation must be 'relu', 'gelu' or a callable, got {type(activation).__name__}")
    return activation


def _clones(layer, num_layers, cls, kind):
    """``num_layers`` deep copies of ``layer`` (what ``TransformerEncoder`` and ``TransformerDecoder`` stack).

    Deep copies, not the same object ``num_layers`` times: each layer gets its own parameters, which start
    equal to ``layer``'s (as in PyTorch). ``kind`` (``"encoder"``, ``"decoder"``) names the argument in errors.
    """
    if not isinstance(layer, Module):
        raise ArgumentError(f"{cls}: {kind}_layer must be a Module (e.g. a "
                            f"Transformer{kind.capitalize()}Layer), got {type(layer).__name__}")
    if int(num_layers) < 1:
        raise ArgumentError(f"{cls}: num_layers must be at least 1, got {num_layers}")
    return ModuleList([copy.deepcopy(layer) for _ in range(int(num_layers))])


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward network, each with a residual connection and LayerNorm.

    Input ``(S, N, d_model)`` (``(N, S, d_model)`` with ``batch_first=True``; or unbatched
    ``(S, d_model)``). ``src_mask`` ``(S, S)`` hides pairs (bool ``True`` = blocked, or added floats);
    ``src_key_padding_mask`` ``(N, S)`` hides padded positions; ``is_causal=True`` lets position ``i``
    see only positions ``<= i`` (used when no ``src_mask`` is given).
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        _c.size(dim_feedforward, "TransformerEncoderLayer", "dim_feedforward", 1)
        _c.probability(dropout, "TransformerEncoderLayer", "dropout")
        activation = _activation(activation, "TransformerEncoderLayer")
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = activation  # a function, or a Module (then registered as a submodule)
        self.batch_first = batch_first

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` applied in turn (each its own parameters), then ``norm``.

    The copies are made with ``copy.deepcopy``, so they start with *identical* weights, as in PyTorch.
    """

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers, "TransformerEncoder", "encoder")
        self.num_layers = int(num_layers)
        self.norm = norm
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        if self.norm is not None:
            x = self.norm(x)
        return x


class TransformerDecoderLayer(Module):
    """Self-attention over the target, cross-attention to ``memory``, then feed-forward; each with a residual
    connection and a LayerNorm (after it, or before it with ``norm_first=True``)."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                                 **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1, self.dropout2, self.dropout3 = Dropout(dropout), Dropout(dropout), Dropout(dropout)
        self.activation = _activation(activation, "TransformerDecoderLayer")
        self.batch_first = batch_first

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal,
                           need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x


class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer`` applied in turn to ``(tgt, memory)``, then ``norm``."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers, "TransformerDecoder", "decoder")
        self.num_layers = int(num_layers)
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        if self.norm is not None:
            x = self.norm(x)
        return x


class Transformer(Module):
    """The encoder-decoder transformer of "Attention Is All You Need": ``model(src, tgt)`` encodes ``src`` into
    ``memory`` and decodes ``tgt`` against it. Inputs are already embedded: ``(S, N, d_model)`` and
    ``(T, N, d_model)`` (batch first with ``batch_first=True``). Every matrix starts ``xavier_uniform_``.
    """

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
                 dropout=0.1, activation="relu", custom_encoder=None, custom_decoder=None, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)

        def stack(custom, layer_cls, stack_cls, num_layers):  # the encoder and the decoder are built alike
            if custom is not None:
                return custom
            layer = layer_cls(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
                              norm_first, bias, **kw)
            return stack_cls(layer, num_layers, LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))

        self.encoder = stack(custom_encoder, TransformerEncoderLayer, TransformerEncoder, num_encoder_layers)
        self.decoder = stack(custom_decoder, TransformerDecoderLayer, TransformerDecoder, num_decoder_layers)
        self._reset_parameters()
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def _reset_parameters(self):
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        batched = src.ndim == 3
        bdim = 0 if self.batch_first else 1
        if batched and (tgt.ndim != 3 or src.shape[bdim] != tgt.shape[bdim]):
            raise ShapeError(f"Transformer: src {fmt_shape(src.shape)} and tgt {fmt_shape(tgt.shape)} must have the "
                             f"same batch size (dim {bdim}; batch_first={self.batch_first})")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ShapeError(f"Transformer: the feature number of src {fmt_shape(src.shape)} and tgt "
                             f"{fmt_shape(tgt.shape)} must equal d_model = {self.d_model}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """A ``(sz, sz)`` float mask: 0 on and below the diagonal, ``-inf`` above (position i sees j <= i)."""
        dt = _dt.as_dtype(dtype) if dtype is not None else _dt.get_default_dtype()
        m = full((sz, sz), -math.inf, dtype=dt, device=device)
        return O.triu(m, 1)
