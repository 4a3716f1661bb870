"""Reading exercise notebooks and understanding their nbgrader cell metadata.

gradlab uses nbgrader's cell-metadata schema (version 3) so that an instructor
who already runs nbgrader can use the notebooks as they are::

    cell.metadata.nbgrader = {
        "grade": True,          # an autograded test cell (plain asserts)
        "grade_id": "softmax_forward",
        "locked": True,         # students must not change it
        "points": 2,
        "schema_version": 3,
        "solution": False,      # True: the student writes (part of) this cell
        "task": False,
    }

Marker comments inside cells (the same as nbgrader's):

* ``### BEGIN SOLUTION`` ... ``### END SOLUTION``: replaced in the student
  version by ``# YOUR CODE HERE`` and ``raise NotImplementedError()`` at the
  indentation of the ``BEGIN`` line;
* ``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN TESTS``: removed from the
  student version; run by ``gradlab grade --hidden``.

gradlab reads and writes notebooks with ``nbformat``; nbgrader itself is never
needed.

Holds ``CourseError``, ``read_notebook`` / ``write_notebook`` (deterministic bytes), the cell roles
(``nbgrader_meta``, ``grade_id``, ``points``, ``is_test``, ``is_solution``, ``is_locked``), the markers
(``marker_regions``, ``strip_solution``, ``strip_hidden``), ``check_solution_notebook`` (unique
grade_ids, points, paired markers), ``stable_cell_id`` and ``exercise_name``.
"""
from __future__ import annotations

import hashlib
import json
import os
import re

from ..errors import GradlabError

BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"
BEGIN_HIDDEN = "### BEGIN HIDDEN TESTS"
END_HIDDEN = "### END HIDDEN TESTS"
CODE_STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")
MARKDOWN_STUB = "YOUR ANSWER HERE"


class CourseError(GradlabError, ValueError):
    """A notebook that cannot be built or graded (bad file, bad markers, wrong exercise)."""


def _nbformat():
    try:
        import nbformat
    except ImportError:  # pragma: no cover - dev extra installs it
        raise CourseError("gradlab course/grade need nbformat: pip install 'gradlab[dev]'") from None
    return nbformat


