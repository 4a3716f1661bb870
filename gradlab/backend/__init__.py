"""Layer 1: arrays, dtypes, devices and random numbers. Nothing above talks to NumPy's module-level API directly."""
from . import dtypes
from .device import CPU, Device, as_device, device_of_array, xp_for, xp_of
from .dtypes import as_dtype, get_default_dtype, is_floating, result_type, set_default_dtype
from .random import generator, get_rng_state, initial_seed, manual_seed, set_rng_state

__all__ = [
    "dtypes", "CPU", "Device", "as_device", "device_of_array", "xp_for", "xp_of", "as_dtype",
    "get_default_dtype", "is_floating", "result_type", "set_default_dtype", "generator",
    "get_rng_state", "initial_seed", "manual_seed", "set_rng_state",
]
