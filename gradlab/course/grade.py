"""``gradlab grade``: score submissions against the instructor's notebooks.

Each submission is matched to its solution notebook (``--against``, or found in
``solutions/`` by exercise name, file name or shared grade_ids), rebuilt around
the instructor's test cells (see ``assemble``), run under nbval in a fresh
kernel (see ``runner``), and scored: a test cell that runs without error earns
its points, anything else earns zero and reports why.
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

from .assemble import answer_ids, assemble, parts_of
from .notebook import CourseError, exercise_name, grade_id, read_notebook
from .runner import run_notebooks


@dataclass
class Part:
    grade_id: str
    points: float
    earned: float = 0.0
    status: str = "not-run"
    message: str = ""


@dataclass
class NotebookResult:
    notebook: str
    against: str = ""
    parts: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    error: str = ""       # bad input: nothing was graded

    @property
    def earned(self):
        return sum(p.earned for p in self.parts)

    @property
    def possible(self):
        return sum(p.points for p in self.parts)

    @property
    def failed(self):
        return bool(self.error) or any(p.status != "ok" for p in self.parts)

    def as_dict(self):
        return {
            "notebook": self.notebook, "against": self.against, "earned": self.earned, "possible": self.possible,
            "error": self.error or None, "notes": list(self.notes),
            "parts": [dict(grade_id=p.grade_id, points=p.points, earned=p.earned, status=p.status,
                           message=p.message) for p in self.parts],
        }


def find_solution(sub_nb, sub_path, solutions_dir):
    """The solution notebook a submission belongs to, or a CourseError saying why none fits."""
    if not os.path.isdir(solutions_dir):
        raise CourseError(f"{sub_path}: no --against given and no solutions folder '{solutions_dir}' to match it in")
    cands = sorted(glob.glob(os.path.join(solutions_dir, "*.ipynb")))
    by_stem = {os.path.splitext(os.path.basename(c))[0]: c for c in cands}
    name = exercise_name(sub_nb, sub_path)
    if name in by_stem:
        return by_stem[name]
    ids = {grade_id(c) for c in sub_nb.cells if grade_id(c)}
    best, best_n = None, 0
    for c in cands:
        try:
            n = len(ids & set(answer_ids(read_notebook(c))))
        except CourseError:
            continue
        if n > best_n:
            best, best_n = c, n
    if best is None:
        raise CourseError(f"{sub_path}: matches no exercise in '{solutions_dir}' (no shared grade_ids); "
                          "is it a notebook from a different course? Pass the instructor notebook with --against")
    return best


def _score(result, parts, records, problem, timeout):
    tests = {r.get("grade_id"): r for r in records if r.get("kind") == "test"}
    for gid, pts in parts:
        part = Part(gid, pts)
        rec = tests.get(gid)
        if rec is None:
            part.message = "not run: " + (problem.splitlines()[0] if problem else "no result from nbval")
        else:
            part.status, part.message = rec["status"], rec.get("message", "")
            if rec["status"] == "ok":
                part.earned = pts
            elif rec.get("after_timeout") and rec["status"] == "error":
                part.message += " (after an earlier cell timed out)"
        result.parts.append(part)
    for rec in records:
        if rec.get("kind") == "test" and rec["status"] != "crash":
            continue  # the part's own line already says why
        if rec.get("grade_id"):
            where = f"cell '{rec['grade_id']}'"
        elif rec.get("after"):
            where = f"your own cell after '{rec['after']}'"
        else:
            where = "your own cell at the top"
        if rec["status"] == "crash":
            result.notes.append(f"{where}: the kernel died; later cells were not run")
        elif rec["status"] == "timeout":
            result.notes.append(f"{where}: timed out after {timeout:g} s and was interrupted")
        elif rec["status"] == "error" and rec.get("kind") != "test":
            result.notes.append(f"{where} raised {rec.get('message', '')}")


def _kernel_failed(records) -> bool:
    return not records or all(r["status"] == "no-kernel" for r in records)


def grade(submissions, against=None, solutions_dir="solutions", hidden=False, timeout=60.0, workers=1,
          keep_dir=None):
    """Grade submission paths; returns [NotebookResult] in the order given.

    ``keep_dir``: keep the assembled notebooks (exactly what ran), nbval's log and the per-cell
    results there instead of in a temporary folder that is removed.
    """
    results, jobs, meta = [], [], {}
    sol_nb = None
    if against is not None:
        sol_nb = read_notebook(against)
        if not parts_of(sol_nb):
            raise CourseError(f"{against}: has no graded test cells (nbgrader grade: true); "
                              "it cannot be graded against")
    cache = {}
    for i, sub in enumerate(submissions):
        res = NotebookResult(os.fspath(sub))
        results.append(res)
        try:
            sub_nb = read_notebook(sub)
            sol_path = os.fspath(against) if against is not None else find_solution(sub_nb, sub, solutions_dir)
            if sol_path not in cache:
                cache[sol_path] = sol_nb if against is not None else read_notebook(sol_path)
            snb = cache[sol_path]
            res.against = sol_path
            nb, notes = assemble(sub_nb, snb, sub, sol_path, hidden=hidden)
        except CourseError as e:
            res.error = str(e)
            continue
        res.notes.extend(notes)
        meta[i] = parts_of(snb)
        jobs.append((i, nb))
    if jobs:
        labels = {i: results[i].notebook for i, _ in jobs}
        records, problem = run_notebooks(jobs, timeout=timeout, workers=workers, keep_dir=keep_dir, labels=labels)
        # a kernel that did not start (a loaded machine) is the grader's problem, not the student's: retry once
        retry = [(i, nb) for i, nb in jobs if _kernel_failed(records.get(i))]
        if retry and not problem:
            again, _ = run_notebooks(retry, timeout=timeout, workers=1, labels=labels,
                                     keep_dir=os.path.join(keep_dir, "retry") if keep_dir else None)
            records.update({i: recs for i, recs in again.items() if recs})
        for i, _ in jobs:
            _score(results[i], meta[i], records.get(i, []), problem, timeout)
            if problem and not records.get(i):
                results[i].notes.append(problem.splitlines()[0])
    return results
