"""conv2d forward + backward: im2col (F.conv2d) vs the naive loop (conv2d_naive) vs PyTorch CPU.

A fourth row, "NumPy im2col arrays", runs the same array operations with no
autograd at all (im2col, matmul, col2im, the weight and bias gradients): the
gap between it and gradlab's row is what the graph and the op layer cost.

Batch 32, 3 -> 16 channels, 32x32 images, 3x3 kernel, padding 1, float32,
gradients for input, weight and bias. Each figure is the best of several
repeats, contenders interleaved so machine noise hits them alike.
Run: python benchmarks/bench_conv.py
"""
from __future__ import annotations

import os
import sys

import numpy as np

import gradlab
import gradlab.nn.functional as F
from gradlab.ops.conv import col2im, conv2d_naive, im2col

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _setups  # noqa: E402
import _timing  # noqa: E402  (the harness every side-by-side benchmark uses)

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

N, CIN, COUT, H, K = 32, 3, 16, 32, 3


def main():
    _setups.configure(torch)
    print(_setups.describe(torch))
    rng = np.random.default_rng(0)
    xa = rng.standard_normal((N, CIN, H, H)).astype(np.float32)
    wa = rng.standard_normal((COUT, CIN, K, K)).astype(np.float32)
    ba = rng.standard_normal(COUT).astype(np.float32)
    x, w, b = (gradlab.tensor(a, requires_grad=True) for a in (xa, wa, ba))

    def run(conv):
        def step():
            x.grad = w.grad = b.grad = None
            y = conv(x, w, b, padding=1)
            y.sum().backward()
        return step

    geom = ((K, K), (1, 1), (1, 1), (1, 1))

    def raw_numpy():  # forward and the three gradients, arrays only
        cols = im2col(xa, *geom)
        y = np.matmul(wa.reshape(COUT, -1), cols) + ba.reshape(1, COUT, 1)
        g = np.ones_like(y)
        col2im(np.matmul(wa.reshape(COUT, -1).T, g), (H, H), *geom)  # dx
        np.matmul(g, im2col(xa, *geom).transpose(0, 2, 1)).sum(0)       # dw
        g.sum(axis=(0, 2))                                                # db

    im2col_step, naive = run(F.conv2d), run(conv2d_naive)
    # same numbers from both versions
    im2col_step()
    g1 = (x.grad.numpy().copy(), w.grad.numpy().copy())
    naive()
    assert np.allclose(g1[0], x.grad.numpy(), atol=1e-3) and np.allclose(g1[1], w.grad.numpy(), rtol=1e-3, atol=1e-2)

    times = {"gradlab im2col": [], "gradlab naive loop": [], "NumPy im2col arrays": []}
    if torch is not None:
        tx, tw, tb = (torch.from_numpy(a.copy()).requires_grad_() for a in (xa, wa, ba))

        def torch_step():
            tx.grad = tw.grad = tb.grad = None
            torch.nn.functional.conv2d(tx, tw, tb, padding=1).sum().backward()
        times["PyTorch CPU"] = []
    for _ in range(3):  # interleave
        times["gradlab im2col"].append(_timing.best(im2col_step, 15)[0])
        times["NumPy im2col arrays"].append(_timing.best(raw_numpy, 15)[0])
        times["gradlab naive loop"].append(_timing.best(naive, 2)[0])
        if torch is not None:
            times["PyTorch CPU"].append(_timing.best(torch_step, 15)[0])
    best = {k: min(v) for k, v in times.items()}
    ref = best["gradlab im2col"]
    print(f"conv2d forward+backward, x ({N}, {CIN}, {H}, {H}) * w ({COUT}, {CIN}, {K}, {K}), padding 1, float32")
    print(f"{'':22s}{'ms':>10s}{'x im2col':>12s}")
    for k, v in best.items():
        print(f"{k:22s}{v * 1e3:10.2f}{v / ref:12.2f}")
    if torch is not None:
        print(f"\nim2col is {best['gradlab naive loop'] / ref:.1f}x faster than the naive loop and "
              f"{ref / best['PyTorch CPU']:.1f}x slower than PyTorch CPU ({torch.get_num_threads()} threads)")


if __name__ == "__main__":
    if not _setups.dispatch(__file__):  # noscipy / default / one, each in its own process
        main()
