"""ASGD: SGD with a decaying step and a running (Polyak) average of the weights in ``state['ax']``.

Per parameter (PyTorch's algorithm, exactly)::

    p = p * (1 - lambd * eta) - eta * g
    ax = ax + mu * (p - ax)       (ax = p while mu == 1, i.e. before step t0)
    eta = lr / (1 + lambd * lr * t)^alpha ; mu = 1 / max(1, t - t0)
"""
from __future__ import annotations

import numpy as np

from ..autograd.grad_mode import no_grad
from ..errors import ArgumentError
from .optimizer import Optimizer, _state_tensor, _step_tensor, _update_param


class ASGD(Optimizer):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        for k, v in (("learning rate", lr), ("weight_decay", weight_decay)):
            if v < 0.0:
                raise ArgumentError(f"ASGD: invalid {k} {v} (must be >= 0)")
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                                      maximize=maximize))

    def _init_state(self, p, group):
        return {"eta": _step_tensor(group["lr"]),   # float32 scalars, as PyTorch keeps them
                "mu": _step_tensor(1.0), "ax": _state_tensor(p)}

    @no_grad()
    def step(self, closure=None):
        loss = self._loss_of(closure)
        for group in self.param_groups:
            lr, lambd, alpha, t0 = (group[k] for k in ("lr", "lambd", "alpha", "t0"))
            for p, g, state in self._params_with_grad(group):  # g with weight decay, state["step"] counted
                step = float(state["step"]._data)
                eta = float(state["eta"]._data)
                p._data *= 1 - lambd * eta
                _update_param(p, eta * g)
                mu = state["mu"]._data
                ax = state["ax"]._data
                if float(mu) != 1:
                    ax += (p._data - ax) * mu.astype(ax.dtype)
                else:
                    ax[...] = p._data
                state["eta"]._data = np.asarray(lr / ((1 + lambd * lr * step) ** alpha), dtype=np.float32)
                state["mu"]._data = np.asarray(1 / max(1, step - t0), dtype=np.float32)
        return loss
