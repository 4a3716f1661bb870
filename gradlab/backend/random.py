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
    if not -2 ** 63 <= seed < 2 ** 64:
        from ..errors import ArgumentError
        raise ArgumentError(f"manual_seed: seed must fit in 64 bits, got {seed}")
    seed %= 2 ** 64  # a negative seed wraps around, as in PyTorch (manual_seed(-1) is 2**64 - 1)
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


def generator(gen=None):
    """The generator to draw from: ``gen`` when given (a ``gradlab.Generator`` or a NumPy one), else the global one."""
    return _generator if gen is None else gen


class Generator:
    """An independent random stream, as ``torch.Generator``.

    ``g = gradlab.Generator().manual_seed(0)`` then ``gradlab.randn(3, generator=g)`` draws from
    ``g`` alone, leaving the global stream (``manual_seed``) untouched. It wraps a NumPy
    ``Generator``, whose methods (``standard_normal``, ``integers``...) it also offers.
    """

    def __init__(self, device="cpu"):
        self.device = device
        self.manual_seed(0)

    def manual_seed(self, seed) -> "Generator":
        self._seed = int(seed)
        self._rng = np.random.default_rng(self._seed)
        return self

    def seed(self) -> int:
        """Re-seed from fresh entropy; returns the new seed."""
        s = int(np.random.SeedSequence().entropy % (2**63))
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> dict:
        return self._rng.bit_generator.state

    def set_state(self, state) -> "Generator":
        self._rng.bit_generator.state = state
        return self

    def __getattr__(self, name):  # random(), standard_normal(), integers(), permutation()...
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._rng, name)


def get_rng_state() -> dict:
    """The generator's full state (a JSON-friendly dict), for checkpoints."""
    return _generator.bit_generator.state


def set_rng_state(state: dict) -> None:
    _generator.bit_generator.state = state
