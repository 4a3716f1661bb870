"""``gradlab.cuda``: is there a GPU, wait for it, and how much of its memory is in use.

The names are PyTorch's (``torch.cuda.is_available()`` ...). Two things a
student meets first on a GPU:

* **GPU work is asynchronous.** A call such as ``y = x @ w`` on ``cuda`` only
  *queues* the matrix product and returns at once; time it with ``time.time()``
  and you measure the queueing. Call ``gradlab.cuda.synchronize()`` before
  reading the clock.
* **GPU memory is pooled.** CuPy keeps freed blocks in a pool to reuse them, so
  ``nvidia-smi`` shows what the pool *holds*; ``memory_allocated()`` is what
  live tensors *use*, and ``max_memory_allocated()`` the peak since
  ``reset_peak_memory_stats()``: the number the memory lesson is about.

Nothing here imports CuPy until a function needs it, and without CuPy (or
without a GPU) ``is_available()`` is simply False. Inside
``gradlab.backend.simulate_device()`` the simulated device counts as one GPU
(its memory functions report 0).
"""
from __future__ import annotations

from ...backend import simulated as _sim
from ...backend.device import Device, as_device
from ...errors import DeviceError


def _cupy_or_none():
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def device_count() -> int:
    """How many CUDA devices gradlab can use (0 without CuPy or without a GPU)."""
    if _sim.is_active():
        return 1
    cupy = _cupy_or_none()
    if cupy is None:
        return 0
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001 - no driver, no device: CUDA raises many kinds
        return 0


def is_available() -> bool:
    """True when ``device="cuda"`` will work here."""
    return device_count() > 0


def current_device() -> int:
    _require("current_device")
    if _sim.is_active():
        return 0
    return int(_cupy_or_none().cuda.runtime.getDevice())


def get_device_name(device=None) -> str:
    _require("get_device_name")
    if _sim.is_active():
        return "simulated CUDA device (NumPy underneath)"
    cupy = _cupy_or_none()
    props = cupy.cuda.runtime.getDeviceProperties(_index(device))
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def synchronize(device=None) -> None:
    """Wait until every queued GPU operation has finished (do this before reading a timer)."""
    if _sim.is_active() or not is_available():
        return
    cupy = _cupy_or_none()
    with cupy.cuda.Device(_index(device)):
        cupy.cuda.runtime.deviceSynchronize()


def manual_seed(seed: int) -> None:
    """Seed CuPy's own generator (``gradlab.manual_seed`` already does this and seeds gradlab's)."""
    from ...backend.random import _seed_cupy
    _seed_cupy(int(seed))


manual_seed_all = manual_seed


# ------------------------------------------------------------------ memory
_peak = {}       # device index -> peak bytes in use since tracking started
_in_use = {}     # device index -> bytes in use as the hook counts them
_hook = [None]


def memory_allocated(device=None) -> int:
    """Bytes of GPU memory held by live arrays on ``device`` (CuPy's memory pool ``used_bytes``)."""
    if _sim.is_active() or not is_available():
        return 0
    cupy = _cupy_or_none()
    with cupy.cuda.Device(_index(device)):
        return int(cupy.get_default_memory_pool().used_bytes())


def memory_reserved(device=None) -> int:
    """Bytes the memory pool holds (in use + cached for reuse): roughly what ``nvidia-smi`` shows."""
    if _sim.is_active() or not is_available():
        return 0
    cupy = _cupy_or_none()
    with cupy.cuda.Device(_index(device)):
        return int(cupy.get_default_memory_pool().total_bytes())


def max_memory_allocated(device=None) -> int:
    """The peak of ``memory_allocated`` since ``reset_peak_memory_stats()``.

    CuPy's pool keeps no peak, so gradlab counts allocations with a CuPy memory
    hook, installed by the first call to this function or to
    ``reset_peak_memory_stats()``; before that the peak is the current value.
    """
    if _sim.is_active() or not is_available():
        return 0
    idx = _index(device)
    _install_hook()
    return max(_peak.get(idx, 0), memory_allocated(idx))


def reset_peak_memory_stats(device=None) -> None:
    """Start measuring the peak afresh from the current use."""
    if _sim.is_active() or not is_available():
        return
    idx = _index(device)
    _install_hook()
    _in_use[idx] = memory_allocated(idx)
    _peak[idx] = _in_use[idx]


def empty_cache() -> None:
    """Give the pool's cached (unused) blocks back to the GPU driver."""
    if _sim.is_active() or not is_available():
        return
    _cupy_or_none().get_default_memory_pool().free_all_blocks()


def _install_hook():
    if _hook[0] is not None:
        return
    cupy = _cupy_or_none()

    class _PeakHook(cupy.cuda.MemoryHook):
        name = "gradlab_peak_memory"

        def malloc_postprocess(self, device_id=0, mem_size=0, **_):
            used = _in_use.get(device_id, 0) + mem_size
            _in_use[device_id] = used
            if used > _peak.get(device_id, 0):
                _peak[device_id] = used

        def free_postprocess(self, device_id=0, mem_size=0, **_):
            _in_use[device_id] = _in_use.get(device_id, 0) - mem_size

    for i in range(device_count()):
        _in_use[i] = memory_allocated(i)
        _peak[i] = max(_peak.get(i, 0), _in_use[i])
    hook = _PeakHook()
    hook.__enter__()  # stays installed (for this thread) from now on
    _hook[0] = hook


# ----------------------------------------------------------------- helpers
def _index(device) -> int:
    if device is None:
        return 0 if _sim.is_active() else int(_cupy_or_none().cuda.runtime.getDevice())
    if isinstance(device, int):
        return device
    d = as_device(device)
    if d.type != "cuda":
        raise DeviceError(f"gradlab.cuda: {d} is not a CUDA device")
    return d.index or 0


def _require(fn):
    if not is_available():
        raise DeviceError(f"gradlab.cuda.{fn}: no CUDA device is available here "
                          f"({'CuPy is not installed' if _cupy_or_none() is None else 'CuPy found no GPU'})")


__all__ = [
    "Device", "is_available", "device_count", "current_device", "get_device_name", "synchronize",
    "manual_seed", "manual_seed_all", "memory_allocated", "memory_reserved", "max_memory_allocated",
    "reset_peak_memory_stats", "empty_cache",
]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """``torch.cuda.is_bf16_supported``: True on a GPU of compute capability 8.0 or newer (Ampere+), False
    without a GPU (gradlab's bfloat16 on the cpu works either way: it is ml_dtypes' NumPy dtype)."""
    if not is_available() or _sim.is_active():
        return False
    try:
        major = int(_cupy_or_none().cuda.Device().compute_capability[:-1] or 0)
    except Exception:  # noqa: BLE001
        return False
    return major >= 8


def get_device_capability(device=None) -> tuple:
    """``(major, minor)`` compute capability of the GPU (``torch.cuda.get_device_capability``)."""
    _require("get_device_capability")
    if _sim.is_active():
        return (8, 0)
    cc = _cupy_or_none().cuda.Device(_index(device)).compute_capability
    return (int(cc[:-1]), int(cc[-1]))


def set_device(device) -> None:
    """``torch.cuda.set_device``: make ``device`` the current GPU."""
    _require("set_device")
    if not _sim.is_active():
        _cupy_or_none().cuda.Device(_index(device)).use()


def is_initialized() -> bool:
    return is_available()


from . import amp  # noqa: E402,F401 - torch.cuda.amp's deprecated aliases
