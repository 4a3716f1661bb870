"""``ReduceLROnPlateau``: lower the learning rate when a watched number stops improving.

Unlike the fixed schedules, it listens to training: call ``scheduler.step(val_loss)`` once per epoch;
after ``patience`` epochs without an improvement (better than the best by more than ``threshold``),
every group's lr is multiplied by ``factor`` (never below ``min_lr``), then ``cooldown`` epochs pass
before counting again. PyTorch's algorithm, exactly.
"""
from __future__ import annotations

import math

from ..errors import ArgumentError, ArgumentTypeError
from .optimizer import Optimizer


class ReduceLROnPlateau:
    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
                 cooldown=0, min_lr=0, eps=1e-8):
        if not isinstance(optimizer, Optimizer):
            raise ArgumentTypeError(f"{type(self).__name__}: optimizer must be a gradlab.optim Optimizer, got "
                                    f"{type(optimizer).__name__}; build the optimizer first, e.g. "
                                    f"{type(self).__name__}(gradlab.optim.SGD(model.parameters(), lr=0.1), ...)")
        if factor >= 1.0:
            raise ArgumentError(f"ReduceLROnPlateau: factor should be < 1.0, got {factor}")
        if mode not in ("min", "max"):
            raise ArgumentError(f"ReduceLROnPlateau: mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise ArgumentError(f"ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', got {threshold_mode!r}")
        n = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != n:
                raise ArgumentError(f"ReduceLROnPlateau: expected {n} min_lr values (one per param group), "
                                    f"got {len(min_lr)}")
            self.min_lrs = list(min_lr)
        else:
            self.min_lrs = [min_lr] * n
        self.optimizer = optimizer
        self.mode, self.factor, self.patience, self.threshold = mode, factor, patience, threshold
        self.threshold_mode, self.cooldown, self.eps = threshold_mode, cooldown, eps
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = self.cooldown_counter = 0
        self.last_epoch = 0
        self._last_lr = [g["lr"] for g in optimizer.param_groups]

    def _is_better(self, a):
        rel = self.threshold_mode == "rel"
        if self.mode == "min":
            return a < (self.best * (1 - self.threshold) if rel else self.best - self.threshold)
        return a > (self.best * (1 + self.threshold) if rel else self.best + self.threshold)

    def step(self, metrics, epoch=None):
        """Record this epoch's ``metrics`` (a number or a one-element tensor) and maybe lower the lr."""
        current = float(metrics)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if self._is_better(current):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # improvements are not counted during cooldown
        if self.num_bad_epochs > self.patience:
            for group, min_lr in zip(self.optimizer.param_groups, self.min_lrs):
                new = max(group["lr"] * self.factor, min_lr)
                if group["lr"] - new > self.eps:
                    group["lr"] = new
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def get_last_lr(self) -> list:
        return self._last_lr

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict):
        self.__dict__.update(state_dict)
