"""The build track's engine (a student's own ``Value``), animated by gradlab in a real JupyterLab.

The notebook loads the engine the build track has the student write (``tests/build_track.py`` runs
solutions/21_build_engine.ipynb's cells), animates its own backward with ``gradlab.animate_backward``,
and writes the order its ``backward()`` called the ``_backward`` closures in; then the same engine with
a deliberately wrong VJP (a sign flip in ``*``) animated with ``compare=True``. The tests step through
both in headless Chromium: the browser lights the student's nodes in the student's order, and the
diff view marks the first wrong node, with both values, on the drawing and on its step.
"""
from __future__ import annotations

import pytest

from .conftest import run_recording_notebook

pytestmark = pytest.mark.browser

SETUP = """\
import json
import numpy as np
import gradlab
from tests.build_track import SIGN_FLIP, engine
"""

GOOD_CELL = """\
ns = engine()
V = ns["Value"]
rng = np.random.default_rng(0)
x, w, b = V(rng.standard_normal((4, 2))), V(rng.standard_normal((2, 3))), V(np.zeros(3))
loss = ((x @ w + b).tanh() * w.sum()).mean()
good = gradlab.animate_backward(loss, compare=True)
json.dump({"order": good.order}, open("student_good.json", "w"))
good"""

BAD_CELL = """\
bad_ns = engine(SIGN_FLIP)
B = bad_ns["Value"]
x, w, b = B(rng.standard_normal((4, 2))), B(rng.standard_normal((2, 3))), B(np.zeros(3))
bad_loss = ((x @ w + b).tanh() * w.sum()).mean()
bad = gradlab.animate_backward(bad_loss, compare=True)
diff = next(f for f in bad.frames if f.get("diff"))
json.dump({"order": bad.order, "diff_node": diff["n"], "diff_step": bad.order.index(diff["n"]) + 1,
           "text": diff["diff"]}, open("student_bad.json", "w"))
bad"""


def _state(root):
    return root.evaluate("r => ({step: +r.dataset.step, current: r.dataset.current})")


@pytest.fixture(scope="module")
def student_notebook(browser, lab_server, lab_root):
    ctx, lp = run_recording_notebook(browser, lab_server, lab_root, "student_engine.ipynb",
                                     [SETUP, GOOD_CELL, BAD_CELL],
                                     {k: f"student_{k}.json" for k in ("good", "bad")}, timeout=180_000)
    yield lp
    ctx.close()


def test_stepping_follows_the_students_own_backward(student_notebook):
    root = student_notebook.page.locator(".gl-root").nth(0)
    order = student_notebook.recorded["good"]["order"]
    ids = root.evaluate("r => [...r.querySelectorAll('g.node')].map(g => g.id)")
    assert set(order) <= set(ids)
    seen = []
    for _ in order:
        root.locator(".gl-fwd").click()
        st = _state(root)
        seen.append(st["current"])
        lit = root.evaluate("r => [...r.querySelectorAll('g.node.gl-current')].map(g => g.id)")
        assert st["current"] in lit
    assert seen == order
    assert root.evaluate("r => r.querySelectorAll('g.node.grad-diff').length") == 0
    student_notebook.page.wait_for_timeout(300)
    student_notebook.screenshot("student_engine_backward.png", root)


def test_the_diff_view_marks_the_first_wrong_node(student_notebook):
    root = student_notebook.page.locator(".gl-root").nth(1)
    rec = student_notebook.recorded["bad"]
    marked = root.evaluate("r => [...r.querySelectorAll('g.node.grad-diff')].map(g => g.id)")
    assert marked == [rec["diff_node"]]
    drawn = root.locator(f"g.node#{rec['diff_node']}").evaluate("g => g.textContent")
    assert "first wrong gradient" in drawn and "gradlab" in drawn
    for _ in range(rec["diff_step"]):
        root.locator(".gl-fwd").click()
    assert _state(root)["current"] == rec["diff_node"]
    panel = root.locator(".gl-panel").inner_text()
    assert "first wrong gradient" in panel and "gradlab" in panel
    student_notebook.page.wait_for_timeout(300)
    student_notebook.screenshot("student_engine_diff.png", root)
