"""The live widgets in a real browser: JupyterLab 4 + headless Chromium.

One notebook is run through JupyterLab; the tests then drive the widgets as
a student would (buttons, keys, clicks) and compare what the browser shows
with what gradlab's engine recorded in the kernel (the order of backward
nodes is written by the notebook to a JSON file next to it).
"""
from __future__ import annotations

import json
import os
import shutil
import statistics

import pytest

from .conftest import REPO, SCREENSHOTS, write_notebook

pytestmark = pytest.mark.browser

SETUP = """\
import json
import gradlab
gradlab.manual_seed(0)
x = gradlab.randn(8, 4, requires_grad=True)
W1 = gradlab.randn(4, 16, requires_grad=True); b1 = gradlab.zeros(16, requires_grad=True)
W2 = gradlab.randn(16, 3, requires_grad=True); b2 = gradlab.zeros(3, requires_grad=True)
def mlp(x):
    h = (x @ W1 + b1).relu()
    return ((h @ W2 + b2) ** 2).mean()
"""

MLP_CELL = """\
loss = mlp(x)
bw = gradlab.animate_backward(loss)
bcast = next(i for i, f in enumerate(bw.frames) if any("axes" in o for o in f["gout"]))
json.dump({"order": bw.order, "shape_of": {k: v["shape"] for k, v in bw.nodes.items()}, "bcast_step": bcast + 1},
          open("mlp.json", "w"))
bw"""

BIG_CELL = """\
z = gradlab.randn(4, 4, requires_grad=True)
y = z
for i in range(75):   # 75 x (mul, tanh, add, a weight leaf) + the input, sum and output: ~300 nodes
    y = (y * gradlab.randn(4, requires_grad=True)).tanh() + y
big = gradlab.animate_backward(y.sum())
json.dump({"order": big.order, "nodes": len(big.nodes)}, open("big.json", "w"))
big"""

FORWARD_CELL = """\
for p in (x, W1, b1, W2, b2):
    p.grad = None
fw = gradlab.animate_forward(mlp, x)
json.dump({"order": fw.order, "mem": [f["mem"] for f in fw.frames]}, open("fw.json", "w"))
fw"""


def _roots(page):
    return page.locator(".gl-root")


def _state(root):
    return root.evaluate("r => ({step: +r.dataset.step, current: r.dataset.current, playing: r.dataset.playing})")


@pytest.fixture(scope="module")
def widget_notebook(browser, lab_server, lab_root):
    """The notebook, run once in JupyterLab; yields the page (shared by this module's tests)."""
    from .conftest import LabPage
    write_notebook(lab_root / "widgets.ipynb", [SETUP, MLP_CELL, BIG_CELL, FORWARD_CELL])
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    lp = LabPage(page, lab_server)
    lp.open("widgets.ipynb")
    lp.run_all(timeout=180_000)
    errors = lp.cell_errors()
    assert errors == [], f"the notebook raised: {errors}"
    try:
        for i in range(3):
            _roots(page).nth(i).locator(".gl-graph svg").wait_for(state="attached", timeout=60_000)
    except Exception:
        lp.screenshot("notebook_failed.png")
        raise
    lp.recorded = {k: json.loads((lab_root / f"{k}.json").read_text()) for k in ("mlp", "big", "fw")}
    yield lp
    ctx.close()


def test_graph_svg_is_visible(widget_notebook):
    page = widget_notebook.page
    assert _roots(page).count() == 3
    for i in range(3):
        svg = _roots(page).nth(i).locator(".gl-graph svg")
        assert svg.is_visible()
        box = svg.bounding_box()
        assert box["width"] > 100 and box["height"] > 100, box
    mlp = widget_notebook.recorded["mlp"]
    # every node the engine ran is drawn as an addressable SVG element
    ids = _roots(page).nth(0).evaluate("r => [...r.querySelectorAll('g.node')].map(g => g.id)")
    assert set(mlp["order"]) <= set(ids)


