"""RAdam: Adam whose adaptive step is switched on only once the variance of its estimate is tractable
(a built-in warm-up; before that, plain momentum SGD).

Per parameter (PyTorch's algorithm, exactly)::

    m, v as in Adam ; rho_inf = 2 / (1 - beta2) - 1 ; rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
    rho_t > 5:  p -= lr * m / (1 - beta1^t) * sqrt(1 - beta2^t) / (sqrt(v) + eps) * rect(rho_t)
    otherwise:  p -= lr * m / (1 - beta1^t)
"""
from __future__ import annotations

import numpy as np

from ..autograd.grad_mode import no_grad
from .adam import _check
from .optimizer import Optimizer, _state_tensor, _update_param


class RAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check("RAdam", lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay, maximize=maximize))

    def _init_state(self, p, group):
        return {"exp_avg": _state_tensor(p), "exp_avg_sq": _state_tensor(p)}

    @no_grad()
    def step(self, closure=None):
        loss = self._loss_of(closure)
        for group in self.param_groups:
            lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
            for p, g, state in self._params_with_grad(group):  # g with weight decay, state["step"] counted
                step = float(state["step"]._data)
                m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
                m += (g - m) * (1 - beta1)
                v *= beta2
                v += (1 - beta2) * (g * g)
                bc1, bc2 = 1 - beta1 ** step, 1 - beta2 ** step
                corrected = m / bc1
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bc2
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    adaptive = (bc2 ** 0.5) / (np.sqrt(v) + eps)
                    _update_param(p, corrected * lr * adaptive * rect)
                else:
                    _update_param(p, corrected * lr)
        return loss
