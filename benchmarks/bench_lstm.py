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
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _setups  # noqa: E402
from _timing import report_steps  # noqa: E402  (one home for interleaved timing and its report)

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
    report_steps(steps, batches, digits=3, profile_steps=200 if args.profile else 0)

if __name__ == "__main__":
    if not _setups.dispatch(__file__):
        main()
