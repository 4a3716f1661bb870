"""Run one training program twice: on PyTorch as written, and on gradlab with only its imports changed.

A program is a plain script in the style of a public tutorial. It makes its data and initial weights with
NumPy (so both runs start from the same numbers), trains, and leaves behind ``losses`` (one float per step)
and ``model`` (or ``models``, a dict of them). The harness compares losses per step, the last gradients of
every parameter and the final weights.
"""
from __future__ import annotations

import pathlib
import re

import numpy as np

HERE = pathlib.Path(__file__).parent
PROGRAMS = sorted(p.stem for p in HERE.glob("prog_*.py"))

_IMPORT = re.compile(r"^(\s*)import torch(\s*)$|^(\s*)import torch\.|^(\s*)from torch(\.| )")


def to_gradlab(source: str) -> str:
    """The only change: each ``import torch...`` / ``from torch... import`` line sent to gradlab."""
    out = []
    for line in source.splitlines():
        if re.match(r"^\s*import torch\s*$", line):
            line = line.replace("import torch", "import gradlab as torch")
        elif re.match(r"^\s*(import|from) torch[\. ]", line):
            line = re.sub(r"\b(import|from) torch\b", r"\1 gradlab", line, count=1)
        out.append(line)
    return "\n".join(out) + "\n"


def changed_lines(source: str) -> int:
    return sum(a != b for a, b in zip(source.splitlines(), to_gradlab(source).splitlines()))


def run(name: str, lib: str) -> dict:
    source = (HERE / f"{name}.py").read_text()
    if lib == "gradlab":
        source = to_gradlab(source)
    ns = {"__name__": "__main__"}
    exec(compile(source, f"<{name} on {lib}>", "exec"), ns)
    models = ns.get("models") or {"model": ns["model"]}
    out = {"losses": np.asarray(ns["losses"], dtype=np.float64), "weights": {}, "grads": {}}
    for mname, m in models.items():
        for k, v in m.state_dict().items():
            out["weights"][f"{mname}.{k}"] = np.array(v.detach().cpu().numpy(), dtype=np.float64)
        for k, p in m.named_parameters():
            if p.grad is not None:
                out["grads"][f"{mname}.{k}"] = np.array(p.grad.detach().cpu().numpy(), dtype=np.float64)
    return out


def compare(g: dict, t: dict, rtol=2e-4, atol=2e-5):
    assert g["losses"].shape == t["losses"].shape, (g["losses"].shape, t["losses"].shape)
    np.testing.assert_allclose(g["losses"], t["losses"], rtol=rtol, atol=atol, err_msg="losses per step")
    assert list(g["weights"]) == list(t["weights"]), "state_dict keys differ"
    for k in t["weights"]:
        np.testing.assert_allclose(g["weights"][k], t["weights"][k], rtol=rtol, atol=atol, err_msg=f"final {k}")
    assert list(g["grads"]) == list(t["grads"]), "parameters with gradients differ"
    for k in t["grads"]:
        np.testing.assert_allclose(g["grads"][k], t["grads"][k], rtol=rtol, atol=atol * 10, err_msg=f"grad {k}")
