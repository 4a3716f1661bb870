"""``gradlab grade``: score submissions against the instructor's notebooks.

Each submission is matched to its solution notebook (``--against``, or found in
``solutions/`` by exercise name, file name or shared grade_ids), rebuilt around
the instructor's test cells (see ``assemble``) and run under nbval in a fresh
kernel inside the sandbox (see ``runner`` and ``sandbox``). The instructor's
own notebook runs in the same batch, in its own kernel: the *reference run*.

A graded cell earns its points when, in the student's kernel, it ran without
an error **and** every value it recorded with ``check`` matches the reference
run's record, one for one, with the reference's tolerance (``checks.compare``).
That comparison happens here, in the grader's process: the student's kernel
only computes, so nothing it patches can change a verdict. Tamper evidence
(the file's metadata, suspicious code, the probe's findings) is listed on the
report as ``tamper`` notes; it never raises a score.
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

from .assemble import answer_ids, assemble, parts_of, reference_notebook, static_tamper
from .checks import compare
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
    tamper: list = field(default_factory=list)   # evidence of tampering (never raises a score)
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
            "error": self.error or None, "notes": list(self.notes), "tamper": list(self.tamper),
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


def _match(student, reference):
    """'' when a graded cell's records match the reference run's, else the first difference."""
    if len(student) != len(reference):
        names = [r.get("name") for r in reference]
        got = [r.get("name") for r in student if isinstance(r, dict)]
        missing = [n for n in names if n not in got]
        if len(student) < len(reference):
            return (f"recorded {len(student)} of the {len(reference)} checked values"
                    + (f"; first missing: {missing[0]!r}" if missing else ""))
        return f"recorded {len(student)} values where {len(reference)} were checked"
    for got, want in zip(student, reference):
        if not isinstance(got, dict) or got.get("name") != want.get("name"):
            return f"expected the check {want.get('name')!r} next, got {got.get('name') if isinstance(got, dict) else got!r}"
        why = compare(got, want)
        if why:
            return f"{want.get('name')}: {why}"
    return ""


def _score(result, parts, records, problem, timeout, reference):
    tests = {r.get("grade_id"): r for r in records if r.get("kind") == "test"}
    for gid, pts in parts:
        part = Part(gid, pts)
        rec = tests.get(gid)
        ref = reference.get(gid)
        if rec is None:
            part.message = "not run: " + (problem.splitlines()[0] if problem else "no result from nbval")
        else:
            part.status, part.message = rec["status"], rec.get("message", "")
            if rec["status"] == "ok":
                why = _match(rec.get("records") or [], ref.get("records") or [])
                if why:
                    part.status, part.message = "wrong", why
                else:
                    part.earned = pts
            elif rec.get("after_timeout") and rec["status"] == "error":
                part.message += " (after an earlier cell timed out)"
        result.parts.append(part)
    for rec in records:
        if rec.get("kind") == "probe":
            for found in rec.get("probe") or ():
                for f in found.get("findings") or ():
                    result.tamper.append(f"{f} (seen {found.get('where', '')})")
            continue
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
    # the same finding before every cell is one finding: keep the first place it was seen
    firsts = {}
    for t in result.tamper:
        firsts.setdefault(t.rsplit(" (seen ", 1)[0], t)
    result.tamper = list(firsts.values())


def _reference_problem(sol_path, records):
    """Why the instructor's own notebook cannot serve as the reference ('' when it can)."""
    if not records:
        return f"the reference run of {sol_path} produced no results"
    for r in records:
        if r.get("kind") in ("test", "solution", "locked") and r.get("status") != "ok":
            return (f"the instructor's notebook {sol_path} fails its own cell '{r.get('grade_id')}': "
                    f"{r.get('message', r.get('status'))}; fix the solution or its test")
    return ""


def _kernel_failed(records) -> bool:
    return not records or all(r["status"] == "no-kernel" for r in records)


def _sandbox_mode(sandbox):
    """(use the sandbox?, a note for every report when not) for ``sandbox`` in 'auto', 'on', 'off'."""
    if sandbox not in ("auto", "on", "off", True, False):
        raise CourseError(f"sandbox must be 'auto', 'on' or 'off', not {sandbox!r}")
    if sandbox in ("off", False):
        return False, "not isolated: grading ran with --sandbox off (the kernel could read and write this machine's files)"
    from .sandbox import available
    why = available()
    if not why:
        return True, ""
    if sandbox in ("on", True):
        raise CourseError(f"--sandbox on: the grading sandbox is not available here: {why}. Grade on a Linux "
                          "machine that allows namespaces (as root, or with unprivileged user namespaces)")
    return False, f"not isolated: {why}; the kernel could read this machine's files (use --sandbox on to require it)"


