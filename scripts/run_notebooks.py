"""Re-run course notebooks top to bottom and store their outputs in place.

Stored outputs are what a student sees before running anything, and what nbval
compares the cells marked ``# NBVAL_CHECK_OUTPUT`` against, so they must come
from one clean, seeded run. Usage::

    python scripts/run_notebooks.py                 # every notebook in notebooks/
    python scripts/run_notebooks.py notebooks/02_broadcasting.ipynb
    python scripts/run_notebooks.py --where [NOTEBOOK...]   # only the "Where this lives" cells
    python scripts/run_notebooks.py --help                  # this text

``--where`` refreshes just the outputs of the cells that show gradlab's code: the cell after the
"## Where this lives" heading (file names and line numbers computed from the code, checked by
tests/test_notebook_where.py) and any cell printing source (``gradlab.source``): an edit to
gradlab moves lines, and this re-computes them without replacing the lesson's other stored outputs.
The cells before it run too (in the fast mode, GRADLAB_FAST=1), since the cell may name objects
the lesson defined.
"""
from __future__ import annotations

import copy
import os
import pathlib
import re
import sys

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run(path: pathlib.Path, timeout: int = 600) -> None:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.metadata.pop("execution", None)  # timestamps would make every run differ
    nbformat.write(nb, path)
    print(f"ran {path.relative_to(ROOT)}")


#: cells whose outputs quote gradlab's code (files, lines, source): an edit of gradlab changes them
SHOWS_CODE = re.compile(r"\bwhere(_table)?\(|gradlab\.source\(|inspect\.getsource")


def code_cells(nb) -> list[int]:
    """The cells that show gradlab's code: the one after "## Where this lives", and any that prints source."""
    at = {i + 1 for i, c in enumerate(nb.cells[:-1])
          if c.cell_type == "markdown" and c.source.startswith("## Where this lives")}
    at |= {i for i, c in enumerate(nb.cells) if c.cell_type == "code" and SHOWS_CODE.search(c.source)}
    return sorted(at)


def refresh_where(path: pathlib.Path, timeout: int = 600) -> None:
    nb = nbformat.read(path, as_version=4)
    at = code_cells(nb)
    if not at:
        return
    # a copy runs (the cells before the last one too: a cell may name what the lesson defined); only the
    # code-showing cells' outputs are taken from it, so every other stored output stays as it was
    head = nbformat.v4.new_notebook(metadata=copy.deepcopy(nb.metadata), cells=copy.deepcopy(nb.cells[:at[-1] + 1]))
    os.environ["GRADLAB_FAST"] = "1"   # the kernel inherits it: the cells before run quickly
    client = NotebookClient(head, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    for i in at:
        nb.cells[i].outputs = head.cells[i].outputs
    nbformat.write(nb, path)
    print(f"refreshed {len(at)} code-showing cell(s) in {path.relative_to(ROOT)}")


if __name__ == "__main__":
    args = sys.argv[1:]
    if {"-h", "--help"} & set(args):
        print(__doc__)
        sys.exit(0)
    where = "--where" in args
    args = [a for a in args if a != "--where"]
    paths = [pathlib.Path(p).resolve() for p in args] or sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
    for p in paths:
        refresh_where(p) if where else run(p)
