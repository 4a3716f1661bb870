"""The three set-ups every comparison benchmark runs in, each in a fresh process (one home for it).

* ``noscipy``: default threads (gradlab's and PyTorch's own defaults, BLAS untouched) with SciPy
  blocked from the import system (a ``sys.meta_path`` finder that refuses ``scipy``): what
  ``pip install gradlab`` gives;
* ``default``: default threads, SciPy importable (imported first when installed, as a user's
  notebook that also uses SciPy would have it);
* ``one``: both libraries forced to one thread (``OMP/OPENBLAS/MKL_NUM_THREADS=1``,
  ``torch.set_num_threads(1)``, ``gradlab.set_num_threads(1)``): the older benchmarks' set-up.

Thread counts are read when NumPy/BLAS load and SciPy has to be hidden before anything imports
it, so each set-up is a subprocess. A script uses it in two lines::

    if __name__ == "__main__":
        if not _setups.dispatch(__file__):   # the parent: runs this script once per --setups entry
            main()                           # the child (or --setups none): the benchmark itself

and calls ``_setups.configure(torch)`` once gradlab and torch are imported (sets the threads of
``one``) and prints ``_setups.describe(torch)`` (set-up, thread counts, SciPy, load average).
"""
from __future__ import annotations

import os
import subprocess
import sys

SETUPS = {"noscipy": "default threads, SciPy hidden (pip install gradlab)",
          "default": "default threads, SciPy importable",
          "one": "both libraries forced to 1 thread"}
ENV = "GRADLAB_BENCH_SETUP"
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "GRADLAB_NUM_THREADS")

BLOCK_SCIPY = """
import sys
class _NoSciPy:
    def find_spec(self, name, path=None, target=None):
        if name == "scipy" or name.startswith("scipy."):
            raise ImportError("scipy is blocked for this benchmark (a plain pip install gradlab has none)")
        return None
sys.meta_path.insert(0, _NoSciPy())
"""
IMPORT_SCIPY = """
try:
    import scipy, scipy.special  # noqa: F401  (a user's SciPy, loaded before the benchmark starts)
except ImportError:
    pass
"""


def current() -> str | None:
    """The set-up this process runs in (None outside :func:`dispatch`'s children)."""
    return os.environ.get(ENV)


def env_for(setup: str) -> dict:
    """The environment of a child process for ``setup``: thread variables cleared (default threads)
    or set to 1 (``one``)."""
    env = dict(os.environ)
    for var in THREAD_VARS:
        env.pop(var, None)
        if setup == "one":
            env[var] = "1"
    env[ENV] = setup
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def command(script: str, argv: list, setup: str) -> list:
    """``python -c ...`` running ``script`` with ``argv`` in ``setup`` (SciPy blocked or imported first)."""
    code = (BLOCK_SCIPY if setup == "noscipy" else IMPORT_SCIPY if setup == "default" else "") + (
        f"import sys; sys.argv = {[os.path.abspath(script), *argv]!r}\n"
        f"import runpy; runpy.run_path({os.path.abspath(script)!r}, run_name='__main__')")
    return [sys.executable, "-c", code]


def run(script: str, argv: list, setup: str, capture: bool = False):
    """Run ``script`` in a fresh process for ``setup``; ``capture``: return its CompletedProcess."""
    return subprocess.run(command(script, argv, setup), env=env_for(setup), capture_output=capture,
                          text=True, check=False)


def split_argv(argv: list) -> tuple[list, list]:
    """``(setups, rest)``: the ``--setups A B`` entries (default: all three) and the other arguments."""
    setups, rest, i = None, [], 0
    while i < len(argv):
        a = argv[i]
        if a == "--setups" or a.startswith("--setups="):
            setups = [] if a == "--setups" else a.split("=", 1)[1].split(",")
            i += 1
            while a == "--setups" and i < len(argv) and not argv[i].startswith("-"):
                setups.append(argv[i])
                i += 1
            continue
        rest.append(a)
        i += 1
    return (list(SETUPS) if setups is None else setups), rest


def dispatch(script: str, argv: list | None = None) -> bool:
    """In the parent: run ``script`` once per set-up of ``--setups`` (default all three; ``none``:
    this process as it is) and return True. In a child (or with ``--setups none``): return False."""
    argv = sys.argv[1:] if argv is None else argv
    if current() is not None or any(a in ("-h", "--help") for a in argv):
        return False
    setups, rest = split_argv(argv)
    if setups == ["none"]:
        sys.argv[1:] = rest
        return False
    bad = [s for s in setups if s not in SETUPS]
    if bad:
        sys.exit(f"--setups: unknown {', '.join(bad)}; choose from {', '.join(SETUPS)} (or none)")
    failed = []
    for setup in setups:
        print(f"\n--- set-up {setup}: {SETUPS[setup]} (load average {os.getloadavg()[0]:.2f}) ---", flush=True)
        if run(script, rest, setup).returncode != 0:
            failed.append(setup)
    if failed:
        sys.exit(f"failed in set-up(s): {', '.join(failed)}")
    return True


def configure(torch=None) -> None:
    """In a child: apply the set-up's thread counts to the already imported libraries (``one``: 1)."""
    if current() == "one":
        import gradlab
        gradlab.set_num_threads(1)
        if torch is not None:
            torch.set_num_threads(1)


def describe(torch=None) -> str:
    """One line: the set-up, both libraries' thread counts, SciPy's state, whose threads gradlab's parallel
    loops run on (``gradlab/backend/threads.py``), the load average now."""
    import gradlab
    setup = current() or "none (this process's environment)"
    scipy = ("loaded" if "scipy" in sys.modules else
             "hidden" if current() == "noscipy" else "not loaded")
    tt = torch.get_num_threads() if torch is not None else "-"
    from gradlab.backend import threads
    n, blas = gradlab.get_num_threads(), threads._openblas()
    pool = ("the calling thread" if n == 1 else "OpenBLAS's threads" if threads._blas_pool() is not None
            and n <= blas[0]() else "gradlab's own threads")
    return (f"set-up {setup}: gradlab {gradlab.get_num_threads()} thread(s), PyTorch {tt}, SciPy {scipy}; "
            f"gradlab's loops on {pool}; load average {os.getloadavg()[0]:.2f}")
