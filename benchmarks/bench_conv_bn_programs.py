"""Two whole training programs, gradlab vs PyTorch CPU side by side: a ResNet and a WaveNet MLP.

* ``resnet``: a small ResNet on 32x32 RGB images (batch 64): a 3x3 stem, three stages of one
  basic block each (conv3x3 + BatchNorm2d + ReLU twice, a residual add; the 2nd and 3rd stages
  halve the image with stride 2 and a 1x1 conv + BatchNorm2d shortcut), global average pooling,
  a linear classifier; cross-entropy, backward, an SGD step with momentum. Where the time goes:
  convolution (im2col and its adjoint) and batch norm over ``(N, H, W)``.
* ``wavenet``: the hierarchical character MLP of makemore part 5 (context 8, batch 32): an
  embedding, then three times FlattenConsecutive(2) + Linear (no bias) + BatchNorm1d + Tanh,
  a linear head; cross-entropy, backward, plain SGD. Many small ops on ``(32, 4, 128)``-sized
  arrays: per-op overhead and batch norm over ``(N, T)`` (a transposed view, as a PyTorch user
  writes it with ``nn.BatchNorm1d``).

Both libraries run the very same program text (``lib`` is ``gradlab`` or ``torch``) from the
same initial weights on the same batches; the first step's losses must agree. Each figure is
the best of several timed runs, the two libraries interleaved so machine noise hits them alike,
each run started once the other library's threads are idle (``_timing``, the harness every
side-by-side benchmark uses).
The set-ups (default threads with SciPy hidden, etc.) are ``_setups``'s.
Run: python benchmarks/bench_conv_bn_programs.py [--program resnet|wavenet|both] [--setups noscipy]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _setups  # noqa: E402
import _timing  # noqa: E402

import gradlab  # noqa: E402


# ------------------------------------------------------------------------------------ ResNet
def resnet(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.short = None
            if stride != 1 or cin != cout:
                self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = lib.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return lib.relu(out + (x if self.short is None else self.short(x)))

    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                         Block(16, 16, 1), Block(16, 32, 2), Block(32, 64, 2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def resnet_data(rng, steps):
    return [(rng.standard_normal((64, 3, 32, 32)).astype(np.float32), rng.integers(0, 10, 64))
            for _ in range(steps)]


# ----------------------------------------------------------------------------------- WaveNet
def wavenet(lib):
    nn = lib.nn

    class FlattenConsecutive(nn.Module):
        """``(B, T, C) -> (B, T/n, C*n)``: n consecutive positions side by side (squeezed at T = 1)."""

        def __init__(self, n):
            super().__init__()
            self.n = n

        def forward(self, x):
            b, t, c = x.shape
            x = x.reshape(b, t // self.n, c * self.n)
            return x.squeeze(1) if x.shape[1] == 1 else x

    class BatchNormLast(nn.BatchNorm1d):
        """BatchNorm1d over the last dim of ``(B, T, C)`` too (statistics over B and T)."""

        def forward(self, x):
            return super().forward(x.transpose(1, 2)).transpose(1, 2) if x.ndim == 3 else super().forward(x)

    e, h, v = 24, 128, 27
    return nn.Sequential(nn.Embedding(v, e),
                         FlattenConsecutive(2), nn.Linear(e * 2, h, bias=False), BatchNormLast(h), nn.Tanh(),
                         FlattenConsecutive(2), nn.Linear(h * 2, h, bias=False), BatchNormLast(h), nn.Tanh(),
                         FlattenConsecutive(2), nn.Linear(h * 2, h, bias=False), BatchNormLast(h), nn.Tanh(),
                         nn.Linear(h, v))


def wavenet_data(rng, steps):
    return [(rng.integers(0, 27, (32, 8)), rng.integers(0, 27, 32)) for _ in range(steps)]


PROGRAMS = {"resnet": (resnet, resnet_data, dict(lr=0.05, momentum=0.9), 3),
            "wavenet": (wavenet, wavenet_data, dict(lr=0.1), 100)}


# ------------------------------------------------------------------------------------ harness
def trainer(lib, name, weights, batches):
    """One timed run: ``len(batches)`` training steps of program ``name`` in ``lib``. Returns the run
    and the first step's loss (from a separate, untimed model)."""
    build, _, opt_args, _ = PROGRAMS[name]
    lib.manual_seed(0)
    model = build(lib)
    with lib.no_grad():
        for p, w in zip(model.parameters(), weights):
            p.copy_(lib.tensor(w))
    opt = lib.optim.SGD(model.parameters(), **opt_args)
    data = [(lib.tensor(x), lib.tensor(y)) for x, y in batches]
    F = lib.nn.functional

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    def run():
        for x, y in data:
            step(x, y)
    first = float(step(*data[0]).item())
    return run, first


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--program", choices=["resnet", "wavenet", "both"], default="both")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per library (best counts)")
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        torch = None
    _setups.configure(torch)
    print(_setups.describe(torch))
    names = list(PROGRAMS) if args.program == "both" else [args.program]
    for name in names:
        build, data, _, steps = PROGRAMS[name]
        rng = np.random.default_rng(0)
        gradlab.manual_seed(0)
        weights = [p.detach().numpy().copy() for p in build(gradlab).parameters()]
        batches = data(rng, steps)
        g_run, g_loss = trainer(gradlab, name, weights, batches)
        if torch is None:
            print(f"{name}: gradlab {_timing.best(g_run, args.repeats)[0] * 1e3:.1f} ms for {steps} steps "
                  f"(no PyTorch; load average {_timing.load()})")
            continue
        t_run, t_loss = trainer(torch, name, weights, batches)
        assert abs(g_loss - t_loss) < 1e-3 * max(1.0, abs(t_loss)), (name, g_loss, t_loss)
        print(f"{name}: {steps} steps per run, first loss {g_loss:.4f} (gradlab) vs {t_loss:.4f} (PyTorch)")
        times, _ = _timing.interleaved({"gradlab": g_run, "PyTorch": t_run}, [()] * args.repeats)
        _timing.report(times, what="run")


if __name__ == "__main__":
    if not _setups.dispatch(__file__):  # noscipy / default / one, each in its own process
        main()
