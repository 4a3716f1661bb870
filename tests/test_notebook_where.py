"""What a lesson says about the code is true of the code now (issue 33, issue 32).

* every ``gradlab/...py`` path any notebook shows (in its text or its stored outputs) exists, and
  every ``path:LINE`` points at a definition (``def``, ``class``, a decorator) or a row of the
  elementwise table: a line number that moved with an edit fails here until the notebook is re-run;
* every "Where this lives in gradlab" section is followed by a cell that computes its files and
  lines from the code (``gradlab.course.lessons.where`` / ``where_table``);
* the graphs a notebook stores are the graphs the code draws now: the node labels of each stored
  ``show_graph`` picture in notebooks 00 and 05 equal those of the same cells run again.
"""
from __future__ import annotations

import ast
import pathlib
import re

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
PATH_LINE = re.compile(r"(gradlab/[\w/]+\.py)(?::(\d+))?")
DEFINITION = re.compile(r"\s*(?:async\s+)?(?:def|class)\s|\s*@")
TABLE_ROW = re.compile(r'\s*"\w+":\s*\(')   # a row of gradlab/ops/unary.py's table: "tanh": (np.tanh, ...)


def _texts(cell):
    yield cell.source
    for out in cell.get("outputs", []):
        yield out.get("text", "") or out.get("data", {}).get("text/plain", "")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_path_and_line_shown_exists(path):
    problems = []
    for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
        for text in _texts(cell):
            for file, line in PATH_LINE.findall(text):
                target = ROOT / file
                if not target.is_file():
                    problems.append(f"cell {i}: {file} does not exist")
                    continue
                if line:
                    lines = target.read_text().splitlines()
                    n = int(line)
                    if not 1 <= n <= len(lines):
                        problems.append(f"cell {i}: {file}:{n} is past the end ({len(lines)} lines)")
                    elif not (DEFINITION.match(lines[n - 1]) or TABLE_ROW.match(lines[n - 1])):
                        problems.append(f"cell {i}: {file}:{n} is {lines[n - 1].strip()[:60]!r}, not a definition")
    assert not problems, (f"{path.name} shows paths or lines that are not true of the code (re-run it with "
                          "scripts/run_notebooks.py):\n" + "\n".join(problems))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_where_this_lives_is_computed(path):
    cells = nbformat.read(path, as_version=4).cells
    at = [i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith("## Where this lives")]
    assert len(at) == 1, f"{path.name}: one '## Where this lives in gradlab' section expected"
    after = cells[at[0] + 1] if at[0] + 1 < len(cells) else None
    assert after is not None and after.cell_type == "code" and re.search(r"\bwhere(_table)?\(", after.source), (
        f"{path.name}: the cell after 'Where this lives' should compute the files and lines "
        "(gradlab.course.lessons.where_table)")
    if after.execution_count is not None:
        shown = "".join(t for t in list(_texts(after))[1:])
        assert PATH_LINE.search(shown), f"{path.name}: the computed 'Where this lives' cell stored no path"


# ------------------------------------------------------------------ stored graphs are the graphs drawn now
LABEL = re.compile(r"<text[^>]*>([^<]*)</text>")


def _labels(svg):
    return [t for t in LABEL.findall(svg) if t.strip() and not t.startswith("memory:")]


def _run_cells(nb):
    """Run each code cell in one namespace, as a kernel would; yield (cell, the value of its last expression)."""
    ns = {"__name__": "__notebook__"}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tree = ast.parse(cell.source)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, "<cell>", "exec"), ns)
        value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), ns) if last is not None else None
        yield cell, value


@pytest.mark.parametrize("name", ["00_welcome.ipynb", "05_graphs.ipynb"])
def test_stored_graph_labels_match_what_the_code_draws_now(name, monkeypatch):
    monkeypatch.chdir(ROOT / "notebooks")
    import matplotlib
    matplotlib.use("Agg")
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    compared = 0
    for cell, value in _run_cells(nb):
        stored = [o["data"]["image/svg+xml"] for o in cell.get("outputs", [])
                  if "image/svg+xml" in o.get("data", {})]
        if not stored or "show_graph" not in cell.source or not hasattr(value, "_repr_svg_"):
            continue
        now, then = _labels(value._repr_svg_()), _labels("".join(stored[-1]))
        assert now == then, (f"{name}: the stored graph of the cell\n{cell.source}\nshows labels "
                             f"{sorted(set(then) - set(now))} that the code no longer draws (it draws "
                             f"{sorted(set(now) - set(then))}): re-run the notebook")
        compared += 1
    assert compared >= 2, f"{name}: expected at least two stored show_graph pictures to compare, found {compared}"
