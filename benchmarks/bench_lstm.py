"""An LSTM with a loss on every step's output, one training step: gradlab vs PyTorch CPU.

    python benchmarks/bench_lstm.py [--steps N] [--setups noscipy default one] [--profile]

``nn.LSTM(32, 32, batch_first=True)`` over a sequence of 16 steps, batch 8, a linear head on every
step's output and cross-entropy over all of them (a character model's loss), then backward and an Adam
step. Every step's hidden state gets a gradient from the loss, so the backward loop through time
carries two incoming gradients per step (unlike ``bench_defaults``' LSTM, which reads the last
step only). Same weights and batches in both libraries; steps interleave; prints the medians, the
ratio and the load average.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _setups  # noqa: E402
from bench_gpt_step import _time_interleaved  # noqa: E402  (one home for interleaved timing)

N_IN, HIDDEN, SEQ, BATCH, VOCAB = 32, 32, 16, 8, 27


def build(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(N_IN, HIDDEN, batch_first=True)
            self.head = nn.Linear(HIDDEN, VOCAB)

        def forward(self, x, y):
            out = self.head(self.rnn(x)[0])                      # (B, T, V): a prediction at every step
            return nn.functional.cross_entropy(out.reshape(-1, VOCAB), y.reshape(-1))

    return Net()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--profile", action="store_true", help="cProfile 200 gradlab steps (CPU time)")
    args = ap.parse_args(argv)
    import numpy as np

    import gradlab
    gradlab.manual_seed(0)
    gm = build(gradlab)
    rng = np.random.default_rng(0)
    batches = [(rng.standard_normal((BATCH, SEQ, N_IN)).astype(np.float32), rng.integers(0, VOCAB, (BATCH, SEQ)))
               for _ in range(args.steps + 3)]

    def stepper(lib, model):
        opt = lib.optim.Adam(model.parameters(), lr=1e-3)

        def step(x, y):
            opt.zero_grad()
            loss = model(lib.from_numpy(x), lib.from_numpy(y))
            loss.backward()
            opt.step()
            return loss.item()
        return step

    import torch
    _setups.configure(torch)
    print(_setups.describe(torch))
    tm = build(torch)
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in gm.state_dict().items()}, strict=True)
    steps = {"gradlab": stepper(gradlab, gm), "PyTorch": stepper(torch, tm)}
    print(f"LSTM({N_IN}->{HIDDEN}), seq {SEQ}, batch {BATCH}, cross-entropy on every step's output, "
          "forward + backward + Adam, float32")
    wall, cpu, losses = _time_interleaved(steps, batches)
    for name in steps:
        print(f"{name:8s}: median {statistics.median(wall[name]) * 1e3:7.3f} ms/step   (min "
              f"{min(wall[name]) * 1e3:.3f}; CPU {statistics.median(cpu[name]) * 1e3:.3f} ms)")
    ratio = statistics.median(wall["gradlab"]) / statistics.median(wall["PyTorch"])
    cpu_ratio = statistics.median(cpu["gradlab"]) / statistics.median(cpu["PyTorch"])
    print(f"ratio gradlab / PyTorch = {ratio:.2f}x wall, {cpu_ratio:.2f}x CPU time   (target <= 1.5x); "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"first-step loss: gradlab {losses['gradlab'][0]:.5f}  PyTorch {losses['PyTorch'][0]:.5f}")
    if args.profile:
        import cProfile
        import pstats
        prof = cProfile.Profile(time.process_time)
        prof.enable()
        for x, y in batches[:200]:
            steps["gradlab"](x, y)
        prof.disable()
        print("\nwhere gradlab's time goes (200 steps, CPU seconds, by own time):")
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    if not _setups.dispatch(__file__):
        main()
