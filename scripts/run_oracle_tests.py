"""Run the comparisons with PyTorch (the oracle) that a student's ``make test`` skipped; CI's second half.

    python scripts/run_oracle_tests.py --skipped artifacts/torch-skipped.txt [-n 2]

A student's ``make test`` runs without PyTorch, and ``tests/conftest.py`` lists
every test that skipped for want of it (``GRADLAB_TORCH_SKIPS``). This script,
run in a venv *with* the oracle (``make test-oracle``), runs exactly those tests,
so the suite never runs twice in full; without a list (or an empty one) it runs
every test marked ``oracle``. Then the course notebooks that need PyTorch
(``NEEDS_TORCH`` in ``notebooks/conftest.py``) run under nbval from a copy of
the notebooks as committed. Exit status: non-zero if either part fails, or if
PyTorch is not importable (the oracle run would prove nothing).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def skipped_ids(path) -> list[str]:
    """The test ids in ``path`` (one a line), those that still exist; [] when there is no such file."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    ids = [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    return [i for i in dict.fromkeys(ids) if (ROOT / i.split("::")[0]).exists()]


def notebooks_needing_torch() -> list[str]:
    spec = importlib.util.spec_from_file_location("_notebooks_conftest", ROOT / "notebooks" / "conftest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return sorted(getattr(mod, "NEEDS_TORCH", ()))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--skipped", default="artifacts/torch-skipped.txt", help="the list make test wrote")
    p.add_argument("-n", dest="jobs", default="2", help="pytest-xdist workers (default 2)")
    args = p.parse_args(argv)
    if importlib.util.find_spec("torch") is None:
        print("run_oracle_tests: PyTorch is not installed here; install the oracle (make test-oracle)",
              file=sys.stderr)
        return 2
    py = sys.executable
    ids = skipped_ids(args.skipped)
    what = f"{len(ids)} tests that skipped without PyTorch ({args.skipped})" if ids else "the oracle-marked tests"
    print(f"run_oracle_tests: {what}", flush=True)
    rc = subprocess.call([py, "-m", "pytest", "-n", args.jobs, "--dist", "loadfile", "--no-loadscope-reorder",
                          *(ids or ["-m", "oracle"])],
                         cwd=ROOT)
    names = notebooks_needing_torch()
    if names:
        sys.path.insert(0, str(ROOT / "scripts"))
        from pristine_copy import pristine_copy
        dest, _ = pristine_copy(["notebooks"])
        try:
            print(f"run_oracle_tests: the notebooks that need PyTorch: {', '.join(names)}", flush=True)
            nb_rc = subprocess.call([py, "-m", "pytest", "--nbval-lax", "-p", "no:cacheprovider",
                                     *(str(dest / "notebooks" / n) for n in names)],
                                    cwd=ROOT, env=dict(os.environ, GRADLAB_FAST="1"))
        finally:
            shutil.rmtree(dest, ignore_errors=True)
        rc = rc or nb_rc
    return rc


if __name__ == "__main__":
    sys.exit(main())
