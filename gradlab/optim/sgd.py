"""Stochastic gradient descent, with momentum, dampening, Nesterov and weight decay.

One step, per parameter (PyTorch's algorithm, exactly)::

    d = grad (+ weight_decay * p)
    buf = d                       on the first step
    buf = momentum * buf + (1 - dampening) * d    afterwards
    d = d + momentum * buf  (nesterov)   or   d = buf
    p = p - lr * d

Momentum is a running sum of past gradients: it speeds travel along directions
where gradients agree and damps zig-zags where they do not.
"""
from __future__ import annotations

from .. import checks as _c
from ..autograd.grad_mode import no_grad
from ..errors import ArgumentError
from ..ops._util import as_weak
from .optimizer import Optimizer, _state_tensor, _update_param


class SGD(Optimizer):
    """Stochastic gradient descent, as ``torch.optim.SGD``: ``p -= lr * g`` with optional momentum.

    With ``momentum`` a buffer ``b = momentum * b + (1 - dampening) * g`` replaces ``g`` (``nesterov``
    looks ahead: ``g + momentum * b``); ``weight_decay`` adds ``weight_decay * p`` to ``g`` first
    (coupled decay: see ``AdamW`` for the decoupled kind); ``maximize`` climbs instead.
    """

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        _c.number(dampening, "SGD", "dampening")
        _c.nonnegative(lr, "SGD", "lr", "the learning rate scales every step")
        for arg, val in (("momentum", momentum), ("weight_decay", weight_decay)):
            _c.nonnegative(val, "SGD", arg)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ArgumentError("SGD: Nesterov momentum requires a momentum > 0 and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))

    @no_grad()
    def step(self, closure=None):
        loss = self._loss_of(closure)
        for group in self.param_groups:
            lr, mom, damp, nesterov = group["lr"], group["momentum"], group["dampening"], group["nesterov"]
            for p, d, _ in self._params_with_grad(group):  # d: the gradient, with weight decay
                if mom != 0:
                    state = self.state.setdefault(p, {})
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = _state_tensor(p)
                        buf._data[...] = d
                        state["momentum_buffer"] = buf
                    else:
                        b = buf._data
                        b *= as_weak(mom, b)
                        b += d if damp == 0 else (1 - damp) * d  # (1 * d is d exactly: skip the copy)
                    d = d + mom * buf._data if nesterov else buf._data
                _update_param(p, d * as_weak(lr, d))  # lr * d (lr as a cached 0-d array: same numbers)
        return loss
