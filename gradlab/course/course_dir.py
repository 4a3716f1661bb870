"""Where a course lives: ``find_course(start)`` and the ``Course`` it returns (its folders by role).

A course is a folder with ``solutions/`` (the instructor's copy) or ``exercises/`` (a students'
copy, as ``gradlab course release`` writes it) holding notebooks. Every course command takes
``--course DIR``; without it the course is the nearest folder at or above the current one, as
``git`` finds its repository, so the commands work from any sub-folder and from any checkout,
not only from the repository root.
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass

from .notebook import CourseError


@dataclass(frozen=True)
class Course:
    root: str

    @property
    def solutions(self) -> str:
        return os.path.join(self.root, "solutions")

    @property
    def exercises(self) -> str:
        return os.path.join(self.root, "exercises")

    @property
    def notebooks(self) -> str:
        return os.path.join(self.root, "notebooks")

    @property
    def is_instructors(self) -> bool:
        """True for the instructor's copy (it has the solutions), False for a students' release."""
        return bool(glob.glob(os.path.join(self.solutions, "*.ipynb")))

    def exercise_names(self) -> list:
        """The course's exercises by name (the solution notebooks' stems, else the exercises')."""
        folder = self.solutions if self.is_instructors else self.exercises
        return sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(folder, "*.ipynb")))


def _is_course(d: str) -> bool:
    return any(glob.glob(os.path.join(d, sub, "*.ipynb")) for sub in ("solutions", "exercises"))


def find_course(course=None, start=None) -> Course:
    """The course at ``course`` (checked), else the nearest course folder at or above ``start`` (the cwd)."""
    if course is not None:
        root = os.path.abspath(os.fspath(course))
        if not os.path.isdir(root):
            raise CourseError(f"--course {course}: no such folder")
        if not _is_course(root):
            raise CourseError(f"--course {course}: not a course folder (it has no solutions/ or exercises/ "
                              "with notebooks); pass the folder that holds them")
        return Course(root)
    here = os.path.abspath(start or os.getcwd())
    d = here
    while True:
        if _is_course(d):
            return Course(d)
        parent = os.path.dirname(d)
        if parent == d:
            raise CourseError(f"no course here: neither {here} nor any folder above it has solutions/ or "
                              "exercises/ with notebooks; run the command inside the course's repository "
                              "or pass --course DIR")
        d = parent
