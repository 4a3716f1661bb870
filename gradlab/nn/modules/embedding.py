"""``Embedding``: a lookup table of learned vectors, one row per token id (``F.embedding``).
"""
from __future__ import annotations

from ... import checks as _c
from ...errors import ArgumentError
from .. import functional as F, init
from ..module import Module
from ..parameter import Parameter
from ._layer_helpers import new_param


class Embedding(Module):
    """A lookup table: row ``i`` of ``weight`` is the vector for token ``i``.

    Its gradient is a *scatter-add*: only the rows that were looked up get a
    gradient, summed over every position that used them. Default init ``N(0, 1)``;
    the row ``padding_idx`` (if given) starts at zero and gets no gradient.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None, max_norm=None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False, _weight=None,
                 _freeze: bool = False, device=None, dtype=None):
        super().__init__()
        self.num_embeddings = _c.size(num_embeddings, "Embedding", "num_embeddings")
        self.embedding_dim = _c.size(embedding_dim, "Embedding", "embedding_dim")
        if padding_idx is not None:
            if not -self.num_embeddings <= padding_idx < self.num_embeddings:
                raise ArgumentError(f"Embedding: padding_idx {padding_idx} must be within num_embeddings "
                                    f"{self.num_embeddings}")
            if padding_idx < 0:
                padding_idx += self.num_embeddings
        self.padding_idx = padding_idx
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = new_param(self.num_embeddings, self.embedding_dim, dtype=dtype, device=device,
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight._data[self.padding_idx] = 0

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, **kw):
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx=padding_idx, _weight=embeddings.detach(), _freeze=freeze, **kw)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        return s
