"""gradlab's allocator thresholds: set on import, opt-out by environment, fewer page faults, same results."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gradlab.backend import allocator

_FAULTS = (
    "import resource, gradlab\n"
    "from gradlab.backend import allocator\n"
    "x = gradlab.randn(256, 1024, requires_grad=True)\n"   # 1 MiB arrays, several alive at once
    "def step():\n"
    "    h = x\n"
    "    for _ in range(6):\n"
    "        h = (h * 1.5).tanh()\n"                     # six saved activations alive until backward
    "    h.sum().backward()\n"
    "for _ in range(3): step()\n"
    "r = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
    "for _ in range(20): step()\n"
    "print(allocator.settings, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r) / 20, float(x.grad.sum()))\n"
)


def _run(env_extra):
    env = dict(os.environ, **env_extra)
    out = subprocess.run([sys.executable, "-c", _FAULTS], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    settings, faults, total = out.stdout.rsplit(maxsplit=2)
    return settings, float(faults), float(total)


@pytest.mark.skipif(allocator._libc() is None, reason="not glibc: gradlab leaves the allocator alone")
def test_import_sets_thresholds_and_saves_page_faults():
    kept = _run({"GRADLAB_MALLOC": ""})
    system = _run({"GRADLAB_MALLOC": "system"})
    assert kept[0] == f"({allocator.DEFAULT_MMAP}, {allocator.DEFAULT_TRIM})"
    assert system[0] == "None"
    assert kept[2] == system[2]  # the allocator never changes a result
    # glibc returns the freed 1 MiB arrays to the OS and faults them in again every step
    assert system[1] > 100 and kept[1] < system[1] / 10, (kept, system)


def test_release_and_keep_return_bools():
    assert allocator.release_freed_memory() in (True, False)
    assert allocator.keep_freed_memory() in (True, False)
