"""Run assembled notebooks under real nbval in a pytest subprocess.

One pytest process grades a batch of notebooks: nbval gives each notebook a
fresh kernel and runs its cells as test items with a per-cell timeout
(``--nbval-cell-timeout``); ``-n N`` spreads whole notebooks over N pytest-xdist
workers (``--dist loadfile`` keeps a notebook's cells on one worker, in order).
The subprocess keeps the grader alive whatever a submission does: an infinite
loop is interrupted (and its kernel killed if it ignores that), a kernel that calls
``os._exit`` or hits a limit only ends its own notebook, output is capped and
dropped as soon as each cell is recorded. With ``sandbox=True`` every kernel starts
in bubblewrap (``sandbox.py``). Afterwards nothing of the run is left: launchers
still alive are killed, the grader's folder and the kernels' channels removed.

Functions: ``check_tools``, ``run_notebooks``; ``GRACE_S`` (how long an interrupted
cell may take to stop before its kernel is killed).
"""
from __future__ import annotations

import dataclasses
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from .notebook import CourseError, write_notebook

_INI = "[pytest]\naddopts =\nfilterwarnings =\n    ignore::DeprecationWarning\n"


def _gradlab_root() -> str:
    import gradlab
    return os.path.dirname(os.path.dirname(os.path.abspath(gradlab.__file__)))


def check_tools(workers: int) -> None:
    """Fail with an install hint (not a traceback) when nbval / xdist / ipykernel are missing."""
    import importlib.util
    need = ["nbval", "ipykernel", "nbformat"] + (["xdist"] if workers > 1 else [])
    missing = [m for m in need if importlib.util.find_spec(m) is None]
    if missing:
        names = {"xdist": "pytest-xdist"}
        raise CourseError("gradlab grade needs " + ", ".join(names.get(m, m) for m in missing)
                          + ": pip install 'gradlab[dev]'")


GRACE_S = 5.0   # an interrupted cell that is still running this long after its timeout is killed


def _sweep(channels, cgroups=""):
    """Kill any sandbox launcher of this batch still alive (with it, its whole sandbox); remove the folders,
    and the kernels' cgroups under ``cgroups`` left by launchers killed before they could remove them."""
    from .sandbox import launcher_argv, remove_stale_cgroups
    for home in glob.glob(os.path.join(channels, "*", "")):
        try:
            with open(os.path.join(home, "launcher.pid")) as f:
                pid = int(f.read().strip())
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                mine = os.fsencode(launcher_argv()[-1]) in f.read().split(b"\0")
        except (OSError, ValueError):
            continue
        if mine:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    _wait_gone(channels)
    shutil.rmtree(channels, ignore_errors=True)
    if cgroups:
        remove_stale_cgroups(cgroups)


def _wait_gone(channels, limit_s=30.0):
    """Wait until no process of this batch is left: every kernel names its channels folder on its command
    line. A killed sandbox's processes end asynchronously (a fork bomb's thousands take seconds on a busy
    machine), and the batch promises that nothing of it runs once it returns."""
    marker, end = os.fsencode(channels), time.monotonic() + limit_s
    while time.monotonic() < end:
        alive = False
        for pid in os.listdir("/proc"):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    alive = marker in f.read()
            except OSError:
                continue
            if alive:
                break
        if not alive:
            return
        time.sleep(0.1)


def _channels_root():
    """A new folder for the kernels' channels, with a short path: a unix socket's path has at most 107 bytes
    (``ROOT/kXXXXXXXX/c/k-N``), so a long temporary folder is passed over for ``/tmp``."""
    base = tempfile.gettempdir()
    if len(base) > 60 and os.path.isdir("/tmp"):
        base = "/tmp"
    return tempfile.mkdtemp(prefix="gradlab-ch-", dir=base)


def _read_results(path, keys):
    """{key: [cell record, ...]} from the plugin's JSON-lines file; an unreadable line or file is skipped."""
    records = {key: [] for key in keys.values()}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue
                key = keys.get(rec.pop("file", None)) if isinstance(rec, dict) else None
                if key is not None:
                    records[key].append(rec)
    except OSError:
        pass
    return records


def _tail(path, n=4000):
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - n))
            return f.read().decode("utf-8", "replace")
    except OSError as e:
        return f"(no log: {e})"