def test_step_forward_follows_the_engine_order(widget_notebook):
    root = _roots(widget_notebook.page).nth(0)
    order = widget_notebook.recorded["mlp"]["order"]
    assert _state(root)["step"] == 0
    seen = []
    for _ in order:
        root.locator(".gl-fwd").click()
        st = _state(root)
        seen.append(st["current"])
        highlighted = root.evaluate("r => [...r.querySelectorAll('g.node.gl-current')].map(g => g.id)")
        assert st["current"] in highlighted
    assert seen == order, "the highlight must visit the nodes in the order the engine ran them"
    # stepping back moves the highlight back
    root.locator(".gl-back").click()
    assert _state(root)["current"] == order[-2]
    # mid-backward, at the step where a broadcast gradient is summed: the README's picture
    k = widget_notebook.recorded["mlp"]["bcast_step"]
    root.locator(".gl-slider").fill(str(k))
    assert _state(root)["current"] == order[k - 1]
    assert "summed over axes" in root.locator(".gl-panel").inner_text()
    path = widget_notebook.screenshot("animate_backward_mid.png", root)
    if os.environ.get("GRADLAB_UPDATE_DOC_IMAGES"):
        dst = REPO / "docs" / "images" / "animate_backward.png"
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dst)


def test_keyboard_steps_and_plays(widget_notebook):
    page = widget_notebook.page
    root = _roots(page).nth(0)
    order = widget_notebook.recorded["mlp"]["order"]
    root.locator(".gl-slider").fill("0")
    root.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert _state(root) ["step"] == 2 and _state(root)["current"] == order[1]
    page.keyboard.press("ArrowLeft")
    assert _state(root)["current"] == order[0]
    root.locator(".gl-speed").select_option("16")
    root.focus()
    page.keyboard.press(" ")
    page.wait_for_function("r => +r.dataset.step === %d && r.dataset.playing === '0'" % len(order),
                           arg=root.element_handle(), timeout=20_000)
    # space with a button focused toggles play once (not once for the key and again for a button click)
    big = _roots(page).nth(1)
    big.locator(".gl-speed").select_option("0.5")
    big.locator(".gl-back").click()
    page.keyboard.press(" ")
    assert _state(big)["playing"] == "1"
    page.keyboard.press(" ")
    assert _state(big)["playing"] == "0" and _state(big)["step"] <= 1


def test_play_reaches_the_last_step(widget_notebook):
    root = _roots(widget_notebook.page).nth(2)   # the forward + backward replay
    n = len(widget_notebook.recorded["fw"]["order"])
    root.locator(".gl-speed").select_option("16")
    root.locator(".gl-play").click()
    widget_notebook.page.wait_for_function(
        "r => +r.dataset.step === %d && r.dataset.playing === '0'" % n, arg=root.element_handle(), timeout=30_000)
    assert _state(root)["current"] == widget_notebook.recorded["fw"]["order"][-1]
    # the memory chart rose during the forward and fell back to 0 at the end of the backward
    mem = widget_notebook.recorded["fw"]["mem"]
    assert max(mem) > 0 and mem[-1] == 0
    widget_notebook.screenshot("animate_forward_end.png", root)


def test_clicking_a_node_opens_the_inspector(widget_notebook):
    root = _roots(widget_notebook.page).nth(0)
    shape_of = widget_notebook.recorded["mlp"]["shape_of"]
    leaf = next(k for k in shape_of if k.startswith("leaf"))
    root.locator(f"g.node#{leaf}").click()
    insp = root.locator(".gl-inspector")
    insp.wait_for(state="visible")
    want = "(" + ", ".join(str(s) for s in shape_of[leaf]) + (",)" if len(shape_of[leaf]) == 1 else ")")
    assert insp.locator(".gl-ishape").inner_text() == want
    assert insp.get_attribute("data-node") == leaf
    op = next(k for k in shape_of if k.startswith("op") and "_" not in k)
    root.locator(f"g.node#{op}").click()
    assert insp.get_attribute("data-node") == op
    assert "formula" in insp.inner_text()
    widget_notebook.screenshot("inspector.png", root)


