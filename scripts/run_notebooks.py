"""Re-run course notebooks top to bottom and store their outputs in place.

Stored outputs are what a student sees before running anything, and what nbval
compares the cells marked ``# NBVAL_CHECK_OUTPUT`` against, so they must come
from one clean, seeded run. Usage::

    python scripts/run_notebooks.py                 # every notebook in notebooks/
    python scripts/run_notebooks.py notebooks/02_broadcasting.ipynb
"""
from __future__ import annotations

import pathlib
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


if __name__ == "__main__":
    paths = [pathlib.Path(p).resolve() for p in sys.argv[1:]] or sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
    for p in paths:
        run(p)
