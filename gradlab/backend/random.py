"""One seeded random generator for every random factory and for dropout.

``gradlab.manual_seed(n)`` resets it, so a notebook that seeds once at the top
gives the same numbers on every run (which nbval's output checks rely on).
"""
from __future__ import annotations

import sys

import numpy as np

_generator = np.random.default_rng(0)
_seed = 0


def manual_seed(seed: int):
    """Seed every gradlab random factory; returns the seed, like ``torch.manual_seed``."""
    global _generator, _seed
    seed = int(seed)
    _generator = np.random.default_rng(seed)
    _seed = seed
    if "cupy" in sys.modules:  # seed the GPU's generator too, without importing CuPy just for that
        _seed_cupy(seed)
    return seed


def _seed_cupy(seed: int) -> None:
    """Seed CuPy's global generator (for user code that calls ``cupy.random`` directly).

    gradlab's own random factories and dropout draw on the host from the generator
    above and copy to the device, so one seed gives the same numbers on cpu and cuda.
    """
    try:
        import cupy
        cupy.random.seed(seed)
    except Exception:  # noqa: BLE001 - CuPy without a usable GPU: nothing to seed
        pass


def initial_seed() -> int:
    return _seed


def generator() -> np.random.Generator:
    return _generator


def get_rng_state() -> dict:
    """The generator's full state (a JSON-friendly dict), for checkpoints."""
    return _generator.bit_generator.state


def set_rng_state(state: dict) -> None:
    _generator.bit_generator.state = state
