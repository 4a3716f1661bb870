"""Take the README's two JupyterLab screenshots: a lesson's stored graph, and the step-through widget.

    python scripts/readme_screenshots.py     # writes docs/images/jupyterlab_stored_graph.png,
                                             # jupyterlab_step_through.png, jupyterlab_yourturn_predict.png
                                             # and jupyterlab_yourturn_writeit.png

All are whole JupyterLab windows (1400 x 1000), as a student sees them: the server is started the
way ``gradlab lab`` starts it, with its JupyterLab settings and nothing else (the browser tests' own
``start_lab``, in ``tests/browser/conftest.py``, is used, so the two never drift apart), on a scratch
folder, and driven by Debian's Chromium (``/usr/bin/chromium``, or ``$GRADLAB_CHROMIUM``) through
Python Playwright.

1. ``notebooks/05_graphs.ipynb``, opened as shipped (signed in the server's notary, as ``gradlab lab``
   signs the course's copies, so its stored SVG is shown) and not run: the first graph a student sees
   before running anything.
2. A two-layer MLP written with ops (so each bias add is its own node), run in the page, with
   ``animate_backward(loss)`` stepped to the first node whose gradient is summed over the batch axis
   (a bias's).
3. and 4. ``notebooks/02_broadcasting.ipynb`` as a student who answers wrongly runs it: its predict cell
   answered ``(8, 1, 5)`` (the feedback: not it, and the first hint), and its write-it cell with a
   ``sum_to`` that forgets the size-1 axes (the first failing case, what differs, and the hint).

Everything it starts (the server, the browser, the kernel) is stopped before it returns.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gradlab import lab  # noqa: E402
from tests.browser.conftest import (  # noqa: E402
    CHROMIUM_ARGS,
    LabPage,
    chromium_path,
    notary_for,
    start_lab,
    stop_lab,
    write_notebook,
)

IMAGES = REPO / "docs" / "images"
VIEWPORT = {"width": 1400, "height": 1000}
GRAPH_LESSON = "05_graphs.ipynb"
YOURTURN_LESSON = "02_broadcasting.ipynb"
# a student's wrong answers, put into the your-turn cells of YOURTURN_LESSON: (what is replaced, by what)
WRONG_ANSWERS = [
    ("answer = ...   # the shape of a + b, as a tuple", "answer = (8, 1, 5)   # the shape of a + b, as a tuple"),
    ("    raise NotImplementedError   # sum away the leading axes, then the axes where shape has a 1 (keepdims)",
     "    return grad.sum(axis=tuple(range(grad.ndim - len(shape))))   # the leading axes only"),
]

STEP_THROUGH_CELLS = [
    """import gradlab
import gradlab.nn.functional as F

_ = gradlab.manual_seed(0)
x, y = gradlab.randn(8, 4), gradlab.randint(0, 3, (8,))          # a batch of 8
x.name = "x"
W1 = gradlab.randn(4, 16, requires_grad=True); W1.name = "W1"
b1 = gradlab.zeros(16, requires_grad=True); b1.name = "b1"
W2 = gradlab.randn(16, 3, requires_grad=True); W2.name = "W2"
b2 = gradlab.zeros(3, requires_grad=True); b2.name = 'b2'""",
    """h = (x @ W1 + b1).relu(); h.name = "h"
loss = F.cross_entropy(h @ W2 + b2, y); loss.name = "loss"
gradlab.animate_backward(loss)          # instead of loss.backward(): step through it""",
]


def scroll_to_cell(page, index: int) -> None:
    """Make cell ``index`` the active one and scroll it to the top (JupyterLab renders only what is in view)."""
    page.evaluate("""async (i) => { const nb = window.jupyterapp.shell.currentWidget.content;
                                     nb.activeCellIndex = i; await nb.scrollToItem(i, 'start'); }""", index)
    page.wait_for_timeout(800)


