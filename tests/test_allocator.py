"""The opt-in allocator setting runs in a fresh process and does not change results."""
from __future__ import annotations

import subprocess
import sys


def test_keep_freed_memory_in_a_subprocess():
    code = (
        "import gradlab, gradlab.backend as b\n"
        "ok = b.keep_freed_memory()\n"
        "x = gradlab.randn(512, 512, requires_grad=True)\n"
        "(x @ x).tanh().sum().backward()\n"
        "print(ok, x.grad.shape)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] in ("True", "False") and "(512, 512)" in out.stdout