def test_one_step_updates_a_300_node_graph_quickly(widget_notebook):
    root = _roots(widget_notebook.page).nth(1)
    nodes = widget_notebook.recorded["big"]["nodes"]
    assert nodes >= 290
    times = root.evaluate("""async (r) => {
        const fwd = r.querySelector('.gl-fwd'); const sync = [], paint = [];
        const frame = () => new Promise(res => requestAnimationFrame(() => res()));
        for (let i = 0; i < 30; i++) {
            await frame();
            const t0 = performance.now();
            fwd.click();
            void r.offsetHeight;              // force style + layout of the update
            sync.push(performance.now() - t0);
            await frame();                    // until the next frame is painted
            paint.push(performance.now() - t0);
        }
        return {sync, paint};
    }""")
    sync, paint = sorted(times["sync"]), sorted(times["paint"])
    med, worst = statistics.median(sync), sync[-1]
    report = (f"step update on a {nodes}-node graph: median {med:.1f} ms, max {worst:.1f} ms "
              f"(click -> DOM + layout); median {statistics.median(paint):.1f} ms to the next frame")
    print("\n" + report)
    (SCREENSHOTS.parent / "step_timing.txt").parent.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS.parent / "step_timing.txt").write_text(report + "\n")
    assert med < 50, report


def test_dark_theme_follows_jupyterlab(widget_notebook):
    """The widget takes its colours from JupyterLab's theme variables."""
    page = widget_notebook.page
    root = _roots(page).nth(0)
    color = "r => getComputedStyle(r).color"
    light = root.evaluate(color)
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
    page.wait_for_function("([r, c]) => getComputedStyle(r).color !== c", arg=[root.element_handle(), light])
    widget_notebook.screenshot("animate_backward_dark.png", root)
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'", timeout=30_000)


def test_the_kernel_can_set_the_step(widget_notebook):
    """``widget.step = k`` in Python moves the view; a step taken in the browser is synced back on pause."""
    page = widget_notebook.page
    root = _roots(page).nth(0)
    order = widget_notebook.recorded["mlp"]["order"]
    page.evaluate("""() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel
                          .requestExecute({code: 'bw.step = 4'}).done""")
    page.wait_for_function("r => +r.dataset.step === 4", arg=root.element_handle(), timeout=20_000)
    assert _state(root)["current"] == order[3]


def test_no_console_errors(widget_notebook):
    assert widget_notebook.console_errors == [], widget_notebook.console_errors


def test_saved_notebook_with_an_mlp_widget_is_small(browser, lab_server, lab_root):
    """JupyterLab saves the notebook (with widget state): report its size; aim under 300 KB."""
    from .conftest import LabPage
    write_notebook(lab_root / "size.ipynb", [SETUP, MLP_CELL])
    ctx = browser.new_context(viewport={"width": 1200, "height": 900})
    page = ctx.new_page()
    lp = LabPage(page, lab_server)
    lp.open("size.ipynb")
    lp.run_all()
    page.locator(".gl-root .gl-graph svg").wait_for(state="visible")
    lp.save()
    nb = json.loads((lab_root / "size.ipynb").read_text())
    size = (lab_root / "size.ipynb").stat().st_size
    state = nb.get("metadata", {}).get("widgets", {})
    report = f"saved notebook with one animate_backward widget on a 2-layer MLP: {size / 1024:.1f} KB " \
             f"(widget state {'stored' if state else 'not stored'})"
    print("\n" + report)
    (SCREENSHOTS.parent / "notebook_size.txt").write_text(report + "\n")
    ctx.close()
    assert state, "the test server is set to store widget state; it was not stored"
    assert size < 300 * 1024, report


#: Sizes where the two formatters could part: each unit's edges, halves that round up, a float, a negative, None.
BYTE_SIZES = [0, 1, 812, 1023, 1024, 1075, 1280, 1331, 1536, 10**6, 1048524, 1048576, 123456789.0,
              3 * 2**30, 5 * 2**40, 2**52, -2048, None]


def test_widget_writes_sizes_as_format_bytes_does(browser):
    """The widget's ``bytes`` (JS) and ``gradlab.backend.memory_limit.format_bytes`` (Python) print the same text."""
    from gradlab.backend.memory_limit import format_bytes
    src = (REPO / "widgets" / "graph_player.js").read_text(encoding="utf-8")
    page = browser.new_page()
    try:
        got = page.evaluate("""async ([src, sizes]) => {
            const m = await import("data:text/javascript;charset=utf-8," + encodeURIComponent(src));
            return sizes.map((n) => m.bytes(n));
        }""", [src, BYTE_SIZES])
    finally:
        page.close()
    want = [format_bytes(n) for n in BYTE_SIZES]
    assert got == want, list(zip(BYTE_SIZES, got, want))
    assert want[:5] == ["0 B", "1 B", "812 B", "1023 B", "1.0 KiB"] and want[6] == "1.3 KiB", want
