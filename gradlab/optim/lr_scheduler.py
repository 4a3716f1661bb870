"""Learning-rate schedules (``gradlab.optim.lr_scheduler``), as in PyTorch.

A scheduler changes ``group["lr"]`` of an optimizer's param groups each time
``scheduler.step()`` is called (once per epoch or per batch, *after*
``optimizer.step()``). Building one records each group's ``initial_lr`` and
applies the schedule's value for step 0.

Why schedules: a large learning rate makes fast early progress but cannot
settle into a narrow minimum; decaying it (step, cosine) lets training settle.
Transformers also need a *warmup*: Adam's second-moment estimate is poor in the
first steps, so starting with a small learning rate avoids early divergence.

The base class ``LRScheduler`` is in ``scheduler.py``; ``OneCycleLR`` (``onecycle.py``)
and ``ReduceLROnPlateau`` (``plateau.py``, it listens to a metric) have files of their
own and are importable from here, as in ``torch.optim.lr_scheduler``.
"""
from __future__ import annotations

import math
import types

from ..errors import ArgumentError
from .onecycle import OneCycleLR
from .plateau import ReduceLROnPlateau
from .scheduler import LRScheduler, _LRScheduler


class LambdaLR(LRScheduler):
    """``lr = initial_lr * lr_lambda(epoch)`` (one function, or one per group)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ArgumentError(f"LambdaLR: expected {len(optimizer.param_groups)} lr_lambdas, got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self):
        d = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        d["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else dict(fn.__dict__)
                           for fn in self.lr_lambdas]
        return d

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        lambdas = state_dict.pop("lr_lambdas", None) or []
        self.__dict__.update(state_dict)
        for fn, st in zip(self.lr_lambdas, lambdas):
            if st is not None:
                fn.__dict__.update(st)


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` epochs."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size, self.gamma = int(step_size), gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [g["lr"] for g in self.optimizer.param_groups]
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by ``gamma`` at each epoch listed in ``milestones``."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        from collections import Counter
        self.milestones, self.gamma = Counter(sorted(milestones)), gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch not in self.milestones:
            return [g["lr"] for g in self.optimizer.param_groups]
        return [g["lr"] * self.gamma ** self.milestones[self.last_epoch] for g in self.optimizer.param_groups]

    def state_dict(self):
        d = super().state_dict()
        d["milestones"] = {int(k): int(v) for k, v in self.milestones.items()}
        return d

    def load_state_dict(self, state_dict):
        from collections import Counter
        super().load_state_dict(state_dict)
        self.milestones = Counter({int(k): int(v) for k, v in dict(self.milestones).items()})


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every epoch."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial:
            return [g["lr"] for g in self.optimizer.param_groups]
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]


class LinearLR(LRScheduler):
    """Scale the lr linearly from ``start_factor`` to ``end_factor`` over ``total_iters`` epochs (a warmup)."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1):
        if not 0 < start_factor <= 1 or not 0 <= end_factor <= 1:
            raise ArgumentError("LinearLR: start_factor must be in (0, 1] and end_factor in [0, 1]")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] * self.start_factor for g in groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return [g["lr"] for g in groups]
        return [g["lr"] * (1.0 + (self.end_factor - self.start_factor) / (
            self.total_iters * self.start_factor + (self.last_epoch - 1) * (self.end_factor - self.start_factor)))
            for g in groups]


class CosineAnnealingLR(LRScheduler):
    """Half a cosine from ``initial_lr`` down to ``eta_min`` over ``T_max`` steps (PyTorch's recursive form)."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self._is_initial:
            return [g["lr"] for g in groups]
        if self._step_count == 1 and self.last_epoch > 0:
            return [self.eta_min + (base - self.eta_min) * (1 + math.cos(self.last_epoch * math.pi / self.T_max)) / 2
                    for base in self.base_lrs]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [g["lr"] + (base - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base, g in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * self.last_epoch / self.T_max))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
                * (g["lr"] - self.eta_min) + self.eta_min for g in groups]

    def _get_closed_form_lr(self):
        return [self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base in self.base_lrs]


class WarmupCosineLR(LRScheduler):
    """Linear warmup for ``warmup_steps``, then half a cosine down to ``eta_min`` at ``total_steps``.

    The usual transformer schedule. At step ``t``::

        t < warmup:  lr = base * (t + 1) / warmup
        otherwise:   lr = eta_min + (base - eta_min) * (1 + cos(pi * progress)) / 2,
                     progress = (t - warmup) / (total_steps - warmup), capped at 1
    """

    def __init__(self, optimizer, warmup_steps, total_steps, eta_min=0.0, last_epoch=-1):
        if warmup_steps < 0 or total_steps <= warmup_steps:
            raise ArgumentError(f"WarmupCosineLR: need 0 <= warmup_steps < total_steps, got warmup_steps="
                                f"{warmup_steps}, total_steps={total_steps}")
        self.warmup_steps, self.total_steps, self.eta_min = int(warmup_steps), int(total_steps), eta_min
        super().__init__(optimizer, last_epoch)

    def _factor(self, base):
        t = self.last_epoch
        if t < self.warmup_steps:
            return base * (t + 1) / self.warmup_steps
        progress = min(1.0, (t - self.warmup_steps) / (self.total_steps - self.warmup_steps))
        return self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * progress)) / 2

    def get_lr(self):
        return [self._factor(base) for base in self.base_lrs]

    _get_closed_form_lr = get_lr


LinearWarmupCosineAnnealingLR = WarmupCosineLR

__all__ = ["CosineAnnealingLR", "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "LinearWarmupCosineAnnealingLR",
           "MultiStepLR", "OneCycleLR", "ReduceLROnPlateau", "StepLR", "WarmupCosineLR", "_LRScheduler"]
