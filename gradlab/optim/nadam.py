"""NAdam: Adam with Nesterov momentum (the update looks one momentum step ahead).

Per parameter (PyTorch's algorithm, exactly), ``psi = momentum_decay``::

    mu_t = beta1 * (1 - 0.5 * 0.96^(t psi)) ; mu_{t+1} likewise ; P_t = mu_1 ... mu_t
    m = beta1 * m + (1 - beta1) * g ; v = beta2 * v + (1 - beta2) * g^2
    denom = sqrt(v / (1 - beta2^t)) + eps
    p = p - lr (1 - mu_t) / (1 - P_t) * g / denom - lr mu_{t+1} / (1 - P_t mu_{t+1}) * m / denom
"""
from __future__ import annotations

import numpy as np

from ..autograd.grad_mode import no_grad
from ..errors import ArgumentError
from .adam import _check
from .optimizer import Optimizer, _state_tensor, _step_tensor, _update_param


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check("NAdam", lr, betas, eps, weight_decay)
        if momentum_decay < 0.0:
            raise ArgumentError(f"NAdam: invalid momentum_decay {momentum_decay} (must be >= 0)")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize))

    def _init_state(self, p, group):
        return {"mu_product": _step_tensor(1.0),   # a float32 scalar, as PyTorch keeps it
                "exp_avg": _state_tensor(p), "exp_avg_sq": _state_tensor(p)}

    @no_grad()
    def step(self, closure=None):
        loss = self._loss_of(closure)
        for group in self.param_groups:
            lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
            psi = group["momentum_decay"]
            for p, g, state in self._params_with_grad(group):  # g with weight decay, state["step"] counted
                step = float(state["step"]._data)
                bc2 = 1 - beta2 ** step
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * psi)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * psi)))
                state["mu_product"]._data = (state["mu_product"]._data * np.float32(mu)).astype(np.float32)
                mu_product = float(state["mu_product"]._data)
                m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
                m += (g - m) * (1 - beta1)
                v *= beta2
                v += (1 - beta2) * (g * g)
                denom = np.sqrt(v / bc2) + eps
                _update_param(p, (lr * (1.0 - mu) / (1.0 - mu_product)) * (g / denom))
                _update_param(p, ((lr * mu_next) / (1.0 - mu_product * mu_next)) * (m / denom))
        return loss
