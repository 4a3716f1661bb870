"""``OneCycleLR``: warm the learning rate up to ``max_lr``, then anneal it far below where it started.

One cycle per training run, stepped once per *batch*: lr rises from ``max_lr / div_factor`` to
``max_lr`` over the first ``pct_start`` of the steps, then falls to ``initial_lr / final_div_factor``.
Momentum (SGD's ``momentum`` or Adam's ``beta1``) moves the opposite way, between ``max_momentum``
and ``base_momentum``: a high lr with a low momentum, then the reverse. PyTorch's algorithm, exactly.
"""
from __future__ import annotations

import math

from ..errors import ArgumentError
from .scheduler import LRScheduler


class OneCycleLR(LRScheduler):
    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None, pct_start=0.3,
                 anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85, max_momentum=0.95,
                 div_factor=25.0, final_div_factor=1e4, three_phase=False, last_epoch=-1):
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise ArgumentError("OneCycleLR: give total_steps, or both epochs and steps_per_epoch")
            total_steps = epochs * steps_per_epoch
        if total_steps <= 0 or not isinstance(total_steps, int):
            raise ArgumentError(f"OneCycleLR: total_steps must be a positive int, got {total_steps!r}")
        if not 0 <= pct_start <= 1:
            raise ArgumentError(f"OneCycleLR: pct_start must be in [0, 1], got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ArgumentError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        self.total_steps, self.cycle_momentum = total_steps, cycle_momentum
        self._anneal = _cos if anneal_strategy == "cos" else _linear
        up = float(pct_start * total_steps) - 1
        if three_phase:
            self._phases = [(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (float(2 * pct_start * total_steps) - 2, "max_lr", "initial_lr", "base_momentum",
                             "max_momentum"),
                            (total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
        else:
            self._phases = [(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]
        groups = optimizer.param_groups
        max_lrs = list(max_lr) if isinstance(max_lr, (list, tuple)) else [max_lr] * len(groups)
        self._use_beta1 = cycle_momentum and "betas" in optimizer.defaults
        if cycle_momentum and not self._use_beta1 and "momentum" not in optimizer.defaults:
            raise ArgumentError("OneCycleLR: optimizer must support momentum or betas with cycle_momentum enabled")
        if last_epoch == -1:
            for group, top in zip(groups, max_lrs):
                group["initial_lr"] = top / div_factor
                group["max_lr"], group["min_lr"] = top, group["initial_lr"] / final_div_factor
                if cycle_momentum:
                    group["max_momentum"], group["base_momentum"] = max_momentum, base_momentum
                    if self._use_beta1:
                        group["betas"] = (max_momentum, *group["betas"][1:])
                    else:
                        group["momentum"] = max_momentum
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise ArgumentError(f"OneCycleLR: tried to step {step} times; total_steps is {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, (end, lr0, lr1, m0, m1) in enumerate(self._phases):
                if step <= end or i == len(self._phases) - 1:
                    pct = (step - start) / (end - start)
                    lr = self._anneal(group[lr0], group[lr1], pct)
                    momentum = self._anneal(group[m0], group[m1], pct) if self.cycle_momentum else None
                    break
                start = end
            lrs.append(lr)
            if self.cycle_momentum:
                if self._use_beta1:
                    group["betas"] = (momentum, *group["betas"][1:])
                else:
                    group["momentum"] = momentum
        return lrs


def _cos(start, end, pct):
    return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)


def _linear(start, end, pct):
    return (end - start) * pct + start
