"""Exact GELU (``erf``) vs tanh GELU, forward + backward on 4M float32: gradlab vs PyTorch CPU, no SciPy needed.

    python benchmarks/bench_gelu.py [--n 4194304] [--repeat 7] [--setups noscipy default one]

The exact form needs ``erf``, which NumPy lacks; gradlab computes it with its own float32
polynomials (``gradlab/backend/special.py``), so the cost of exact GELU over the tanh form is
the cost of that ``erf``. The figure to read is the ratio exact / tanh within each library (goal
for gradlab: at most 3x); PyTorch's is shown for scale. Timings interleave (gradlab exact, gradlab
tanh, PyTorch exact, PyTorch tanh, ...) so a busy machine slows all alike, each under the shared
harness (``_timing.timed``: worker threads idle, one untimed call first); median and best wall time
of 15 rounds, the ratio of medians, of bests and of median CPU times, with the load.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _setups  # noqa: E402
import _timing  # noqa: E402  (the harness every side-by-side benchmark uses)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 22)
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args(argv)
    import numpy as np
    import torch

    import gradlab
    _setups.configure(torch)
    print(_setups.describe(torch))
    x0 = np.random.default_rng(0).standard_normal(args.n).astype(np.float32)
    g0 = np.random.default_rng(1).standard_normal(args.n).astype(np.float32)

    def stepper(lib, approximate, backward=True):
        x = lib.from_numpy(x0.copy()).requires_grad_(backward)
        g = lib.from_numpy(g0.copy())

        def step(keep=False):
            # (the result is dropped unless asked for: the harness keeps every call's result, and 16
            # rounds x 8 runs of 16 MB kept alive made each call's arrays fresh pages, page-faulted in)
            if not backward:
                y = lib.nn.functional.gelu(x, approximate=approximate)
            else:
                x.grad = None
                lib.nn.functional.gelu(x, approximate=approximate).backward(g)
                y = x.grad
            return y if keep else None
        return step

    runs = {(lib.__name__, a, b): stepper(lib, a, b == "fwd+bwd") for lib in (gradlab, torch)
            for a in ("none", "tanh") for b in ("forward", "fwd+bwd")}
    for a in ("none", "tanh"):  # the same gradient in both libraries (to float32 rounding)
        ours, ref = runs[("gradlab", a, "fwd+bwd")](True).numpy(), runs[("torch", a, "fwd+bwd")](True).numpy()
        err = float(np.abs(ours - ref).max())
        assert err < 1e-5, f"gelu({a}) gradient differs from PyTorch's by {err:.2e}"
    times, _ = _timing.interleaved(runs, [()] * (args.repeat + 1), warmup=1)
    st = {k: _timing.stats(v) for k, v in times.items()}
    print(f"gelu on {args.n:,} float32, {args.repeat} interleaved rounds (each call after one untimed call, threads idle)")
    print(f"{'':18}{'exact median/best':>19}{'tanh median/best':>18}{'exact/tanh: median':>20}{'best':>6}{'CPU':>6}")
    for b in ("forward", "fwd+bwd"):
        for lib_name in ("gradlab", "torch"):
            e, t = st[(lib_name, "none", b)], st[(lib_name, "tanh", b)]
            print(f"{lib_name + ' ' + b:18}{e['wall'] * 1e3:>10.1f}/{e['best_wall'] * 1e3:4.1f}ms"
                  f"{t['wall'] * 1e3:>9.1f}/{t['best_wall'] * 1e3:4.1f}ms{e['wall'] / t['wall']:>19.2f}x"
                  f"{e['best_wall'] / t['best_wall']:>5.2f}x{e['cpu'] / t['cpu']:>5.2f}x")
    print(f"(goal: gradlab exact / tanh <= 3x; CPU: ratio of median CPU times); load average {_timing.load()}")

if __name__ == "__main__":
    if not _setups.dispatch(__file__):
        main()
