"""``gradlab grade --scheduler ADDRESS``: the gradings of a batch as tasks on a Dask cluster.

Dask (``dask.distributed``, the optional ``cluster`` extra) is the engine: its scheduler places the
tasks, its workers run them, its nannies restart a worker that dies. gradlab only says what a task is:

1. for each exercise, **one reference task** runs the instructor's notebook (``grade.reference_run``)
   on a worker; its records come back once and travel with every grading task of that exercise (plain
   data, kilobytes: a copy held by one worker would be lost with it);
2. for each submission, **one grading task** (``grade_task``): the submission's bytes, its exercise's
   solution and reference records travel with it; on the worker it is written to a fresh temporary
   folder and graded by the ordinary grader (``grade.grade``) in its own sandboxed kernel, the
   reference not run again. The task returns the grader's JSON for that one notebook.

The workers need gradlab and the course's Python environment (not the course's files: the solutions
travel with the tasks). A task that fails (its worker died, the scheduler gave up on it, it raised, or
it did not finish within ``task_timeout`` seconds) is submitted **once more**; if that fails too, the
submission is reported as not graded, with why; none is silently dropped. Results are put back in the
batch's order, so the report is the same as grading in one process.

Holds ``grade_on_cluster(submissions, scheduler, ...)`` (the batch's grader JSON), ``reference_task``
and ``grade_task`` (what runs on a worker).
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile

from .notebook import CourseError

RETRIES = 1


def _client(address):
    try:
        from distributed import Client
    except ImportError:
        raise CourseError("--scheduler needs dask.distributed: pip install 'gradlab[cluster]'") from None
    if not isinstance(address, str):   # a Client or a LocalCluster (tests, notebooks)
        return address if hasattr(address, "submit") else Client(address), not hasattr(address, "submit")
    try:
        return Client(address, timeout=30), True
    except (OSError, TimeoutError) as e:
        raise CourseError(f"--scheduler {address}: cannot reach the Dask scheduler ({e}); start it with "
                          "`dask scheduler` and the workers with `dask worker ADDRESS`") from None


def _in_tmp(files):
    """A fresh folder holding {relative name: bytes}; returns (folder, {name: path})."""
    d = tempfile.mkdtemp(prefix="gradlab-grade-task-")
    paths = {}
    for name, data in files.items():
        p = os.path.join(d, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        paths[name] = p
    return d, paths


def reference_task(exercise, solution: bytes, options):
    """On a worker: the reference records of one exercise (its instructor notebook's run)."""
    from .grading import reference_run
    d, paths = _in_tmp({f"solutions/{exercise}.ipynb": solution})
    try:
        return reference_run(paths[f"solutions/{exercise}.ipynb"], hidden=options.get("hidden", False),
                             timeout=options.get("timeout", 60.0), sandbox=options.get("sandbox", "auto"))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def grade_task(exercise, submission: bytes, solution: bytes, reference, options):
    """On a worker: grade one submission against its shipped solution and reference; the grader's JSON doc."""
    from .grading import grade
    from .report import to_json
    sol_name = f"solutions/{exercise}.ipynb"
    d, paths = _in_tmp({sol_name: solution, f"submission/{exercise}.ipynb": submission})
    try:
        res = grade([paths[f"submission/{exercise}.ipynb"]], against=paths[sol_name], hidden=options.get("hidden", False),
                    timeout=options.get("timeout", 60.0), sandbox=options.get("sandbox", "auto"),
                    references={paths[sol_name]: reference})
        return json.loads(to_json(res))["notebooks"][0]
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _not_graded(path, why):
    return {"notebook": path, "against": "", "earned": 0, "possible": 0, "error": why, "notes": [],
            "tamper": [], "parts": []}


def _run_with_retry(client, fn, args, timeout, what):
    """fn(*args) on the cluster, tried 1 + RETRIES times; (result, None) or (None, why it failed)."""
    why = ""
    for attempt in range(1 + RETRIES):
        fut = client.submit(fn, *args, pure=False, retries=0)
        try:
            return fut.result(timeout=timeout), None
        except Exception as e:   # noqa: BLE001 - a dead worker, a timeout, a raised error: all retried
            fut.cancel()
            why = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".rstrip(": ")
    return None, f"{what} failed on the cluster {1 + RETRIES} times (last: {why})"


def grade_on_cluster(submissions, scheduler, hidden=False, timeout=60.0, sandbox="auto", task_timeout=None,
                     task=grade_task, **_local_only):
    """The grader's JSON report (its ``notebooks``, as ``report.to_json`` writes them) of [(path, exercise, solution path)] on a cluster."""
    from concurrent.futures import ThreadPoolExecutor
    client, owned = _client(scheduler)
    options = {"hidden": hidden, "timeout": timeout, "sandbox": sandbox}
    default_timeout = 600 + 40 * timeout       # a whole notebook: kernel start-up plus every cell's timeout
    task_timeout = task_timeout or default_timeout
    try:
        solutions = {}
        for _, ex, sol in submissions:
            if ex not in solutions:
                with open(sol, "rb") as f:
                    solutions[ex] = f.read()
        refs, ref_error = {}, {}
        for ex, sol in sorted(solutions.items()):
            recs, why = _run_with_retry(client, reference_task, (ex, sol, options), default_timeout,
                                        f"the reference run of {ex}")
            if why:
                ref_error[ex] = why
            else:
                refs[ex] = recs   # shipped with each grading task (plain data, a few KB): no worker holds a copy to lose

        def one(item):
            path, ex, _ = item
            if ex in ref_error:
                return _not_graded(path, ref_error[ex])
            with open(path, "rb") as f:
                data = f.read()
            doc, why = _run_with_retry(client, task, (ex, data, solutions[ex], refs[ex], options), task_timeout,
                                       "grading")
            if why:
                return _not_graded(path, f"not graded: {why}")
            doc["notebook"], doc["against"] = path, os.path.join("solutions", f"{ex}.ipynb")
            return doc

        # as many tasks in flight as the cluster has threads: a task's timeout then measures its run, not a queue
        slots = max(1, sum(client.nthreads().values()))
        with ThreadPoolExecutor(max_workers=min(slots, max(1, len(submissions)))) as pool:
            docs = list(pool.map(one, submissions))
    finally:
        if owned:
            client.close()
    return json.dumps({"notebooks": docs}, indent=2, sort_keys=True) + "\n"
