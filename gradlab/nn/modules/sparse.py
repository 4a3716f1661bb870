"""``torch.nn.modules.sparse``'s names: ``Embedding`` (gradlab's ``embedding.py``) and ``EmbeddingBag``."""
from ._layer_helpers import rest_from as _rest_from
from .embedding import Embedding  # noqa: F401

__all__ = ["Embedding", "EmbeddingBag"]
__getattr__ = _rest_from(__name__, "gradlab.nn.coverage.modules.embedding_bag_layers")
