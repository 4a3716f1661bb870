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

A failed part says why, and what helps the student: the ``case`` (the check that
failed, or the one being computed when their code raised), the instructor's
``hint`` (``msg=``) for it, and for an exception ``where`` it passed last in the
student's own cells (``graded.py`` sends the frames; only cells of the submission
that are the student's are named). No reference value or code is ever quoted.

Holds ``grade(submissions, ...)`` -> [``NotebookResult``] (each a list of ``Part``: ``scoring.py``, where the
rule that scores them is stated once, for this grader and the in-process one),
``find_solution(sub_nb, sub_path, solutions_dir)`` and ``reference_run(sol_path, ...)`` (the reference
records of one instructor notebook, computed once for a cluster).
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

from .assemble import answer_ids, assemble, parts_of, reference_notebook, static_tamper
from .graded import cell_hash
from .notebook import CourseError, exercise_name, grade_id, is_solution, read_notebook
from .runner import run_notebooks
from .scoring import Part, match_records, report_text


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
            "parts": [p.as_dict() for p in self.parts],
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


def _where(frames, cells):
    """The student's own cell and line an exception passed through last, from the kernel's frames.

    ``cells`` maps ``graded.cell_hash`` of each of the submission's own cells (solution cells and the
    student's extra cells, never the instructor's) to how a report names it; frames in other code are skipped.
    """
    if not isinstance(frames, list):
        return ""
    for fr in reversed(frames):
        if not isinstance(fr, dict) or fr.get("hash") not in cells or not isinstance(fr.get("line"), int):
            continue
        text = report_text(fr.get("text"), 160)
        return f"{cells[fr['hash']]}, line {fr['line']}" + (f": {text}" if text else "")
    return ""


def _own_cells(sub_nb, sol_nb):
    """{cell_hash: name} for the cells of a submission whose code is the student's (see ``_where``)."""
    instructor = {grade_id(c) for c in sol_nb.cells if grade_id(c) and not is_solution(c)}
    out = {}
    for i, cell in enumerate(sub_nb.cells):
        gid = grade_id(cell)
        if cell.cell_type != "code" or not cell.source.strip() or gid in instructor:
            continue
        name = f"solution cell '{gid}' (cell {i + 1})" if gid else f"your cell {i + 1}"
        out.setdefault(cell_hash(cell.source), name)
    return out


def _score(result, parts, records, problem, timeout, reference, own=None):
    tests = {r.get("grade_id"): r for r in records if r.get("kind") == "test"}
    for gid, pts in parts:
        part = Part(gid, pts)
        rec = tests.get(gid)
        ref = reference.get(gid)
        if rec is None:
            part.message = "not run: " + (problem.splitlines()[0] if problem else "no result from nbval")
        else:
            part.status, part.message = rec["status"], rec.get("message", "")
            mine, theirs = rec.get("records") or [], ref.get("records") or []
            if rec["status"] == "ok":
                why, part.case, part.hint = match_records(mine, theirs)
                if why:
                    part.status, part.message = "wrong", why
                else:
                    part.earned = pts
            else:
                if len(mine) < len(theirs):   # the check it was computing when it stopped
                    nxt = theirs[len(mine)]
                    part.case, part.hint = report_text(nxt.get("name")), report_text(nxt.get("msg"))
                part.where = _where(rec.get("where"), own or {})
                if rec.get("after_timeout") and rec["status"] == "error":
                    part.message += " (after an earlier cell timed out)"
        result.parts.append(part)
    result.tamper.extend(_run_evidence(records, timeout))
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


_ENDED = {"timeout": "ignored the interrupt after its {t:g} s timeout (its kernel was killed)",
          "output": "printed past the output cap (its kernel was killed)",
          "limit": "hit a resource limit (its kernel was killed)",
          "exit": "ended its kernel (os._exit or sys.exit outside a cell)",
          "crash": "its kernel died (a signal or a crash)"}


def _run_evidence(records, timeout):
    """Tamper evidence from how cells ended: a kernel killed or ended, SystemExit/KeyboardInterrupt raised."""
    out = []
    for rec in records:
        where = f"cell '{rec['grade_id']}'" if rec.get("grade_id") else "a cell of its own"
        ended = rec.get("ended")
        if ended in _ENDED:
            out.append(f"{where} {_ENDED[ended].format(t=timeout)}: {rec.get('message', '')}")
        elif rec.get("status") == "timeout":
            out.append(f"{where} timed out after {timeout:g} s")
        if rec.get("kind") == "test" and rec.get("ename") in ("SystemExit", "KeyboardInterrupt") and not (
                rec.get("status") == "timeout"):
            out.append(f"{where} (graded) raised {rec['ename']}")
    return out


