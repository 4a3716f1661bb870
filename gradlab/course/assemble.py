"""Put a student's submission together with the instructor's source of truth.

A student can delete, edit or move cells in their copy. Before grading, the
notebook that is actually run is rebuilt from the instructor's notebook:

* every instructor cell with a grade_id is placed in the instructor's order;
* test cells and locked cells come from the instructor (hidden tests included
  with ``--hidden``), whatever the submission holds under that grade_id, so a
  student who edits or deletes an ``assert`` cannot grade themselves;
* solution cells come from the student, matched by grade_id (a deleted one is
  graded as the unanswered stub);
* the student's own extra cells (helpers, experiments) are kept, each after the
  instructor cell it followed in the submission.
"""
from __future__ import annotations

import copy
import os

from .build import student_cell
from .notebook import (
    CourseError, grade_id, is_locked, is_solution, is_test, points, strip_hidden,
)


def _norm(src: str) -> str:
    return "\n".join(line.rstrip() for line in src.strip().split("\n"))


def parts_of(solution_nb):
    """The graded parts: [(grade_id, points)] in notebook order."""
    return [(grade_id(c), points(c)) for c in solution_nb.cells if is_test(c)]


def answer_ids(nb):
    """grade_ids that identify an exercise: its solution and test cells (not generic ones like 'setup')."""
    return [grade_id(c) for c in nb.cells if grade_id(c) and (is_solution(c) or is_test(c))]


def _code_cell(source, info, tags=()):
    import nbformat
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata = {"gradlab": info}
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def assemble(sub_nb, sol_nb, sub_path, sol_path, hidden=False):
    """Return (notebook to run, notes) for one submission.

    Raises CourseError when the submission shares no grade_id with the
    solution notebook (a notebook from a different exercise).
    """
    import nbformat
    sub_path, sol_path = os.fspath(sub_path), os.fspath(sol_path)
    instr_ids = [grade_id(c) for c in sol_nb.cells if grade_id(c)]
    sub_ids = {grade_id(c) for c in sub_nb.cells if grade_id(c)}
    if not sub_ids & set(answer_ids(sol_nb)):
        raise CourseError(
            f"{sub_path}: none of its cells match the exercise {os.path.basename(sol_path)} "
            f"(expected grade_ids such as {', '.join(repr(i) for i in answer_ids(sol_nb)[:3])}); "
            "is it a notebook from a different exercise? Pass the right one with --against"
        )
    known = set(instr_ids)
    # the student's cells by grade_id (first occurrence wins) and their extra cells by anchor
    by_id, extras, anchor, notes = {}, {None: []}, None, []
    for cell in sub_nb.cells:
        gid = grade_id(cell)
        if gid in known and gid not in by_id:
            by_id[gid] = cell
            anchor = gid
            extras.setdefault(gid, [])
        elif cell.cell_type == "code" and cell.source.strip():
            extras.setdefault(anchor, []).append(cell)

    name = os.path.basename(sol_path)
    cells = [_code_cell(c.source, {"kind": "extra", "after": None}, c.get("metadata", {}).get("tags", ()))
             for c in extras[None]]
    for i, icell in enumerate(sol_nb.cells):
        gid = grade_id(icell)
        if gid is None or icell.cell_type != "code":
            continue
        scell = by_id.get(gid)
        if is_solution(icell):
            if scell is None:
                notes.append(f"solution cell '{gid}' is missing from the submission; graded as unanswered")
                source = student_cell(icell, name, i, sol_path).source
            else:
                source = scell.source
            cells.append(_code_cell(source, {"kind": "solution", "grade_id": gid}))
        elif is_test(icell) or is_locked(icell):
            kind = "test" if is_test(icell) else "locked"
            expected = strip_hidden(icell.source, f"{sol_path} '{gid}'")
            if scell is None:
                notes.append(f"{kind} cell '{gid}' was deleted; the instructor's version was run")
            elif _norm(scell.source) not in (_norm(expected), _norm(icell.source)):
                notes.append(f"{kind} cell '{gid}' was edited; the instructor's version was run")
            source = strip_hidden(icell.source, f"{sol_path} '{gid}'", keep=True) if hidden else expected
            info = {"kind": kind, "grade_id": gid}
            if kind == "test":
                info["points"] = points(icell)
            cells.append(_code_cell(source, info, icell.get("metadata", {}).get("tags", ())))
        else:
            source = scell.source if scell is not None else icell.source
            cells.append(_code_cell(source, {"kind": "extra", "grade_id": gid}))
        for extra in extras.get(gid, ()):
            tags = extra.get("metadata", {}).get("tags", ())
            cells.append(_code_cell(extra.source, {"kind": "extra", "after": gid}, tags))
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": copy.deepcopy(dict(sol_nb.metadata.get("kernelspec") or {})) or
                   {"display_name": "Python 3", "language": "python", "name": "python3"}}
    for k, cell in enumerate(cells):
        cell.id = f"cell{k:03d}"
    nb.cells = cells
    return nb, notes
