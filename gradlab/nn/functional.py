"""``gradlab.nn.functional`` (imported as ``F``): the neural-network functions.

Each is registered in the op registry (namespace ``gradlab.nn.functional``), so
the generic suite gradchecks it and compares it with PyTorch.
"""
from __future__ import annotations

from .. import ops as _ops
from ..ops import gelu, sigmoid, softplus, tanh  # noqa: F401 - the same functions as gradlab.gelu etc.
from ..ops.registry import REGISTRY as _REGISTRY, register as _register
from ..ops.softmax import log_softmax, softmax  # noqa: F401
from ._losses import binary_cross_entropy_with_logits, cross_entropy, mse_loss, nll_loss  # noqa: F401
from ..ops.conv import conv2d, fold, unfold  # noqa: F401
from ..ops.pad import pad  # noqa: F401
from ._basic import dropout, dropout1d, dropout2d, dropout3d, embedding, linear, one_hot  # noqa: F401
from ._norm import (  # noqa: F401
    batch_norm, cosine_similarity, group_norm, instance_norm, layer_norm, normalize, pairwise_distance, rms_norm,
)
from ._attention import scaled_dot_product_attention  # noqa: F401
from ..ops.pool import avg_pool2d, max_pool2d  # noqa: F401
from ..ops.quant import fake_quantize, fake_quantize_per_tensor_affine  # noqa: F401


# ---- activations with PyTorch's ``inplace`` flag. gradlab always returns a new tensor (an in-place
# activation would overwrite what backward needs); the flag is accepted so PyTorch code runs unchanged.
def relu(input, inplace=False):
    """``max(x, 0)`` (``gradlab.relu``); ``inplace`` is accepted and ignored."""
    return _ops.relu(input)


def silu(input, inplace=False):
    """``x * sigmoid(x)`` (``gradlab.silu``); ``inplace`` is accepted and ignored."""
    return _ops.silu(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``x`` if ``x > 0`` else ``negative_slope * x`` (``gradlab.leaky_relu``); ``inplace`` is accepted and ignored."""
    return _ops.leaky_relu(input, negative_slope)


for _fn in (relu, silu, leaky_relu):
    _info = _REGISTRY[_fn.__name__]
    _register(_fn.__name__, samples=_info.samples, formula=_info.formula, namespace="gradlab.nn.functional",
              elementwise=True, torch=_info.torch, atol=_info.atol, rtol=_info.rtol, eps=_info.eps)(_fn)
del _fn, _info
from ._activations import (  # noqa: F401,E402
    celu, elu, glu, hardshrink, hardsigmoid, hardswish, hardtanh, logsigmoid, mish, prelu, relu6, selu, softmin,
    softshrink, softsign, tanhshrink, threshold,
)
from ._losses_more import (  # noqa: F401,E402
    binary_cross_entropy, cosine_embedding_loss, hinge_embedding_loss, huber_loss, kl_div, l1_loss,
    margin_ranking_loss, multilabel_soft_margin_loss, poisson_nll_loss, smooth_l1_loss, soft_margin_loss,
    triplet_margin_loss,
)
from ._conv1d import (  # noqa: F401,E402
    adaptive_avg_pool1d, adaptive_avg_pool2d, avg_pool1d, conv1d, conv_transpose2d, max_pool1d,
)
from ._resample import interpolate, pixel_shuffle, pixel_unshuffle  # noqa: F401,E402
from ._functional_more import (  # noqa: F401,E402
    adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d, alpha_dropout, bilinear, conv_transpose1d,
    feature_alpha_dropout, gaussian_nll_loss,
    multi_margin_loss,
)
from ._embedding_bag import embedding_bag  # noqa: F401,E402
from ._functional_misc import (  # noqa: F401,E402
    channel_shuffle, local_response_norm, lp_pool1d, lp_pool2d, lp_pool3d, multilabel_margin_loss, pdist, rrelu,
    triplet_margin_with_distance_loss, upsample, upsample_bilinear, upsample_nearest,
)
from ._conv3d import adaptive_avg_pool3d, avg_pool3d, conv3d, conv_transpose3d, max_pool3d  # noqa: F401,E402
from ._ctc import ctc_loss  # noqa: F401,E402
from ._unpool import max_unpool1d, max_unpool2d  # noqa: F401,E402
from ._gumbel import gumbel_softmax  # noqa: F401,E402 - random: tested by statistics, not by the registry
