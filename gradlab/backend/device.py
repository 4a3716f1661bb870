"""Devices and the array module behind each.

Every op asks the backend for ``xp`` (NumPy on "cpu", CuPy on "cuda") instead
of calling ``numpy`` directly; that one indirection is what lets the same op
code run on a GPU. Importing gradlab never imports CuPy: it is looked up only
when a "cuda" device is first asked for.
"""
from __future__ import annotations

import numpy as np

from ..errors import DeviceError
from . import simulated as _sim
from .simulated import SIM_XP, SimArray


class Device:
    """A device such as ``cpu`` or ``cuda:0``; compares equal to its string."""

    __slots__ = ("type", "index")

    def __init__(self, spec="cpu", index=None):
        if isinstance(spec, Device):
            self.type, self.index = spec.type, spec.index
            return
        if not isinstance(spec, str):
            raise DeviceError(f"device must be a string like 'cpu' or 'cuda:0', got {spec!r}")
        kind, _, idx = spec.partition(":")
        if kind not in ("cpu", "cuda"):
            raise DeviceError(f"unknown device {spec!r}; gradlab knows 'cpu' and 'cuda' (or 'cuda:N')")
        if idx:
            try:
                index = int(idx)
            except ValueError:
                raise DeviceError(f"bad device index in {spec!r}; write e.g. 'cuda:0'") from None
        if kind == "cuda" and index is None:
            index = 0
        self.type, self.index = kind, index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        return f"device('{self}')"

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = Device(other)
            except DeviceError:
                return False
        return isinstance(other, Device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))


CPU = Device("cpu")


def as_device(device) -> Device:
    if device is None:
        return CPU
    if isinstance(device, Device):
        return device
    return Device(device)


_DEFAULT = [CPU]


def set_default_device(device) -> None:
    """``torch.set_default_device``: where the factories (``tensor``, ``zeros``, ``randn``, ``arange``...) put new
    tensors when no ``device=`` is given. ``None`` resets it to the cpu."""
    _DEFAULT[0] = CPU if device is None else as_device(device)


def get_default_device() -> Device:
    """``torch.get_default_device``: the device factories use when no ``device=`` is given (cpu unless set)."""
    return _DEFAULT[0]


def factory_device(device) -> Device:
    """The device a factory makes its tensor on: ``device``, else the default device."""
    return _DEFAULT[0] if device is None else as_device(device)


def xp_for(device: Device):
    """The array module for ``device``: NumPy on the cpu, CuPy on cuda (or the simulated device in tests)."""
    if device.type == "cpu":
        return np
    if _sim.is_active():
        if device.index:
            raise DeviceError(f"device {device}: the simulated device is cuda:0 only; use device='cuda'")
        return SIM_XP
    return _cupy(device)


def _cupy(device):
    try:
        import cupy  # noqa: F401 - only when a cuda device is requested
    except ImportError:
        raise DeviceError(
            f"device {device}: CuPy is not installed, so gradlab has no GPU backend here; "
            "install it with: pip install 'gradlab[gpu]' (or use device='cpu')"
        ) from None
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - CUDA raises many kinds
        n = 0
    if device.index >= n:
        raise DeviceError(
            f"device {device}: CuPy is installed but this machine has {n} CUDA device(s); use device='cpu'"
        )
    return cupy


def xp_of(arr):
    """The array module (numpy or cupy) that owns ``arr``: ops create new arrays with it.

    ``xp = xp_of(x._data); xp.zeros(...)`` makes the new array on ``x``'s device;
    ``np.zeros(...)`` would make it on the host, and CuPy refuses to mix the two.
    """
    t = type(arr)
    if t is np.ndarray:  # the common case first: this runs inside ops
        return np
    if t is SimArray:
        return SIM_XP
    if isinstance(arr, (np.ndarray, np.generic)) or t.__module__.split(".")[0] != "cupy":
        return np
    import cupy
    return cupy


_CUDA = {}


def device_of_array(arr) -> Device:
    """The device an array lives on (NumPy arrays are on the cpu, CuPy arrays on ``cuda:<id>``)."""
    if type(arr) is np.ndarray:
        return CPU
    if isinstance(arr, SimArray):
        idx = 0
    elif isinstance(arr, (np.ndarray, np.generic)) or np.isscalar(arr):
        return CPU
    else:
        dev = getattr(arr, "device", None)
        if dev is None or not hasattr(dev, "id"):
            return CPU
        idx = dev.id
    d = _CUDA.get(idx)
    if d is None:
        d = _CUDA[idx] = Device("cuda", idx)
    return d


def on_device(arr) -> bool:
    """True for arrays that live on a (real or simulated) CUDA device."""
    return type(arr) is not np.ndarray and device_of_array(arr).type == "cuda"


def to_host(arr) -> np.ndarray:
    """An explicit device -> host copy (``.get()``); host arrays come back as they are."""
    return arr.get() if on_device(arr) else arr


def check_dtype_for(dtype, device: Device) -> None:
    """CuPy has no bfloat16: say so instead of failing deep inside CuPy."""
    if device.type == "cuda" and getattr(dtype, "name", str(dtype)) == "bfloat16":
        raise DeviceError(f"bfloat16 tensors cannot live on {device}: CuPy has no bfloat16 dtype; use float16 "
                          "on the GPU (x.half()) or keep bfloat16 tensors on the cpu")


def to_device_array(arr, device: Device):
    """An explicit copy of ``arr`` onto ``device`` (a no-op when it is already there)."""
    if device.type == "cpu":
        return to_host(arr)
    if device_of_array(arr) == device:
        return arr
    check_dtype_for(arr.dtype, device)
    xp = xp_for(device)
    if xp is SIM_XP:
        return xp.asarray(to_host(arr))
    with xp.cuda.Device(device.index):
        return xp.asarray(to_host(arr))
