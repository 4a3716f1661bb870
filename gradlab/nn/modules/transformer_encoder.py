"""``TransformerEncoderLayer`` and ``TransformerEncoder``, as in PyTorch (over ``MultiheadAttention``).

One encoder layer is two sub-blocks, each wrapped in a residual connection and a LayerNorm:

* self-attention: every position mixes in information from the other positions;
* feed-forward: ``linear2(dropout(activation(linear1(x))))``, applied to each position alone.

``norm_first=False`` (the original "post-norm" transformer) computes
``x = norm1(x + sa(x)); x = norm2(x + ff(x))``; ``norm_first=True`` ("pre-norm", what GPT-2
uses and what trains more stably when deep) computes ``x = x + sa(norm1(x)); x = x + ff(norm2(x))``.
Parameter names match PyTorch (``self_attn.in_proj_weight``, ``linear1.weight``, ``norm1.bias``...),
so a PyTorch ``state_dict`` loads unchanged.
"""
from __future__ import annotations

import copy

from ...errors import ArgumentError
from .. import functional as F
from ..module import Module
from .activation import Dropout
from .attention import MultiheadAttention
from .container import ModuleList
from .linear import Linear
from .normalization import LayerNorm

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


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
        if isinstance(activation, str):
            if activation not in _ACTIVATIONS:
                raise ArgumentError(f"TransformerEncoderLayer: activation should be 'relu' or 'gelu' (or a "
                                    f"callable), not {activation!r}")
            activation = _ACTIVATIONS[activation]
        elif not callable(activation):
            raise ArgumentError(f"TransformerEncoderLayer: activation must be 'relu', 'gelu' or a callable, got "
                                f"{type(activation).__name__}")
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
        if not isinstance(encoder_layer, Module):
            raise ArgumentError(f"TransformerEncoder: encoder_layer must be a Module (e.g. a "
                                f"TransformerEncoderLayer), got {type(encoder_layer).__name__}")
        if int(num_layers) < 1:
            raise ArgumentError(f"TransformerEncoder: num_layers must be at least 1, got {num_layers}")
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(int(num_layers))])
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