def run_notebooks(notebooks, timeout: float = 60.0, workers: int = 1, keep_dir=None, labels=None,
                  sandbox: bool = False, hide=(), limits=None):
    """Run [(key, notebook)] and return {key: [cell record, ...]} plus a problem line (None when all ran).

    A cell record is the dict written by ``_nbval_plugin``: kind, grade_id,
    points, status ('ok', 'error', 'timeout', 'crash', 'not-run', 'no-kernel'),
    message, and the check ``records`` and tamper ``probe`` findings the cell displayed.

    ``sandbox=True`` starts every kernel in bubblewrap (``sandbox.py``), which shows it none of this
    run's folder (results, notebooks), of ``hide`` (solutions, submissions) or of other kernels'
    channels; ``limits`` (a ``sandbox.Limits``) bounds each kernel. Whatever happens, nothing of the run
    is left running or on disk afterwards (except ``keep_dir``, when given).
    """
    from . import sandbox as sbx
    check_tools(workers)
    tmp = os.path.abspath(keep_dir or tempfile.mkdtemp(prefix="gradlab-grade-"))
    channels = _channels_root()
    proc, cgroups = None, ""
    try:
        os.makedirs(tmp, exist_ok=True)
        files, keys = [], {}
        n_cells = 0
        for i, (key, nb) in enumerate(notebooks):
            d = os.path.join(tmp, f"nb{i:03d}")
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, "submission.ipynb")
            write_notebook(nb, path)
            rel = os.path.relpath(path, tmp)
            files.append(rel)
            keys[rel] = key
            n_cells = max(n_cells, sum(1 for c in nb.cells if c.cell_type == "code"))
        ini = os.path.join(tmp, "pytest.ini")
        with open(ini, "w") as f:
            f.write(_INI)
        results_path = os.path.join(tmp, "results.jsonl")
        log_path = os.path.join(tmp, "pytest.log")
        if os.path.lexists(results_path):
            os.remove(results_path)  # a reused --keep folder: results of this run only
        if labels:
            with open(os.path.join(tmp, "index.json"), "w", encoding="utf-8") as f:
                json.dump({os.path.dirname(rel): labels.get(key, str(key)) for rel, key in keys.items()}, f,
                          indent=1)
        limits = limits or sbx.Limits()
        cmd = [sys.executable, "-m", "pytest", "-c", ini, "--rootdir", tmp, "-p", "no:cacheprovider",
               "-p", "gradlab.course._nbval_plugin", "-p", "nbval.plugin", "--nbval-lax", "--nbval-current-env",
               f"--nbval-cell-timeout={timeout:g}", "--nbval-kernel-startup-timeout=60", "-q", "--no-header",
               "-p", "no:warnings", f"--gradlab-results={results_path}", f"--gradlab-output-mb={limits.output_mb:g}"]
        if sandbox:
            # every kernel gets the wall time of its cells, each to its timeout and the grace after it
            limits = dataclasses.replace(limits, wall_s=60 + n_cells * (timeout + GRACE_S + 1))
            plan_path = os.path.join(tmp, "sandbox-plan.json")
            the_plan = sbx.plan([tmp, channels, *map(os.path.abspath, hide)], limits)
            cgroups = the_plan["cgroup"]
            with open(plan_path, "w", encoding="utf-8") as f:
                json.dump(the_plan, f, indent=1)
            cmd += [f"--gradlab-sandbox={plan_path}", f"--gradlab-channels={channels}"]
        if workers > 1:
            cmd += ["-p", "xdist.plugin", "-n", str(min(workers, len(files))), "--dist", "loadfile"]
        cmd += files
        env = dict(os.environ)
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"   # only nbval, xdist and ours: no stray plugins
        for var in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_XDIST_AUTO_NUM_WORKERS"):
            env.pop(var, None)                          # the caller's pytest settings are not the grader's
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_gradlab_root(), env.get("PYTHONPATH")) if p)
        env.setdefault("PYTHONHASHSEED", "0")
        env.setdefault("MPLBACKEND", "Agg")
        # a budget for the whole batch: every cell may use its timeout and grace, plus kernel start-up
        budget = 120 + (n_cells * len(files) * (timeout + GRACE_S) + 30 * len(files)) / max(1, min(workers,
                                                                                                  len(files)))
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(cmd, cwd=tmp, stdout=log, stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True)
            try:
                rc = proc.wait(timeout=budget)
                budget_hit = False
            except subprocess.TimeoutExpired:
                rc, budget_hit = None, True
        records = _read_results(results_path, keys)
        tail = _tail(log_path)
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        _sweep(channels, cgroups)
        if keep_dir is None:
            shutil.rmtree(tmp, ignore_errors=True)
    problem = None
    if budget_hit:
        problem = f"grading stopped after {budget:.0f} s (the time budget for this batch)"
    elif rc not in (0, 1) and not any(records.values()):
        problem = f"pytest/nbval failed to run (exit code {rc}):\n{tail}"
    return records, problem
