"""Recorded expected values: what a student's visible checks compare with, instead of reference code.

An instructor's test cell may compare with an in-notebook reference helper
(``check("dx", dx, expected=_ref_grad(x))``). The grader strips those helpers from
the student's graded kernel (``references.py``); this file keeps them out of the
student's *notebook* as well, where they would give the math away. ``gradlab course
build`` runs each solution's visible cells (in-process, hidden tests removed) and
stores what every ``check`` recorded in ``exercises/expected/NAME.json``; the
student's copy of the exercise has no reference helper and no ``expected=``, and its
set-up cell calls ``recorded("NAME")`` (``checks.recorded``), so that each visible
``check(name, value)`` compares with the solution's value of that name.

The values are computed again only when the solution's code changes: the file holds a
hash of the solution's code cells (``solution_key``), and a file with the same key is
reused (``expected_file``), so a rebuild gives the same bytes on any machine.

Functions: ``solution_key(sol_nb)``, ``record(sol_nb, where)``, ``expected_file(sol_nb, where, cached)``.
"""
from __future__ import annotations

import hashlib
import json

from .notebook import CourseError, grade_id

FOLDER = "expected"   # under exercises/: exercises/expected/NAME.json


def solution_key(sol_nb) -> str:
    """A hash of the solution's code cells (what the recorded values are computed from)."""
    h = hashlib.sha256()
    for cell in sol_nb.cells:
        if cell.cell_type == "code":
            h.update(cell.source.encode("utf-8") + b"\0")
    return h.hexdigest()[:16]


def record(sol_nb, where) -> dict:
    """{grade_id: [check record, ...]}: what the solution's visible test cells record, in order."""
    from .inprocess import grade_notebook
    cells, batch = grade_notebook(sol_nb, hidden=False, probes=False)
    out = {}
    for cell, res in zip(cells, batch.reference.cells):
        if not cell.graded:
            continue
        if res.status != "ok":
            raise CourseError(f"{where}: the solution's cell '{cell.grade_id}' fails ({res.status}: {res.message}); "
                              "its values cannot be recorded for the students' checks")
        out[cell.grade_id] = [{k: r[k] for k in ("name", "value", "spec") if k in r} for r in res.records]
    return out


def expected_file(sol_nb, where, cached=None) -> bytes:
    """The bytes of ``exercises/expected/NAME.json`` for a solution; ``cached``: the bytes of an existing
    one, reused when it was recorded from the same solution code."""
    key = solution_key(sol_nb)
    if cached:
        try:
            if json.loads(cached).get("solution") == key:
                return cached
        except (ValueError, AttributeError):
            pass
    ids = [grade_id(c) for c in sol_nb.cells if grade_id(c)]
    records = record(sol_nb, where)
    doc = {"solution": key, "records": {gid: records[gid] for gid in ids if gid in records}}
    return (json.dumps(doc, indent=0, sort_keys=True) + "\n").encode("utf-8")
