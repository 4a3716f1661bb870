"""Foundation benchmarks (issue: the engine's per-op overhead and matmul throughput).

(a) A 200-op elementwise chain on a 4x4 tensor, forward + backward: microseconds
    per op for gradlab, raw NumPy (forward only: NumPy has no backward) and
    PyTorch CPU eager (forward + backward) when installed.
(b) 1024x1024 float32 matmul forward + backward in gradlab against the same
    three raw NumPy matmuls (Y = A @ B, dA = dY @ B^T, dB = A^T @ dY).

Each measurement is the best of several repeats, and the contenders are
interleaved so machine noise hits them alike. Run: python benchmarks/bench_foundation.py
"""
from __future__ import annotations

import gc
import os
import sys

import numpy as np

gradlab = None  # imported by main(): this checkout's gradlab, not an installed copy


def _import_gradlab():
    global gradlab
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import gradlab as module
    gradlab = module

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _setups  # noqa: E402
import _timing  # noqa: E402  (the harness every side-by-side benchmark uses)

N_OPS = 200


def chain_gradlab():
    x = gradlab.randn(4, 4, requires_grad=True)
    y = x
    for _ in range(N_OPS // 4):
        y = y * 1.01
        y = y + 0.1
        y = y.tanh()
        y = y - 0.05
    y.sum().backward()


def chain_numpy():
    y = np.random.standard_normal((4, 4)).astype(np.float32)
    for _ in range(N_OPS // 4):
        y = y * np.float32(1.01)
        y = y + np.float32(0.1)
        y = np.tanh(y)
        y = y - np.float32(0.05)


def chain_torch():
    x = torch.randn(4, 4, requires_grad=True)
    y = x
    for _ in range(N_OPS // 4):
        y = y * 1.01
        y = y + 0.1
        y = y.tanh()
        y = y - 0.05
    y.sum().backward()


def bench_chain(rounds=7, repeats=15):
    fns = {"gradlab (fwd+bwd)": chain_gradlab, "numpy (fwd only)": chain_numpy}
    if torch is not None:
        fns["pytorch eager (fwd+bwd)"] = chain_torch
    for f in fns.values():
        f()
    best = {k: float("inf") for k in fns}
    gc.collect()
    for _ in range(rounds):  # interleave the contenders
        for k, f in fns.items():
            best[k] = min(best[k], _timing.best(f, repeats)[0])
    us = {k: v / N_OPS * 1e6 for k, v in best.items()}
    print(f"(a) {N_OPS}-op elementwise chain on 4x4 float32, microseconds per op (the engine is Python)")
    for k, v in us.items():
        print(f"    {k:28s} {v:7.2f} us/op")
    if torch is not None:
        print(f"    gradlab / pytorch per-op cost: {us['gradlab (fwd+bwd)'] / us['pytorch eager (fwd+bwd)']:.2f}x "
              "(target <= 0.85x)")
    return us


def bench_matmul(n=1024, rounds=3, repeats=3):
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((n, n), dtype=np.float32)
    b_np = rng.standard_normal((n, n), dtype=np.float32)
    g_np = rng.standard_normal((n, n), dtype=np.float32)

    def raw():
        y = a_np @ b_np
        da = g_np @ b_np.T
        db = a_np.T @ g_np
        return y, da, db

    a = gradlab.tensor(a_np, requires_grad=True)
    b = gradlab.tensor(b_np, requires_grad=True)
    g = gradlab.tensor(g_np)

    def ours():
        a.grad = b.grad = None
        y = a @ b
        y.backward(g)

    fns = {"numpy (3 matmuls)": raw, "gradlab (fwd+bwd)": ours}
    if torch is not None:
        ta = torch.tensor(a_np, requires_grad=True)
        tb = torch.tensor(b_np, requires_grad=True)
        tg = torch.tensor(g_np)

        def theirs():
            ta.grad = tb.grad = None
            (ta @ tb).backward(tg)
        fns["pytorch (fwd+bwd)"] = theirs
    for f in fns.values():
        f()
    best = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            best[k] = min(best[k], _timing.best(f, repeats)[0])
    flops = 3 * 2 * n ** 3
    print(f"(b) {n}x{n} float32 matmul forward + backward (3 matmuls), GFLOP/s")
    for k, v in best.items():
        print(f"    {k:28s} {flops / v / 1e9:8.1f} GFLOP/s  ({v * 1e3:.1f} ms)")
    ratio = best["numpy (3 matmuls)"] / best["gradlab (fwd+bwd)"]
    print(f"    gradlab throughput / raw numpy: {ratio:.2f}x (target >= 0.95x)")
    return ratio


if __name__ == "__main__" and not _setups.dispatch(__file__):  # each set-up in its own process
    _import_gradlab()
    _setups.configure(torch)
    print(_setups.describe(torch))
    bench_chain()
    bench_matmul()
