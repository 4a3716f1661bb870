"""Layer 1: arrays, dtypes, devices and random numbers. Nothing above talks to NumPy's module-level API directly."""
from . import dtypes
from .arrays import as_array, as_strided, erf, erfc, scatter_add
from .device import CPU, Device, as_device, device_of_array, on_device, to_device_array, to_host, xp_for, xp_of
from .simulated import SimArray, simulate_device
from .dtypes import as_dtype, get_default_dtype, is_floating, result_type, set_default_dtype
from .random import generator, get_rng_state, initial_seed, manual_seed, set_rng_state

__all__ = [
    "dtypes", "CPU", "Device", "as_device", "device_of_array", "xp_for", "xp_of", "as_dtype",
    "on_device", "to_host", "to_device_array", "SimArray", "simulate_device", "scatter_add", "as_strided", "erf", "erfc", "as_array",
    "get_default_dtype", "is_floating", "result_type", "set_default_dtype", "generator",
    "get_rng_state", "initial_seed", "manual_seed", "set_rng_state",
]

from .allocator import keep_freed_memory, release_freed_memory  # noqa: E402
from . import allocator as _allocator  # noqa: E402

_allocator.configure_from_environment()  # reuse freed arrays (see gradlab/backend/allocator.py)
