"""Run assembled notebooks under real nbval in a pytest subprocess.

One pytest process grades a batch of notebooks: nbval gives each notebook a
fresh kernel and runs its cells as test items with a per-cell timeout
(``--nbval-cell-timeout``); ``-n N`` spreads whole notebooks over N pytest-xdist
workers (``--dist loadfile`` keeps a notebook's cells on one worker, in order).
The subprocess keeps the grader alive whatever a submission does: an infinite
loop is interrupted, a kernel that calls ``os._exit`` only ends its own notebook,
and megabytes of printed output are dropped as soon as each cell is recorded.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

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


SANDBOX_KERNEL = "gradlab-sandbox"


def _needed_by_python():
    """Folders the kernel's Python cannot run without: the interpreter, its prefix, gradlab's checkout."""
    return [os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, os.path.dirname(sys.executable),
                                          _gradlab_root())]


def _kernelspec(tmp, hide, workroot):
    """A kernelspec (in ``tmp``) whose kernels start inside ``sandbox.py``, hiding ``hide`` from them.

    Each kernel's empty working folder is made under ``workroot`` (outside ``tmp``, which the
    kernels cannot see); the caller removes ``workroot`` when the batch is over.

    A folder that holds the interpreter or gradlab itself (a submission saved in the checkout's root,
    say) cannot be hidden: the kernel could not start. It is left visible (read-only).
    """
    need = _needed_by_python()
    hide = [h for h in hide if not any(n == os.path.realpath(h) or n.startswith(os.path.realpath(h) + os.sep)
                                       for n in need)]
    cfg_path = os.path.join(tmp, "sandbox.json")
    with open(cfg_path, "w", encoding="utf-8") as f:
        json.dump({"hide": sorted(set(hide)), "workroot": workroot}, f, indent=1)
    spec_dir = os.path.join(tmp, "jupyter", "kernels", SANDBOX_KERNEL)
    os.makedirs(spec_dir, exist_ok=True)
    with open(os.path.join(spec_dir, "kernel.json"), "w", encoding="utf-8") as f:
        json.dump({"argv": [sys.executable, "-m", "gradlab.course.sandbox", cfg_path, "--", "-f",
                            "{connection_file}"],
                   "display_name": "gradlab grading sandbox", "language": "python"}, f, indent=1)
    return os.path.join(tmp, "jupyter")


def run_notebooks(notebooks, timeout: float = 60.0, workers: int = 1, keep_dir=None, labels=None,
                  sandbox: bool = False, hide=()):
    """Run [(key, notebook)] and return {key: [cell record, ...]} plus the pytest log tail.

    A cell record is the dict written by ``_nbval_plugin``: kind, grade_id,
    points, status ('ok', 'error', 'timeout', 'crash', 'not-run', 'no-kernel'),
    message, and the check ``records`` and tamper ``probe`` findings the cell displayed.

    ``sandbox=True`` starts every kernel inside ``sandbox.py`` with this
    run's own folder (results, notebooks, connection files) and ``hide``
    (solutions, submissions) hidden from it.
    """
    check_tools(workers)
    tmp = os.path.abspath(keep_dir or tempfile.mkdtemp(prefix="gradlab-grade-"))
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
        n_cells += sum(1 for c in nb.cells if c.cell_type == "code")
    ini = os.path.join(tmp, "pytest.ini")
    with open(ini, "w") as f:
        f.write(_INI)
    results_path = os.path.join(tmp, "results.jsonl")
    log_path = os.path.join(tmp, "pytest.log")
    if os.path.exists(results_path):
        os.remove(results_path)  # a reused --keep folder: results of this run only
    if labels:
        with open(os.path.join(tmp, "index.json"), "w", encoding="utf-8") as f:
            json.dump({os.path.dirname(rel): labels.get(key, str(key)) for rel, key in keys.items()}, f, indent=1)
    cmd = [sys.executable, "-m", "pytest", "-c", ini, "--rootdir", tmp, "-p", "no:cacheprovider",
           "-p", "gradlab.course._nbval_plugin", "-p", "nbval.plugin", "--nbval-lax",
           *(["--nbval-kernel-name", SANDBOX_KERNEL] if sandbox else ["--nbval-current-env"]),
           f"--nbval-cell-timeout={timeout:g}", "--nbval-kernel-startup-timeout=60", "-q", "--no-header",
           "-p", "no:warnings", f"--gradlab-results={results_path}"]
    if workers > 1:
        cmd += ["-p", "xdist.plugin", "-n", str(min(workers, len(files))), "--dist", "loadfile"]
    cmd += files
    env = dict(os.environ)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"   # only nbval, xdist and ours: no stray plugins
    for var in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_XDIST_AUTO_NUM_WORKERS"):
        env.pop(var, None)                          # the caller's pytest settings are not the grader's
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_gradlab_root(), env.get("PYTHONPATH")) if p)
    env.setdefault("PYTHONHASHSEED", "0")
    workroot = tempfile.mkdtemp(prefix="gradlab-kernels-") if sandbox else None
    if sandbox:
        env["JUPYTER_PATH"] = _kernelspec(tmp, [tmp, *map(os.path.abspath, hide)], workroot)
        env["JUPYTER_RUNTIME_DIR"] = os.path.join(tmp, "runtime")   # connection files: hidden from kernels
    env.setdefault("MPLBACKEND", "Agg")
    # a budget for the whole batch: every cell may use its timeout, plus kernel start-up
    budget = 120 + (n_cells * (timeout + 2) + 30 * len(files)) / max(1, min(workers, len(files)))
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=tmp, stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=budget)
            budget_hit = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc, budget_hit = None, True
    records = {key: [] for key in keys.values()}
    if os.path.exists(results_path):
        with open(results_path, encoding="utf-8") as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue
                key = keys.get(rec.pop("file", None))
                if key is not None:
                    records[key].append(rec)
    with open(log_path, "rb") as f:
        f.seek(0, 2)
        f.seek(max(0, f.tell() - 4000))
        tail = f.read().decode("utf-8", "replace")
    if keep_dir is None:
        shutil.rmtree(tmp, ignore_errors=True)
    if workroot:   # the kernels' working folders (their tmpfs lived only in their namespaces)
        shutil.rmtree(workroot, ignore_errors=True)
    problem = None
    if budget_hit:
        problem = f"grading stopped after {budget:.0f} s (the time budget for this batch)"
    elif rc not in (0, 1) and not any(records.values()):
        problem = f"pytest/nbval failed to run (exit code {rc}):\n{tail}"
    return records, problem
