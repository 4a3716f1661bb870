"""The course folder is held to account: metadata, table of contents, clean stored outputs.

(The notebooks themselves run under ``pytest --nbval-lax notebooks`` in ``make test``.)
"""
from __future__ import annotations

import pathlib

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds no course notebooks"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_kernelspec_is_set(path):
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata.get("kernelspec", {}).get("name"), f"{path.name} lacks metadata.kernelspec (JupyterLab would stop at a kernel picker)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_listed_in_readme(path):
    readme = (ROOT / "README.md").read_text()
    assert f"notebooks/{path.name}" in readme, f"{path.name} is missing from the README's table of contents"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_outputs_come_from_one_clean_run(path):
    """Execution counts 1, 2, 3... in order (or no outputs at all), and no stderr in outputs."""
    nb = nbformat.read(path, as_version=4)
    counts = [c.execution_count for c in nb.cells if c.cell_type == "code"]
    if all(c is None for c in counts):
        return
    assert counts == list(range(1, len(counts) + 1)), (
        f"{path.name} was saved from a partial or out-of-order run (execution counts {counts}); "
        "re-run it with scripts/run_notebooks.py")
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            assert out.get("name") != "stderr", f"{path.name} cell {i} stored stderr: {out.get('text', '')[:200]}"
            assert out.get("output_type") != "error", f"{path.name} cell {i} stored an error"
