"""Adadelta: step sizes from running averages of squared gradients *and* squared updates (no learning rate
is strictly needed; PyTorch's ``lr=1.0`` scales the update).

Per parameter (PyTorch's algorithm, exactly)::

    v = rho * v + (1 - rho) * g^2
    delta = sqrt(u + eps) / sqrt(v + eps) * g
    u = rho * u + (1 - rho) * delta^2
    p = p - lr * delta
"""
from __future__ import annotations

import numpy as np

from ..autograd.grad_mode import no_grad
from ..errors import ArgumentError
from .optimizer import Optimizer, _state_tensor, _update_param


def _nonneg(name, **values):
    for k, v in values.items():
        if v < 0.0:
            raise ArgumentError(f"{name}: invalid {k} {v} (must be >= 0)")


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _nonneg("Adadelta", lr=lr, eps=eps, weight_decay=weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ArgumentError(f"Adadelta: invalid rho {rho} (must be in [0, 1])")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize))

    def _init_state(self, p, group):
        return {"square_avg": _state_tensor(p), "acc_delta": _state_tensor(p)}

    @no_grad()
    def step(self, closure=None):
        loss = self._loss_of(closure)
        for group in self.param_groups:
            lr, rho, eps = group["lr"], group["rho"], group["eps"]
            for p, g, state in self._params_with_grad(group):  # g with weight decay, state["step"] counted
                v, u = state["square_avg"]._data, state["acc_delta"]._data
                v *= rho
                v += (1 - rho) * (g * g)
                std = np.sqrt(v + eps)
                delta = np.sqrt(u + eps)
                delta /= std
                delta *= g
                u *= rho
                u += (1 - rho) * (delta * delta)
                _update_param(p, lr * delta)
        return loss
