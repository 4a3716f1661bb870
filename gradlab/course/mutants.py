"""Mutation testing for the graded exercises: do the tests notice when the solution is wrong?

A test that passes on the instructor's solution proves little: it must also
*fail* on wrong solutions. A **mutant** is the solution with one small,
plausible mistake put in automatically (``+`` for ``-``, a dropped
``keepdims=True``, a missing transpose, ``range(n - 1)``...). Each mutant is
graded exactly as a student's notebook would be (hidden tests included,
``check`` records compared with the reference run's) and falls in one of
three classes:

* **killed**: it loses at least one point. The tests caught the mistake.
* **survived**: full marks, yet it behaves differently: a ``check`` record or a
  value the test cell computed (its *probes*, see ``inprocess``) differs from the
  reference beyond a tiny tolerance (rtol=1e-9, atol=1e-12), or some cell raised
  where the reference did not. A student could hand this in and get full marks:
  add a test that tells it apart.
* **equivalent**: full marks and everything the tests looked at is the same
  (``eps`` that never matters, ``a + b`` -> ``b + a``...). The tests cannot tell,
  maybe nothing can; listed, not counted.

The **mutation score** is killed / (killed + survived); the course aims at
>= 90% for every exercise.

Only the code between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` is mutated
(a solution cell without markers is mutated whole, as nbgrader replaces it
whole): the scaffolding (``def`` lines, docstrings) is the instructor's, the
region is what a student writes. Mutants are made with ``ast``: parse the
region, change one node, ``ast.unparse`` it, indent it back. The generator is
deterministic, and at most ``limit`` (120) mutants per exercise are kept, sampled
with a fixed seed.

Three files:

* ``mutation_operators.py``: ``OPERATORS`` (name -> a function ``(node, parent) -> [(new node, label)]``)
  and ``mutate_code(code)``: every mutant of one piece of code, as ``Edit``\\ s;
* this file: ``notebook_mutants(cells, exercise, limit=120)`` (the ``Mutant``\\ s of a notebook's solution
  regions), ``behaviour_change``/``classify`` (killed, survived or equivalent), ``run_exercise(path, ...)``
  -> ``ExerciseResult`` and ``run_all(paths, ...)``;
* ``mutation_report.py``: ``table(results)``, ``survivor_lines(result)``, ``to_json(results)``.

Every public name of the three is importable from here.

This file also holds ``cell_mutants(source)`` (the mutants of one solution cell) and
``find_notebooks(paths, solutions)`` (which notebooks a run covers).
"""
from __future__ import annotations

import os
import random
import textwrap
import time
from dataclasses import dataclass, field

from . import checks
from .inprocess import grade_notebook, notebook_cells, possible, score
from .mutation_operators import OPERATORS, Edit, mutate_code
from .mutation_report import survivor_lines, table, to_json
from .notebook import BEGIN_SOLUTION, END_SOLUTION, CourseError, exercise_name, marker_regions, read_notebook

TINY = {"rtol": 1e-9, "atol": 1e-12}   # "the same" for survived vs equivalent
LIMIT = 120                             # mutants per exercise, at most


# --------------------------------------------------------------------------- mutants of a notebook

@dataclass
class Mutant:
    id: str
    operator: str
    pos: int             # code-cell position (see inprocess.Cell)
    cell: int            # cell index in the notebook
    grade_id: str
    line: int            # line in the cell, 1-based
    before: str
    after: str
    source: str          # the whole mutated cell
    status: str = ""     # killed | survived | equivalent
    why: str = ""
    raised: bool = False  # killed by an exception (not by a wrong value): a cheaper kill, counted apart

    def as_dict(self):
        return {k: getattr(self, k) for k in ("id", "operator", "cell", "grade_id", "line", "before", "after",
                                               "status", "why", "raised")}


def _regions(source):
    """(first line, stop line, code) of each solution region: the lines strictly between the markers."""
    lines = source.split("\n")
    regions = list(marker_regions(lines, BEGIN_SOLUTION, END_SOLUTION, "cell"))
    if not regions:
        return lines, [(-1, len(lines))]
    return lines, [(start, stop) for start, stop, _ in regions]


