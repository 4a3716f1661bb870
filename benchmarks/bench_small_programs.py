"""Small and medium training programs: gradlab vs PyTorch CPU, one step of each in turn.

    python benchmarks/bench_small_programs.py [--steps N] [--setups noscipy default one] [--only NAME ...] [--profile NAME]

Each program is written once against the shared API (``lib.nn``, ``lib.optim``,
``lib.nn.functional``) and built twice, once with gradlab and once with
PyTorch; both get the same input arrays. Steps are interleaved (one gradlab
step, then one PyTorch step) so both see the same machine load, each step timed once the
other library's threads are idle (``benchmarks/_timing.py``). Prints the
best and the median step time of each and the ratio gradlab / PyTorch
(below 1.0: gradlab is faster). ``--profile NAME`` runs gradlab's steps of one
program under cProfile and prints where the time goes. Runs once per set-up of
``benchmarks/_setups.py`` (default threads without and with SciPy, both at one thread).
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _setups  # noqa: E402  (the set-ups: thread counts and SciPy are set up per subprocess)
import _timing  # noqa: E402  (the harness: interleaved steps, each after the threads settle)

# ---------------------------------------------------------------- programs
# each returns a zero-argument callable that runs one step with ``lib``

def _train_step(lib, model, opt, loss_fn, x, y):
    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def mlp(lib, rng):
    nn = lib.nn
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = lib.from_numpy(rng.standard_normal((64, 784)).astype(np.float32))
    y = lib.from_numpy(rng.integers(0, 10, 64))
    return _train_step(lib, model, opt, nn.CrossEntropyLoss(), x, y)


def tiny_mlp(lib, rng):
    nn = lib.nn
    model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 1))
    opt = lib.optim.SGD(model.parameters(), lr=0.05)
    x = lib.from_numpy(rng.standard_normal((8, 2)).astype(np.float32))
    y = lib.from_numpy(rng.standard_normal((8, 1)).astype(np.float32))
    return _train_step(lib, model, opt, nn.MSELoss(), x, y)


def cnn(lib, rng):
    nn = lib.nn
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(16 * 7 * 7, 10))
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    x = lib.from_numpy(rng.standard_normal((32, 1, 28, 28)).astype(np.float32))
    y = lib.from_numpy(rng.integers(0, 10, 32))
    return _train_step(lib, model, opt, nn.CrossEntropyLoss(), x, y)


def attention(lib, rng):
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self, c=32, heads=4):
            super().__init__()
            self.ln1 = nn.LayerNorm(c)
            self.attn = nn.MultiheadAttention(c, heads, batch_first=True)
            self.ln2 = nn.LayerNorm(c)
            self.fc1 = nn.Linear(c, 4 * c)
            self.fc2 = nn.Linear(4 * c, c)

        def forward(self, x):
            h = self.ln1(x)
            x = x + self.attn(h, h, h, need_weights=False)[0]
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    model = Block()
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
    x = lib.from_numpy(rng.standard_normal((4, 16, 32)).astype(np.float32))
    y = lib.from_numpy(rng.standard_normal((4, 16, 32)).astype(np.float32))
    return _train_step(lib, model, opt, nn.MSELoss(), x, y)


def lm(lib, rng):
    nn, F = lib.nn, lib.nn.functional
    V, C = 65, 64

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(V, C)
            self.ln = nn.LayerNorm(C)
            self.head = nn.Linear(C, V)

        def forward(self, idx):
            return self.head(self.ln(self.emb(idx)))

    model = LM()
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
    idx = lib.from_numpy(rng.integers(0, V, (16, 32)))
    tgt = lib.from_numpy(rng.integers(0, V, (16 * 32,)))

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(idx).reshape(-1, V), tgt)
        loss.backward()
        opt.step()
        return loss
    return step


def _rnn(kind):
    def build(lib, rng):
        nn = lib.nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = getattr(nn, kind)(10, 32, batch_first=True)
                self.head = nn.Linear(32, 1)

            def forward(self, x):
                out = self.rnn(x)[0]
                return self.head(out[:, -1])

        model = Net()
        opt = lib.optim.Adam(model.parameters(), lr=1e-3)
        x = lib.from_numpy(rng.standard_normal((8, 16, 10)).astype(np.float32))
        y = lib.from_numpy(rng.standard_normal((8, 1)).astype(np.float32))
        return _train_step(lib, model, opt, nn.MSELoss(), x, y)
    return build


def logreg(lib, rng):
    nn = lib.nn
    model = nn.Linear(20, 1)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    x = lib.from_numpy(rng.standard_normal((128, 20)).astype(np.float32))
    y = lib.from_numpy((rng.random((128, 1)) > 0.5).astype(np.float32))
    return _train_step(lib, model, opt, nn.BCEWithLogitsLoss(), x, y)


def bn_mlp(lib, rng):
    nn = lib.nn
    model = nn.Sequential(nn.Linear(64, 128), nn.BatchNorm1d(128), nn.ReLU(),
                          nn.Linear(128, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Linear(128, 10))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = lib.from_numpy(rng.standard_normal((64, 64)).astype(np.float32))
    y = lib.from_numpy(rng.integers(0, 10, 64))
    return _train_step(lib, model, opt, nn.CrossEntropyLoss(), x, y)


def _optimizer_only(name, **kw):
    def build(lib, rng):
        nn = lib.nn
        # 100 parameters: 50 small Linear layers (weight + bias), the grads set once
        model = nn.Sequential(*[nn.Linear(16, 16) for _ in range(50)])
        params = list(model.parameters())
        for p in params:
            p.grad = lib.from_numpy(rng.standard_normal(tuple(p.shape)).astype(np.float32))
        opt = getattr(lib.optim, name)(params, lr=1e-3, **kw)
        return opt.step
    return build


def module_call(lib, rng):
    nn = lib.nn
    model = nn.Identity()
    x = lib.from_numpy(np.zeros(1, np.float32))

    def step():
        for _ in range(100):
            model(x)
    return step


PROGRAMS = {
    "mlp 784-256-10 b64 sgd-mom": mlp,
    "tiny mlp 2-16-16-1 b8": tiny_mlp,
    "cnn 2conv b32 adam": cnn,
    "attention block b4 t16 c32": attention,
    "lm emb+ln+linear b16 t32": lm,
    "lstm seq16 b8 h32": _rnn("LSTM"),
    "gru seq16 b8 h32": _rnn("GRU"),
    "logistic regression b128": logreg,
    "batchnorm mlp b64": bn_mlp,
    "optim SGD-mom step (100 params)": _optimizer_only("SGD", momentum=0.9),
    "optim Adam step (100 params)": _optimizer_only("Adam"),
    "optim AdamW step (100 params)": _optimizer_only("AdamW"),
    "Module.__call__ x100 (Identity)": module_call,
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--only", nargs="*", help="substrings of program names to run")
    ap.add_argument("--profile", metavar="NAME", help="cProfile gradlab's steps of the first program matching NAME")
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    import gradlab
    try:
        import torch
    except ImportError:
        torch = None
    _setups.configure(torch)
    print(f"{_setups.describe(torch)}; steps={args.steps} (interleaved)")

    names = [n for n in PROGRAMS if not args.only or any(s in n for s in args.only)]
    if args.profile:
        import cProfile
        import pstats
        name = next(n for n in PROGRAMS if args.profile in n)
        step = PROGRAMS[name](gradlab, np.random.default_rng(0))
        for _ in range(args.warmup):
            step()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.steps):
            step()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        return

    print(f"{'program':34s} {'gradlab best':>12s} {'torch best':>11s} {'ratio':>6s}   "
          f"{'gradlab med':>11s} {'torch med':>10s} {'ratio':>6s} {'CPU ratio':>9s}")
    for name in names:
        build = PROGRAMS[name]
        fns = {"gradlab": build(gradlab, np.random.default_rng(0))}
        if torch is not None:
            fns["PyTorch"] = build(torch, np.random.default_rng(0))
        times, _ = _timing.interleaved(fns, [()] * (args.warmup + args.steps), warmup=args.warmup)
        g = _timing.stats(times["gradlab"])
        gb, gm = g["best_wall"] * 1e3, g["wall"] * 1e3
        if torch is not None:
            t = _timing.stats(times["PyTorch"])
            tb, tm = t["best_wall"] * 1e3, t["wall"] * 1e3
            print(f"{name:34s} {gb:9.3f} ms {tb:8.3f} ms {gb / tb:6.2f}   {gm:8.3f} ms {tm:7.3f} ms {gm / tm:6.2f} "
                  f"{g['cpu'] / t['cpu']:9.2f}")
        else:
            print(f"{name:34s} {gb:9.3f} ms {'-':>11s} {'-':>6s}   {gm:8.3f} ms")
    print(f"(CPU ratio: of the medians; every step timed once both libraries' threads were idle, "
          f"benchmarks/_timing.py; load average {_timing.load()})")


if __name__ == "__main__":
    if not _setups.dispatch(__file__):  # noscipy / default / one, each in its own process
        main()
