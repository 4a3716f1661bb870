"""``GradScaler``: dynamic loss scaling for float16 training.

float16's smallest subnormal is about ``6e-8``; gradients of a deep model are
often smaller and *underflow to zero* when computed in float16. The cure:
multiply the loss by a large ``scale`` (``2**16`` at first) before backward,
so every gradient is ``scale`` times larger and stays representable, then
divide the gradients by ``scale`` (``unscale_``) before the optimizer uses them.

The scale adapts: if any gradient is inf/NaN (the scale was too large and
overflowed), the step is *skipped* and the scale multiplied by
``backoff_factor`` (0.5); after ``growth_interval`` (2000) good steps in a row
it is multiplied by ``growth_factor`` (2). ``scaler.history`` records
``(step, scale, skipped)`` for plotting.

    scaler = GradScaler()
    with autocast(dtype=gradlab.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)      # unscales, skips on inf/NaN
    scaler.update()
"""
from __future__ import annotations

import math

import numpy as np

from .._tensor import Tensor
from ..backend.device import xp_of
from ..errors import ArgumentError, GradError, fmt_shape

_READY, _UNSCALED, _STEPPED = 0, 1, 2


class GradScaler:
    def __init__(self, device="cpu", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if growth_factor <= 1.0 or not 0.0 < backoff_factor < 1.0:
            raise GradError("GradScaler: need growth_factor > 1 and 0 < backoff_factor < 1")
        self.enabled = bool(enabled)
        self._scale = float(init_scale)
        self._growth_factor, self._backoff_factor = float(growth_factor), float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._per_optimizer = {}
        self._steps = 0
        self.history: list = []  # (update index, scale after update, step skipped?)

    # --------------------------------------------------------------- scaling
    def get_scale(self) -> float:
        return self._scale if self.enabled else 1.0

    def scale(self, outputs):
        """``outputs * scale`` (a tensor, or a list/tuple of tensors)."""
        if not self.enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise TypeError(f"GradScaler.scale expects a Tensor or a list/tuple of them, got {type(outputs).__name__}")

    def _state(self, optimizer):
        return self._per_optimizer.setdefault(id(optimizer), {"stage": _READY, "found_inf": False})

    def unscale_(self, optimizer):
        """Divide ``optimizer``'s gradients by the scale (in place); records whether any is inf/NaN.

        Call it before gradient clipping, so the clipping threshold applies to
        the true gradients. At most once per optimizer per ``update()``.
        """
        if not self.enabled:
            return
        st = self._state(optimizer)
        if st["stage"] == _UNSCALED:
            raise GradError("GradScaler.unscale_() was already called on this optimizer since the last update()")
        if st["stage"] == _STEPPED:
            raise GradError("GradScaler.unscale_() is being called after step(); call update() first")
        inv = 1.0 / self._scale
        found = False
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad._data
                if g.dtype == np.float16:
                    raise ArgumentError(
                        f"GradScaler.unscale_: a parameter of shape {fmt_shape(p.shape)} has a float16 gradient; "
                        "unscaling it in float16 would underflow again (PyTorch refuses this too). Keep the "
                        "parameters float32 (master weights) and run the forward pass under amp.autocast "
                        "instead of calling model.half()")
                xp = xp_of(g)
                g32 = g.astype(np.float32) if g.dtype.itemsize < 4 else g
                scaled = g32 * g32.dtype.type(inv)
                if not bool(xp.isfinite(scaled).all()):
                    found = True
                p.grad = Tensor._make(scaled.astype(g.dtype, copy=False))
        st["found_inf"] = found
        st["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale (if not done yet) and run ``optimizer.step()`` unless a gradient was inf/NaN."""
        if not self.enabled:
            return optimizer.step(*args, **kwargs)
        st = self._state(optimizer)
        if st["stage"] == _STEPPED:
            raise GradError("GradScaler.step() was already called for this optimizer since the last update()")
        if st["stage"] == _READY:
            self.unscale_(optimizer)
        result = None
        if not st["found_inf"]:
            result = optimizer.step(*args, **kwargs)
        st["stage"] = _STEPPED
        return result

    def update(self, new_scale=None):
        """Adjust the scale: back off after an inf/NaN, grow after ``growth_interval`` clean steps."""
        if not self.enabled:
            return
        found = any(st["found_inf"] for st in self._per_optimizer.values())
        if new_scale is not None:
            self._scale = float(new_scale.item() if isinstance(new_scale, Tensor) else new_scale)
        elif found:
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                new = self._scale * self._growth_factor
                if math.isfinite(new):
                    self._scale = new
                self._growth_tracker = 0
        self._steps += 1
        self.history.append((self._steps, self._scale, found))
        self._per_optimizer = {}

    @property
    def scale_history(self) -> list:
        """The scale after each ``update()`` (for a plot)."""
        return [s for _, s, _ in self.history]

    def is_enabled(self) -> bool:
        return self.enabled

    def get_growth_factor(self):
        return self._growth_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def get_growth_interval(self):
        return self._growth_interval

    def state_dict(self) -> dict:
        if not self.enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict):
        if not state_dict:
            return
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
