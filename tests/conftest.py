"""Shared test set-up: hypothesis profiles and the optional PyTorch oracle."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, max_examples=int(os.environ.get("GRADLAB_HYPOTHESIS_EXAMPLES", "12")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                           HealthCheck.function_scoped_fixture],
    derandomize=True,
)
settings.register_profile("thorough", deadline=None, max_examples=200,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                 HealthCheck.function_scoped_fixture])
settings.load_profile(os.environ.get("GRADLAB_HYPOTHESIS_PROFILE", "default"))

# One BLAS thread for the tests: the small matrices here gain nothing from more, and
# on a busy 2-core machine competing BLAS threads make them many times slower.
try:
    from threadpoolctl import threadpool_limits
    threadpool_limits(1)
except ImportError:  # pragma: no cover - threadpoolctl is in the dev extra
    pass

try:
    import torch as _torch
    _torch.set_num_threads(1)
    TORCH_SKIP_REASON = None
except ImportError:  # pragma: no cover - CI installs torch
    _torch = None
    TORCH_SKIP_REASON = "PyTorch is not installed; install gradlab[oracle] to compare against it"


@pytest.fixture(scope="session")
def torch():
    """The torch module, or a skip with a printed reason when it is not installed."""
    if _torch is None:
        pytest.skip(TORCH_SKIP_REASON)
    return _torch


@pytest.fixture(autouse=True)
def _seed():
    import gradlab
    gradlab.manual_seed(0)
    np.random.seed(0)
    yield


@pytest.fixture
def sim_device():
    """The simulated cuda device (``gradlab.backend.simulate_device()``) for one test; yields ``"cuda"``.

    Any test can run its program on a second device without a GPU: ``x.to(sim_device)``.
    """
    from gradlab.backend import simulate_device
    with simulate_device():
        yield "cuda"
