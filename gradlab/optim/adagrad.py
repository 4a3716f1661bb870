"""Adagrad: divide each gradient by the root of the *sum* of all its past squares.

Per parameter (PyTorch's algorithm, exactly)::

    clr = lr / (1 + (step - 1) * lr_decay)
    g = g + weight_decay * p                 (if weight_decay)
    sum = sum + g^2                          (starts at initial_accumulator_value)
    p = p - clr * g / (sqrt(sum) + eps)

A parameter that gets large gradients takes ever smaller steps. The sum only grows, so the
effective learning rate only shrinks: RMSprop and Adam replace it by a running average.
"""
from __future__ import annotations

import numpy as np

from .. import checks as _c
from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _state_tensor, _step_tensor, _update_param


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        for name, val in (("learning rate", lr), ("lr_decay", lr_decay), ("weight_decay", weight_decay),
                          ("initial_accumulator_value", initial_accumulator_value), ("epsilon", eps)):
            _c.nonnegative(val, "Adagrad", name)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps,
                                      initial_accumulator_value=initial_accumulator_value, maximize=maximize))
        for group in self.param_groups:  # as PyTorch, the state exists from the start
            for p in group["params"]:
                self.state[p] = {"step": _step_tensor(0.0), **self._init_state(p, group)}

    def _init_state(self, p, group):
        return {"sum": _state_tensor(p, group["initial_accumulator_value"])}

    @no_grad()
    def step(self, closure=None):
        loss = self._loss_of(closure)
        for group in self.param_groups:
            lr, lr_decay, eps = group["lr"], group["lr_decay"], group["eps"]
            for p, g, state in self._params_with_grad(group):  # g with weight decay, state["step"] counted
                step = float(state["step"]._data)
                clr = lr / (1 + (step - 1) * lr_decay)
                acc = state["sum"]._data
                acc += g * g
                _update_param(p, clr * g / (np.sqrt(acc) + eps))
        return loss
