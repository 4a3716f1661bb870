"""Running a notebook's code cells in this Python, one ``exec`` each, as ``inprocess`` does for every variant.

Holds ``Cell`` and ``notebook_cells(nb, hidden=False)`` (the code cells as they will run: leading
``%magic`` / ``!shell`` lines dropped), ``fresh_namespace()`` (what a new kernel's ``__main__`` holds),
and ``exec_cell(cell, ns)`` -> ``CellResult`` (its status, error line, ``check`` records and *probes*:
the numbers held by the variables a test cell assigns at its top level), with ``one_line(exc)``.
"""
from __future__ import annotations

import ast
import builtins
import json
import time
from dataclasses import dataclass, field

from . import checks
from .notebook import grade_id, is_solution, is_test, points, strip_hidden

PROBE_MAX_BYTES = 2**20        # a probe (a test-cell variable) larger than this is not kept

# --------------------------------------------------------------------------- cells

@dataclass
class Cell:
    """One code cell as it will run: its position among the code cells, nbgrader role and source."""
    pos: int                 # position among the notebook's code cells (0, 1, ...)
    index: int               # index among all the notebook's cells (what Jupyter shows)
    grade_id: str | None
    kind: str                # "solution", "test" (graded) or "other" (set-up, reference code, demos)
    points: float
    source: str

    @property
    def graded(self):
        return self.kind == "test"

    @property
    def label(self):
        return self.grade_id or f"cell {self.index}"


def _drop_magics(source: str) -> str:
    """Skip the leading ``%magic`` / ``!shell`` lines of a cell (plain Python cannot run them)."""
    lines = source.split("\n")
    i = 0
    while i < len(lines) and (not lines[i].strip() or lines[i].lstrip().startswith(("%", "!"))):
        i += 1
    if not any(lines[j].lstrip().startswith(("%", "!")) for j in range(i)):
        return source
    return "\n" * i + "\n".join(lines[i:])   # keep the line numbers of what is left


def notebook_cells(nb, hidden: bool = False, where: str = "notebook") -> list:
    """The notebook's code cells as ``Cell``\\ s; hidden-test regions kept with ``hidden=True``, else removed."""
    out = []
    for index, cell in enumerate(nb.cells):
        if cell.get("cell_type") != "code":
            continue
        kind = "solution" if is_solution(cell) else "test" if is_test(cell) else "other"
        src = cell.source
        if kind == "test":
            src = strip_hidden(src, f"{where}, cell {index}", keep=hidden)
        out.append(Cell(len(out), index, grade_id(cell), kind, points(cell) if kind == "test" else 0.0,
                        _drop_magics(src)))
    return out


def fresh_namespace() -> dict:
    """What a new kernel's ``__main__`` holds, as far as notebook code can tell: builtins and ``display``."""
    return {"__name__": "__main__", "__builtins__": builtins, "display": lambda *a, **k: None}


# --------------------------------------------------------------------------- running one cell

@dataclass
class CellResult:
    pos: int
    status: str = "not run"   # ok | error | timeout | crashed | not run
    message: str = ""
    records: list = field(default_factory=list)   # what check() recorded, in order
    probes: dict = field(default_factory=dict)    # name -> encoded value (graded cells only)
    seconds: float = 0.0

    def as_dict(self):
        return {"pos": self.pos, "status": self.status, "message": self.message, "records": self.records,
                "probes": self.probes, "seconds": self.seconds}

    @classmethod
    def from_dict(cls, d):
        return cls(int(d["pos"]), d.get("status", "not run"), d.get("message", ""), list(d.get("records") or []),
                   dict(d.get("probes") or {}), float(d.get("seconds") or 0.0))


def one_line(exc: BaseException) -> str:
    """``TypeName: first line of the message`` (at most 200 characters), as a score table shows it."""
    text = str(exc).strip().split("\n")[0] if str(exc).strip() else ""
    msg = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return msg if len(msg) <= 200 else msg[:197] + "..."


def _assigned_names(source: str) -> list:
    """Names a test cell assigns at its top level (loops and ``with`` included, function bodies not)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names = []

    def visit(node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
                             ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in names:
            names.append(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return names


def _probe(ns, names) -> dict:
    """The plain-data form (``checks.encode``) of each named value that is numbers, arrays or strings."""
    out = {}
    for name in names:
        if name not in ns or name.startswith("_"):
            continue
        value = ns[name]
        if callable(value) and not hasattr(value, "shape"):
            continue
        try:
            doc = checks.encode(value)
        except Exception:   # a module, an object, a generator: not a number the test looked at
            continue
        if len(json.dumps(doc)) <= PROBE_MAX_BYTES:
            out[name] = doc
    return out


def exec_cell(cell: Cell, ns: dict, source: str | None = None, probes: bool = True) -> CellResult:
    """Run one cell in ``ns``; its status, one-line error message, check records and probes.

    ``source`` replaces the cell's own source (a variant). ``Exception`` and
    ``SystemExit`` are results; ``KeyboardInterrupt`` still stops everything.
    """
    src = cell.source if source is None else source
    res = CellResult(cell.pos)
    records = []
    checks._sink["records"] = records
    t0 = time.perf_counter()
    try:
        exec(compile(src, f"<cell {cell.label}>", "exec"), ns)
        res.status = "ok"
    except (Exception, SystemExit) as e:
        res.status, res.message = "error", one_line(e)
    finally:
        checks._sink["records"] = None
        res.seconds = time.perf_counter() - t0
    res.records = records
    if probes and cell.graded:
        res.probes = _probe(ns, _assigned_names(src))
    return res
