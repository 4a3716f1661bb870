"""gradlab.compile vs eager on a chain of elementwise ops (forward + backward).

The block: bias, tanh-GELU, scale -- 11 elementwise ops -- on a (1024, 4096)
float32 tensor (4M elements). Eager runs each op over the whole array and the
backward runs each VJP the same way; compiled, the forward is one fused kernel
and the backward a few, working in cache-sized chunks, and the forward keeps
only the inputs for the backward (the rest is recomputed inside the kernel).

Timings are interleaved (eager, compiled, compiled on one thread, eager...)
so that a busy machine slows all alike; the ratios are what to read. CPU time
(``time.process_time``) is shown too: on a loaded machine it says how much
work each side did, whatever share of the cores it got. Peak memory is measured
with tracemalloc, which NumPy reports its array allocations to.

Where the compiled step's time goes (one thread, CPU, 2-core machine at load 2-4): the forward kernel
19-20 ms, of which NumPy's float32 ``tanh`` alone is 10.8 ms (2.7 ns an element: no SIMD loop for it
here, against 0.13 for a multiply); the backward kernel 16-19 ms (22 ufunc calls of ~0.8 ms on 4M
elements); the bias's ``sum_to`` 0.5 ms; the rest ~2 ms. Eager is 60-70 ms. Kept bit for bit equal to
eager, a kernel runs the same ufuncs, so its floor on one thread is about 10.8 + 32 x 0.56 = 29 ms
(each ufunc at its in-cache speed) plus streaming the kernels' 112 MB of inputs and outputs once
(~5 ms at the ~22 GB/s a 16 MB copy gets here): ~34 ms against the 43-44 measured, i.e. at most ~2.2x
on one thread. The chunk size (16K-128K elements: within 5%) and the ufuncs' per-call overhead
(constants as 0-d arrays: 1.5-4%) move little; the second thread is what takes it past 2x, which a
machine busy with other programs does not give (see ``kernels.parallel_chunks``).

    python benchmarks/bench_compile.py [--rows 1024] [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc

import numpy as np

import gradlab as G
from gradlab.compile import kernels

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _setups  # noqa: E402


def block(x, b):
    h = x + b                                                  # bias
    inner = 0.7978845608 * (h + 0.044715 * h * h * h)          # tanh-GELU
    return (0.5 * h * (1 + G.tanh(inner))) * 1.5               # scale


def step(f, x, b):
    x.grad = b.grad = None
    y = f(x, b)
    y.backward(G.ones_like(y))
    return y


def peak(f, x, b):
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    y = step(f, x, b)
    p = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    del y
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1024)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--chunk", type=int, default=None, help="elements per fused-kernel chunk")
    a = ap.parse_args()
    if a.chunk:
        kernels.CHUNK = a.chunk
    _setups.configure()
    print(_setups.describe())
    G.manual_seed(0)
    x = G.randn(a.rows, a.cols, requires_grad=True)
    b = G.randn(a.cols, requires_grad=True)
    cblock = G.compile(block)
    step(cblock, x, b)  # trace + compile (not timed)
    ye = step(block, x, b)
    ge = (x.grad.numpy().copy(), b.grad.numpy().copy())
    yc = step(cblock, x, b)
    err = max(np.abs(ye.detach().numpy() - yc.detach().numpy()).max(),
              np.abs(ge[0] - x.grad.numpy()).max(), np.abs(ge[1] - b.grad.numpy()).max() / a.rows)
    te, tc, t1, ce, c1cpu = [], [], [], [], []
    threads = G.get_num_threads()
    for _ in range(a.repeat):
        t0, p0 = time.perf_counter(), time.process_time()
        step(block, x, b)
        te.append(time.perf_counter() - t0)
        ce.append(time.process_time() - p0)
        t0 = time.perf_counter()
        step(cblock, x, b)
        tc.append(time.perf_counter() - t0)
        G.set_num_threads(1)
        t0, p0 = time.perf_counter(), time.process_time()
        step(cblock, x, b)
        t1.append(time.perf_counter() - t0)
        c1cpu.append(time.process_time() - p0)
        G.set_num_threads(threads)
    pe, pc = peak(block, x, b), peak(cblock, x, b)
    med = lambda v: float(np.median(v))  # noqa: E731
    e, c, c1, cpe, cp1 = med(te), med(tc), med(t1), med(ce), med(c1cpu)
    n = a.rows * a.cols
    print(f"elementwise block (11 ops) forward+backward on ({a.rows}, {a.cols}) float32 = {n / 1e6:.1f}M elements")
    print(f"{'median of ' + str(a.repeat) + ', interleaved':28}{'eager':>10}{'compiled':>10}{'ratio':>8}")
    print(f"{'wall time, ' + str(threads) + ' kernel thread(s)':28}{e * 1e3:>8.1f}ms{c * 1e3:>8.1f}ms{e / c:>7.2f}x")
    print(f"{'wall time, 1 kernel thread':28}{e * 1e3:>8.1f}ms{c1 * 1e3:>8.1f}ms{e / c1:>7.2f}x")
    print(f"{'CPU time, 1 kernel thread':28}{cpe * 1e3:>8.1f}ms{cp1 * 1e3:>8.1f}ms{cpe / cp1:>7.2f}x")
    print(f"{'peak memory (tracemalloc)':28}{pe / 2**20:>8.1f}MB{pc / 2**20:>8.1f}MB{pe / pc:>7.2f}x")
    print(f"max difference compiled vs eager (values, grads): {err:.2e}")
    print("\n" + cblock.explain())


if __name__ == "__main__":
    if not _setups.dispatch(__file__):  # noscipy / default / one, each in its own process
        main()
