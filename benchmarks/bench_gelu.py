"""Exact GELU (``erf``) vs tanh GELU, forward + backward on 4M float32: gradlab vs PyTorch CPU, no SciPy needed.

    python benchmarks/bench_gelu.py [--n 4194304] [--repeat 7] [--setups noscipy default one]

The exact form needs ``erf``, which NumPy lacks; gradlab computes it with its own float32
polynomials (``gradlab/backend/special.py``), so the cost of exact GELU over the tanh form is
the cost of that ``erf``. The figure to read is the ratio exact / tanh within each library (goal
for gradlab: at most 3x); PyTorch's is shown for scale. Timings interleave (gradlab exact, gradlab
tanh, PyTorch exact, PyTorch tanh, ...) so a busy machine slows all alike; medians, with the load.
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
    ap.add_argument("--repeat", type=int, default=7)
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

        def step():
            if not backward:
                return lib.nn.functional.gelu(x, approximate=approximate)
            x.grad = None
            lib.nn.functional.gelu(x, approximate=approximate).backward(g)
            return x.grad
        return step

    runs = {(lib.__name__, a, b): stepper(lib, a, b == "fwd+bwd") for lib in (gradlab, torch)
            for a in ("none", "tanh") for b in ("forward", "fwd+bwd")}
    for a in ("none", "tanh"):  # the same gradient in both libraries (to float32 rounding)
        ours, ref = runs[("gradlab", a, "fwd+bwd")]().numpy(), runs[("torch", a, "fwd+bwd")]().numpy()
        err = float(np.abs(ours - ref).max())
        assert err < 1e-5, f"gelu({a}) gradient differs from PyTorch's by {err:.2e}"
    times, _ = _timing.interleaved(runs, [()] * (args.repeat + 1), warmup=1)
    med = {k: _timing.stats(v)["wall"] * 1e3 for k, v in times.items()}
    print(f"gelu on {args.n:,} float32 (median of {args.repeat}, interleaved)")
    print(f"{'':18}{'exact (erf)':>14}{'tanh':>10}{'exact / tanh':>14}")
    for b in ("forward", "fwd+bwd"):
        for lib_name in ("gradlab", "torch"):
            e, t = med[(lib_name, "none", b)], med[(lib_name, "tanh", b)]
            print(f"{lib_name + ' ' + b:18}{e:>12.1f}ms{t:>8.1f}ms{e / t:>13.2f}x")
    print(f"(goal: gradlab exact / tanh <= 3x); load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    if not _setups.dispatch(__file__):
        main()
