"""``gradlab course build``: generate the student notebooks from the instructor's.

``solutions/NAME.ipynb`` is the single source of truth; ``exercises/NAME.ipynb``
is derived from it and never edited by hand:

* solution regions become ``# YOUR CODE HERE`` / ``raise NotImplementedError()``
  (so an untouched exercise fails every test instead of passing by accident);
* hidden tests are removed;
* reference helpers (and values computed from them) are removed from the set-up and test cells, and
  ``expected=`` from every check: the student's checks compare with the solution's values, recorded
  in ``exercises/expected/NAME.json`` (``recorded_values.py``), so no reference math is shown;
* outputs and execution counts are cleared, volatile metadata dropped, and the
  file is written deterministically, so rebuilding gives identical bytes and
  a CI test can check that ``exercises/`` is up to date;
* a file in ``exercises/`` is replaced only while it holds what the build last
  wrote (or what git last committed): an exercise someone filled in is never
  overwritten. The build then refuses, writes nothing and names the files;
  ``force=True`` (``--force``) keeps each as a backup first
  (``gradlab/course/written.py``). Students work on their own copies in
  ``workspace/exercises/``, which the build never touches.

Holds ``build(solutions, out)``, ``student_notebook(nb, path)`` (one whole student notebook),
``student_cell(...)`` (one cell) and ``normalized_nbgrader(meta)`` (nbgrader schema-3 metadata with every
field present).
"""
from __future__ import annotations

import copy
import glob
import os
import re

from .notebook import (
    CourseError,
    check_solution_notebook,
    exercise_name,
    is_solution,
    is_test,
    nbgrader_meta,
    read_notebook,
    stable_cell_id,
    strip_hidden,
    strip_solution,
)
from .recorded_values import FOLDER, expected_file
from .references import check_references, student_taint, without_references_text
from .written import write_files

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
_KEEP_CELL_META = ("nbgrader", "tags")


_IMPORT_CHECK = re.compile(r"from gradlab\.course(\.checks)? import [\w, ]*\bcheck\b[\w, ]*$")   # one line, no comment


def student_cell(cell, name: str, index: int, where: str, tainted=None):
    """The student version of one instructor cell (a new cell; the input is not changed).

    ``tainted``: the reference helpers and values (``references.student_taint``); given, a locked or test
    cell loses them and every ``expected=`` (the student's checks compare with the recorded values), and
    the cell importing ``check`` also loads those (``checks.recorded``).
    """
    new = copy.deepcopy(cell)
    gid_where = f"{where}, cell {index}"
    if is_solution(cell):
        new.source = strip_solution(cell.source, cell.cell_type, gid_where)
    elif is_test(cell):
        new.source = strip_hidden(cell.source, gid_where)
    if tainted is not None and cell.cell_type == "code" and not is_solution(cell) and nbgrader_meta(cell) and (
            is_test(cell) or nbgrader_meta(cell).get("locked")):
        new.source = without_references_text(new.source, tainted, gid_where)
        lines = new.source.split("\n")
        at = next((i for i, ln in enumerate(lines) if _IMPORT_CHECK.match(ln)), None)
        if at is not None:
            lines[at] += ", recorded"
            lines.insert(at + 1, f'recorded("{name}")   # the solution\'s values for the checks below '
                                 f'(exercises/{FOLDER}/{name}.json)')
            new.source = "\n".join(lines)
    meta = {k: copy.deepcopy(v) for k, v in cell.get("metadata", {}).items() if k in _KEEP_CELL_META}
    nbg = nbgrader_meta(cell)
    if nbg:
        meta["nbgrader"] = normalized_nbgrader(nbg)
        if nbg.get("locked") or is_test(cell):
            # JupyterLab honours these: the student cannot edit or delete instructor cells
            meta["editable"] = False
            meta["deletable"] = False
    new.metadata = meta
    new.id = cell.get("id") or stable_cell_id(name, index, cell)
    if new.cell_type == "code":
        new.outputs = []
        new.execution_count = None
    if "attachments" in new and not new["attachments"]:
        del new["attachments"]
    return new


