"""cross_entropy and softmax on (64, 128, 256) float32 logits: gradlab vs raw NumPy vs PyTorch CPU.

The logits are a language model's: batch 64, 128 positions, a 256-token
vocabulary. ``cross_entropy`` takes them as (64*128, 256) rows with one target
id each (the usual reshape); ``softmax`` runs over the last dim. Forward +
backward for gradlab and PyTorch; raw NumPy is the forward alone (the same
stable formulas, no graph), i.e. the floor of what the arithmetic costs.
Each figure is the best of several repeats, contenders interleaved.
Run: python benchmarks/bench_cross_entropy.py
"""
from __future__ import annotations

import os
import sys

import numpy as np

import gradlab
import gradlab.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _setups  # noqa: E402
import _timing  # noqa: E402  (the harness every side-by-side benchmark uses)

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

B, T, V = 64, 128, 256


def np_cross_entropy(z, y):
    m = z.max(axis=1, keepdims=True)
    logp = z - m - np.log(np.exp(z - m).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(y)), y].mean()


def np_softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def main():
    _setups.configure(torch)
    print(_setups.describe(torch))
    rng = np.random.default_rng(0)
    za = (rng.standard_normal((B, T, V)) * 3).astype(np.float32)
    ya = rng.integers(0, V, size=(B, T))
    ga = rng.standard_normal((B, T, V)).astype(np.float32)
    z = gradlab.tensor(za, requires_grad=True)
    y, g = gradlab.tensor(ya), gradlab.tensor(ga)

    def gl_ce():
        z.grad = None
        F.cross_entropy(z.reshape(-1, V), y.reshape(-1)).backward()

    def gl_sm():
        z.grad = None
        F.softmax(z, dim=-1).backward(g)

    rows = {"cross_entropy": {"gradlab fwd+bwd": gl_ce, "NumPy fwd only": lambda: np_cross_entropy(za.reshape(-1, V),
                                                                                                 ya.reshape(-1))},
            "softmax": {"gradlab fwd+bwd": gl_sm, "NumPy fwd only": lambda: np_softmax(za)}}
    if torch is not None:
        tz = torch.from_numpy(za.copy()).requires_grad_()
        ty, tg = torch.from_numpy(ya), torch.from_numpy(ga)

        def t_ce():
            tz.grad = None
            torch.nn.functional.cross_entropy(tz.reshape(-1, V), ty.reshape(-1)).backward()

        def t_sm():
            tz.grad = None
            torch.softmax(tz, dim=-1).backward(tg)
        rows["cross_entropy"]["PyTorch fwd+bwd"] = t_ce
        rows["softmax"]["PyTorch fwd+bwd"] = t_sm
        # same loss and gradient as PyTorch
        gl_ce()
        t_ce()
        assert np.allclose(z.grad.numpy(), tz.grad.numpy(), atol=1e-6)

    print(f"logits ({B}, {T}, {V}) float32" + (f"; PyTorch {torch.get_num_threads()} threads" if torch else ""))
    for name, fns in rows.items():
        best = {k: float("inf") for k in fns}
        for _ in range(3):  # interleave
            for k, f in fns.items():
                best[k] = min(best[k], _timing.best(f, 5)[0])
        ref = best["gradlab fwd+bwd"]
        print(f"\n{name}{'':12s}{'ms':>10s}{'x gradlab':>12s}")
        for k, v in best.items():
            print(f"  {k:22s}{v * 1e3:8.2f}{v / ref:12.2f}")


if __name__ == "__main__":
    if not _setups.dispatch(__file__):  # noscipy / default / one, each in its own process
        main()
