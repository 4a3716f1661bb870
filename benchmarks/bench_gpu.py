"""GPU benchmark (issue: the CuPy backend). One script, under 5 minutes on a GPU.

(a) Matmul forward + backward at 4096 and 8192, float32 and float16: gradlab
    (``Y = A @ B; Y.backward(dY)``) against the same three raw CuPy matmuls
    (``Y = A @ B, dA = dY @ B^T, dB = A^T @ dY``), in TFLOP/s. Target: gradlab
    >= 0.9x raw CuPy at 8192. Large matmuls are where a GPU shines and where
    gradlab's Python overhead (a few microseconds per op) is invisible.
(b) A GPT training step (forward, backward, AdamW) on the GPU against the cpu,
    in milliseconds per step. A small model is dominated by per-op overhead
    (each gradlab op is a Python call plus one or more kernel launches), so the
    speedup grows with the model's size.

GPU work is asynchronous: every timing ends with ``gradlab.cuda.synchronize()``.
Each measurement is the best of several repeats after a warm-up (the first call
compiles CuPy kernels and fills its memory pool).

Run: ``python benchmarks/bench_gpu.py`` (needs ``pip install 'gradlab[gpu]'`` and
a CUDA device; without one it says so and exits 0). ``--simulate`` runs the same
code on the simulated device with tiny sizes, to check the script itself on a
machine without a GPU (its numbers mean nothing).
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import gradlab
from gradlab import nn, optim


def _best(fn, repeats):
    fn()  # warm-up: kernel compilation, memory pool
    gradlab.cuda.synchronize()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        gradlab.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    return best


def bench_matmul(xp, sizes, dtypes, repeats):
    print("(a) matmul forward + backward (3 matmuls of n x n), TFLOP/s")
    print(f"    {'n':>5} {'dtype':>8} {'raw CuPy':>10} {'gradlab':>10} {'ratio':>7}")
    ratios = {}
    for n in sizes:
        for dt in dtypes:
            gradlab.manual_seed(0)
            a = gradlab.randn(n, n, dtype=getattr(gradlab, dt), device="cuda")
            b = gradlab.randn(n, n, dtype=getattr(gradlab, dt), device="cuda")
            g = gradlab.randn(n, n, dtype=getattr(gradlab, dt), device="cuda")
            A, B, G = a._data, b._data, g._data

            def raw():
                y = A @ B
                da = G @ B.T
                db = A.T @ G
                return y, da, db

            a.requires_grad_()
            b.requires_grad_()

            def lab():
                a.grad = b.grad = None
                y = a @ b
                y.backward(g)
                return y

            flops = 3 * 2 * n ** 3
            t_raw = t_lab = float("inf")
            for _ in range(2):  # interleave, so clock changes hit both alike
                t_raw = min(t_raw, _best(raw, repeats))
                t_lab = min(t_lab, _best(lab, repeats))
            ratios[(n, dt)] = t_raw / t_lab
            print(f"    {n:>5} {dt:>8} {flops / t_raw / 1e12:>10.2f} {flops / t_lab / 1e12:>10.2f} "
                  f"{t_raw / t_lab:>6.2f}x")
            a = b = g = A = B = G = raw = lab = None   # free the GPU memory before the next size
            xp.get_default_memory_pool().free_all_blocks() if hasattr(xp, "get_default_memory_pool") else None
    return ratios


def bench_gpt(cfg, batch, gpu_steps, cpu_steps):
    print(f"(b) GPT training step (AdamW), n_layer={cfg['n_layer']} n_embd={cfg['n_embd']} "
          f"block={cfg['block_size']} batch={batch}, ms/step")
    times = {}
    for device, steps in (("cuda", gpu_steps), ("cpu", cpu_steps)):
        gradlab.manual_seed(0)
        model = nn.GPT(**cfg).to(device)
        opt = optim.AdamW(model.parameters(), lr=3e-4)
        idx = gradlab.randint(0, cfg["vocab_size"], (batch, cfg["block_size"] + 1), device=device)
        x, y = idx[:, :-1].contiguous(), idx[:, 1:].contiguous()

        def step():
            opt.zero_grad()
            _, loss = model(x, y)
            loss.backward()
            opt.step()
            return loss

        times[device] = _best(step, steps)
        print(f"    {device:>5}: {times[device] * 1e3:9.1f} ms/step")
    print(f"    GPU speedup over cpu: {times['cpu'] / times['cuda']:.1f}x")
    return times


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--simulate", action="store_true", help="dry-run on the simulated device with tiny sizes")
    p.add_argument("--quick", action="store_true", help="only n=4096 and a short GPT comparison")
    args = p.parse_args(argv)

    if args.simulate:
        from gradlab.backend import simulate_device
        from gradlab.backend.simulated import SIM_XP
        with simulate_device():
            print("simulated device (NumPy underneath): checks the script, the numbers mean nothing")
            bench_matmul(SIM_XP, [64], ["float32", "float16"], 2)
            bench_gpt(dict(vocab_size=17, block_size=8, n_layer=1, n_head=2, n_embd=16), 2, 2, 1)
        return 0

    if not gradlab.cuda.is_available():
        try:
            import cupy  # noqa: F401
            why = "CuPy is installed but finds no CUDA device"
        except ImportError:
            why = "CuPy is not installed (pip install 'gradlab[gpu]')"
        print(f"bench_gpu: no GPU here ({why}); nothing to measure.")
        return 0

    import cupy
    print(f"device: {gradlab.cuda.get_device_name()}  (CuPy {cupy.__version__}, numpy {np.__version__})")
    sizes = [4096] if args.quick else [4096, 8192]
    t0 = time.perf_counter()
    ratios = bench_matmul(cupy, sizes, ["float32", "float16"], 3)
    for dt in ("float32", "float16"):
        if (8192, dt) in ratios:
            r = ratios[(8192, dt)]
            print(f"    target at 8192 {dt}: gradlab >= 0.9x raw CuPy -> {r:.2f}x {'met' if r >= 0.9 else 'NOT met'}")
    cfg = dict(vocab_size=65, block_size=128, n_layer=4, n_head=4, n_embd=256)
    bench_gpt(cfg, batch=16, gpu_steps=5 if args.quick else 10, cpu_steps=1 if args.quick else 2)
    print(f"memory: peak {gradlab.cuda.max_memory_allocated() / 2**20:.0f} MiB allocated, "
          f"{gradlab.cuda.memory_reserved() / 2**20:.0f} MiB held by CuPy's pool; total time "
          f"{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
