"""The course's first notebook, opened and run in real JupyterLab (the README's screenshot comes from here)."""
from __future__ import annotations

import os
import shutil

import pytest

from .conftest import REPO

pytestmark = pytest.mark.browser


def test_welcome_notebook_runs_in_jupyterlab(lab_page, lab_root):
    shutil.copy(REPO / "notebooks" / "00_welcome.ipynb", lab_root / "00_welcome.ipynb")
    lab_page.open("00_welcome.ipynb")
    lab_page.run_all(timeout=180_000)
    assert lab_page.cell_errors() == []
    page = lab_page.page
    # the graph drawn by show_graph (an inline SVG output) and the backward animation widget
    page.locator(".jp-OutputArea-output svg").first.wait_for(state="visible", timeout=60_000)
    page.locator(".gl-root .gl-graph svg").first.wait_for(state="attached", timeout=60_000)
    assert page.locator(".gl-root").count() == 1
    page.locator(".gl-root").first.scroll_into_view_if_needed()
    path = lab_page.screenshot("welcome_notebook.png")
    assert path.stat().st_size > 10_000
    if os.environ.get("GRADLAB_UPDATE_DOC_IMAGES"):
        shutil.copy(path, REPO / "docs" / "images" / "jupyterlab_welcome.png")
    assert not [e for e in lab_page.console_errors if "gradlab" in e.lower()]
