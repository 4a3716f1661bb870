"""``LRScheduler``: the base of every learning-rate schedule (``gradlab.optim.lr_scheduler``).

A subclass implements ``get_lr()``, the new lr of each param group; ``step()``
writes it into the optimizer's groups. Kept in a file of its own so that the
schedules in ``lr_scheduler.py``, ``onecycle.py`` and ``plateau.py`` all build on it
without importing one another in a circle.
"""
from __future__ import annotations

from ..errors import ArgumentTypeError
from .optimizer import Optimizer


class LRScheduler:
    """Base class: subclasses implement ``get_lr()`` (the new lr of each group)."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise ArgumentTypeError(f"{type(self).__name__}: optimizer must be a gradlab.optim Optimizer, got "
                                    f"{type(optimizer).__name__}; build the optimizer first, e.g. "
                                    f"{type(self).__name__}(gradlab.optim.SGD(model.parameters(), lr=0.1), ...)")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming a "
                                   "scheduler with last_epoch >= 0; load the optimizer's state first")
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self._is_initial = True
        self.step()
        self._is_initial = False

    def get_lr(self) -> list:  # pragma: no cover - abstract
        raise NotImplementedError

    def get_last_lr(self) -> list:
        """The learning rates the last ``step()`` set (one per param group)."""
        return self._last_lr

    def step(self, epoch=None):
        self._step_count += 1
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            values = self._get_closed_form_lr() if hasattr(self, "_get_closed_form_lr") else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        """Everything but the optimizer (plain numbers: safe to ``gradlab.save``)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict):
        self.__dict__.update(state_dict)


_LRScheduler = LRScheduler