def yourturn_feedback(browser, url, root: Path) -> list[Path]:
    import nbformat
    nb = nbformat.read(REPO / "notebooks" / YOURTURN_LESSON, as_version=4)
    cells = {}
    for old, new in WRONG_ANSWERS:
        at = [i for i, c in enumerate(nb.cells) if old in c.source]
        if len(at) != 1:
            raise RuntimeError(f"{YOURTURN_LESSON}: expected one cell holding {old!r}, found {len(at)}")
        nb.cells[at[0]].source = nb.cells[at[0]].source.replace(old, new)
        cells[new] = at[0]
    nbformat.write(nb, root / YOURTURN_LESSON)
    ctx = browser.new_context(viewport=VIEWPORT)
    try:
        lp = LabPage(ctx.new_page(), url)
        lp.open(YOURTURN_LESSON)
        lp.run_all(timeout=180_000)
        if lp.cell_errors():
            raise RuntimeError(f"{YOURTURN_LESSON} raised: {lp.cell_errors()}")
        outs = []
        for (_, new), name in zip(WRONG_ANSWERS, ("predict", "writeit")):
            scroll_to_cell(lp.page, cells[new])
            out = IMAGES / f"jupyterlab_yourturn_{name}.png"
            lp.page.screenshot(path=str(out))
            outs.append(out)
        return outs
    finally:
        ctx.close()


def scroll_to_top_of(page, locator) -> None:
    """Scroll the notebook so that the cell holding ``locator`` starts at the top of the window."""
    locator.evaluate("e => e.closest('.jp-Cell').scrollIntoView({block: 'start'})")
    page.wait_for_timeout(500)      # JupyterLab renders the cells that came into view


def stored_graph(browser, url, root: Path) -> Path:
    shutil.copy(REPO / "notebooks" / GRAPH_LESSON, root / GRAPH_LESSON)
    lab.trust_notebooks([root / GRAPH_LESSON], notary_for(root))
    ctx = browser.new_context(viewport=VIEWPORT)
    try:
        lp = LabPage(ctx.new_page(), url)
        lp.open(GRAPH_LESSON)
        graph = lp.page.locator(".jp-RenderedSVG").first       # JupyterLab shows a stored SVG as an image
        graph.wait_for(state="attached", timeout=60_000)
        scroll_to_top_of(lp.page, graph)
        graph.wait_for(state="visible", timeout=60_000)
        out = IMAGES / "jupyterlab_stored_graph.png"
        lp.page.screenshot(path=str(out))
        return out
    finally:
        ctx.close()


def step_through(browser, url, root: Path) -> Path:
    write_notebook(root / "step_through.ipynb", STEP_THROUGH_CELLS)
    ctx = browser.new_context(viewport=VIEWPORT)
    try:
        lp = LabPage(ctx.new_page(), url)
        lp.open("step_through.ipynb")
        lp.run_all(timeout=180_000)
        if lp.cell_errors():
            raise RuntimeError(f"the step-through notebook raised: {lp.cell_errors()}")
        widget = lp.page.locator(".gl-root").first
        widget.locator(".gl-graph svg").wait_for(state="attached", timeout=60_000)
        # step forward until the panel shows a gradient summed over the broadcast batch axis
        last = int(widget.locator(".gl-slider").get_attribute("max"))
        for _ in range(last):
            widget.locator(".gl-fwd").click()
            if "summed over axes" in widget.locator(".gl-panel").inner_text():
                break
        else:
            raise RuntimeError("no step of the MLP's backward summed a broadcast gradient")
        lp.page.locator(".jp-Cell").nth(1).evaluate("e => e.scrollIntoView({block: 'start'})")
        lp.page.wait_for_timeout(500)
        out = IMAGES / "jupyterlab_step_through.png"
        lp.page.screenshot(path=str(out))
        return out
    finally:
        ctx.close()


def main() -> int:
    from playwright.sync_api import sync_playwright
    chromium = chromium_path()
    if chromium is None:
        print("no Chromium: install Debian's chromium or set GRADLAB_CHROMIUM", file=sys.stderr)
        return 1
    base = Path(tempfile.mkdtemp(prefix="gradlab-screenshots-"))
    root = base / "root"
    root.mkdir()
    IMAGES.mkdir(parents=True, exist_ok=True)
    proc, url = start_lab(root, base)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
            try:
                for take in (stored_graph, step_through, yourturn_feedback):
                    made = take(browser, url, root)
                    for path in made if isinstance(made, list) else [made]:
                        print("wrote", path.relative_to(REPO))
            finally:
                browser.close()
    finally:
        stop_lab(proc)
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
