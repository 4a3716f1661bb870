"""``gradlab.nn.functional`` (imported as ``F``): the neural-network functions.

Each is registered in the op registry (namespace ``gradlab.nn.functional``), so
the generic suite gradchecks it and compares it with PyTorch.
"""
from __future__ import annotations

from ..ops import relu, sigmoid, tanh  # noqa: F401 - the same functions as gradlab.relu etc.
from ..ops.softmax import log_softmax, softmax  # noqa: F401
from ._losses import binary_cross_entropy_with_logits, cross_entropy, mse_loss, nll_loss  # noqa: F401
from ..ops.conv import conv2d, fold, unfold  # noqa: F401
from ..ops.pad import pad  # noqa: F401
from ._basic import dropout, embedding, linear, one_hot  # noqa: F401
from ._norm import layer_norm  # noqa: F401
from ._attention import scaled_dot_product_attention  # noqa: F401
from ..ops.pool import avg_pool2d, max_pool2d  # noqa: F401
from ..ops.quant import fake_quantize, fake_quantize_per_tensor_affine  # noqa: F401
