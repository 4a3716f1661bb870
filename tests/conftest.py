"""Shared test set-up: hypothesis profiles and the optional PyTorch oracle."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# jsonschema (under nbformat, which many test files import) imports rfc3987_syntax when it is installed, and
# that builds a grammar of IRIs at import: 2.7 of nbformat's 2.9 CPU-s of import, in every worker. Nothing
# here validates IRIs (nbformat validates without a format checker), so the workers skip it, as gradlab's CLI and
# grader plugin do (gradlab/course/_nbval_plugin.py).
sys.modules.setdefault("rfc3987_syntax", None)

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
    """Every test starts from the same random state: gradlab's, NumPy's and (when installed) PyTorch's, whose
    layers draw their own random weights in the comparisons."""
    import gradlab
    gradlab.manual_seed(0)
    np.random.seed(0)
    if _torch is not None:
        _torch.manual_seed(0)
    yield


@pytest.fixture
def sim_device():
    """The simulated cuda device (``gradlab.backend.simulate_device()``) for one test; yields ``"cuda"``.

    Any test can run its program on a second device without a GPU: ``x.to(sim_device)``.
    """
    from gradlab.backend import simulate_device
    with simulate_device():
        yield "cuda"


# ------------------------------------------------------------------ the oracle's second run
# `make test` runs without PyTorch, as a student has it; CI then runs, in a venv with the oracle, exactly
# the tests that skipped here for want of it (scripts/run_oracle_tests.py), instead of the suite twice.
# With GRADLAB_TORCH_SKIPS=FILE set, the test ids (or, for a module skipped whole, its path) of every skip
# whose reason names PyTorch are written there, one a line. Only the controlling process writes (under
# pytest-xdist the workers' reports reach it too).
def _skip_reason(report) -> str:
    lr = report.longrepr
    return str(lr[-1]) if isinstance(lr, tuple) else str(lr)


class _TorchSkips:
    def __init__(self, path):
        self.path, self.ids = path, []

    def _note(self, report):
        if report.skipped and not hasattr(report, "wasxfail") and "torch" in _skip_reason(report).lower():
            self.ids.append(report.nodeid)

    def pytest_runtest_logreport(self, report):
        self._note(report)

    def pytest_collectreport(self, report):
        self._note(report)

    def pytest_sessionfinish(self):
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        with open(self.path, "w", encoding="utf-8") as f:
            f.writelines(i + "\n" for i in dict.fromkeys(self.ids))


def pytest_configure(config):
    path = os.environ.get("GRADLAB_TORCH_SKIPS")
    if path and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_TorchSkips(path), "gradlab-torch-skips")


# ------------------------------------------------------------------ which files the workers take first
# `make test` runs `pytest -n 2 --dist loadfile --no-loadscope-reorder`: each file runs whole on one worker
# (its module fixtures, such as a graded batch, are computed once), and the workers take the files in
# collection order. The longest files go first (longest-processing-time-first): started last, one of them
# would run alone at the end while the other worker idles. HEAVIEST lists them, longest first; every other file
# keeps its place after them. Only the order changes: every test still runs. The figures: seconds on a worker
# in the student's `make test` on an idle 2-core machine (.ci/run's slowest tests, docs/benchmarks.md, "The
# test suite's time"), and the CPU-seconds of the file run alone, all its processes counted (its own cpuacct
# cgroup; a shared machine at load 4-15). The first two pair a CPU-heavy file (its grader runs 2 kernels at a
# time) with one that mostly waits (JupyterLab's autosave interval).
HEAVIEST = (                                   # worker-s in make test | CPU-s alone
    "tests/test_course_grade.py",              # 170 before one batch replaced two | 210 (256 before): 95 kernels
    "tests/browser/test_student_work.py",      # 158 (a 135 s wait from lesson 05's opening) | 83
    "tests/test_course_trust.py",              # 42 + 41 + its smaller batches | 77
    "tests/test_capstone_full.py",             # 71: the capstone's full training | 88
    "tests/test_registry.py",                  # - | 93
    "tests/test_course_cluster.py",            # 28 + its retries | 73
    "tests/test_course_batch.py",              # 32 | 44
    "tests/test_course_release.py",            # - | 41
    "tests/test_course_fixtures.py",           # 22 | 33
    "tests/test_practice.py",                  # 21-74 | 17-19 (31-35 before the rule's records were kept)
)


def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(HEAVIEST)}
    root = config.rootpath

    def place(item):
        try:
            rel = item.path.relative_to(root).as_posix()
        except ValueError:
            rel = ""
        return rank.get(rel, len(HEAVIEST))
    items.sort(key=place)   # stable: within a file, and among the other files, the order is pytest's
