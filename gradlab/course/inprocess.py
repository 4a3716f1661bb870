"""Run a notebook's code cells in this Python, without Jupyter, and grade many variants of it cheaply.

``gradlab grade`` runs *untrusted* student notebooks in a fresh Jupyter kernel
under nbval: safe, but a kernel start costs seconds. To measure how good the
tests are (``gradlab course mutants``) we grade hundreds of slightly broken
copies of the *instructor's own* solution, which is trusted code, so here we
skip Jupyter and ``exec`` the cells directly, which is much faster:

* a cell runs as ``exec(compile(source, "<cell GRADE_ID>", "exec"), ns)`` in one
  namespace per notebook, in order (leading ``%magic`` / ``!shell`` lines are
  skipped; ``display`` is a no-op);
* the cells that every variant shares (up to the first cell a variant changes,
  at least everything before the first solution cell) run **once**; then the
  process ``os.fork()``s, and each child starts from that state. A fork copies
  the whole namespace (arrays, seeded random generators, imported modules) at
  almost no cost, so a variant pays only for the cells from its change onwards;
* each child sends one JSON line per cell back over a pipe. A child that
  computes for more than ``timeout`` seconds is stopped (CPU time, so that a
  busy machine does not time out a correct variant; a wall-clock deadline of
  3x + 10 s catches one that only waits); one that dies (``os._exit``, a
  segfault, out of memory) just scores zero;
* the whole batch runs in a separate *coordinator* process (itself a fork), so
  nothing a notebook does (seeds, default dtypes, imports) leaks into the caller.

Where ``os.fork`` does not exist (Windows), every variant runs from the top in
its own ``python -m gradlab.course.inprocess`` subprocess instead: slower, same
results.

Scoring follows the grader: a graded cell earns its points iff it ran without
an error **and** its ``check`` records match the reference run's one for one
(same count, same names in order, ``checks.compare`` empty). A cell without
``check`` calls (plain ``assert``\\ s) therefore scores by its status alone.

Besides the records, each graded cell's *probes* are kept: the numbers held by
the variables the test cell assigns at its top level (``got``, ``ref``, ...).
They never affect the score; ``mutants`` uses them to tell a mutant the tests
*did not notice* from one that really computes the same thing.

Three files:

* ``cells.py``: ``Cell``, ``notebook_cells(nb, hidden=False)`` (the code cells as they will run) and
  ``exec_cell(cell, ns)`` (run one cell, return its ``CellResult``);
* ``scoring.py``: ``score(run, reference)`` -> ``[Part]``, ``earned``, ``possible``: the grader's rule;
* this file: the forked children and their limits (CPU, memory, wall clock), ``run_variants(cells,
  variants, ...)`` -> ``Batch`` (the reference run and one ``Run`` per variant; a variant maps cell
  positions to replacement sources) and ``grade_notebook(path_or_nb, variants=(), hidden=True, ...)``:
  all of it for one notebook.

Every public name of the three is importable from here.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from .cells import Cell, CellResult, exec_cell, fresh_namespace, notebook_cells, one_line
from .notebook import CourseError, read_notebook
from .scoring import Part, Run, cell_earns, earned, possible, score

DEFAULT_MEMORY_MB = 4096       # address space a variant may add to what the coordinator already has
_HAS_FORK = hasattr(os, "fork")
try:
    import resource as _resource
    _HAS_RLIMIT_CPU = hasattr(_resource, "RLIMIT_CPU") and hasattr(signal, "SIGXCPU")
except ImportError:  # pragma: no cover - Windows
    _HAS_RLIMIT_CPU = False


# --------------------------------------------------------------------------- a child process runs one variant

def _child_body(cells, start, sources, ns, write, reference, stop_on_loss, probes):
    """Run cells[start:] (with the variant's sources) and ``write`` one JSON line per cell."""
    for cell in cells[start:]:
        res = exec_cell(cell, ns, sources.get(cell.pos), probes=probes)
        write(json.dumps({"cell": res.as_dict()}) + "\n")
        if stop_on_loss and reference is not None and cell.graded and cell_earns(res, reference.cells[cell.pos]):
            write(json.dumps({"stopped": True}) + "\n")
            break
    write(json.dumps({"done": True}) + "\n")


def _limit_threads():
    """One BLAS thread per process: the variants already run in parallel (threadpoolctl when installed)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    try:
        threadpool_limits(1)
    except Exception:  # pragma: no cover - an unusual BLAS build
        pass


def _limit_memory(extra_mb):
    """Cap the address space at what the process has now plus ``extra_mb`` (a runaway array -> MemoryError)."""
    if not extra_mb:
        return
    try:
        import resource
        with open("/proc/self/statm") as f:
            vm = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        limit = vm + int(extra_mb) * 2**20
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, OSError, ValueError):   # not Linux: no cap
        pass


def _limit_cpu(seconds):
    """Stop this process (SIGXCPU) once it has *computed* for ``seconds``: a loaded machine cannot time it out.

    The parent's wall-clock deadline (``_wall``) stays as the backstop for a
    variant that waits without computing (a ``sleep``, a deadlock).
    """
    if not seconds:
        return
    try:
        import math
        import resource
        soft = max(1, math.ceil(seconds))
        resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 1))
    except (ImportError, OSError, ValueError):
        pass


def _wall(seconds):
    """The wall-clock deadline that goes with a CPU-time limit: generous, for a busy machine."""
    return 3.0 * seconds + 10.0 if _HAS_RLIMIT_CPU else seconds


def _quiet():
    """Send this process's stdout/stderr to /dev/null (a notebook prints; the pipe carries only results)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)


def _fork(body, close=()):
    """Fork a child that runs ``body(out)`` (``out``: the pipe, a text file); returns (pid, read fd).

    The child closes the fds in ``close`` (its siblings' pipes), sends its output
    to /dev/null and ends with ``os._exit``: it never returns into the caller's code.
    """
    for stream in (sys.stdout, sys.stderr):   # else the child flushes the parent's buffered output again
        try:
            stream.flush()
        except Exception:
            pass
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child
        code = 0
        try:
            os.close(r)
            for fd in close:
                try:
                    os.close(fd)
                except OSError:
                    pass
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            _quiet()
            out = os.fdopen(w, "w", buffering=1, encoding="utf-8")
            body(out)
            out.flush()
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    try:
        import fcntl
        fcntl.fcntl(r, getattr(fcntl, "F_SETPIPE_SZ", 1031), 2**20)   # room for big records: fewer blocked writes
    except (ImportError, OSError):
        pass
    os.set_blocking(r, False)
    return pid, r


def _parse(buf: bytes):
    """(cells by position, done, stopped) from a child's JSON lines."""
    got, done, stopped = {}, False, False
    for line in buf.decode("utf-8", "replace").split("\n"):
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:   # a line cut short by a kill
            continue
        if "cell" in msg:
            res = CellResult.from_dict(msg["cell"])
            got[res.pos] = res
        stopped = stopped or bool(msg.get("stopped"))
        done = done or bool(msg.get("done"))
    return got, done, stopped


def _exit_reason(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"the process died ({name}): a crash or out of memory"
    return f"the process exited with code {os.WEXITSTATUS(status)} before finishing"


class _Pool:
    """The coordinator's running children: read their pipes, kill the ones past their deadline."""

    def __init__(self, workers, close=()):
        self.workers = max(1, int(workers))
        self.close = tuple(close)
        self.sel = selectors.DefaultSelector()
        self.running = {}      # fd -> [pid, key, buffer, deadline, started]
        self.finished = {}     # key -> (bytes, status, seconds, timed_out)

    def spawn(self, key, body, timeout):
        while len(self.running) >= self.workers:
            self.pump(block=True)
        pid, fd = _fork(body, self.close + tuple(self.running))
        now = time.monotonic()
        self.running[fd] = [pid, key, bytearray(), now + timeout if timeout else None, now]
        self.sel.register(fd, selectors.EVENT_READ)

    def _finish(self, fd, timed_out=False):
        pid, key, buf, _, started = self.running.pop(fd)
        self.sel.unregister(fd)
        if timed_out:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            while True:   # what it wrote before it was killed
                chunk = os.read(fd, 2**20)
                if not chunk:
                    break
                buf += chunk
        except (BlockingIOError, OSError):
            pass
        os.close(fd)
        _, status = os.waitpid(pid, 0)
        self.finished[key] = (bytes(buf), status, time.monotonic() - started, timed_out)

    def pump(self, block=False):
        """Read what is ready; with ``block``, wait until at least one child has finished."""
        n_before = len(self.finished)
        while self.running:
            now = time.monotonic()
            for fd, (_, _, _, deadline, _) in list(self.running.items()):
                if deadline is not None and now >= deadline:
                    self._finish(fd, timed_out=True)
            if not self.running:
                break
            deadlines = [d for (_, _, _, d, _) in self.running.values() if d is not None]
            wait = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
            if not block:
                wait = 0.0
            for key, _ in self.sel.select(timeout=wait if wait is None else min(wait, 1.0)):
                fd = key.fd
                try:
                    chunk = os.read(fd, 2**20)
                except BlockingIOError:
                    continue
                if chunk:
                    self.running[fd][2] += chunk
                else:
                    self._finish(fd)
            if not block or len(self.finished) > n_before:
                break

    def drain(self):
        while self.running:
            self.pump(block=True)

    def kill_all(self):
        for fd in list(self.running):
            self._finish(fd, timed_out=True)


def _make_run(cells, earlier, got, done, stopped, status, seconds, timed_out, timeout, start):
    """A ``Run`` from a child's lines; cells before ``start`` come from ``earlier`` (run by the coordinator)."""
    results = [earlier[c.pos] if c.pos < start else got.get(c.pos, CellResult(c.pos)) for c in cells]
    run = Run(results, seconds=seconds, stopped=stopped)
    if not done and os.WIFSIGNALED(status) and os.WTERMSIG(status) == getattr(signal, "SIGXCPU", -1):
        timed_out = True   # its CPU-time limit (see _limit_cpu)
    if timed_out:
        run.status, run.message = "timeout", f"timed out after {round(timeout, 1):g} s"
    elif not done:
        run.status, run.message = "crashed", _exit_reason(status)
    for c in cells[start:]:
        if c.pos in got:
            continue
        if run.status != "ok":   # the cell it was running when it died, and the ones it never reached
            results[c.pos] = CellResult(c.pos, run.status, run.message)
        elif stopped:
            results[c.pos] = CellResult(c.pos, "not run", "stopped: it had already lost points")
    return run


# --------------------------------------------------------------------------- the batch

@dataclass
class Batch:
    """The result of ``run_variants``: the reference run, one run per variant, and what was nondeterministic."""
    cells: list
    reference: Run
    runs: list
    replay: Run | None = None     # the reference's cells run a second time (in the coordinator)
    start: int = 0                # cells before this position ran once, shared by every run
    timeout: float = 0.0
    seconds: float = 0.0

    def as_dict(self):
        return {"reference": self.reference.as_dict(), "runs": [r.as_dict() for r in self.runs],
                "replay": self.replay.as_dict() if self.replay else None, "start": self.start,
                "timeout": self.timeout, "seconds": self.seconds}

    @classmethod
    def from_dict(cls, cells, d):
        def run(x):
            return Run([CellResult.from_dict(c) for c in x["cells"]], x["status"], x["message"], x["seconds"],
                       x.get("stopped", False))
        return cls(cells, run(d["reference"]), [run(x) for x in d["runs"]],
                   run(d["replay"]) if d.get("replay") else None, d["start"], d["timeout"], d["seconds"])


def _first_change(cells, variant):
    changed = [p for p, src in variant.items() if src != cells[p].source]
    return min(changed) if changed else len(cells)


def _auto_timeout(reference: Run, start: int) -> float:
    """Five times what the reference needed for the cells a variant runs, at least 5 s."""
    spent = sum(c.seconds for c in reference.cells[start:])
    return max(5.0, 5.0 * spent)


def _coordinate(cells, variants, timeout, workers, stop_on_loss, probes, memory_mb, close):
    """The coordinator: shared cells once, the reference in a child, then one child per variant.

    It walks through the notebook once more itself (the *replay*): arriving at
    cell p it forks every variant whose first change is at p, then runs cell p
    unchanged, so each variant starts from exactly the reference's state.
    """
    t0 = time.monotonic()
    firsts = [_first_change(cells, v) for v in variants]
    first_solution = min([c.pos for c in cells if c.kind == "solution"] or [len(cells)])
    start = min(firsts + [first_solution])
    _limit_threads()   # once here: the forked children inherit it
    ns = fresh_namespace()
    prefix = [exec_cell(c, ns, probes=probes) for c in cells[:start]]
    pool = _Pool(workers, close)

    def body_for(at, sources, ref, cpu=None):
        def body(out):
            _limit_memory(memory_mb)
            _limit_cpu(cpu)
            _child_body(cells, at, sources, ns, out.write, ref, stop_on_loss and ref is not None, probes)
        return body

    ref_limit = timeout or 600.0
    try:
        pool.spawn("ref", body_for(start, {}, None), ref_limit)
        pool.drain()
        buf, status, secs, timed_out = pool.finished.pop("ref")
        got, done, _ = _parse(buf)
        reference = _make_run(cells, prefix, got, done, False, status, secs, timed_out, ref_limit, start)
        if reference.status != "ok":
            raise CourseError(f"the reference run (the unchanged notebook): {reference.message}")
        limit = timeout or _auto_timeout(reference, start)
        order = sorted(range(len(variants)), key=lambda i: firsts[i])
        replay = list(prefix)
        k = 0
        for cell in cells[start:]:
            while k < len(order) and firsts[order[k]] == cell.pos:
                pool.spawn(order[k], body_for(cell.pos, variants[order[k]], reference, limit), _wall(limit))
                k += 1
            pool.pump()
            replay.append(exec_cell(cell, ns, probes=probes))
        for i in order[k:]:   # variants that change nothing: they inherit the whole replay
            pool.spawn(i, body_for(len(cells), {}, reference, limit), _wall(limit))
        pool.drain()
    finally:
        pool.kill_all()
    runs = []
    for i in range(len(variants)):
        buf, status, secs, timed_out = pool.finished[i]
        got, done, stopped = _parse(buf)
        runs.append(_make_run(cells, replay, got, done, stopped, status, secs, timed_out, limit, firsts[i]))
    return Batch(cells, reference, runs, Run(replay), start, limit, time.monotonic() - t0)


def _run_forked(cells, variants, timeout, workers, stop_on_loss, probes, memory_mb):
    """Run ``_coordinate`` in a forked process and read its ``Batch`` back over a pipe."""
    def body(out):
        try:
            batch = _coordinate(cells, variants, timeout, workers, stop_on_loss, probes, memory_mb,
                                close=(out.fileno(),))
            msg = {"batch": batch.as_dict()}
        except CourseError as e:
            msg = {"error": str(e)}
        except Exception as e:
            msg = {"error": f"the in-process runner failed: {one_line(e)}"}
        out.write(json.dumps(msg) + "\n")

    pid, r = _fork(body)
    os.set_blocking(r, True)
    chunks = []
    try:
        while True:
            chunk = os.read(r, 2**20)
            if not chunk:
                break
            chunks.append(chunk)
    except BaseException:   # Ctrl-C: take the coordinator down (its children follow: their reads fail)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        raise
    finally:
        os.close(r)
        _, status = os.waitpid(pid, 0)
    text = b"".join(chunks).decode("utf-8", "replace").strip()
    if not text:
        raise CourseError(f"the in-process runner: {_exit_reason(status)}")
    msg = json.loads(text.split("\n")[-1])
    if "error" in msg:
        raise CourseError(msg["error"])
    return Batch.from_dict(cells, msg["batch"])


# --------------------------------------------------------------------------- no fork: one subprocess per run

def _subprocess_run(cells, sources, timeout, reference, stop_on_loss, probes):
    job = {"cells": [c.__dict__ for c in cells], "sources": {str(k): v for k, v in sources.items()},
           "reference": reference.as_dict() if reference else None, "stop_on_loss": stop_on_loss,
           "probes": probes}
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "gradlab.course.inprocess"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        out, _ = proc.communicate(json.dumps(job).encode("utf-8"), timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        timed_out = True
    got, done, stopped = _parse(out)
    status = proc.returncode if proc.returncode is not None else -9
    wstatus = (-status) & 0x7F if status < 0 else (status & 0xFF) << 8   # as os.waitpid reports it
    return _make_run(cells, [], got, done, stopped, wstatus, time.monotonic() - t0, timed_out, timeout or 0, 0)


def _run_subprocesses(cells, variants, timeout, workers, stop_on_loss, probes):
    """Every run from the top in its own interpreter; the reference first when the variants need it."""
    t0 = time.monotonic()
    if timeout and not stop_on_loss:   # nothing waits for the reference: one round
        jobs = [({}, None), ({}, None)] + [(v, None) for v in variants]
        with ThreadPoolExecutor(max(1, workers)) as ex:
            done = list(ex.map(lambda j: _subprocess_run(cells, j[0], timeout, None, False, probes), jobs))
        reference, replay, runs, limit = done[0], done[1], done[2:], timeout
    else:
        reference = _subprocess_run(cells, {}, timeout or 600.0, None, False, probes)
        startup = max(0.0, reference.seconds - sum(c.seconds for c in reference.cells))   # python + imports
        limit = (timeout or _auto_timeout(reference, 0)) + 2.0 * startup + 1.0
        jobs = [({}, None)] + [(v, reference) for v in variants]
        with ThreadPoolExecutor(max(1, workers)) as ex:
            done = list(ex.map(lambda j: _subprocess_run(cells, j[0], limit, j[1], stop_on_loss, probes), jobs))
        replay, runs = done[0], done[1:]
    if reference.status != "ok":
        raise CourseError(f"the reference run (the unchanged notebook): {reference.message}")
    return Batch(cells, reference, runs, replay, 0, limit, time.monotonic() - t0)


def _main():  # pragma: no cover - exercised through _run_subprocesses
    """``python -m gradlab.course.inprocess``: run one job read from stdin, write JSON lines to stdout."""
    job = json.loads(sys.stdin.read())
    cells = [Cell(**c) for c in job["cells"]]
    sources = {int(k): v for k, v in job["sources"].items()}
    ref = job.get("reference")
    reference = None
    if ref:
        reference = Run([CellResult.from_dict(c) for c in ref["cells"]], ref["status"], ref["message"])
    out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    _quiet()
    _limit_memory(DEFAULT_MEMORY_MB)
    _child_body(cells, 0, sources, fresh_namespace(), out.write, reference, job["stop_on_loss"], job["probes"])
    out.flush()


# --------------------------------------------------------------------------- entry points

def run_variants(cells, variants=(), timeout=None, workers=1, stop_on_loss=False, probes=True,
                 memory_mb=DEFAULT_MEMORY_MB, use_fork=None) -> Batch:
    """Run the reference (``cells`` as they are) and each variant; a ``Batch`` with every run.

    ``variants``: a list of ``{cell position: replacement source}``. ``timeout``:
    seconds per variant, CPU time where the system can count it (``None``: five
    times the reference's time, at least 5 s). ``workers``: variants run at once. ``stop_on_loss``: a variant stops
    at its first graded cell that loses points (its later cells are ``not
    run``); enough to know that it lost. ``memory_mb``: the address space a
    variant may add before it gets a ``MemoryError`` (Linux; 0: no cap).
    """
    cells = list(cells)
    variants = [dict(v) for v in variants]
    for v in variants:
        for p in v:
            if not 0 <= int(p) < len(cells):
                raise ValueError(f"variant changes cell position {p}, the notebook has {len(cells)} code cells")
    fork = _HAS_FORK if use_fork is None else use_fork and _HAS_FORK
    if fork:
        return _run_forked(cells, variants, timeout, workers, stop_on_loss, probes, memory_mb)
    return _run_subprocesses(cells, variants, timeout, workers, stop_on_loss, probes)


def grade_notebook(nb, variants=(), hidden=True, **kw):
    """Read (when given a path) and run a notebook with its variants: ``(cells, Batch)``. See ``run_variants``."""
    where = "notebook"
    if isinstance(nb, (str, os.PathLike)):
        where = os.fspath(nb)
        nb = read_notebook(nb)
    cells = notebook_cells(nb, hidden=hidden, where=where)
    if not any(c.graded for c in cells):
        raise CourseError(f"{where}: has no graded test cells (nbgrader metadata grade: true)")
    return cells, run_variants(cells, variants, **kw)


__all__ = ["Batch", "Cell", "CellResult", "Part", "Run", "cell_earns", "earned", "exec_cell", "fresh_namespace",
           "grade_notebook", "notebook_cells", "one_line", "possible", "run_variants", "score"]

if __name__ == "__main__":  # pragma: no cover
    _main()
