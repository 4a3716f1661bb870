"""RMSprop: divide each gradient by a running root-mean-square of its history.

Per parameter (PyTorch's algorithm, exactly)::

    v = alpha * v + (1 - alpha) * g^2
    avg = sqrt(v - gavg^2) (centered, gavg a running mean of g)   or   sqrt(v)
    p = p - lr * g / (avg + eps)      (with momentum: buf = mom * buf + g / (avg + eps); p -= lr * buf)
"""
from __future__ import annotations

import numpy as np

from .. import checks as _c
from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _state_tensor, _update_param


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        for name, val in (("learning rate", lr), ("eps", eps), ("momentum", momentum),
                          ("weight_decay", weight_decay), ("alpha", alpha)):
            _c.nonnegative(val, "RMSprop", name)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered, maximize=maximize))

    def _init_state(self, p, group):
        state = {"square_avg": _state_tensor(p)}
        if group["momentum"] > 0:
            state["momentum_buffer"] = _state_tensor(p)
        if group["centered"]:
            state["grad_avg"] = _state_tensor(p)
        return state

    @no_grad()
    def step(self, closure=None):
        loss = self._loss_of(closure)
        for group in self.param_groups:
            lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
            mom, centered = group["momentum"], group["centered"]
            for p, g, state in self._params_with_grad(group):  # g with weight decay, state["step"] counted
                v = state["square_avg"]._data
                v *= alpha
                v += (1 - alpha) * g * g
                if centered:
                    ga = state["grad_avg"]._data
                    ga += (g - ga) * (1 - alpha)
                    avg = np.sqrt(v - ga * ga) + eps
                else:
                    avg = np.sqrt(v) + eps
                if mom > 0:
                    buf = state["momentum_buffer"]._data
                    buf *= mom
                    buf += g / avg
                    _update_param(p, lr * buf)
                else:
                    _update_param(p, lr * g / avg)
        return loss
