"""``torch.accelerator``: the device-agnostic way current PyTorch examples pick a device::

    device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"

gradlab's one accelerator is CUDA (through CuPy); without a GPU ``is_available()`` is False and
``current_accelerator()`` is None, as in PyTorch on a cpu-only machine.
"""
from __future__ import annotations

from ..backend.device import Device
from . import cuda as _cuda


def is_available() -> bool:
    """True when a CUDA GPU is usable (``gradlab.cuda.is_available()``)."""
    return _cuda.is_available()


def current_accelerator(check_available: bool = False):
    """``device('cuda')`` when there is a GPU, else None (``check_available`` is accepted for PyTorch's
    signature)."""
    return Device("cuda") if _cuda.is_available() else None


def device_count() -> int:
    return _cuda.device_count()


def current_device_index() -> int:
    return _cuda.current_device() if _cuda.is_available() else -1


current_device_idx = current_device_index


def set_device_index(device) -> None:
    _cuda.set_device(device)


set_device_idx = set_device_index


def synchronize(device=None) -> None:
    if _cuda.is_available():
        _cuda.synchronize(device)


__all__ = ["current_accelerator", "current_device_index", "device_count", "is_available", "set_device_index",
           "synchronize"]
