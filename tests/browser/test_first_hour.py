"""A student's first hour, in real JupyterLab + Chromium: stored graphs on open, names, the footer,
the still graph_widget, the dark theme's contrast, and a folded GPT animation.

Timings are printed and written to ``artifacts/first_hour_timings.txt``; the bounds asserted
are loose (the machine running CI may be busy), the targets are in the messages.
"""
from __future__ import annotations

import json
import re
import shutil
import statistics

import pytest

from .conftest import REPO, SCREENSHOTS, LabPage, notary_for, write_notebook

pytestmark = pytest.mark.browser

TIMINGS = []


def _report(line):
    print("\n" + line)
    TIMINGS.append(line)
    SCREENSHOTS.parent.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS.parent / "first_hour_timings.txt").write_text("\n".join(TIMINGS) + "\n")


def _page(browser, lab_server):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    return ctx, LabPage(page, lab_server)


# ------------------------------------------------------- stored graphs on open
def test_fresh_clone_shows_stored_svg_on_open_and_after_a_save(browser, lab_server, lab_root):
    from gradlab.lab import trust_notebooks
    name = "fresh_05_graphs.ipynb"
    shutil.copy(REPO / "notebooks" / "05_graphs.ipynb", lab_root / name)
    assert trust_notebooks([lab_root / name], notary_for(lab_root)) == 1     # what `make lab` does
    for attempt in ("first open", "after a save"):
        ctx, lp = _page(browser, lab_server)
        try:
            lp.open(name)
            page = lp.page
            # the stored picture, not its text/plain ("GraphView(...)") or "Cannot display an untrusted SVG"
            page.locator(".jp-RenderedSVG img, .jp-OutputArea-output svg").first.wait_for(state="visible")
            text = page.locator(".jp-Notebook").inner_text()
            assert "untrusted" not in text.lower(), attempt
            assert not re.search(r"^GraphView\(", text, re.M), f"{attempt}: a stored graph shows as text"
            if attempt == "first open":
                # edit a markdown cell and save through JupyterLab (as an autosave would)
                page.evaluate("""() => { const nb = window.jupyterapp.shell.currentWidget.content;
                    const c = nb.widgets.find(w => w.model.type === 'markdown');
                    c.model.sharedModel.setSource(c.model.sharedModel.getSource() + '\\n\\nedited'); }""")
                lp.save()
        finally:
            ctx.close()
    assert "edited" in (lab_root / name).read_text()


# ---------------------------------------------------------------- the widgets
SETUP = """\
import json, time
import gradlab
gradlab.manual_seed(0)
x = gradlab.randn(8, 4); x.name = "x"
W1 = gradlab.randn(4, 16, requires_grad=True); b1 = gradlab.zeros(16, requires_grad=True)
W2 = gradlab.randn(16, 3, requires_grad=True); b2 = gradlab.zeros(3, requires_grad=True)
def mlp(x):
    h = (x @ W1 + b1).relu()
    return ((h @ W2 + b2) ** 2).mean()
"""
ANIM = """\
loss = mlp(x)
bw = gradlab.animate_backward(loss, retain_graph=True)
bw"""
STILL = """\
still = gradlab.viz.widgets.graph_widget(loss)
still"""
FORWARD = """\
for p in (W1, b1, W2, b2):
    p.grad = None
fw = gradlab.animate_forward(mlp, x)
fw"""

GPT = """\
import json, time
import gradlab
import gradlab.nn as nn
gradlab.manual_seed(0)
task = gradlab.data.AdditionTask(n_digits=2, test_fraction=0.1, seed=0)
model = nn.GPT(task.vocab_size, task.block_size, n_layer=4, n_head=4, n_embd=64)
X, Y = task.train.tensors
_, loss = model(X[:32], Y[:32])
t0 = time.perf_counter()
gpt = gradlab.animate_backward(loss, depth=1)
t_widget = time.perf_counter() - t0
t0 = time.perf_counter()
gradlab.viz.render.render_svg(gradlab.show_graph(loss, view="backward", depth=1).source)   # the layout alone
t_layout = time.perf_counter() - t0
json.dump({"widget_s": t_widget, "layout_s": t_layout, "nodes": len(gpt.nodes), "steps": len(gpt.frames),
           "groups": sorted(gpt.groups)}, open("gpt.json", "w"))
gpt"""


