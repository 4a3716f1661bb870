"""Adamax: Adam with the second moment replaced by a running max of ``|g|`` (the infinity norm).

Per parameter (PyTorch's algorithm, exactly)::

    m = beta1 * m + (1 - beta1) * g
    u = max(beta2 * u, |g| + eps)
    p = p - lr / (1 - beta1^t) * m / u
"""
from __future__ import annotations

import numpy as np

from ..autograd.grad_mode import no_grad
from .adam import _check
from .optimizer import Optimizer, _state_tensor, _update_param


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check("Adamax", lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      maximize=maximize))

    def _init_state(self, p, group):
        return {"exp_avg": _state_tensor(p), "exp_inf": _state_tensor(p)}

    @no_grad()
    def step(self, closure=None):
        loss = self._loss_of(closure)
        for group in self.param_groups:
            lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
            for p, g, state in self._params_with_grad(group):  # g with weight decay, state["step"] counted
                step = float(state["step"]._data)
                m, u = state["exp_avg"]._data, state["exp_inf"]._data
                m += (g - m) * (1 - beta1)          # m.lerp_(g, 1 - beta1)
                u *= beta2
                u[...] = np.maximum(u, np.abs(g) + eps)
                clr = lr / (1 - beta1 ** step)
                _update_param(p, clr * (m / u))
        return loss
