"""The rarer layers of ``torch.nn`` (re-exported by ``gradlab.nn`` and ``gradlab.nn.modules``).

* ``embedding_bag_layers.py``: ``EmbeddingBag``;
* ``lazy_layers.py``: ``LazyLinear``, ``LazyConv1d/2d/3d``, ``LazyConvTranspose1d/2d/3d``, ``LazyBatchNorm1d/2d/3d``,
  ``LazyInstanceNorm1d/2d/3d`` (the input size read from the first batch);
* ``loss_layers.py``: ``CTCLoss``, ``CosineEmbeddingLoss``, ``GaussianNLLLoss``, ``HingeEmbeddingLoss``,
  ``MarginRankingLoss``, ``MultiLabelMarginLoss``, ``MultiLabelSoftMarginLoss``, ``MultiMarginLoss``,
  ``PoissonNLLLoss``, ``SoftMarginLoss``, ``TripletMarginLoss``, ``TripletMarginWithDistanceLoss``;
* ``normalization_layers.py``: ``LocalResponseNorm``, ``SyncBatchNorm``;
* ``parallel_layers.py``: ``DataParallel``, ``DistributedDataParallel`` (pass-throughs);
* ``pooling_layers.py``: ``LPPool1d/2d/3d``, ``MaxUnpool1d/2d``;
* ``resample_layers.py``: ``Upsample``, ``UpsamplingNearest2d``, ``UpsamplingBilinear2d``, ``PixelShuffle``,
  ``PixelUnshuffle``, ``ChannelShuffle``.
"""
from .embedding_bag_layers import EmbeddingBag
from .lazy_layers import (
    LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d,
    LazyConvTranspose2d, LazyConvTranspose3d, LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d, LazyLinear,
)
from .loss_layers import (
    CosineEmbeddingLoss, CTCLoss, GaussianNLLLoss, HingeEmbeddingLoss, MarginRankingLoss, MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss, MultiMarginLoss, PoissonNLLLoss, SoftMarginLoss, TripletMarginLoss,
    TripletMarginWithDistanceLoss,
)
from .normalization_layers import LocalResponseNorm, SyncBatchNorm
from .parallel_layers import DataParallel, DistributedDataParallel
from .pooling_layers import LPPool1d, LPPool2d, LPPool3d, MaxUnpool1d, MaxUnpool2d
from .resample_layers import ChannelShuffle, PixelShuffle, PixelUnshuffle, Upsample, UpsamplingBilinear2d, UpsamplingNearest2d


__all__ = [
    "ChannelShuffle", "CosineEmbeddingLoss", "CTCLoss", "DataParallel", "EmbeddingBag", "GaussianNLLLoss",
    "HingeEmbeddingLoss", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d",
    "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyInstanceNorm1d",
    "LazyInstanceNorm2d", "LazyInstanceNorm3d", "LazyLinear", "LocalResponseNorm", "SyncBatchNorm", "DistributedDataParallel", "LPPool1d", "LPPool2d", "LPPool3d",
    "MarginRankingLoss", "MaxUnpool1d", "MaxUnpool2d", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss",
    "MultiMarginLoss", "PixelShuffle", "PixelUnshuffle", "PoissonNLLLoss", "SoftMarginLoss", "TripletMarginLoss",
    "TripletMarginWithDistanceLoss", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d",
]