@pytest.fixture(scope="module")
def widgets(browser, lab_server, lab_root):
    write_notebook(lab_root / "first_hour.ipynb", [SETUP, ANIM, STILL, FORWARD])
    ctx, lp = _page(browser, lab_server)
    lp.open("first_hour.ipynb")
    lp.run_all(timeout=180_000)
    assert lp.cell_errors() == []
    for i in range(3):
        lp.page.locator(".gl-root").nth(i).locator(".gl-graph svg").wait_for(state="attached")
    yield lp
    ctx.close()


def _root(lp, i):
    return lp.page.locator(".gl-root").nth(i)


def test_names_and_no_internal_ids(widgets):
    root = _root(widgets, 0)
    svg_text = root.evaluate("r => r.querySelector('.gl-graph svg').textContent")
    assert "W1" in svg_text and "b2" in svg_text and "loss" in svg_text
    assert "output output" not in svg_text and not re.search(r"\bc0\b|\bx0\b|\bp0\b", svg_text)
    seen = []
    for _ in range(len(root.evaluate("r => r.__gradlab.frames"))):
        root.locator(".gl-fwd").click()
        seen.append(root.locator(".gl-panel").inner_text())
    text = "\n".join(seen)
    assert not re.search(r"\b(op|leaf)\d+\b", text), "the panel shows internal ids"
    assert "W1.grad" in text and "x.grad += dx" not in text      # AccumulateGrad names the leaf
    root.locator("g.node#leaf0").click()
    insp = root.locator(".gl-inspector").inner_text()
    assert not re.search(r"\b(op|leaf)\d+\b", insp)


def test_forward_sites_are_cells_and_lines(widgets):
    root = _root(widgets, 2)
    root.locator(".gl-fwd").click()
    panel = root.locator(".gl-panel").inner_text()
    assert re.search(r"cell \[\d+\], line \d+", panel), panel
    assert ".py:" not in panel


def test_memory_footer_follows_the_backward(widgets):
    root = _root(widgets, 0)
    n = len(root.evaluate("r => r.__gradlab.frames"))
    root.locator(".gl-slider").fill("0")
    start = root.evaluate("r => r.dataset.footer")
    root.locator(".gl-slider").fill(str(n))
    end = root.evaluate("r => r.dataset.footer")
    assert "gradients 0 B" in start and "gradients 0 B" not in end, (start, end)
    svg_footer = root.evaluate(
        "r => [...r.querySelectorAll('.gl-graph svg text')].find(t => t.textContent.startsWith('memory:')).textContent")
    assert svg_footer == end


def test_graph_widget_has_no_play_bar(widgets):
    still = _root(widgets, 1)
    assert still.locator(".gl-bar").is_hidden()
    assert "step 0 / 0" not in still.inner_text()
    still.locator("g.node#leaf0").click()
    assert still.locator(".gl-inspector").is_visible()


CONTRAST_JS = """
(r) => {
  const parse = (c) => { const m = /rgba?\\(([^)]+)\\)/.exec(c); if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const over = (fg, bg) => [0, 1, 2].map((i) => fg[i] * fg[3] + bg[i] * (1 - fg[3])).concat([1]);
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const pageBg = (el) => { let bg = [255, 255, 255, 1]; const chain = [];
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) chain.push(e);
    for (const e of chain.reverse()) { const c = parse(getComputedStyle(e).backgroundColor); if (c && c[3] > 0) bg = over(c, bg); }
    return bg; };
  const opac = (el) => { let o = 1; for (let e = el; e && e.nodeType === 1; e = e.parentElement) o *= +getComputedStyle(e).opacity; return o; };
  const bg = pageBg(r);
  const out = {};
  // a pending node: its text on its card, the card over the page
  const g = r.querySelector('g.node.gl-pending');
  if (g) {
    const shape = g.querySelector('polygon:not([fill="none"]), path:not([fill="none"]), ellipse');
    const cs = getComputedStyle(shape); const fill = parse(cs.fill);
    fill[3] = (fill[3] ?? 1) * (+cs.fillOpacity) * opac(shape);
    const card = over(fill, bg);
    const t = g.querySelector('text'); const tc = parse(getComputedStyle(t).fill); tc[3] *= opac(t);
    out.pending = ratio(over(tc, card), card);
  }
  // the legend's caption under the graph
  const cap = r.querySelector('.gl-legend .gl-dim');
  const cc = parse(getComputedStyle(cap).color); cc[3] *= opac(cap);
  out.legend = ratio(over(cc, bg), bg);
  // the SVG legend frame's caption, on its card
  const lg = r.querySelector('g.cluster.legend');
  if (lg) {
    const fr = parse(getComputedStyle(lg.querySelector('path, polygon')).fill);
    const card = over(fr, bg); const tc = parse(getComputedStyle(lg.querySelector('text')).fill);
    out.svg_legend = ratio(over(tc, card), card);
  }
  return out;
}
"""


