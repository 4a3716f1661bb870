"""The harness itself: JupyterLab runs a notebook and an anywidget renders in Chromium."""
from __future__ import annotations

import pytest

from .conftest import write_notebook

pytestmark = pytest.mark.browser


def test_lab_runs_a_notebook_and_renders_an_anywidget(lab_page, lab_root):
    write_notebook(lab_root / "harness.ipynb", [
        "import anywidget, traitlets\n"
        "class W(anywidget.AnyWidget):\n"
        "    _esm = 'export default { render({ model, el }) { el.innerHTML = `<b class=\"hw\">${model.get(\"v\")}</b>`; } };'\n"
        "    v = traitlets.Unicode('hello from the kernel').tag(sync=True)\n"
        "W()",
    ])
    lab_page.open("harness.ipynb")
    lab_page.run_all()
    assert lab_page.cell_errors() == []
    el = lab_page.page.locator(".hw")
    el.wait_for(state="visible", timeout=30_000)
    assert el.inner_text() == "hello from the kernel"
    assert lab_page.console_errors == [], lab_page.console_errors
