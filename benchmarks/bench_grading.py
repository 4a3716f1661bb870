"""What the grading sandbox costs: seconds per submission for a batch, sandboxed and not, side by side.

    python benchmarks/bench_grading.py [--copies 10] [--exercise 03_softmax | --all] [-n 2] [--rounds 2]
                                       [--before DIR] [--no-off]

Grades ``--copies`` copies of ``solutions/EXERCISE.ipynb`` (each is a correct submission, so every
cell runs) with ``gradlab grade --sandbox on`` and ``--sandbox off``, alternating, ``--rounds`` times, and
prints the median seconds per submission of each and their ratio, with the load average (before and
after). ``--all``: the batch is ``--copies`` copies of every exercise's solution instead (the whole set,
each exercise's reference run once). ``--before DIR`` adds a run of another gradlab (a folder holding an
older ``gradlab/`` package) with ``--sandbox on``, so a change to the grader is measured against the code
before it on the same machine, in the same run; ``--no-off`` leaves out the ``--sandbox off`` runs.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _grade(pythonpath, subs, sandbox, workers, cwd):
    env = dict(os.environ, PYTHONPATH=pythonpath)
    cmd = [sys.executable, "-m", "gradlab.cli", "grade", *subs, "--solutions", os.path.join(ROOT, "solutions"),
           "-n", str(workers), "--sandbox", sandbox]
    start = time.perf_counter()
    # (not from ROOT: ``python -m`` puts its working folder first on sys.path, before PYTHONPATH, and
    # ROOT's gradlab would then be graded with whatever --before names)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=cwd)
    seconds = time.perf_counter() - start
    if p.returncode != 0:
        raise SystemExit(f"grading failed ({pythonpath}, --sandbox {sandbox}):\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return seconds / len(subs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("-n", dest="workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--before", default=None, help="a folder with an older gradlab/ package to compare with")
    ap.add_argument("--exercise", default="03_softmax", help="the exercise graded (default 03_softmax)")
    ap.add_argument("--all", action="store_true", help="grade every exercise (--copies of each)")
    ap.add_argument("--no-off", action="store_true", help="leave out the --sandbox off runs")
    args = ap.parse_args()
    names = (sorted(os.path.splitext(n)[0] for n in os.listdir(os.path.join(ROOT, "solutions")) if n.endswith(".ipynb"))
             if args.all else [args.exercise])
    load_before = os.getloadavg()
    tmp = tempfile.mkdtemp(prefix="bench-grading-")
    try:
        subs = []
        for i in range(args.copies):
            for name in names:
                path = os.path.join(tmp, f"student{i:02d}", f"{name}.ipynb")
                os.makedirs(os.path.dirname(path), exist_ok=True)
                shutil.copy(os.path.join(ROOT, "solutions", f"{name}.ipynb"), path)
                subs.append(path)
        runs = {"sandbox on": (ROOT, "on")} if args.no_off else {"sandbox on": (ROOT, "on"), "sandbox off": (ROOT, "off")}
        if args.before:
            runs["before, sandbox on"] = (os.path.abspath(args.before), "on")
        times = {k: [] for k in runs}
        for _ in range(args.rounds):
            for label, (path, mode) in runs.items():
                times[label].append(_grade(path, subs, mode, args.workers, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load = os.getloadavg()
    what = f"{len(names)} exercises x {args.copies}" if args.all else f"{args.copies} of {args.exercise}"
    print(f"{len(subs)} submissions ({what}), -n {args.workers}, {args.rounds} rounds; load average before "
          f"{load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, after {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f}")
    med = {k: statistics.median(v) for k, v in times.items()}
    for label, t in med.items():
        print(f"  {label:<20} {t:6.2f} s per submission  (runs: {', '.join(f'{x:.2f}' for x in times[label])})")
    base = med.get("before, sandbox on", med.get("sandbox off"))
    if base:
        print(f"  sandbox on / {'before' if args.before else 'sandbox off'}: {med['sandbox on'] / base:.2f}x")


if __name__ == "__main__":
    main()
