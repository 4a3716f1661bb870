"""``F.gumbel_softmax``: a differentiable sample of a categorical distribution (the Gumbel-softmax trick).

Adding Gumbel noise ``g = -log(E)``, ``E ~ Exp(1)``, to the logits and taking the argmax draws a
category with probability ``softmax(logits)``. Replacing the argmax by ``softmax((logits + g) / tau)``
gives a smooth "soft one-hot" whose gradient reaches the logits (lower ``tau``: closer to one-hot,
noisier gradients). ``hard=True`` returns the exact one-hot in the forward pass but the soft
sample's gradient (the straight-through estimator: ``y_hard - y_soft.detach() + y_soft``).

It is random, so it is not in the op registry (gradcheck needs a deterministic function); it is
made of registered ops (``softmax``, ``add``, ``sub``), and the tests check it with a fixed seed.
"""
from __future__ import annotations

import warnings

import numpy as np

from ...._tensor import Tensor
from ....backend import generator, xp_of
from ....backend.device import to_host
from ....ops._util import check_tensor
from ....ops.softmax_ops import softmax


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """A soft (or, with ``hard=True``, straight-through one-hot) sample of ``Categorical(softmax(logits))``."""
    x = check_tensor(logits, "gumbel_softmax", "logits")
    if eps != 1e-10:
        warnings.warn("gumbel_softmax: `eps` is deprecated and has no effect (as in PyTorch)", stacklevel=2)
    xp = xp_of(x._data)
    e = generator().exponential(1.0, x.shape)
    gumbels = Tensor._make(xp.asarray(-np.log(e)).astype(x.dtype))
    y_soft = softmax((x + gumbels) / tau, dim=dim)
    if not hard:
        return y_soft
    a = to_host(y_soft._data)
    d = dim % a.ndim if a.ndim else 0
    one_hot = (np.arange(a.shape[d]).reshape([-1 if i == d else 1 for i in range(a.ndim)])
               == np.expand_dims(a.argmax(d), d)).astype(a.dtype)
    y_hard = Tensor._make(xp.asarray(one_hot))
    return y_hard - y_soft.detach() + y_soft
