"""PyTorch's own backward, replayed by gradlab's widget in a real JupyterLab (headless Chromium).

The notebook builds a torch MLP and a small torch GPT (from tests/test_torch_graph.py),
animates PyTorch's real backward with ``gradlab.animate_backward`` and writes, next to
itself, the order of nodes that PyTorch's engine ran (seen by node hooks in the kernel).
The test steps through the widget and checks that the browser highlights those nodes
in that order, then times one step on the GPT (folded by module, ``depth=2``).
"""
from __future__ import annotations

import statistics

import pytest

from .conftest import SCREENSHOTS, run_recording_notebook

pytestmark = pytest.mark.browser

SETUP = """\
import json, time
import torch
import gradlab
from tests.test_torch_graph import mlp, small_gpt
"""

MLP_CELL = """\
net, loss = mlp(torch)
bw = gradlab.animate_backward(loss)
json.dump({"order": bw.order, "names": {k: v["label"] for k, v in bw.nodes.items()}}, open("torch_mlp.json", "w"))
bw"""

GPT_CELL = """\
model, gloss = small_gpt(torch)
t0 = time.perf_counter()
gpt = gradlab.animate_backward(gloss, depth=2)
json.dump({"order": gpt.order, "steps": gpt.num_steps, "elem": gpt.elem, "seconds": time.perf_counter() - t0},
          open("torch_gpt.json", "w"))
gpt"""


def _state(root):
    return root.evaluate("r => ({step: +r.dataset.step, current: r.dataset.current})")


@pytest.fixture(scope="module")
def torch_notebook(torch, browser, lab_server, lab_root):
    ctx, lp = run_recording_notebook(browser, lab_server, lab_root, "torch_widgets.ipynb", [SETUP, MLP_CELL, GPT_CELL],
                                     {k: f"torch_{k}.json" for k in ("mlp", "gpt")}, timeout=240_000)
    yield lp
    ctx.close()


def test_stepping_follows_pytorchs_engine(torch_notebook):
    root = torch_notebook.page.locator(".gl-root").nth(0)
    order = torch_notebook.recorded["mlp"]["order"]
    names = torch_notebook.recorded["mlp"]["names"]
    assert any(n.endswith("Backward0") for n in names.values())
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
    panel = root.locator(".gl-panel").inner_text()
    assert ".grad" in panel or "Backward" in panel
    # the inspector on a PyTorch node
    op = next(k for k, v in names.items() if v.startswith("Addmm"))
    root.locator(f"g.node#{op}").click()
    insp = root.locator(".gl-inspector")
    insp.wait_for(state="visible")
    assert "AddmmBackward0" in insp.inner_text()
    torch_notebook.screenshot("torch_mlp_backward.png", root)


def test_one_step_on_the_folded_torch_gpt(torch_notebook):
    root = torch_notebook.page.locator(".gl-root").nth(1)
    rec = torch_notebook.recorded["gpt"]
    assert rec["steps"] > 200
    boxes = root.evaluate("r => [...r.querySelectorAll('g.node.group')].map(g => g.id)")
    assert any(b.startswith("mod_blocks_0") for b in boxes)
    times = root.evaluate("""async (r) => {
        const fwd = r.querySelector('.gl-fwd'); const sync = [];
        const frame = () => new Promise(res => requestAnimationFrame(() => res()));
        for (let i = 0; i < 40; i++) {
            await frame();
            const t0 = performance.now();
            fwd.click();
            void r.offsetHeight;
            sync.push(performance.now() - t0);
        }
        return sync;
    }""")
    med = statistics.median(times)
    # after 40 steps the engine is inside a block: its folded box is lit
    lit = root.evaluate("r => [...r.querySelectorAll('g.node.gl-current')].map(g => g.id)")
    assert lit, "a step must light up a node or a module box"
    report = (f"torch GPT ({rec['steps']} steps, depth=2): animate_backward in the kernel {rec['seconds']:.2f} s; "
              f"one step in the browser median {med:.1f} ms, max {max(times):.1f} ms")
    print("\n" + report)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS.parent / "torch_step_timing.txt").write_text(report + "\n")
    torch_notebook.screenshot("torch_gpt_backward.png", root)
    assert med < 100, report


def test_no_console_errors(torch_notebook):
    assert torch_notebook.console_errors == []