def test_dark_theme_contrast(widgets):
    page = widgets.page
    root = _root(widgets, 0)
    root.locator(".gl-slider").fill("2")       # some nodes done, some pending
    light = root.evaluate(CONTRAST_JS)
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
    page.wait_for_timeout(500)
    try:
        dark = root.evaluate(CONTRAST_JS)
        widgets.screenshot("first_hour_dark.png", root)
    finally:
        page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})")
        page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'", timeout=30_000)
    _report(f"contrast (WCAG ratio) light: {json.dumps({k: round(v, 1) for k, v in light.items()})}; "
            f"dark: {json.dumps({k: round(v, 1) for k, v in dark.items()})}")
    for name, v in list(light.items()) + list(dark.items()):
        assert v >= 4.5, f"{name}: contrast {v:.2f} < 4.5 (light {light}, dark {dark})"
    assert "pending" in dark and "svg_legend" in dark


# ----------------------------------------------------------- the folded GPT
def test_folded_gpt_animates_steps_into_a_module_and_expands_it(browser, lab_server, lab_root):
    write_notebook(lab_root / "gpt.ipynb", [GPT])
    ctx, lp = _page(browser, lab_server)
    try:
        lp.open("gpt.ipynb")
        lp.run_all(timeout=240_000)
        assert lp.cell_errors() == []
        page = lp.page
        root = page.locator(".gl-root").first
        root.locator(".gl-graph svg").wait_for(state="attached")
        rec = json.loads((lab_root / "gpt.json").read_text())
        assert "mod_blocks" in rec["groups"]
        # step until the engine is inside the collapsed 'blocks' box: the box is the current node
        k = root.evaluate("r => r.__gradlab.frames.findIndex(f => r.__gradlab.E(f.n) === 'mod_blocks')")
        assert k > 0
        root.locator(".gl-slider").fill(str(k))
        root.locator(".gl-fwd").click()
        assert "gl-current" in root.locator("g.node#mod_blocks").get_attribute("class")
        assert "inside" in root.locator(".gl-panel").inner_text()
        # one step's time on the folded graph
        times = root.evaluate("""async (r) => { const out = [];
            for (let i = 0; i < 20; i++) { const t0 = performance.now(); r.__gradlab.go(r.__gradlab.step + 1, false);
              void r.offsetHeight; out.push(performance.now() - t0); await new Promise(q => requestAnimationFrame(q)); }
            r.__gradlab.go(r.__gradlab.step - 20, false); return out; }""")
        step_ms = statistics.median(times)
        # click the box: it opens in place (blocks.0 ... blocks.3, folded as TransformerBlock x4)
        root.locator("g.node#mod_blocks").click()
        page.wait_for_function("r => r.dataset.expanded === '1'", arg=root.element_handle(), timeout=60_000)
        assert root.locator("g.node#mod_blocks").count() == 0
        cur = root.evaluate("r => r.__gradlab.E(r.dataset.current)")
        assert cur.startswith("mod_blocks_"), cur
        assert "gl-current" in root.locator(f"g.node#{cur}").get_attribute("class")
        expand_ms = float(root.evaluate("r => r.dataset.expandMs"))
        lp.screenshot("gpt_folded_expanded.png", root)
        # play to the end on the expanded drawing
        root.locator(".gl-slider").fill(str(rec["steps"]))
        assert root.evaluate("r => +r.dataset.step") == rec["steps"]
        lp.save()
        size = (lab_root / "gpt.ipynb").stat().st_size
        _report(f"4-layer GPT (depth=1): {rec['nodes']} nodes, {rec['steps']} steps; animate_backward in the kernel "
                f"(graph read + layout + backward + frames) {rec['widget_s']:.2f} s, of which the layout "
                f"{rec['layout_s']:.2f} s (target layout <= 2 s); one step "
                f"{step_ms:.1f} ms median (target <= 50 ms); expanding a box, browser side {expand_ms:.0f} ms; "
                f"saved notebook {size / 1024:.0f} KB (target <= 1 MB)")
        assert lp.console_errors == [] or not [e for e in lp.console_errors if "gradlab" in e.lower()]
        assert rec["layout_s"] < 20 and rec["widget_s"] < 60, "10x the 2 s target"
        assert step_ms < 50
        assert size <= 1024 * 1024
    finally:
        ctx.close()