def grade(submissions, against=None, solutions_dir="solutions", hidden=False, timeout=60.0, workers=1,
          keep_dir=None, sandbox="auto", references=None):
    """Grade submission paths; returns [NotebookResult] in the order given.

    ``keep_dir``: keep the assembled notebooks (exactly what ran), nbval's log and the per-cell
    results there instead of in a temporary folder that is removed.
    ``sandbox``: 'auto' (isolate every kernel when this machine can, else say so on every report),
    'on' (refuse to grade without isolation), 'off' (trusted notebooks only).
    ``references``: {solution path: the reference run's cell records} computed before (``reference_run``):
    those solutions are not run again (a cluster computes each exercise's reference once and ships it).
    """
    results, jobs, meta = [], [], {}
    use_sandbox, sandbox_note = _sandbox_mode(sandbox)
    sol_nb = None
    if against is not None:
        sol_nb = read_notebook(against)
        if not parts_of(sol_nb):
            raise CourseError(f"{against}: has no graded test cells (nbgrader grade: true); "
                              "it cannot be graded against")
    cache, refs, hide, ref_jobs = {}, {}, set(), []
    if against is not None:
        hide.add(os.path.dirname(os.path.abspath(against)))
    elif os.path.isdir(solutions_dir):
        hide.add(os.path.abspath(solutions_dir))
    for i, sub in enumerate(submissions):
        res = NotebookResult(os.fspath(sub))
        results.append(res)
        if os.path.exists(sub):
            hide.add(os.path.dirname(os.path.abspath(sub)))
        try:
            sub_nb = read_notebook(sub)
            sol_path = os.fspath(against) if against is not None else find_solution(sub_nb, sub, solutions_dir)
            if sol_path not in cache:
                cache[sol_path] = sol_nb if against is not None else read_notebook(sol_path)
                hide.add(os.path.dirname(os.path.abspath(sol_path)))
            snb = cache[sol_path]
            res.against = sol_path
            nb, notes = assemble(sub_nb, snb, sub, sol_path, hidden=hidden)
            res.tamper.extend(static_tamper(sub_nb, snb))
        except CourseError as e:
            res.error = str(e)
            continue
        res.notes.extend(notes)
        if sandbox_note:
            res.notes.append(sandbox_note)
        meta[i] = (parts_of(snb), sol_path)
        if sol_path not in refs:
            refs[sol_path] = ("reference", len(refs))
            if sol_path not in (references or {}):
                ref_jobs.append((refs[sol_path], reference_notebook(snb, sol_path, hidden=hidden)))
        jobs.append((i, nb))
    jobs += ref_jobs   # (after the submissions: a kept folder's nb000 is the first submission)
    if jobs:
        labels = {key: (results[key].notebook if isinstance(key, int) else
                        f"reference: {next(p for p, k in refs.items() if k == key)}") for key, _ in jobs}
        run = dict(timeout=timeout, labels=labels, sandbox=use_sandbox, hide=sorted(hide))
        records, problem = run_notebooks(jobs, workers=workers, keep_dir=keep_dir, **run)
        records.update({refs[p]: recs for p, recs in (references or {}).items() if p in refs})   # shipped
        # a kernel that did not start (a loaded machine) is the grader's problem, not the student's: retry once
        retry = [(key, nb) for key, nb in jobs if _kernel_failed(records.get(key))]
        if retry and not problem:
            again, _ = run_notebooks(retry, workers=1, keep_dir=os.path.join(keep_dir, "retry") if keep_dir else None,
                                     **run)
            records.update({key: recs for key, recs in again.items() if recs})
        ref_records, ref_problem = {}, {}
        for sol_path, key in refs.items():
            recs = records.get(key, [])
            ref_problem[sol_path] = _reference_problem(sol_path, recs) or (problem.splitlines()[0] if problem and
                                                                            not recs else "")
            ref_records[sol_path] = {r.get("grade_id"): r for r in recs if r.get("kind") == "test"}
        for key, _ in jobs:
            if not isinstance(key, int):
                continue
            parts, sol_path = meta[key]
            if ref_problem[sol_path]:
                results[key].error = ref_problem[sol_path]
                continue
            _score(results[key], parts, records.get(key, []), problem, timeout, ref_records[sol_path])
            if problem and not records.get(key):
                results[key].notes.append(problem.splitlines()[0])
    return results


def reference_run(sol_path, hidden=False, timeout=60.0, sandbox="auto"):
    """The reference run's cell records of one instructor notebook (for ``grade(references=...)``)."""
    use_sandbox, _ = _sandbox_mode(sandbox)
    snb = read_notebook(sol_path)
    if not parts_of(snb):
        raise CourseError(f"{sol_path}: has no graded test cells (nbgrader grade: true)")
    key = ("reference", 0)
    records, problem = run_notebooks([(key, reference_notebook(snb, sol_path, hidden=hidden))], timeout=timeout,
                                     sandbox=use_sandbox, hide=[os.path.dirname(os.path.abspath(sol_path))],
                                     labels={key: f"reference: {sol_path}"})
    recs = records.get(key, [])
    why = _reference_problem(sol_path, recs) or (problem.splitlines()[0] if problem and not recs else "")
    if why:
        raise CourseError(why)
    return recs