def read_notebook(path):
    """Read a notebook, turning every way a file can be wrong into one clear CourseError."""
    nbformat = _nbformat()
    p = os.fspath(path)
    if not os.path.exists(p):
        raise CourseError(f"{p}: no such file")
    if os.path.isdir(p):
        raise CourseError(f"{p}: is a directory, not a notebook (.ipynb file)")
    try:
        with open(p, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError:
        raise CourseError(f"{p}: not a notebook: the file is not UTF-8 text") from None
    except OSError as e:
        raise CourseError(f"{p}: cannot read it: {e.strerror}") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise CourseError(
            f"{p}: not a notebook: malformed JSON at line {e.lineno}, column {e.colno} ({e.msg}); "
            "was it saved completely? Re-download or re-save it from Jupyter"
        ) from None
    if not isinstance(raw, dict) or not ("cells" in raw or "worksheets" in raw) or "nbformat" not in raw:
        raise CourseError(f"{p}: not a notebook: JSON without 'cells' and 'nbformat' (an .ipynb file is expected)")
    if raw.get("nbformat") not in (3, 4):  # nbformat converts 3 to 4; older ones are from a different era
        raise CourseError(f"{p}: notebook format {raw.get('nbformat')} is not supported; "
                          "save it with Jupyter (format 4)")
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception as e:  # nbformat raises several types for broken files
        raise CourseError(f"{p}: not a valid notebook: {str(e).splitlines()[0]}") from None
    for i, cell in enumerate(nb.cells):
        if cell.get("cell_type") not in ("code", "markdown", "raw") or not isinstance(cell.get("source"), str):
            raise CourseError(f"{p}: cell {i} is not a valid notebook cell")
    return nb


def nbgrader_meta(cell) -> dict:
    """The cell's nbgrader metadata (empty dict when it has none)."""
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta if isinstance(meta, dict) else {}


def grade_id(cell):
    gid = nbgrader_meta(cell).get("grade_id")
    return gid if isinstance(gid, str) and gid else None


def is_test(cell) -> bool:
    """An autograded test cell: graded, not written by the student."""
    m = nbgrader_meta(cell)
    return bool(m.get("grade")) and not m.get("solution") and cell.get("cell_type") == "code"


def is_solution(cell) -> bool:
    return bool(nbgrader_meta(cell).get("solution"))


def is_locked(cell) -> bool:
    """Instructor cells the student must not change (tests included)."""
    m = nbgrader_meta(cell)
    return bool(m.get("locked") or is_test(cell)) and not m.get("solution")


def points(cell) -> float:
    try:
        return float(nbgrader_meta(cell).get("points", 0) or 0)
    except (TypeError, ValueError):
        return 0.0


def marker_regions(lines, begin, end, where):
    """Yield (start, stop, indent) for each ``begin``/``end`` marker pair in ``lines`` (the markers' line
    indices and the ``begin`` line's indentation); a marker without its pair is a CourseError naming ``where``."""
    i = 0
    while i < len(lines):
        if lines[i].strip() == begin:
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            for j in range(i + 1, len(lines)):
                if lines[j].strip() == end:
                    yield i, j, indent
                    i = j
                    break
                if lines[j].strip() == begin:
                    raise CourseError(f"{where}: '{begin}' at line {i + 1} is opened again at line {j + 1}")
            else:
                raise CourseError(f"{where}: '{begin}' at line {i + 1} has no matching '{end}'")
        elif lines[i].strip() == end:
            raise CourseError(f"{where}: '{end}' at line {i + 1} without a '{begin}' before it")
        i += 1


def strip_solution(source: str, cell_type: str = "code", where: str = "cell") -> str:
    """The student version of a solution cell's source."""
    lines = source.split("\n")
    regions = list(marker_regions(lines, BEGIN_SOLUTION, END_SOLUTION, where))
    if not regions:  # nbgrader: a solution cell without markers is replaced whole
        return "\n".join(CODE_STUB) if cell_type == "code" else MARKDOWN_STUB
    out, last = [], 0
    for start, stop, indent in regions:
        out.extend(lines[last:start])
        if cell_type == "code":
            out.extend(indent + s for s in CODE_STUB)
        else:
            out.append(indent + MARKDOWN_STUB)
        last = stop + 1
    out.extend(lines[last:])
    return "\n".join(out)


def strip_hidden(source: str, where: str = "cell", keep: bool = False) -> str:
    """Remove hidden-test regions (or, with keep=True, only their marker lines)."""
    lines = source.split("\n")
    regions = list(marker_regions(lines, BEGIN_HIDDEN, END_HIDDEN, where))
    out, last = [], 0
    for start, stop, _ in regions:
        out.extend(lines[last:start])
        if keep:
            out.extend(lines[start + 1: stop])
        last = stop + 1
    out.extend(lines[last:])
    text = "\n".join(out)
    return text.rstrip("\n") if regions and not keep else text


def check_solution_notebook(nb, where: str) -> None:
    """Check an instructor notebook's metadata: unique grade_ids, points on graded cells, markers paired."""
    seen = {}
    for i, cell in enumerate(nb.cells):
        meta = nbgrader_meta(cell)
        here = f"{where}, cell {i}"
        if meta:
            gid = grade_id(cell)
            if gid is None:
                raise CourseError(f"{here}: nbgrader metadata without a grade_id; "
                                  "give every graded/solution/locked cell one")
            if gid in seen:
                raise CourseError(f"{here}: grade_id '{gid}' is used again (first at cell {seen[gid]}); "
                                  "grade_ids must be unique")
            seen[gid] = i
            if meta.get("grade") and "points" not in meta:
                raise CourseError(f"{here} ('{gid}'): a graded cell needs 'points' in its nbgrader metadata")
            here = f"{here} ('{gid}')"
        lines = cell.source.split("\n")
        sol = list(marker_regions(lines, BEGIN_SOLUTION, END_SOLUTION, here))
        hid = list(marker_regions(lines, BEGIN_HIDDEN, END_HIDDEN, here))
        if sol and not is_solution(cell):
            raise CourseError(f"{here}: has '{BEGIN_SOLUTION}' but is not marked "
                              "solution: true in nbgrader metadata")
        if hid and not is_test(cell):
            raise CourseError(f"{here}: has '{BEGIN_HIDDEN}' but is not a graded test cell "
                              "(grade: true, solution: false)")
    if not any(is_test(c) for c in nb.cells):
        raise CourseError(f"{where}: has no graded test cells (nbgrader metadata grade: true); nothing to grade")


def stable_cell_id(name: str, index: int, cell) -> str:
    """A deterministic cell id (nbformat 4.5 wants one); from the grade_id when there is one."""
    key = grade_id(cell) or f"{index}:{cell.cell_type}"
    return hashlib.sha1(f"{name}/{key}".encode()).hexdigest()[:12]


def write_notebook(nb, path) -> None:
    """Write a notebook byte-for-byte deterministically (sorted keys, one-space indent, final newline)."""
    text = _nbformat().writes(nb)
    if not text.endswith("\n"):
        text += "\n"
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def exercise_name(nb, path) -> str:
    """The exercise a notebook belongs to: metadata.gradlab.exercise, else its file stem."""
    meta = nb.metadata.get("gradlab") if hasattr(nb, "metadata") else None
    if isinstance(meta, dict) and isinstance(meta.get("exercise"), str):
        return meta["exercise"]
    return re.sub(r"\.ipynb$", "", os.path.basename(os.fspath(path)))
