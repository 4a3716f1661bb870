"""Rprop: per-weight step sizes that grow while the gradient keeps its sign and shrink when it flips;
only the gradient's *sign* is used (full-batch training).

Per parameter (PyTorch's algorithm, exactly)::

    s = sign(g * g_prev) ; step *= etaplus (s > 0), etaminus (s < 0), 1 (s == 0) ; clamp to step_sizes
    g = 0 where s < 0 (skip the step after a sign flip) ; p -= sign(g) * step ; g_prev = g
"""
from __future__ import annotations

import numpy as np

from ..autograd.grad_mode import no_grad
from ..errors import ArgumentError
from .optimizer import Optimizer, _state_tensor, _update_param


class Rprop(Optimizer):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        if lr < 0.0:
            raise ArgumentError(f"Rprop: invalid learning rate {lr} (must be >= 0)")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ArgumentError(f"Rprop: invalid eta values {tuple(etas)} (need 0 < etaminus < 1 < etaplus)")
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), maximize=maximize))

    def _init_state(self, p, group):
        return {"prev": _state_tensor(p), "step_size": _state_tensor(p, group["lr"])}

    @no_grad()
    def step(self, closure=None):
        loss = self._loss_of(closure)
        for group in self.param_groups:
            (etaminus, etaplus), (smin, smax) = group["etas"], group["step_sizes"]
            for p, g, state in self._params_with_grad(group):  # g (no weight decay here), state["step"] counted
                prev, size = state["prev"]._data, state["step_size"]._data
                s = np.sign(g * prev)
                factor = np.where(s > 0, etaplus, np.where(s < 0, etaminus, 1.0)).astype(size.dtype)
                size *= factor
                size[...] = np.clip(size, smin, smax)
                g = np.where(s < 0, 0, g).astype(p._data.dtype)
                _update_param(p, np.sign(g) * size)
                prev[...] = g
        return loss