def normalized_nbgrader(meta: dict) -> dict:
    """nbgrader schema-3 metadata with every field present (nbgrader itself expects them all)."""
    out = {
        "grade": bool(meta.get("grade", False)),
        "grade_id": meta["grade_id"],
        "locked": bool(meta.get("locked", False)),
        "schema_version": 3,
        "solution": bool(meta.get("solution", False)),
        "task": bool(meta.get("task", False)),
    }
    if out["grade"] or "points" in meta:
        out["points"] = meta.get("points", 0)
    return out


def student_notebook(nb, path):
    """The whole student notebook for an instructor notebook read from ``path``."""
    nbformat = __import__("nbformat")
    name = exercise_name(nb, path)
    where = os.fspath(path)
    check_solution_notebook(nb, where)
    check_references(nb, where)
    out = nbformat.v4.new_notebook()
    out.nbformat, out.nbformat_minor = 4, 5
    out.metadata = {
        "kernelspec": dict(nb.metadata.get("kernelspec") or KERNELSPEC),
        "language_info": {"name": "python"},
        "gradlab": {"exercise": name},
    }
    tainted = student_taint(nb, hidden=False)
    out.cells = [student_cell(c, name, i, where, tainted) for i, c in enumerate(nb.cells)]
    return out


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def build(solutions="solutions", out="exercises", check_only=False, force=False, on_backup=None):
    """Build every ``solutions/*.ipynb`` into ``out``; returns the written (or checked) paths.

    With ``check_only=True`` nothing is written; a CourseError lists the files
    that would change (for CI: 'exercises/ is out of date'). A file in ``out``
    that differs from what the build last wrote is refused (``WouldOverwrite``,
    nothing written) unless ``force=True``, which keeps it as a backup
    (``on_backup(old_path, backup_path)`` is called for each).
    """
    if not os.path.isdir(solutions):
        raise CourseError(f"course build: solutions folder '{solutions}' does not exist")
    paths = sorted(glob.glob(os.path.join(solutions, "*.ipynb")))
    if not paths:
        raise CourseError(f"course build: no .ipynb notebooks in '{solutions}'")
    planned = []
    course_expected = os.path.join(os.path.dirname(os.path.abspath(solutions)), "exercises", FOLDER)
    for p in paths:
        sol = read_notebook(p)
        text = __import__("nbformat").writes(student_notebook(sol, p))
        text = text if text.endswith("\n") else text + "\n"
        planned.append((os.path.join(out, os.path.basename(p)), text.encode("utf-8")))
        # the recorded values: reused from this folder's file, or the course's, when the solution is the same
        name = os.path.splitext(os.path.basename(p))[0] + ".json"
        target = os.path.join(out, FOLDER, name)
        cached = next((_read(f) for f in (target, os.path.join(course_expected, name)) if _read(f)), None)
        planned.append((target, expected_file(sol, p, cached)))
    written = [t for t, _ in planned]
    if check_only:
        stale = []
        for target, data in planned:
            try:
                with open(target, "rb") as f:
                    if f.read() != data:
                        stale.append(target)
            except OSError:
                stale.append(target)
        extra = sorted((set(glob.glob(os.path.join(out, "*.ipynb"))) | set(glob.glob(os.path.join(out, FOLDER, "*.json"))))
                       - set(written))
        if stale or extra:
            msg = []
            if stale:
                msg.append("out of date or missing: " + ", ".join(stale))
            if extra:
                msg.append("no solution notebook for: " + ", ".join(extra))
            raise CourseError(f"course build --check: {'; '.join(msg)} (instructors regenerate {out}/ from "
                              f"{solutions}/ with gradlab course build, which never overwrites an edited file)")
        return written
    write_files("course build", planned, force=force, on_backup=on_backup, hint=(
        f"Students: do exercises in your own copies (workspace/exercises/, which gradlab lab opens), never in "
        f"{out}/. Instructors: gradlab course build --force rebuilds them, keeping each edited file as "
        f"NAME.backup-DATE.ipynb next to it."))
    return written
