"""``EmbeddingBag``: an ``Embedding`` followed by a sum, mean or max over each bag of ids (``F.embedding_bag``).
"""
from __future__ import annotations

from .... import checks as _c
from ....errors import ArgumentError, ShapeError, fmt_shape
from ... import functional as F, init
from ...module import Module
from ...modules._layer_helpers import new_param
from ...parameter import Parameter


class EmbeddingBag(Module):
    """An ``Embedding`` followed by a reduction (``mode`` ``'mean'``, ``'sum'`` or ``'max'``) over each bag of ids.

    ``bag(ids, offsets)`` with a 1-D ``ids`` and the start of each bag in ``offsets``, or ``bag(ids_2d)`` with one
    bag per row: the model of a bag-of-words text classifier. Init ``N(0, 1)`` (the ``padding_idx`` row 0).
    """

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                 mode="mean", sparse=False, _weight=None, include_last_offset=False, padding_idx=None, device=None,
                 dtype=None):
        super().__init__()
        if mode not in ("sum", "mean", "max"):
            raise ArgumentError(f"EmbeddingBag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
        self.num_embeddings = _c.size(num_embeddings, "EmbeddingBag", "num_embeddings")
        self.embedding_dim = _c.size(embedding_dim, "EmbeddingBag", "embedding_dim")
        if padding_idx is not None:
            padding_idx = _c.size(padding_idx, "EmbeddingBag", "padding_idx", None)
            if not -self.num_embeddings <= padding_idx < self.num_embeddings:
                raise ArgumentError(f"EmbeddingBag: padding_idx {padding_idx} must be within num_embeddings "
                                    f"{self.num_embeddings}")
            padding_idx %= self.num_embeddings
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        self.mode, self.sparse, self.include_last_offset, self.padding_idx = mode, sparse, include_last_offset, \
            padding_idx
        if _weight is None:
            self.weight = new_param(self.num_embeddings, self.embedding_dim, dtype=dtype, device=device)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (self.num_embeddings, self.embedding_dim):
                raise ShapeError(f"EmbeddingBag: _weight {fmt_shape(_weight.shape)} must have shape "
                                 f"({self.num_embeddings}, {self.embedding_dim})")
            self.weight = Parameter(_weight)

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight._data[self.padding_idx] = 0

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                               self.mode, self.sparse, per_sample_weights, self.include_last_offset,
                               self.padding_idx)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                        mode="mean", sparse=False, include_last_offset=False, padding_idx=None):
        """A bag over a given ``(num_embeddings, embedding_dim)`` matrix (frozen unless ``freeze=False``)."""
        if embeddings.ndim != 2:
            raise ShapeError(f"EmbeddingBag.from_pretrained: embeddings must be 2-D, got {fmt_shape(embeddings.shape)}")
        bag = cls(embeddings.shape[0], embeddings.shape[1], max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                  embeddings, include_last_offset, padding_idx)
        bag.weight.requires_grad = not freeze
        return bag

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s
