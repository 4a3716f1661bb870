"""Adam and AdamW: per-parameter step sizes from running moments of the gradient.

Per parameter, with ``t`` the step count (PyTorch's algorithm, exactly)::

    m = beta1 * m + (1 - beta1) * g            # first moment (momentum)
    v = beta2 * v + (1 - beta2) * g^2          # second moment (scale)
    m_hat = m / (1 - beta1^t) ; v_hat = v / (1 - beta2^t)   # bias correction
    p = p - lr * m_hat / (sqrt(v_hat) + eps)

The two differ in weight decay. **Adam** adds ``weight_decay * p`` to the
gradient, so the decay is rescaled by ``1/sqrt(v)`` like everything else.
**AdamW** *decouples* it: ``p = p * (1 - lr * weight_decay)`` before the
update, a true shrinkage of the weights, which generalises better.
"""
from __future__ import annotations

import math

import numpy as np

from .. import checks as _c
from ..autograd.grad_mode import no_grad
from ..errors import ArgumentError, ArgumentTypeError
from ..ops._util import as_weak
from .optimizer import Optimizer, _state_tensor, _update_param


def _check(name, lr, betas, eps, weight_decay):
    _c.nonnegative(lr, name, "lr", "the learning rate scales every step")
    _c.nonnegative(eps, name, "eps")
    _c.nonnegative(weight_decay, name, "weight_decay")
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise ArgumentTypeError(f"{name}: betas must be a pair (beta1, beta2), got {betas!r}")
    _c.number(betas[0], name, "betas[0]"), _c.number(betas[1], name, "betas[1]")
    if not 0.0 <= betas[0] < 1.0 or not 0.0 <= betas[1] < 1.0:
        raise ArgumentError(f"{name}: invalid betas {tuple(betas)} (each must be in [0, 1))")
    if weight_decay < 0.0:
        raise ArgumentError(f"{name}: invalid weight_decay {weight_decay} (must be >= 0)")


class Adam(Optimizer):

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check(type(self).__name__, lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize))
        if decoupled_weight_decay:
            self._decoupled = True

    def _init_state(self, p, group):
        state = {"exp_avg": _state_tensor(p), "exp_avg_sq": _state_tensor(p)}
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = _state_tensor(p)
        return state

    @no_grad()
    def step(self, closure=None):
        loss = self._loss_of(closure)
        for group in self.param_groups:
            lr, (beta1, beta2), eps, amsgrad = group["lr"], group["betas"], group["eps"], group["amsgrad"]
            for p, g, state in self._params_with_grad(group):  # g with weight decay, state["step"] counted
                step = float(state["step"]._data)
                m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
                # the formulas above, computed in place so each step makes 4 temporary arrays, not 9
                # (same operations in the same order: the results are bit-identical)
                w = as_weak  # Python floats as cached 0-d arrays of m's dtype: the same numbers, faster
                t = g - m
                t *= w(1 - beta1, m)
                m += t                            # m.lerp_(g, 1 - beta1)
                t = g * w(1 - beta2, m)
                t *= g
                v *= w(beta2, m)
                v += t                            # v = beta2 * v + (1 - beta2) * g * g
                bc1 = 1 - beta1 ** step
                bc2_sqrt = math.sqrt(1 - beta2 ** step)
                if amsgrad:
                    vmax = state["max_exp_avg_sq"]._data
                    np.maximum(vmax, v, out=vmax) if isinstance(vmax, np.ndarray) else vmax.__setitem__(
                        Ellipsis, np.maximum(vmax, v))
                    denom = np.sqrt(vmax)
                else:
                    denom = np.sqrt(v)
                denom /= w(bc2_sqrt, m)
                denom += w(eps, m)                # sqrt(v) / sqrt(1 - beta2^t) + eps
                u = m * w(lr / bc1, m)            # (lr / bc1) * m / denom
                u /= denom
                _update_param(p, u)
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay (default ``weight_decay=0.01``, as in PyTorch)."""
    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
