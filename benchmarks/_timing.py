"""How every side-by-side benchmark times gradlab against PyTorch (one home for it).

* :func:`settle`: wait until this process's threads are idle before a timed run (the why is below);
* :func:`best`: the fastest of several runs of one function, ``(wall, cpu)`` seconds;
* :func:`interleaved`: one call of each library in turn on the same inputs (so a busy machine slows
  both alike), each call timed after :func:`settle`; returns every call's ``(wall, cpu)`` and result;
* :func:`report`: each library's best and median wall and CPU time, the ratio gradlab / PyTorch of
  both, and the load average, printed; :func:`stats` gives the same figures as numbers.

Why wait before each timed run. After a threaded BLAS call OpenBLAS's idle worker threads spin for
about 0.1 s before they sleep (OpenMP's alike, which PyTorch uses). A run timed right after the
other library's then shares the cores with those spinning threads: measured on 2 cores, PyTorch's
ResNet run took 237-263 ms right after gradlab's and 190-196 ms after a pause. So each run starts
once the process has been idle for a moment: :func:`settle` sleeps in slices of ``SLICE`` seconds
until one slice passes in which all of this process's threads together used less than a tenth of
it (``time.process_time`` counts every thread, spinning ones included). That costs one slice after
single-threaded work and about 0.1 s after a threaded BLAS call (a fixed 0.3 s pause would make the
benchmarks of millisecond steps minutes long).

Why one untimed call between the wait and the timed one. A call right after a sleep runs on cold
caches: measured (load 3.3, 2 cores), a tiny MLP's step took 0.66 ms back to back and 1.2-1.5 ms
after a 10 ms sleep, in both libraries. So :func:`timed` calls ``fn`` once untimed, then times the
next call: the library's own caches and threads are as in a training loop's steady state (its own
threads may still spin from that call: so do they between the steps of a real loop), and the other
library's threads are asleep.

Wall time is what a user waits; CPU time (this process's, all threads) moves far less on a shared,
busy machine, and shows work done on threads. Both are printed.
"""
from __future__ import annotations

import os
import statistics
import time

SLICE = 0.01     # seconds: how finely settle() looks at the process's CPU use
IDLE = 0.1       # a slice is idle when the process used less than this fraction of it
LIMIT = 1.0      # seconds: settle() gives up waiting after this (a thread that never sleeps)


def settle() -> float:
    """Sleep until this process's threads have been idle for one :data:`SLICE`; the seconds waited."""
    start = time.perf_counter()
    while True:
        c = time.process_time()
        time.sleep(SLICE)
        if time.process_time() - c < IDLE * SLICE or time.perf_counter() - start > LIMIT:
            return time.perf_counter() - start


def timed(fn, *args):
    """``(wall, cpu, result)``: :func:`settle`, one untimed call ``fn(*args)`` (its ``result``), then the
    timed one (see the module's docstring for both)."""
    settle()
    out = fn(*args)
    t, c = time.perf_counter(), time.process_time()
    fn(*args)
    return time.perf_counter() - t, time.process_time() - c, out


def best(fn, repeats: int):
    """``(wall, cpu)`` seconds of the fastest of ``repeats`` timed calls of ``fn()`` (each as :func:`timed`)."""
    return min(timed(fn)[:2] for _ in range(repeats))


def interleaved(fns: dict, inputs, warmup: int = 0):
    """Run each of ``fns`` ({library: fn}) on each entry of ``inputs`` (argument tuples), one library
    after the other for every entry, each as :func:`timed` (so ``fn`` is called twice per entry).
    Returns ``(times, results)``: ``times[library]`` the ``(wall, cpu)`` of every entry after the
    first ``warmup``, ``results[library]`` every entry's untimed result (the first: losses to compare)."""
    times = {k: [] for k in fns}
    results = {k: [] for k in fns}
    for i, args in enumerate(inputs):
        for name, fn in fns.items():
            wall, cpu, out = timed(fn, *args)
            results[name].append(out)
            if i >= warmup:
                times[name].append((wall, cpu))
    return times, results


def stats(samples) -> dict:
    """Best and median of a list of ``(wall, cpu)`` seconds: keys ``wall``, ``cpu`` (medians) and
    ``best_wall``, ``best_cpu``."""
    walls, cpus = [s[0] for s in samples], [s[1] for s in samples]
    return {"wall": statistics.median(walls), "cpu": statistics.median(cpus),
            "best_wall": min(walls), "best_cpu": min(cpus)}


def load() -> str:
    """The 1-minute load average, as printed beside every figure."""
    return f"{os.getloadavg()[0]:.2f}"


def report(times: dict, what: str = "step", digits: int = 1, target: float | None = 1.5) -> dict:
    """Print each library's time per ``what`` (one timed call): best and median wall and CPU; then gradlab / PyTorch of the medians and of the bests, wall and CPU, with the load
    average. Returns :func:`stats` per library (seconds)."""
    out = {}
    for name, samples in times.items():
        s = out[name] = stats(samples)
        print(f"{name:8s}: median {s['wall'] * 1e3:8.{digits}f} ms/{what}  best {s['best_wall'] * 1e3:8.{digits}f}  "
              f"(CPU median {s['cpu'] * 1e3:.{digits}f}, best {s['best_cpu'] * 1e3:.{digits}f})")
    if "gradlab" in out and "PyTorch" in out:
        g, t = out["gradlab"], out["PyTorch"]
        print(f"ratio gradlab / PyTorch: median {g['wall'] / t['wall']:.2f}x wall, {g['cpu'] / t['cpu']:.2f}x CPU; "
              f"best {g['best_wall'] / t['best_wall']:.2f}x wall, {g['best_cpu'] / t['best_cpu']:.2f}x CPU"
              f"{f'  (target <= {target}x)' if target else ''}; load average {load()}", flush=True)
    return out


def profile(fn, inputs, top: int = 25) -> None:
    """cProfile ``fn(*args)`` for each entry of ``inputs``, by CPU time (what a busy machine distorts least),
    and print the ``top`` functions by own time."""
    import cProfile
    import pstats
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    for args in inputs:
        fn(*args)
    prof.disable()
    print(f"\nwhere gradlab's time goes ({len(inputs)} calls, CPU seconds, by own time):")
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def report_steps(steps: dict, batches, warmup: int = 3, digits: int = 2, profile_steps: int = 0) -> dict:
    """The side-by-side training-step benchmark in one call: ``steps`` ({library: step(x, y) -> loss}) run
    :func:`interleaved` on ``batches`` (the first ``warmup`` untimed), :func:`report` printed, the first
    losses side by side, and (``profile_steps`` > 0) where gradlab's CPU time goes over that many steps."""
    times, losses = interleaved(steps, batches, warmup=warmup)
    out = report(times, digits=digits)
    print("first-step loss: " + "  ".join(f"{k} {v[0]:.5f}" for k, v in losses.items()))
    if profile_steps:
        profile(steps["gradlab"], batches[:profile_steps])
    return out
