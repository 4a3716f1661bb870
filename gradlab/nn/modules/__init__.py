"""The layers of ``gradlab.nn``, one file per kind (as ``torch.nn.modules``):

* ``linear.py``: ``Identity``, ``Linear``, ``Bilinear``, ``LoRALinear``; ``embedding.py``: ``Embedding``;
* ``activation.py``: ``ReLU``, ``GELU``, ``Tanh``, ``Sigmoid``, ``SiLU``, ``Softmax``, ``LeakyReLU``, ``PReLU``...;
* ``dropout.py``: ``Dropout``, ``Dropout1d/2d/3d``, ``AlphaDropout``, ``FeatureAlphaDropout``;
* ``flatten.py``: ``Flatten``, ``Unflatten``; ``fold.py``: ``Fold``, ``Unfold``;
* ``conv.py``: ``Conv1d/2d/3d``, ``ConvTranspose1d/2d/3d`` (one base, ``_ConvNd``);
* ``pooling.py``: ``MaxPool``, ``AvgPool``, ``AdaptiveAvgPool``, ``AdaptiveMaxPool`` in 1, 2 and 3 d;
* ``padding.py``: ``ConstantPad``, ``ZeroPad``, ``ReflectionPad``, ``ReplicationPad``, ``CircularPad`` in 1-3 d;
* ``normalization.py``: ``BatchNorm1d/2d/3d``, ``InstanceNorm1d/2d/3d`` (one base, ``_NormBase``), ``LayerNorm``,
  ``GroupNorm``, ``RMSNorm``;
* ``distance.py``: ``CosineSimilarity``, ``PairwiseDistance``;
* ``loss.py``: ``CrossEntropyLoss``, ``NLLLoss``, ``MSELoss``, ``BCEWithLogitsLoss``, ``BCELoss``, ``L1Loss``,
  ``SmoothL1Loss``, ``HuberLoss``, ``KLDivLoss``;
* ``attention.py``: ``MultiheadAttention``; ``gpt.py``: ``TransformerBlock``, ``GPT`` (the course's model);
* ``transformer.py``: ``TransformerEncoderLayer``, ``TransformerEncoder``, ``TransformerDecoderLayer``,
  ``TransformerDecoder``, ``Transformer``;
* ``rnn.py``: ``RNN``, ``LSTM``, ``GRU`` and their cells;
* ``container.py``: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``, ``ParameterDict``.

The rest of ``torch.nn``'s layers (``CTCLoss``, ``EmbeddingBag``, lazy layers, ``DataParallel``, the rarer
losses, ``Upsample``, ``LPPool``, ``MaxUnpool``...) live in ``nn/coverage/modules/`` and are re-exported here.
"""
from .activation import (
    CELU, ELU, GELU, GLU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, Mish,
    PReLU, ReLU, ReLU6, RReLU, SELU, Sigmoid, SiLU, Softmax, Softmax2d, Softmin, Softplus, Softshrink, Softsign,
    Tanh, Tanhshrink, Threshold,
)
from .attention import MultiheadAttention
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .distance import CosineSimilarity, PairwiseDistance
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout
from .embedding import Embedding
from .flatten import Flatten, Unflatten
from .fold import Fold, Unfold
from .gpt import GPT, TransformerBlock
from .linear import Bilinear, Identity, Linear, LoRALinear
from .loss import (
    BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss, NLLLoss, SmoothL1Loss,
)
from .normalization import (
    BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LayerNorm,
    RMSNorm,
)
from .padding import (
    CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d, ConstantPad3d, ReflectionPad1d,
    ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, ZeroPad1d, ZeroPad2d,
    ZeroPad3d,
)
from .pooling import (
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,
    AdaptiveMaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d, MaxPool3d,
)
from .rnn import GRU, GRUCell, LSTM, LSTMCell, RNN, RNNBase, RNNCell, RNNCellBase
from .transformer import (
    Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer,
)
from ..coverage.modules import (
    ChannelShuffle, CosineEmbeddingLoss, CTCLoss, DataParallel, EmbeddingBag, GaussianNLLLoss, HingeEmbeddingLoss,
    LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d,
    LazyConvTranspose2d, LazyConvTranspose3d, LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d, LazyLinear,
    LocalResponseNorm, LPPool1d, LPPool2d, LPPool3d, MarginRankingLoss, MaxUnpool1d, MaxUnpool2d,
    MultiLabelMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss, PixelShuffle, PixelUnshuffle, PoissonNLLLoss,
    SoftMarginLoss, TripletMarginLoss, TripletMarginWithDistanceLoss, Upsample, UpsamplingBilinear2d,
    UpsamplingNearest2d, SyncBatchNorm,
)


__all__ = [
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d", "AlphaDropout", "AvgPool1d", "AvgPool2d", "AvgPool3d", "BatchNorm1d", "BatchNorm2d",
    "BatchNorm3d", "BCELoss", "BCEWithLogitsLoss", "Bilinear", "CELU", "ChannelShuffle", "CircularPad1d",
    "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "Conv1d", "Conv2d",
    "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "CosineEmbeddingLoss", "CosineSimilarity",
    "CrossEntropyLoss", "CTCLoss", "DataParallel", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "ELU",
    "Embedding", "EmbeddingBag", "FeatureAlphaDropout", "Flatten", "Fold", "GaussianNLLLoss", "GELU", "GLU", "GPT",
    "GroupNorm", "GRU", "GRUCell", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "HingeEmbeddingLoss",
    "HuberLoss", "Identity", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "KLDivLoss", "L1Loss",
    "LayerNorm", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d", "LazyConv3d",
    "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
    "LazyInstanceNorm3d", "LazyLinear", "LeakyReLU", "Linear", "LocalResponseNorm", "LogSigmoid", "LogSoftmax",
    "LoRALinear", "LPPool1d", "LPPool2d", "LPPool3d", "LSTM", "LSTMCell", "MarginRankingLoss", "MaxPool1d",
    "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "Mish", "ModuleDict", "ModuleList", "MSELoss",
    "MultiheadAttention", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "NLLLoss",
    "PairwiseDistance", "ParameterDict", "ParameterList", "PixelShuffle", "PixelUnshuffle", "PoissonNLLLoss",
    "PReLU", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReLU", "ReLU6", "ReplicationPad1d",
    "ReplicationPad2d", "ReplicationPad3d", "RMSNorm", "RNN", "RNNBase", "RNNCell", "RNNCellBase", "RReLU", "SELU",
    "Sequential", "Sigmoid", "SiLU", "SmoothL1Loss", "SoftMarginLoss", "Softmax", "Softmax2d", "Softmin",
    "Softplus", "Softshrink", "Softsign", "Tanh", "Tanhshrink", "Threshold", "Transformer", "TransformerBlock",
    "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer",
    "TripletMarginLoss", "TripletMarginWithDistanceLoss", "Unflatten", "Unfold", "Upsample", "UpsamplingBilinear2d",
    "UpsamplingNearest2d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "SyncBatchNorm",
]
# the files PyTorch programs import layers from (torch.nn.modules.<file>) where gradlab's file has another name
from . import (  # noqa: E402,F401
    batchnorm, channelshuffle, instancenorm, lazy, module, pixelshuffle, sparse, upsampling, utils,
)
