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
import importlib
import inspect
import json
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


# ------------------------------------------------------------------ stored outputs name what the code has now
#: every notebook and exercise a student opens: what it stores is what they see before running anything
STORED = NOTEBOOKS + sorted((ROOT / "exercises").glob("[0-9][0-9]_*.ipynb"))
DOTTED = re.compile(r"\bgradlab(?:\.[A-Za-z_]\w*)+")
#: gradlab.backend.memory_limit.format_bytes's shape ("1.5 KiB") written in decimal units: the old formatter's
#: output. A lesson's own arithmetic ("0.39 MB" from bytes / 1e6, "16 KB" buffers, "5.6 GB/s") is not this shape.
OLD_UNIT = re.compile(r"\b\d+\.\d (?:KB|MB|GB|TB)\b(?!/)")
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _stored_outputs(nb):
    """(where, text) for what a notebook stores: each output's text, HTML, SVG, traceback, and the saved widget
    state (a widget's JS and CSS travel in it); base64 pictures are left out (their letters are no text)."""
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            for text in [out.get("text", ""), "\n".join(out.get("traceback", []))] + [
                    v if isinstance(v, str) else json.dumps(v) for mime, v in out.get("data", {}).items()
                    if not mime.startswith(("image/png", "image/jpeg", "image/gif"))]:
                if text:
                    yield f"cell {i}", text
    for model_id, model in nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {}).items():
        yield f"widget {model_id}", json.dumps(model.get("state", {}))


def _defined(dotted: str) -> bool:
    """Does ``gradlab.a.b.c`` exist now? The longest importable module, then attributes; a name a module makes
    on first use (``gradlab.viz.widgets.GraphPlayer``, a class built when anywidget is first needed) counts
    when the module's source still defines it."""
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
            break
        except ImportError:
            continue
    for name in parts[k:]:
        if hasattr(obj, name):
            obj = getattr(obj, name)
        else:
            return inspect.ismodule(obj) and re.search(rf"^\s*(?:class|def)\s+{name}\b", inspect.getsource(obj),
                                                        re.M) is not None
    return True


def stale_names(nb) -> list[str]:
    """What a notebook's stored outputs say that the code no longer has: a ``gradlab.<dotted>`` name that does
    not resolve, a ``gradlab/...py`` file that is not there, a size in the old decimal units."""
    problems = []
    for where, text in _stored_outputs(nb):
        problems += [f"{where}: {name} does not exist" for name in sorted(set(DOTTED.findall(text)))
                     if not _defined(name)]
        problems += [f"{where}: {file} does not exist" for file, _ in sorted(set(PATH_LINE.findall(text)))
                     if not (ROOT / file).is_file()]
        problems += [f"{where}: {size!r} is in decimal units; gradlab writes KiB/MiB now (format_bytes)"
                     for size in sorted(set(OLD_UNIT.findall(text)))]
    return list(dict.fromkeys(problems))   # a cell's text/plain and text/html say the same thing once


@pytest.mark.parametrize("path", STORED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_stored_outputs_name_only_what_exists_now(path):
    problems = stale_names(nbformat.read(path, as_version=4))
    assert not problems, (f"{path.relative_to(ROOT)} stores outputs from older code (re-run it with "
                          f"scripts/run_notebooks.py {path.relative_to(ROOT)}):\n" + "\n".join(problems))


def test_stale_outputs_are_caught():
    """The check above fails on what a stale notebook stored: the old widget JS, an old path, old units."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output(
        "stream", name="stdout", text="saved 2.1 KB at gradlab/ops/softmax.py:3, see gradlab.show_graph\n")])])
    nb.metadata["widgets"] = {WIDGET_STATE: {"state": {"m": {"state": {
        "_anywidget_id": "gradlab.viz.widgets.GraphPlayer",
        "_esm": "// the same units as gradlab.viz.render.fmt_bytes\n"}}}}}
    assert stale_names(nb) == ["cell 0: gradlab/ops/softmax.py does not exist",
                               "cell 0: '2.1 KB' is in decimal units; gradlab writes KiB/MiB now (format_bytes)",
                               "widget m: gradlab.viz.render.fmt_bytes does not exist"]
