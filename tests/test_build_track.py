"""The build track (solutions/21_build_engine.ipynb): the student's engine is drawn, animated and diffed
by gradlab, and `gradlab grade` gives the reference full marks and the generated exercise zero."""
from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

import gradlab

from .build_track import SIGN_FLIP, engine

ROOT = Path(__file__).resolve().parents[1]


def _loss(ns):
    V = ns["Value"]
    rng = np.random.default_rng(0)
    x, w, b = V(rng.standard_normal((4, 2))), V(rng.standard_normal((2, 3))), V(np.zeros(3))
    return x, w, b, ((x @ w + b).tanh() * w.sum()).mean()


def test_the_track_engine_is_drawn_and_animated_in_its_own_order():
    ns = engine()
    x, w, b, loss = _loss(ns)
    gv = gradlab.show_graph(loss)
    assert {o.op for o in gv.model.ops} >= {"matmul", "+", "tanh", "*", "sum"}
    assert {t.name for t in gv.model.tensors if t.role == "leaf"} >= {"x", "w", "b"}
    widget = gradlab.animate_backward(loss, compare=True)
    want = [id(v) for v in reversed(ns["topo_order"](loss))]     # the order the student's backward runs
    graph = gradlab.viz.foreign_graph.ForeignGraph(loss, gradlab.viz.foreign_graph.Protocol.resolve(loss))
    ids = {}
    for i, v in enumerate(v for v in graph.order if graph.inputs(v)):
        ids[id(v)] = f"op{i}"
    assert [n for n in widget.order if n.startswith("op")] == [ids[k] for k in want if k in ids]
    assert not any(f.get("diff") for f in widget.frames)
    assert b.grad.shape == (3,) and np.isfinite(b.grad).all()


def test_the_diff_view_points_at_the_student_mistake():
    ns = engine(SIGN_FLIP)
    x, w, b, loss = _loss(ns)
    loss.backward()
    d = gradlab.viz.grad_diff(loss)
    assert d.first is not None and d.first.kind == "grad"
    assert any(op == "*" for _, op in d.first.users)              # the wrong VJP is the one of *
    student, ref = np.asarray(d.first.student), np.asarray(d.first.gradlab)
    assert np.allclose(student, -ref) and not np.allclose(ref, 0)
    gv = gradlab.show_graph(loss, view="backward", compare=True)
    assert "grad&#45;diff" in gv.svg()


@pytest.mark.slow
def test_grade_gives_the_reference_full_marks_and_the_exercise_zero(tmp_path):
    pytest.importorskip("nbval")
    from gradlab.cli import main
    out = tmp_path / "g.json"
    with contextlib.redirect_stdout(io.StringIO()):
        main(["grade", str(ROOT / "solutions" / "21_build_engine.ipynb"), str(ROOT / "exercises" / "21_build_engine.ipynb"),
              "--hidden", "-n", "2", "--json", str(out)])
    doc = {Path(n["notebook"]).parent.name: n for n in json.loads(out.read_text())["notebooks"]}
    sol, ex = doc["solutions"], doc["exercises"]
    assert sol["earned"] == sol["possible"] >= 15
    assert ex["earned"] == 0 and ex["possible"] == sol["possible"]
