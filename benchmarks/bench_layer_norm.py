"""layer_norm forward + backward on (32, 64, 128) float32: the fused op vs the op-by-op formula vs PyTorch CPU.

The shape is the GPT benchmark's residual stream (batch 32, context 64, width 128).
"composite" is what ``F.layer_norm`` used to be: mean, subtract, square, mean,
add, sqrt, divide, then ``* weight + bias``, each a node and a full-size array.
"fused" is today's ``F.layer_norm``: one ``LayerNorm`` op whose backward runs
on arrays (``vjp_arrays``). Each figure is the median of many repeats, the
contenders interleaved so that a busy machine slows them alike.
Run: python benchmarks/bench_layer_norm.py [--repeats N]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _setups  # noqa: E402
import _timing  # noqa: E402  (the harness every side-by-side benchmark uses)

import gradlab  # noqa: E402
import gradlab.nn.functional as F  # noqa: E402

SHAPE = (32, 64, 128)


def composite(x, w, b, eps=1e-5):
    """The op-by-op layer_norm (the formula as written)."""
    xc = x - x.mean(dim=-1, keepdim=True)
    return xc / ((xc * xc).mean(dim=-1, keepdim=True) + eps).sqrt() * w + b


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        torch = None
    _setups.configure(torch)
    print(_setups.describe(torch))
    rng = np.random.default_rng(0)
    xa, ga = (rng.standard_normal(SHAPE).astype(np.float32) for _ in range(2))
    wa, ba = (rng.standard_normal(SHAPE[-1:]).astype(np.float32) for _ in range(2))
    x, w, b = (gradlab.tensor(a, requires_grad=True) for a in (xa, wa, ba))
    g = gradlab.tensor(ga)

    def run(f):
        def step():
            for t in (x, w, b):
                t.grad = None
            f(x, w, b).backward(g)
        return step

    contenders = {"gradlab composite (8 ops)": run(composite),
                  "gradlab fused layer_norm": run(lambda x, w, b: F.layer_norm(x, SHAPE[-1:], w, b))}
    if torch is not None:
        tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (xa, wa, ba))
        tg = torch.tensor(ga)

        def t_step():
            for t in (tx, tw, tb):
                t.grad = None
            torch.nn.functional.layer_norm(tx, SHAPE[-1:], tw, tb).backward(tg)
        contenders["PyTorch F.layer_norm"] = t_step
    else:
        print("PyTorch is not installed: no PyTorch column (pip install 'gradlab[oracle]')")

    times, _ = _timing.interleaved(contenders, [()] * (args.repeats + 1), warmup=1)  # (first: warm-up)
    med = {k: _timing.stats(v)["wall"] for k, v in times.items()}
    base = med.get("PyTorch F.layer_norm")
    print(f"layer_norm forward + backward, input {SHAPE} float32, weight and bias; median of {args.repeats}")
    for k, v in med.items():
        ratio = f"   {v / base:5.2f}x PyTorch" if base else ""
        print(f"  {k:28s} {v * 1e3:7.3f} ms{ratio}")
    fused, comp = med["gradlab fused layer_norm"], med["gradlab composite (8 ops)"]
    print(f"fused / composite = {fused / comp:.2f}x")


if __name__ == "__main__":
    if not _setups.dispatch(__file__):  # noscipy / default / one, each in its own process
        main()
