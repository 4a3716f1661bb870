"""An impossible result raises gradlab.OutOfMemoryError (a RuntimeError, as torch.OutOfMemoryError)
naming the op, the shape and the bytes; NumPy's bare MemoryError never escapes.

The calls run in a subprocess under an address-space limit (``resource.RLIMIT_AS``), so whatever
an op would really try to allocate fails quickly and cannot disturb this machine.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import gradlab

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES = {  # name -> (expression, the op the message must name)
    "expand().contiguous()": ("x.expand(10**12).contiguous()", "contiguous"),
    "expand().clone()": ("x.expand(10**12).clone()", "clone"),
    "* 2": ("x.expand(10**12) * 2", "mul"),
    "== 0": ("x.expand(10**12) == 0", "eq"),
    "isnan": ("gradlab.isnan(x.expand(10**12))", "isnan"),
    "cat": ("gradlab.cat([x.expand(10**11), x.expand(10**11)])", "cat"),
    "pad": ("F.pad(x, (0, 10**12))", "pad"),
    "outer": ("gradlab.outer(gradlab.ones(10**6), gradlab.ones(10**6))", "outer"),
    "matmul": ("gradlab.ones(10**6, 1) @ gradlab.ones(1, 10**6)", "matmul"),
    "broadcast add": ("gradlab.ones(10**6, 1) + gradlab.ones(10**6)", "add"),
    "repeat": ("x.repeat(10**12)", "repeat"),
    "eye": ("gradlab.eye(10**6)", "eye"),
    "one_hot": ("F.one_hot(gradlab.tensor([1]), 10**12)", "one_hot"),
    "arange": ("gradlab.arange(10**15)", "arange"),
    "zeros": ("gradlab.zeros(10**12)", "zeros"),
    "randn": ("gradlab.randn(10**12)", "randn"),
    "full": ("gradlab.full((10**12,), 1.0)", "full"),
    "backward of a big expand": ("(w.expand(10**12) * 1).sum().backward()", "mul"),
}

SCRIPT = textwrap.dedent("""
    import json, resource, sys
    import gradlab
    import gradlab.nn.functional as F
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, resource.RLIM_INFINITY))  # 3 GiB for this process
    x = gradlab.ones(1)
    w = gradlab.ones(1, requires_grad=True)
    out = {}
    for name, (expr, op) in json.loads(sys.argv[1]).items():
        try:
            eval(expr)
            out[name] = ["no error", ""]
        except RuntimeError as e:  # what torch-style code catches
            out[name] = [type(e).__name__, str(e)]
        except BaseException as e:
            out[name] = ["not a RuntimeError: " + type(e).__module__ + "." + type(e).__name__, str(e)]
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def results():
    if not sys.platform.startswith("linux"):
        pytest.skip("the address-space limit (RLIMIT_AS) is Linux's")
    env = dict(os.environ, PYTHONPATH=ROOT)
    p = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(CASES)], capture_output=True, text=True,
                       timeout=300, env=env, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", list(CASES))
def test_an_impossible_result_is_an_out_of_memory_error(results, name):
    kind, msg = results[name]
    assert kind == "OutOfMemoryError", f"{name}: {kind}: {msg}"
    assert CASES[name][1] in msg and "bytes" in msg and "shape (" in msg, msg


def test_the_class_is_a_runtime_error_as_pytorchs():
    assert issubclass(gradlab.OutOfMemoryError, RuntimeError) and issubclass(gradlab.OutOfMemoryError, MemoryError)


def test_factories_refuse_before_allocating():
    """The size check needs no address-space limit: more than RAM plus swap is refused at once."""
    from gradlab.backend.memory_limit import limit_bytes
    n = limit_bytes() // 4 + 1
    with pytest.raises(gradlab.OutOfMemoryError, match=r"zeros: the result of shape \(\d+,\) \(float32\) needs"):
        gradlab.zeros(n)
