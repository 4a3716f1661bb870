"""The grader's rule, stated once: both grading paths score with it.

``gradlab grade`` (each submission in a sandboxed kernel, ``grade.py``) and the in-process runner
(``inprocess``: the mutants, the submission fixtures) both judge a graded cell here. It earns its points iff
it ran without an error **and** its ``check`` records match the reference run's one for one (same count,
same names in order, ``checks.compare`` empty, with the reference's tolerance).

Holds ``Part`` (one graded cell's points earned of possible, its status and why), ``match_records(student,
reference)`` (the rule on two lists of records: why not, the failing case, its hint), ``report_text`` (an
untrusted string as a report may show it), ``cell_earns(res, ref)`` (the rule on two in-process
``CellResult``\\ s), ``Run`` (one in-process run's ``CellResult``\\ s), ``score(run, reference, cells)`` ->
``[Part]``, ``earned`` and ``possible``.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import checks
from .cells import CellResult

# --------------------------------------------------------------------------- a graded part and the rule


@dataclass
class Part:
    """One graded cell of one run: its points, what it earned, and for a loss why (and what helps)."""
    grade_id: str
    points: float
    earned: float = 0.0
    status: str = "not-run"   # ok | wrong (a check failed) | error | timeout | crashed | not-run
    message: str = ""
    case: str = ""     # the check that failed (its name, as the graded cell recorded it)
    hint: str = ""     # the instructor's msg= for that check (computed parts from a reference shown as ...)
    where: str = ""    # for an exception: the student's cell and line it passed through last

    def as_dict(self):
        return dict(grade_id=self.grade_id, points=self.points, earned=self.earned, status=self.status,
                    message=self.message, case=self.case, hint=self.hint, where=self.where)


_CONTROL = dict.fromkeys(range(32), " ")


def report_text(value, limit=300) -> str:
    """A string from an untrusted record as a report may show it: one line, no control characters, bounded."""
    if not isinstance(value, str):
        return ""
    text = " ".join(value.translate(_CONTROL).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _name(rec):
    return rec.get("name") if isinstance(rec, dict) else None


def match_records(student, reference):
    """(why, case, hint) for a graded cell's records against the reference run's: why is '' when they match.

    ``case`` is the check that failed; ``hint`` its msg= as the student's run recorded it (computed from the
    student's values) or else as the reference run did (its computed parts elided). Nothing in ``student``
    (an untrusted kernel's records) can make this raise.
    """
    for i, want in enumerate(reference):
        name = report_text(_name(want))
        if i >= len(student):
            return (f"recorded {len(student)} of the {len(reference)} checked values; first missing: {name!r}",
                    name, report_text(want.get("msg")))
        got = student[i]
        if _name(got) != _name(want):
            return (f"expected the check {name!r} next, got {report_text(_name(got), 80) or type(got).__name__!r}",
                    name, report_text(want.get("msg")))
        why = checks.compare(got, want)
        if why:
            mine = got.get("msg") if isinstance(got, dict) else None
            return f"{name}: {why}", name, report_text(mine) or report_text(want.get("msg"))
    if len(student) > len(reference):
        return f"recorded {len(student)} values where {len(reference)} were checked", "", ""
    return "", "", ""


def cell_earns(res: CellResult, ref: CellResult) -> str:
    """'' when an in-process graded cell earns its points against the reference cell, else why not."""
    if res.status != "ok":
        return res.message or res.status
    try:
        return match_records(res.records, ref.records)[0]
    except ValueError as e:   # the reference record itself is unreadable
        return str(e)


@dataclass
class Run:
    """One run of a notebook (the reference or a variant): a ``CellResult`` per code cell."""
    cells: list
    status: str = "ok"        # ok | timeout | crashed (of the whole process)
    message: str = ""
    seconds: float = 0.0
    stopped: bool = False     # stopped early: it had already lost a point

    def as_dict(self):
        return {"status": self.status, "message": self.message, "seconds": self.seconds, "stopped": self.stopped,
                "cells": [c.as_dict() for c in self.cells]}


def score(run: Run, reference: Run, cells: list) -> list:
    """The parts (graded cells) of ``run`` with the points each earns against ``reference``.

    A run that timed out or crashed scores zero everywhere, with that reason.
    """
    parts = []
    for cell in cells:
        if not cell.graded:
            continue
        if run.status != "ok":
            parts.append(Part(cell.label, cell.points, 0.0, run.status, run.message or run.status))
            continue
        res = run.cells[cell.pos]
        why = cell_earns(res, reference.cells[cell.pos])
        status = "ok" if not why else res.status if res.status != "ok" else "wrong"
        parts.append(Part(cell.label, cell.points, 0.0 if why else cell.points, status, why))
    return parts


def earned(parts) -> float:
    return sum(p.earned for p in parts)


def possible(parts) -> float:
    return sum(p.points for p in parts)
