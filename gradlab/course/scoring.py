"""The grader's rule, as ``inprocess`` applies it to each run of a notebook.

Holds ``Part`` (one graded cell's points earned of possible, and why), ``cell_earns(res, ref)``,
``Run`` (one run's ``CellResult``\\ s), ``score(run, reference, cells)`` -> ``[Part]``, ``earned`` and
``possible``. A graded cell earns its points iff it ran without an error **and** its ``check`` records
match the reference run's one for one (same count, same names in order, ``checks.compare`` empty).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import checks
from .cells import CellResult

# --------------------------------------------------------------------------- scoring (the grader's rule)

@dataclass
class Part:
    grade_id: str
    points: float
    earned: float
    why: str = ""


def cell_earns(res: CellResult, ref: CellResult) -> str:
    """'' when a graded cell earns its points against the reference cell, else why not."""
    if res.status != "ok":
        return res.message or res.status
    if len(res.records) != len(ref.records):
        return f"{len(res.records)} check records, the reference has {len(ref.records)}"
    for got, want in zip(res.records, ref.records):
        if got.get("name") != want.get("name"):
            return f"check {got.get('name')!r} where the reference checks {want.get('name')!r}"
        try:
            why = checks.compare(got, want)
        except ValueError as e:   # the reference record itself is unreadable
            return str(e)
        if why:
            return f"{want.get('name')}: {why}"
    return ""


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
            parts.append(Part(cell.label, cell.points, 0.0, run.message or run.status))
            continue
        why = cell_earns(run.cells[cell.pos], reference.cells[cell.pos])
        parts.append(Part(cell.label, cell.points, 0.0 if why else cell.points, why))
    return parts


def earned(parts) -> float:
    return sum(p.earned for p in parts)


def possible(parts) -> float:
    return sum(p.points for p in parts)
