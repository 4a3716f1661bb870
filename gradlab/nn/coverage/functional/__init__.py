"""The rarer functions of ``torch.nn.functional`` (re-exported by ``gradlab.nn.functional``).

* ``ctc.py``: ``ctc_loss``;
* ``embedding_bag_functions.py``: ``embedding_bag``;
* ``gumbel.py``: ``gumbel_softmax`` (random: tested by statistics, not by the registry);
* ``losses.py``: ``cosine_embedding_loss``, ``gaussian_nll_loss``, ``hinge_embedding_loss``,
  ``margin_ranking_loss``, ``multi_margin_loss``, ``multilabel_margin_loss``, ``multilabel_soft_margin_loss``,
  ``poisson_nll_loss``, ``soft_margin_loss``, ``triplet_margin_loss``, ``triplet_margin_with_distance_loss``;
* ``normalization_functions.py``: ``local_response_norm``;
* ``pooling_functions.py``: ``lp_pool1d/2d/3d``, ``max_unpool1d/2d``;
* ``resample_functions.py``: ``interpolate``, ``upsample``, ``upsample_nearest``, ``upsample_bilinear``,
  ``pixel_shuffle``, ``pixel_unshuffle``, ``channel_shuffle``.
"""
from .ctc import ctc_loss
from .embedding_bag_functions import embedding_bag
from .gumbel import gumbel_softmax
from .losses import (
    cosine_embedding_loss, gaussian_nll_loss, hinge_embedding_loss, margin_ranking_loss, multi_margin_loss,
    multilabel_margin_loss, multilabel_soft_margin_loss, poisson_nll_loss, soft_margin_loss, triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from .normalization_functions import local_response_norm
from .pooling_functions import lp_pool1d, lp_pool2d, lp_pool3d, max_unpool1d, max_unpool2d
from .resample_functions import (
    channel_shuffle, interpolate, pixel_shuffle, pixel_unshuffle, upsample, upsample_bilinear, upsample_nearest,
)


__all__ = [
    "channel_shuffle", "cosine_embedding_loss", "ctc_loss", "embedding_bag", "gaussian_nll_loss", "gumbel_softmax",
    "hinge_embedding_loss", "interpolate", "local_response_norm", "lp_pool1d", "lp_pool2d", "lp_pool3d",
    "margin_ranking_loss", "max_unpool1d", "max_unpool2d", "multi_margin_loss", "multilabel_margin_loss",
    "multilabel_soft_margin_loss", "pixel_shuffle", "pixel_unshuffle", "poisson_nll_loss", "soft_margin_loss",
    "triplet_margin_loss", "triplet_margin_with_distance_loss", "upsample", "upsample_bilinear", "upsample_nearest",
]
