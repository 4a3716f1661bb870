"""The students' own tests (``make test`` in the students' repository): does this set-up work?

``gradlab course release`` ships this file as the students' ``tests/``; it runs in the instructor's
repository too. It checks what a student needs before the first lesson: gradlab imports and computes
a gradient, JupyterLab is there and ``gradlab lab`` would start at this folder, and every lesson and
exercise is a well-formed notebook (a kernel named, an exercise name in its metadata, graded parts,
no solution markers).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gradlab.lab import find_root

ROOT = find_root(Path(__file__).resolve().parent)
LESSONS = sorted((ROOT / "notebooks").glob("*.ipynb"))
EXERCISES = sorted((ROOT / "exercises").glob("*.ipynb"))


def test_gradlab_computes_a_gradient():
    import gradlab
    x = gradlab.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.numpy().tolist() == [2.0, -4.0, 6.0]


def test_the_course_is_here():
    assert LESSONS, f"no notebooks in {ROOT / 'notebooks'}"
    assert EXERCISES, f"no exercises in {ROOT / 'exercises'}"


@pytest.mark.parametrize("path", LESSONS + EXERCISES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebook_is_well_formed(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["nbformat"] == 4 and nb["cells"], f"{path.name}: not a format-4 notebook with cells"
    assert nb["metadata"].get("kernelspec", {}).get("name"), f"{path.name}: no kernelspec (JupyterLab would ask)"
    if path.parent.name != "exercises":
        return
    assert nb["metadata"].get("gradlab", {}).get("exercise") == path.stem, f"{path.name}: exercise name"
    graded = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade")]
    assert graded, f"{path.name}: no graded parts"
    text = "".join("".join(c["source"]) for c in nb["cells"])
    assert "### BEGIN" not in text, f"{path.name}: solution or hidden-test markers in a student's exercise"


def test_lab_would_start_here():
    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed: make lab installs it")
    r = subprocess.run([sys.executable, "-m", "gradlab", "lab", "--dry-run", "--no-trust", "--port", "8999"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert str(ROOT) in r.stdout and "8999" in r.stdout, r.stdout
