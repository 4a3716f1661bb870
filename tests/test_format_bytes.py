"""One way of writing a size: ``gradlab.backend.memory_limit.format_bytes``, in binary units.

The graph drawings, the widgets, ``memory_report``, ``gradlab.compile``'s reports and the
out-of-memory message all print sizes through it (the widget's JS copy is compared with it in
tests/browser/test_widgets_browser.py), so "1.1 KiB" in one place is never "1.1 KB" in another.
"""
from __future__ import annotations

import pathlib
import re

import pytest

import gradlab
from gradlab.backend.memory_limit import _fmt, format_bytes

ROOT = pathlib.Path(gradlab.__file__).parent


@pytest.mark.parametrize("n, text", [
    (0, "0 B"), (812, "812 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1280, "1.3 KiB"), (1536, "1.5 KiB"),
    (2**20, "1.0 MiB"), (int(2.5 * 2**30), "2.5 GiB"), (3 * 2**40, "3.0 TiB"), (-2048, "-2.0 KiB"), (None, "-"),
])
def test_format_bytes(n, text):
    assert format_bytes(n) == text


def test_the_out_of_memory_message_gives_both_the_size_and_the_exact_count():
    assert _fmt(3 << 30) == "3.0 GiB (3,221,225,472 bytes)" and _fmt(100) == "100 bytes"


def test_memory_report_and_the_graph_footer_use_it():
    from gradlab import nn
    model = nn.Linear(16, 16)
    loss = model(gradlab.randn(4, 16)).pow(2).mean()
    report = gradlab.memory_report(model, loss=loss)
    assert format_bytes(report.total) in str(report)
    assert format_bytes(sum(p.numel() * 4 for p in model.parameters())) == "1.1 KiB"


def test_no_other_byte_formatter_in_the_package():
    """A list of units (``"KB", "MB"``: what a formatter walks) is in one Python file and once in the
    widget. (The profiler's table copies PyTorch's own ``Kb``/``Mb`` columns, on purpose.)"""
    units = re.compile(r"""["'][KMG]i?B["']\s*,\s*["'][MGT]i?B["']""")
    where = sorted(str(p.relative_to(ROOT.parent)) for p in ROOT.rglob("*.py") if units.search(p.read_text()))
    assert where == ["gradlab/backend/memory_limit.py"], where
    js = (ROOT.parent / "widgets" / "graph_player.js").read_text()
    assert len([line for line in js.splitlines() if units.search(line)]) == 1 and '"KiB", "MiB"' in js
