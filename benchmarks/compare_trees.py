"""Time the same benchmark step in two source trees by CPU time, alternating: "did this change make it slower?"

    python benchmarks/compare_trees.py OLD_TREE NEW_TREE [--only NAME ...] [--repeats 200] [--rounds 4]
    python benchmarks/compare_trees.py OLD_TREE NEW_TREE --callgrind [--steps 20] [--only NAME ...]

A tree is a checkout of gradlab (``git worktree add --detach /tmp/old 670e3a1`` gives one). Each measurement
is a fresh process with ``PYTHONPATH=TREE``, so it imports that tree's gradlab, while the programs
it runs are this file's: the steps of ``bench_small_programs.py`` and the small conv of
``bench_conv.py`` (both trees run the same benchmark code, which must use API that both have).

Why not wall clocks: on a shared, loaded machine a step's wall time moves by 2x between runs, which
hides a 5% regression. Two measures see through the load:

* CPU time (``time.process_time``): the best of ``--repeats`` steps after a warm-up, one thread
  (``OPENBLAS_NUM_THREADS=1``, ``gradlab.set_num_threads(1)``), the two trees alternating in
  ``--rounds`` rounds, so that a slow spell hits both alike. The figure is the best over rounds.
* ``--callgrind``: valgrind's count of executed instructions (Ir) for ``--steps`` steps after the
  warm-up, deterministic and independent of load. The counters are zeroed when the child calls
  ``os.getppid()`` and dumped when it calls ``os.getpgrp()`` (``--zero-before``/``--dump-before``),
  so imports, set-up and warm-up are not counted. Instructions are a proxy for time (a cache miss
  or a wide SIMD loop costs more or less than its count), so report both. Needs ``valgrind`` on PATH;
  about a minute per tree (most of it the imports under valgrind).

Prints, per program, old and new and the ratio new / old (above 1.05: more than 5% slower).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_small_programs import PROGRAMS  # noqa: E402  (this tree's programs, run in both trees)


def small_conv(lib, rng):
    """bench_conv.py's step: conv2d of x (32, 3, 32, 32) by w (16, 3, 3, 3), padding 1, + backward."""
    x, w, b = (lib.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)
               for shape in ((32, 3, 32, 32), (16, 3, 3, 3), (16,)))

    def step():
        x.grad = w.grad = b.grad = None
        lib.nn.functional.conv2d(x, w, b, padding=1).sum().backward()
    return step


BENCHMARKS = {"small conv 32x3x32x32 * 16x3x3x3": small_conv, **PROGRAMS}
ONE_THREAD = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


# ------------------------------------------------------------ the child: one tree, its benchmarks

def _child(names, repeats, warmup, steps):
    """Run each of ``names`` in this process (a fresh process per timing; all of them under callgrind)."""
    import gradlab
    gradlab.set_num_threads(1)
    results = []
    for name in names:
        step = BENCHMARKS[name](gradlab, np.random.default_rng(0))
        for _ in range(warmup):
            step()
        if steps:  # under callgrind: these steps only, one dump per benchmark
            os.getppid()
            for _ in range(steps):
                step()
            os.getpgrp()
            results.append({})
            continue
        times = []
        for _ in range(repeats):
            t = time.process_time()
            step()
            times.append(time.process_time() - t)
        results.append({"best_ms": min(times) * 1e3, "median_ms": float(np.median(times)) * 1e3})
    return {"gradlab": gradlab.__file__, "results": results}


# ------------------------------------------------------------ the parent: alternate the trees

def _run_child(tree, names, args, valgrind_out=None):
    """One child process in ``tree`` (one thread): a result per name, with ``Ir`` per step under callgrind."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", *names, "--repeats", str(args.repeats),
           "--warmup", str(args.warmup), "--steps", str(args.steps if valgrind_out else 0)]
    if valgrind_out:
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={valgrind_out}",
               "--zero-before=getppid", "--dump-before=getpgrp", *cmd]
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": os.path.abspath(tree)}
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"{tree}: {names} failed:\n{out.stderr[-3000:]}")
    child = json.loads(out.stdout.strip().splitlines()[-1])
    if not child["gradlab"].startswith(os.path.abspath(tree)):
        sys.exit(f"{tree}: imported gradlab from {child['gradlab']}, not from the tree")
    if valgrind_out:  # the dumps made at each os.getpgrp(): <out>.1, <out>.2, ...
        for i, result in enumerate(child["results"], 1):
            with open(f"{valgrind_out}.{i}") as f:
                ir = next(int(line.split()[1]) for line in f if line.startswith("summary:"))
            result["kIr"] = ir / args.steps / 1e3
    return child["results"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--only", nargs="*", help="substrings of benchmark names to run")
    ap.add_argument("--repeats", type=int, default=200, help="steps timed per process (best is kept)")
    ap.add_argument("--rounds", type=int, default=4, help="processes per tree, alternating")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--callgrind", action="store_true", help="count instructions instead of timing")
    ap.add_argument("--steps", type=int, default=20, help="steps counted under --callgrind (Ir per step is printed)")
    args = ap.parse_args(argv)
    names = [n for n in BENCHMARKS if not args.only or any(s in n for s in args.only)]
    trees = {"old": args.old, "new": args.new}
    unit, key = ("kIr/step", "kIr") if args.callgrind else ("CPU ms, best", "best_ms")
    print(f"old = {args.old}, new = {args.new}; one thread; load average {os.getloadavg()[0]:.2f}")
    print(f"{'benchmark':34s} {'old ' + unit:>16s} {'new ' + unit:>16s} {'new/old':>8s}   per round (old/new)")
    if args.callgrind:  # deterministic: one process per tree runs every benchmark
        with tempfile.TemporaryDirectory() as tmp:
            counts = {label: _run_child(tree, names, args, os.path.join(tmp, label)) for label, tree in trees.items()}
        for name, old, new in zip(names, counts["old"], counts["new"]):
            print(f"{name:34s} {old[key]:16.1f} {new[key]:16.1f} {new[key] / old[key]:8.3f}", flush=True)
    for name in names if not args.callgrind else ():
        runs = {"old": [], "new": []}
        for r in range(args.rounds):
            for label in (("old", "new") if r % 2 == 0 else ("new", "old")):
                runs[label].append(_run_child(trees[label], [name], args)[0][key])
        old, new = min(runs["old"]), min(runs["new"])
        rounds = " ".join(f"{a:.4g}/{b:.4g}" for a, b in zip(runs["old"], runs["new"]))
        print(f"{name:34s} {old:16.4g} {new:16.4g} {new / old:8.3f}   {rounds}", flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        ap = argparse.ArgumentParser()
        ap.add_argument("--child", nargs="+")
        ap.add_argument("--repeats", type=int)
        ap.add_argument("--warmup", type=int)
        ap.add_argument("--steps", type=int)
        a = ap.parse_args()
        print(json.dumps(_child(a.child, a.repeats, a.warmup, a.steps)))
    else:
        main()
