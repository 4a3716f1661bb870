"""The layers of ``gradlab.nn`` (one concept per file)."""
from .activation import GELU, Dropout, Flatten, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh  # noqa: F401
from .attention import MultiheadAttention  # noqa: F401
from .batchnorm import BatchNorm1d, BatchNorm2d  # noqa: F401
from .container import ModuleDict, ModuleList, Sequential  # noqa: F401
from .conv import AdaptiveAvgPool2d, AvgPool2d, Conv2d, MaxPool2d  # noqa: F401
from .linear import Embedding, Identity, Linear, LoRALinear  # noqa: F401
from .normalization import LayerNorm  # noqa: F401
from .transformer import GPT, TransformerBlock  # noqa: F401
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss  # noqa: F401

__all__ = [
    "AdaptiveAvgPool2d", "AvgPool2d", "BatchNorm1d", "BatchNorm2d", "ParameterDict", "ParameterList",
    "BCEWithLogitsLoss", "Conv2d", "CrossEntropyLoss", "Dropout", "Embedding", "Flatten", "GELU", "GPT", "Identity",
    "LayerNorm", "Linear", "LogSoftmax", "LoRALinear", "MaxPool2d", "MSELoss", "ModuleDict", "ModuleList",
    "MultiheadAttention", "NLLLoss", "ReLU", "Sequential", "Sigmoid", "SiLU", "Softmax", "Tanh", "TransformerBlock",
]

# More of torch.nn's layers, over the existing functional ops (one concept per file).
from .activation_more import (  # noqa: E402
    CELU, ELU, GLU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid, Mish, PReLU, ReLU6, SELU,
    Softmax2d, Softmin, Softplus, Softshrink, Softsign, Tanhshrink, Threshold,
)
from .conv_more import (  # noqa: E402
    AdaptiveAvgPool1d, AvgPool1d, CircularPad1d, CircularPad2d, ConstantPad1d, ConstantPad2d, Conv1d,
    ConvTranspose2d, MaxPool1d, PixelShuffle, PixelUnshuffle, ReflectionPad1d, ReflectionPad2d, ReplicationPad1d,
    ReplicationPad2d, Upsample, UpsamplingBilinear2d, UpsamplingNearest2d, ZeroPad1d, ZeroPad2d,
)
from .loss_more import (  # noqa: E402
    BCELoss, CosineEmbeddingLoss, HingeEmbeddingLoss, HuberLoss, KLDivLoss, L1Loss, MarginRankingLoss,
    MultiLabelSoftMarginLoss, PoissonNLLLoss, SmoothL1Loss, SoftMarginLoss, TripletMarginLoss,
)
from .norm_more import (  # noqa: E402
    CosineSimilarity, Dropout1d, Dropout2d, Dropout3d, GroupNorm, InstanceNorm1d, InstanceNorm2d, PairwiseDistance,
    RMSNorm, Unflatten,
)
from .paramlist import ParameterDict, ParameterList  # noqa: E402
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: E402
from .transformer_encoder import TransformerEncoder, TransformerEncoderLayer  # noqa: E402
from .transformer_seq2seq import Transformer, TransformerDecoder, TransformerDecoderLayer  # noqa: E402
from .conv_more import ConvTranspose1d, Fold, Unfold  # noqa: E402
from .pool_bilinear import AdaptiveMaxPool1d, AdaptiveMaxPool2d, Bilinear  # noqa: E402
from .norm_more import AlphaDropout, BatchNorm3d, InstanceNorm3d  # noqa: E402
from .conv_more import CircularPad3d, ConstantPad3d, ReflectionPad3d, ReplicationPad3d, ZeroPad3d  # noqa: E402
from .loss_more import GaussianNLLLoss, MultiLabelMarginLoss, MultiMarginLoss, TripletMarginWithDistanceLoss  # noqa
from .misc_more import ChannelShuffle, EmbeddingBag, LocalResponseNorm, LPPool1d, LPPool2d, RReLU  # noqa: E402
from .conv3d import AdaptiveAvgPool3d, AvgPool3d, Conv3d, MaxPool3d  # noqa: E402
from .loss_more import CTCLoss  # noqa: E402
from .pool_bilinear import AdaptiveMaxPool3d, MaxUnpool1d, MaxUnpool2d  # noqa: E402
from .norm_more import FeatureAlphaDropout  # noqa: E402
from .misc_more import DataParallel, LPPool3d  # noqa: E402
from .lazy import LazyConv3d, LazyConvTranspose3d  # noqa: E402
from .conv3d import ConvTranspose3d  # noqa: E402
from .lazy import (  # noqa: E402
    LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d, LazyConvTranspose1d,
    LazyConvTranspose2d, LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d, LazyLinear,
)

__all__ += [
    "CELU", "ELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU", "LogSigmoid", "Mish",
    "PReLU", "ReLU6", "SELU", "Softmax2d", "Softmin", "Softplus", "Softshrink", "Softsign", "Tanhshrink", "Threshold",
    "AdaptiveAvgPool1d", "AvgPool1d", "CircularPad1d", "CircularPad2d", "ConstantPad1d", "ConstantPad2d", "Conv1d",
    "ConvTranspose2d", "MaxPool1d", "PixelShuffle", "PixelUnshuffle", "ReflectionPad1d", "ReflectionPad2d",
    "ReplicationPad1d", "ReplicationPad2d", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d", "ZeroPad1d",
    "ZeroPad2d", "BCELoss", "CosineEmbeddingLoss", "HingeEmbeddingLoss", "HuberLoss", "KLDivLoss", "L1Loss",
    "MarginRankingLoss", "MultiLabelSoftMarginLoss", "PoissonNLLLoss", "SmoothL1Loss", "SoftMarginLoss",
    "TripletMarginLoss", "CosineSimilarity", "Dropout1d", "Dropout2d", "Dropout3d", "GroupNorm", "InstanceNorm1d",
    "InstanceNorm2d", "PairwiseDistance", "RMSNorm", "Unflatten", "GRU", "LSTM",
    "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "TransformerEncoder", "TransformerEncoderLayer",
    "Transformer", "TransformerDecoder", "TransformerDecoderLayer", "Fold", "Unfold", "ConvTranspose1d",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "Bilinear", "AlphaDropout", "GaussianNLLLoss", "MultiMarginLoss",
    "MultiLabelMarginLoss", "TripletMarginWithDistanceLoss", "ChannelShuffle", "EmbeddingBag", "LocalResponseNorm",
    "LPPool1d", "LPPool2d", "RReLU", "BatchNorm3d", "InstanceNorm3d", "CircularPad3d", "ConstantPad3d",
    "ReflectionPad3d", "ReplicationPad3d", "ZeroPad3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
    "LazyConv1d", "LazyConv2d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyInstanceNorm1d",
    "LazyInstanceNorm2d", "LazyInstanceNorm3d", "LazyLinear", "AdaptiveAvgPool3d", "AvgPool3d", "Conv3d", "MaxPool3d",
    "CTCLoss", "RNNCellBase", "MaxUnpool1d", "MaxUnpool2d", "AdaptiveMaxPool3d", "FeatureAlphaDropout", "LPPool3d",
    "LazyConv3d", "LazyConvTranspose3d", "ConvTranspose3d", "DataParallel",
]
