"""RMSprop: divide each gradient by a running root-mean-square of its history.

Per parameter (PyTorch's algorithm, exactly)::

    v = alpha * v + (1 - alpha) * g^2
    avg = sqrt(v - gavg^2) (centered, gavg a running mean of g)   or   sqrt(v)
    p = p - lr * g / (avg + eps)      (with momentum: buf = mom * buf + g / (avg + eps); p -= lr * buf)
"""
from __future__ import annotations

import numpy as np

from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _grad_array, _state_tensor, _step_tensor, _update_param
from .. import checks as _c


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        for name, val in (("learning rate", lr), ("eps", eps), ("momentum", momentum),
                          ("weight_decay", weight_decay), ("alpha", alpha)):
            _c.nonnegative(val, "RMSprop", name)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered, maximize=maximize))

    @no_grad()
    def step(self, closure=None):
        loss = self._loss_of(closure)
        for group in self.param_groups:
            lr, alpha, eps, wd = group["lr"], group["alpha"], group["eps"], group["weight_decay"]
            mom, centered, maximize = group["momentum"], group["centered"], group["maximize"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = _grad_array(p, maximize)
                state = self.state.setdefault(p, {})
                if not state:
                    state["step"] = _step_tensor(0.0)
                    state["square_avg"] = _state_tensor(p)
                    if mom > 0:
                        state["momentum_buffer"] = _state_tensor(p)
                    if centered:
                        state["grad_avg"] = _state_tensor(p)
                state["step"].data = state["step"].data + 1
                if wd != 0:
                    g = g + wd * p.data
                v = state["square_avg"].data
                v *= alpha
                v += (1 - alpha) * g * g
                if centered:
                    ga = state["grad_avg"].data
                    ga += (g - ga) * (1 - alpha)
                    avg = np.sqrt(v - ga * ga) + eps
                else:
                    avg = np.sqrt(v) + eps
                if mom > 0:
                    buf = state["momentum_buffer"].data
                    buf *= mom
                    buf += g / avg
                    _update_param(p, lr * buf)
                else:
                    _update_param(p, lr * g / avg)
        return loss
