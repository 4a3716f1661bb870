"""A student's self-check: ``gradlab grade exercises/NN.ipynb`` in a students' repository (no solutions).

The students' copy has no instructor's notebook to compare with, so the check is the notebook's own:
it runs, as the student wrote it, in a fresh kernel under nbval, and a graded cell earns its points
when it runs without an error (its ``check`` calls compare with the solution's values recorded in
``exercises/expected/`` and raise on a difference, the message naming the case and the hint). The report
says that this is a self-check; the instructor grades against the instructor's solution, with the
hidden tests too.

Holds ``self_check(paths, ...)`` -> [``NotebookResult``], each notebook checked against itself.
"""
from __future__ import annotations

import copy
import os

from .course_dir import find_course
from .grading import NotebookResult, Part
from .notebook import CourseError, grade_id, is_test, points, read_notebook
from .recorded_values import FOLDER
from .runner import run_notebooks

NOTE = ("self-check: your notebook's own tests, against the solution's recorded values (no solutions here); "
        "your instructor grades the same parts against the solution, with more cases")


def _marked(nb):
    """The notebook with each code cell marked for the results plugin (a graded part, or the student's own)."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.metadata["gradlab"] = ({"kind": "test", "grade_id": grade_id(cell), "points": points(cell)}
                                        if is_test(cell) else {"kind": "extra", "grade_id": grade_id(cell)})
    nb.cells = [c for c in nb.cells if c.cell_type == "code" or c.cell_type == "markdown"]
    return nb


def self_check(paths, timeout=60.0, workers=1, keep_dir=None):
    """[NotebookResult] for the student's own notebooks, each checked against itself."""
    results, jobs = [], []
    for i, p in enumerate(paths):
        res = NotebookResult(str(p), against="(self-check)")
        results.append(res)
        try:
            nb = read_notebook(p)
        except CourseError as e:
            res.error = str(e)
            continue
        if not any(is_test(c) for c in nb.cells):
            res.error = f"{p}: has no graded cells (nbgrader grade: true); is it an exercise notebook?"
            continue
        jobs.append((i, _marked(nb)))
    if not jobs:
        return results
    # the kernels run in a temporary folder: show them the course's recorded values (``checks.recorded``)
    try:
        expected = os.path.join(find_course(start=os.path.dirname(os.path.abspath(paths[0]))).exercises, FOLDER)
    except CourseError:
        expected = ""
    before = os.environ.get("GRADLAB_EXPECTED")
    os.environ["GRADLAB_EXPECTED"] = expected
    try:
        records, problem = run_notebooks(jobs, timeout=timeout, workers=workers, keep_dir=keep_dir,
                                         labels={i: results[i].notebook for i, _ in jobs})
    finally:
        if before is None:
            os.environ.pop("GRADLAB_EXPECTED", None)
        else:
            os.environ["GRADLAB_EXPECTED"] = before
    for i, nb in jobs:
        res, recs = results[i], {r.get("grade_id"): r for r in records.get(i, []) if r.get("kind") == "test"}
        res.notes.append(NOTE)
        for cell in nb.cells:
            if cell.cell_type != "code" or cell.metadata["gradlab"]["kind"] != "test":
                continue
            gid = grade_id(cell)
            rec = recs.get(gid)
            part = Part(gid, points(cell))
            if rec is None:
                part.message = "not run" + (f": {problem.splitlines()[0]}" if problem else "")
            else:
                part.status, part.message = rec["status"], rec.get("message", "")
                part.earned = part.points if rec["status"] == "ok" else 0.0
            res.parts.append(part)
    return results
