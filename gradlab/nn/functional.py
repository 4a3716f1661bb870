"""``gradlab.nn.functional`` (imported as ``F``): the neural-network functions, by kind.

This file only gathers them; each lives in a file named by what it holds:

* activations (``relu``, ``elu``, ``hardtanh``, ``glu``, ``prelu``, ...): ``nn/_activation.py``;
  ``gelu``, ``sigmoid``, ``tanh``, ``softplus``, ``softmax``, ``log_softmax`` are ``gradlab.ops``' own;
* ``linear``, ``bilinear``: ``nn/_linear.py``;
* ``dropout``, ``dropout1d/2d/3d``, ``alpha_dropout``, ``feature_alpha_dropout``: ``nn/_dropout.py``;
* ``embedding``, ``one_hot``: ``nn/_embedding.py``;
* ``conv1d``, ``conv3d``, ``conv_transpose1d/2d/3d``: ``nn/_conv.py`` (``conv2d``, ``fold``, ``unfold``:
  ``gradlab.ops.conv``);
* ``max_pool1d/3d``, ``avg_pool1d/3d``, ``adaptive_avg_pool1d/2d/3d``, ``adaptive_max_pool1d/2d/3d``:
  ``nn/_pooling.py`` (``max_pool2d``, ``avg_pool2d``: ``gradlab.ops.pool``);
* ``layer_norm``, ``batch_norm``, ``instance_norm``, ``group_norm``, ``rms_norm``, ``normalize``:
  ``nn/_normalization.py``;
* ``cosine_similarity``, ``pairwise_distance``, ``pdist``: ``nn/_distance.py``;
* ``cross_entropy``, ``nll_loss``, ``mse_loss``, ``l1_loss``, ``smooth_l1_loss``, ``huber_loss``,
  ``binary_cross_entropy(_with_logits)``, ``kl_div``: ``nn/_loss.py``;
* ``scaled_dot_product_attention``: ``nn/_attention.py``;
* ``pad``: ``gradlab.ops.pad``; ``fake_quantize``, ``fake_quantize_per_tensor_affine``: ``gradlab.ops.quant``;
* the rest of PyTorch's (``ctc_loss``, ``embedding_bag``, ``interpolate``, ``pixel_shuffle``,
  ``gumbel_softmax``, ``lp_pool``, ``max_unpool``, the margin losses...): ``nn/coverage/functional/``.

The op classes some of them apply (``LayerNorm``, ``BatchNorm``, ``NLLLoss``, ``Embedding``, ``Dropout``)
are in ``gradlab/ops/`` (dropout, embedding, normalization, loss). Each function is registered in the op registry (namespace
``gradlab.nn.functional``, see ``nn/_register.py``), so the generic suite gradchecks it and compares
it with PyTorch.
"""
from __future__ import annotations

from ..ops import gelu, sigmoid, softplus, tanh  # noqa: F401 - the same functions as gradlab.gelu etc.
from ..ops.conv import conv2d, fold, unfold  # noqa: F401
from ..ops.pad import pad  # noqa: F401
from ..ops.pool import avg_pool2d, max_pool2d  # noqa: F401
from ..ops.quant import fake_quantize, fake_quantize_per_tensor_affine  # noqa: F401
from ..ops.softmax_ops import log_softmax, softmax  # noqa: F401
from ._activation import (  # noqa: F401
    celu, elu, glu, hardshrink, hardsigmoid, hardswish, hardtanh, leaky_relu, logsigmoid, mish, prelu, relu, relu6,
    rrelu, selu, silu, softmin, softshrink, softsign, tanhshrink, threshold,
)
from ._attention import scaled_dot_product_attention  # noqa: F401
from ._conv import conv1d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d  # noqa: F401
from ._distance import cosine_similarity, pairwise_distance, pdist  # noqa: F401
from ._dropout import alpha_dropout, dropout, dropout1d, dropout2d, dropout3d, feature_alpha_dropout  # noqa: F401
from ._embedding import embedding, one_hot  # noqa: F401
from ._linear import bilinear, linear  # noqa: F401
from ._loss import (  # noqa: F401
    binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy, huber_loss, kl_div, l1_loss, mse_loss,
    nll_loss, smooth_l1_loss,
)
from ._normalization import (  # noqa: F401
    batch_norm, group_norm, instance_norm, layer_norm, normalize, rms_norm,
)
from ._pooling import (  # noqa: F401
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, adaptive_max_pool1d, adaptive_max_pool2d,
    adaptive_max_pool3d, avg_pool1d, avg_pool3d, max_pool1d, max_pool3d,
)
from .coverage.functional import (  # noqa: F401
    channel_shuffle, cosine_embedding_loss, ctc_loss, embedding_bag, gaussian_nll_loss, gumbel_softmax,
    hinge_embedding_loss, interpolate, local_response_norm, lp_pool1d, lp_pool2d, lp_pool3d, margin_ranking_loss,
    max_unpool1d, max_unpool2d, multi_margin_loss, multilabel_margin_loss, multilabel_soft_margin_loss,
    pixel_shuffle, pixel_unshuffle, poisson_nll_loss, soft_margin_loss, triplet_margin_loss,
    triplet_margin_with_distance_loss, upsample, upsample_bilinear, upsample_nearest,
)
