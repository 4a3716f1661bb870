"""The layers of ``gradlab.nn`` (one concept per file)."""
from .activation import GELU, Dropout, Flatten, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh  # noqa: F401
from .attention import MultiheadAttention  # noqa: F401
from .batchnorm import AdaptiveAvgPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d  # noqa: F401
from .container import ModuleDict, ModuleList, Sequential  # noqa: F401
from .conv import Conv2d, MaxPool2d  # noqa: F401
from .linear import Embedding, Identity, Linear, LoRALinear  # noqa: F401
from .normalization import LayerNorm  # noqa: F401
from .transformer import GPT, TransformerBlock  # noqa: F401
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss  # noqa: F401

__all__ = [
    "AdaptiveAvgPool2d", "AvgPool2d", "BatchNorm1d", "BatchNorm2d",
    "BCEWithLogitsLoss", "Conv2d", "CrossEntropyLoss", "Dropout", "Embedding", "Flatten", "GELU", "GPT", "Identity",
    "LayerNorm", "Linear", "LogSoftmax", "LoRALinear", "MaxPool2d", "MSELoss", "ModuleDict", "ModuleList",
    "MultiheadAttention", "NLLLoss", "ReLU", "Sequential", "Sigmoid", "SiLU", "Softmax", "Tanh", "TransformerBlock",
]
