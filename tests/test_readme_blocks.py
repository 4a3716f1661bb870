"""The ```python blocks of README.md, CONTRIBUTING.md and docs/*.md run (issue 22: they cannot go stale).

How they run: each document is one session, read top to bottom as a student would type it into one
notebook. Its blocks run in order in one namespace (a later block may use what an earlier one made:
docs/guide.md's "Stepping through backward" animates the model of "Seeing the graph"), and every
document starts from a fresh namespace. They run headless, in a temporary folder: ``show_graph`` and
the widgets return their objects, which is all a block needs.

A block that cannot run here is marked, visibly, on the line before its fence::

    <!-- not-run: why -->

(an excerpt that needs its notebook around it, code that needs a GPU). Keep that list short:
``test_few_blocks_are_marked_not_run`` holds it to a handful.
"""
from __future__ import annotations

import importlib.util
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(.+?)\s*-->")
NEEDS_TORCH = re.compile(r"<!--\s*needs-torch\s*-->")   # runs where PyTorch is installed (CI), skipped elsewhere
MAX_NOT_RUN = 6
_HAS_TORCH = importlib.util.find_spec("torch") is not None


def blocks(doc: pathlib.Path):
    """``(line, code, reason_not_run or None)`` for every ```python fence of ``doc``."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start = i
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            prev = next((ln for ln in reversed(lines[:start]) if ln.strip()), "")
            m = NOT_RUN.search(prev) if start > 0 and lines[start - 1].strip() else None
            reason = m.group(1) if m else None
            if reason is None and start > 0 and NEEDS_TORCH.search(lines[start - 1]) and not _HAS_TORCH:
                reason = "needs PyTorch (not installed here)"
            out.append((start + 1, "\n".join(lines[start + 1:j]) + "\n", reason))
            i = j + 1
        else:
            i += 1
    return out


RUNNABLE = [d for d in DOCS if d.is_file() and any(r is None for _, _, r in blocks(d))]


def test_readme_has_blocks_that_run():
    assert ROOT / "README.md" in RUNNABLE


def test_few_blocks_are_marked_not_run():
    marked = [f"{d.relative_to(ROOT)}:{ln} ({r})" for d in DOCS if d.is_file() for ln, _, r in blocks(d)
              if r and not r.startswith("needs PyTorch")]
    assert len(marked) <= MAX_NOT_RUN, f"too many blocks marked not-run (make them run): {marked}"


@pytest.mark.parametrize("doc", RUNNABLE, ids=lambda d: str(d.relative_to(ROOT)))
def test_python_blocks_run(doc, tmp_path, monkeypatch):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import gradlab.ops
    from gradlab.ops.registry import METHODS, REGISTRY

    monkeypatch.chdir(tmp_path)             # anything a block saves lands here
    registry = dict(REGISTRY)               # a block that registers an example op leaves no trace
    public, methods = list(gradlab.ops.__all__), list(METHODS)  # (nor its public name: gradlab.ops.softsign)
    ns = {"__name__": "__main__"}
    try:
        for line, code, reason in blocks(doc):
            if reason:
                continue
            where = f"{doc.relative_to(ROOT)}:{line}"
            try:
                exec(compile(code, where, "exec"), ns)
            except Exception as e:  # name the block, not this loop
                raise AssertionError(f"the ```python block at {where} fails: {type(e).__name__}: {e}") from e
    finally:
        REGISTRY.clear()
        REGISTRY.update(registry)
        for name in set(gradlab.ops.__all__) - set(public):
            delattr(gradlab.ops, name)
        gradlab.ops.__all__[:] = public
        METHODS[:] = methods
        plt.close("all")
