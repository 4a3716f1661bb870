"""Layer 7: the course tooling -- build student exercises from instructor notebooks, grade them with nbval.

* ``build(solutions, out)``: ``solutions/*.ipynb`` -> ``exercises/*.ipynb``
  (solution regions stubbed, hidden tests removed, outputs cleared);
* ``grade(paths, against=..., hidden=..., timeout=..., workers=...)``: run
  each submission with nbval in a fresh kernel, with the instructor's test
  cells re-inserted by grade_id, and score it part by part.

* ``workspace``: the student's own copies (``workspace/``), filled and merged
  by ``gradlab lab``, ``fresh`` for a new copy of one notebook; ``written``:
  the manifest of hashes that keeps every command from overwriting an edit.

The command line is ``gradlab course build`` and ``gradlab grade`` (``gradlab/cli.py``).
Needs ``nbformat``, ``nbval``, ``ipykernel`` (and ``pytest-xdist`` for ``-n``),
all in the ``dev`` extra; never nbgrader.
"""
from .exercise_build import build, student_notebook
from .checks import check, check_raises, recorded
from .grading import NotebookResult, Part, grade
from .notebook import CourseError, read_notebook
from .report import table, to_json, to_junit

__all__ = ["CourseError", "check", "check_raises", "NotebookResult", "Part", "build", "grade", "read_notebook", "student_notebook",
           "table", "to_json", "to_junit"]