def cell_mutants(source: str):
    """(line in the cell, Edit, new cell source) for each mutant of a solution cell's regions."""
    lines, regions = _regions(source)
    out = []
    for start, stop in regions:
        body = lines[start + 1: stop]
        code = textwrap.dedent("\n".join(body))
        if not code.strip():
            continue
        first = next((ln for ln in body if ln.strip()), "")
        indent = first[: len(first) - len(first.lstrip())]   # dedent removed this much
        try:
            edits = mutate_code(code)
        except SyntaxError:   # a region that is not Python by itself: leave it alone
            continue
        for e in edits:
            new_body = [indent + ln if ln.strip() else ln for ln in e.code.split("\n")]
            new = "\n".join(lines[: start + 1] + new_body + lines[stop:])
            out.append((start + 1 + e.lineno, e, new))
    return out


def notebook_mutants(cells, exercise: str, limit: int = LIMIT, seed: int = 0) -> list:
    """The mutants of every solution cell, at most ``limit`` (a fixed-seed sample, in notebook order)."""
    found = []
    for cell in cells:
        if cell.kind != "solution":
            continue
        for line, e, new in cell_mutants(cell.source):
            try:
                compile(new, "<mutant>", "exec", dont_inherit=True)
            except (SyntaxError, ValueError):   # e.g. a `return` the region needs to be inside a function
                continue
            found.append((cell, line, e, new))
    if limit and len(found) > limit:
        keep = sorted(random.Random(f"gradlab-mutants:{exercise}:{seed}").sample(range(len(found)), limit))
        found = [found[i] for i in keep]
    return [Mutant(f"m{k:03d}", e.operator, c.pos, c.index, c.label, line, e.before, e.after, new)
            for k, (c, line, e, new) in enumerate(found)]


# --------------------------------------------------------------------------- classifying

def _same(a, b) -> str:
    """'' when two encoded values are equal within the tiny tolerance, else how they differ."""
    try:
        return checks.close(checks.decode(a), checks.decode(b), TINY["rtol"], TINY["atol"])
    except Exception as e:   # an unreadable value: different
        return str(e) or "cannot be compared"


def _noisy(batch) -> set:
    """The records and probes that differ between two runs of the unchanged notebook: nondeterministic."""
    noisy = set()
    if batch.replay is None:
        return noisy
    for ref, rep in zip(batch.reference.cells[batch.start:], batch.replay.cells[batch.start:]):
        for i, (a, b) in enumerate(zip(ref.records, rep.records)):
            if _same(b.get("value"), a.get("value")):
                noisy.add((ref.pos, "record", i))
        for name, doc in ref.probes.items():
            if name not in rep.probes or _same(rep.probes[name], doc):
                noisy.add((ref.pos, "probe", name))
    return noisy


def behaviour_change(run, reference, cells, noisy=frozenset()) -> str:
    """'' when a full-marks run did everything the reference did (within TINY), else the first difference."""
    for cell in cells:
        got, want = run.cells[cell.pos], reference.cells[cell.pos]
        if want.status == "ok" and got.status != "ok":
            return f"{cell.label} raised: {got.message}"
        for i, (g, w) in enumerate(zip(got.records, want.records)):
            if (cell.pos, "record", i) in noisy:
                continue
            why = _same(g.get("value"), w.get("value"))
            if why:
                return f"{cell.label}: check {w.get('name')!r} changed within its tolerance ({why})"
        if len(got.records) != len(want.records):
            return f"{cell.label}: {len(got.records)} check records, the reference has {len(want.records)}"
        for name, doc in want.probes.items():
            if (cell.pos, "probe", name) in noisy:
                continue
            if name not in got.probes:
                return f"{cell.label}: `{name}` is no longer a number"
            why = _same(got.probes[name], doc)
            if why:
                return f"{cell.label}: `{name}` changed and the tests passed ({why})"
    return ""


def classify(mutant, run, batch) -> None:
    """Set ``mutant.status`` (killed / survived / equivalent) and ``mutant.why`` from its graded run."""
    parts = score(run, batch.reference, batch.cells)
    lost = [p for p in parts if p.earned < p.points]
    if lost:
        mutant.status, mutant.why = "killed", f"{lost[0].grade_id}: {lost[0].message}"
        # a kill by a wrong value is a check (or expected=) that failed; anything else raised or crashed
        first = next((run.cells[c.pos] for c in batch.cells if c.graded and c.label == lost[0].grade_id), None)
        mutant.raised = run.status != "ok" or (first is not None and first.status != "ok" and
                                               not (first.message or "").startswith("AssertionError"))
        return
    why = behaviour_change(run, batch.reference, batch.cells, _noisy(batch))
    mutant.status, mutant.why = ("survived", why) if why else ("equivalent", "")