def _reference_problem(sol_path, records):
    """Why the instructor's own notebook cannot serve as the reference ('' when it can)."""
    if not records:
        return f"the reference run of {sol_path} produced no results"
    for r in records:
        if r.get("kind") in ("test", "solution", "locked", "grader") and r.get("status") != "ok":
            return (f"instructor error: the reference run of {sol_path} fails its own cell "
                    f"'{r.get('grade_id')}': {r.get('message', r.get('status'))}; fix the solution or its test")
    return ""


def _kernel_failed(records) -> bool:
    return not records or all(r["status"] == "no-kernel" for r in records)


def _sandbox_mode(sandbox):
    """(use the sandbox?, a note for every report when not, or when it has no process ceiling) for
    ``sandbox`` in 'auto', 'on', 'off'."""
    if sandbox not in ("auto", "on", "off", True, False):
        raise CourseError(f"sandbox must be 'auto', 'on' or 'off', not {sandbox!r}")
    if sandbox in ("off", False):
        return False, "not isolated: grading ran with --sandbox off (the kernel could read and write this machine's files)"
    from .sandbox import available, process_ceiling
    why = available()
    if not why:
        no_ceiling = process_ceiling()[1]
        return True, (f"no process ceiling: {no_ceiling}; a fork bomb is held only by the watcher's count of the "
                      "kernel's processes, which a fast one outruns, loading the machine" if no_ceiling else "")
    if sandbox in ("on", True):
        raise CourseError(f"--sandbox on: the grading sandbox is not available here: {why}. Grade on a Linux "
                          "machine that allows namespaces (as root, or with unprivileged user namespaces)")
    return False, f"not isolated: {why}; the kernel could read this machine's files (use --sandbox on to require it)"


def grade(submissions, against=None, solutions_dir="solutions", hidden=False, timeout=60.0, workers=1,
          keep_dir=None, sandbox="auto", memory_mb=2048, references=None):
    """Grade submission paths; returns [NotebookResult] in the order given.

    ``keep_dir``: keep the assembled notebooks (exactly what ran), nbval's log and the per-cell
    results there instead of in a temporary folder that is removed.
    ``sandbox``: 'auto' (isolate every kernel when this machine can, else say so on every report),
    'on' (refuse to grade without isolation), 'off' (trusted notebooks only).
    ``memory_mb``: what one sandboxed kernel may use, all its processes together (past it, it is killed).
    ``references``: {solution path: the reference run's cell records} computed before (``reference_run``):
    those solutions are not run again (a cluster computes each exercise's reference once and ships it).
    """
    from .sandbox import Limits
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
        meta[i] = (parts_of(snb), sol_path, _own_cells(sub_nb, snb))
        if sol_path not in refs:
            refs[sol_path] = ("reference", len(refs))
            if sol_path not in (references or {}):
                ref_jobs.append((refs[sol_path], reference_notebook(snb, sol_path, hidden=hidden)))
        jobs.append((i, nb))
    jobs = ref_jobs + jobs   # the references first: a kept folder's nb000 is the (first) reference run
    if jobs:
        labels = {key: (results[key].notebook if isinstance(key, int) else
                        f"reference: {next(p for p, k in refs.items() if k == key)}") for key, _ in jobs}
        run = dict(timeout=timeout, labels=labels, sandbox=use_sandbox, hide=sorted(hide),
                   limits=Limits(memory_mb=memory_mb))
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
            parts, sol_path, own = meta[key]
            if ref_problem[sol_path]:
                results[key].error = ref_problem[sol_path]
                continue
            try:
                _score(results[key], parts, records.get(key, []), problem, timeout, ref_records[sol_path], own)
            except Exception as e:   # what this submission's kernel recorded broke the grader: its failure only
                results[key].parts = [Part(gid, pts, status="error", message=f"the grader could not score this "
                                           f"part ({type(e).__name__}: {str(e)[:200]})") for gid, pts in parts]
                results[key].tamper.append(f"its records made the grader fail ({type(e).__name__})")
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
