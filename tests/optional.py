"""Skipping a test module whose optional dependency is not installed, without importing it at collection.

``pytest.importorskip`` imports the module to find out, and collection runs in every xdist worker: matplotlib,
dask.distributed and anywidget cost about 0.4-0.7 CPU-s each to import, paid by all three workers though
only the one that runs the file needs them. ``require`` only looks the module up (``importlib.util.find_spec``
reads no module's code); the tests import it where they use it.
"""
from __future__ import annotations

import importlib.util

import pytest


def require(module: str, reason: str) -> None:
    """Skip the calling test module, with ``reason``, unless top-level package ``module`` is installed."""
    if importlib.util.find_spec(module) is None:
        pytest.skip(reason, allow_module_level=True)