# --------------------------------------------------------------------------- one exercise, all exercises

@dataclass
class ExerciseResult:
    exercise: str
    notebook: str
    mutants: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0
    timeout: float = 0.0

    def count(self, status):
        return sum(1 for m in self.mutants if m.status == status)

    @property
    def killed(self):
        return self.count("killed")

    @property
    def raised(self):
        """Killed mutants that raised or crashed rather than computing a wrong value."""
        return sum(1 for m in self.mutants if m.status == "killed" and m.raised)

    @property
    def survived(self):
        return self.count("survived")

    @property
    def equivalent(self):
        return self.count("equivalent")

    @property
    def score(self):
        """killed / (killed + survived); None when there is nothing to count."""
        n = self.killed + self.survived
        return self.killed / n if n else None

    def as_dict(self):
        return {"exercise": self.exercise, "notebook": self.notebook, "mutants": len(self.mutants),
                "killed": self.killed, "killed_by_exception": self.raised, "survived": self.survived, "equivalent": self.equivalent,
                "score": self.score, "seconds": round(self.seconds, 2), "timeout": self.timeout,
                "error": self.error or None, "warnings": list(self.warnings),
                "list": [m.as_dict() for m in self.mutants]}


def run_exercise(path, limit=LIMIT, timeout=None, workers=1, seed=0) -> ExerciseResult:
    """Generate, grade (with hidden tests) and classify the mutants of one solution notebook."""
    t0 = time.monotonic()
    p = os.fspath(path)
    try:
        nb = read_notebook(p)
    except CourseError as e:
        return ExerciseResult(os.path.splitext(os.path.basename(p))[0], p, error=str(e))
    res = ExerciseResult(exercise_name(nb, p), p)
    try:
        cells = notebook_cells(nb, hidden=True, where=p)
        res.mutants = notebook_mutants(cells, res.exercise, limit=limit, seed=seed)
        cells, batch = grade_notebook(nb, [{m.pos: m.source} for m in res.mutants], hidden=True,
                                      timeout=timeout, workers=workers, stop_on_loss=True)
    except CourseError as e:
        res.error = str(e)
        res.mutants = []
        return res
    ref_parts = score(batch.reference, batch.reference, cells)
    failing = [p.grade_id for p in ref_parts if p.earned < p.points]
    if failing:
        res.error = f"the solution itself fails {', '.join(failing)}: fix the notebook first"
        res.mutants = []
        return res
    for cell in cells:
        if batch.reference.cells[cell.pos].status != "ok":
            res.warnings.append(f"{cell.label} raises in the solution: {batch.reference.cells[cell.pos].message}")
    noisy = _noisy(batch)
    if noisy:
        names = sorted({f"{cells[pos].label}:{what}" for pos, _, what in noisy}, key=str)
        res.warnings.append("values that differ between two runs of the solution (ignored): " + ", ".join(names))
    for m, run in zip(res.mutants, batch.runs):
        classify(m, run, batch)
    res.seconds, res.timeout = time.monotonic() - t0, batch.timeout
    if possible(ref_parts) == 0:
        res.warnings.append("no graded points")
    return res


def find_notebooks(paths=(), solutions="solutions"):
    """The notebooks named (files or folders), else every ``*.ipynb`` in ``solutions``."""
    if not paths:
        if not os.path.isdir(solutions):
            raise CourseError(f"no notebooks given and no solutions folder '{solutions}'")
        paths = [solutions]
    out = []
    for p in paths:
        if os.path.isdir(p):
            out.extend(sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".ipynb")))
        else:
            out.append(p)
    return out


def run_all(paths, limit=LIMIT, timeout=None, workers=1, seed=0, progress=None) -> list:
    """``run_exercise`` for each notebook in turn (the mutants of one notebook run ``workers`` at a time)."""
    results = []
    for p in paths:
        r = run_exercise(p, limit=limit, timeout=timeout, workers=workers, seed=seed)
        if progress:
            progress(r)
        results.append(r)
    return results


__all__ = ["Edit", "ExerciseResult", "Mutant", "OPERATORS", "behaviour_change", "cell_mutants", "classify",
           "find_notebooks", "mutate_code", "notebook_mutants", "run_all", "run_exercise", "survivor_lines",
           "table", "to_json"]
