"""One seeded random generator for every random factory and for dropout.

``gradlab.manual_seed(n)`` resets it, so a notebook that seeds once at the top
gives the same numbers on every run (which nbval's output checks rely on).
"""
from __future__ import annotations

import numpy as np

_generator = np.random.default_rng(0)
_seed = 0


def manual_seed(seed: int):
    """Seed every gradlab random factory; returns the seed, like ``torch.manual_seed``."""
    global _generator, _seed
    seed = int(seed)
    _generator = np.random.default_rng(seed)
    _seed = seed
    return seed


def initial_seed() -> int:
    return _seed


def generator() -> np.random.Generator:
    return _generator


def get_rng_state() -> dict:
    """The generator's full state (a JSON-friendly dict), for checkpoints."""
    return _generator.bit_generator.state


def set_rng_state(state: dict) -> None:
    _generator.bit_generator.state = state
