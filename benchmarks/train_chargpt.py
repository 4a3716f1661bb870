"""Character-level GPT vs a bigram model on the standard library's docstrings; prints both validation losses.

    python benchmarks/train_chargpt.py [--steps N] [--chars N] [--threads T]

Corpus: ``gradlab.data.stdlib_text()`` (docstrings of a fixed list of stdlib
modules: present on every Python install, nothing downloaded), split 90/10 into
train/validation by position. The bigram baseline is the count model
``P(next | current)`` with add-alpha smoothing, alpha picked for it on the
validation set (the most generous bigram). The GPT sees ``--context``
characters; its validation loss (mean cross-entropy in nats per character) is
measured on fixed random windows of the validation text.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=800)
    ap.add_argument("--chars", type=int, default=400_000)
    ap.add_argument("--context", type=int, default=32)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    import _malloc
    _malloc.add_flag(ap)
    args = ap.parse_args(argv)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(args.threads))
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    print(_malloc.apply(args))
    import numpy as np

    import gradlab
    from gradlab import nn, optim
    from gradlab.data import CharDataset, stdlib_text

    gradlab.manual_seed(args.seed)
    text = stdlib_text(args.chars)
    full = CharDataset(text, args.context)
    train, val = full.split(0.1)
    V = full.vocab_size
    print(f"corpus: {len(text):,} characters of stdlib docstrings, vocabulary {V}; "
          f"train {len(train.text):,} / validation {len(val.text):,}")

    # ------------------------------------------------------------- bigram
    counts = np.zeros((V, V))
    np.add.at(counts, (train._data[:-1], train._data[1:]), 1)
    best = None
    for alpha in (0.01, 0.03, 0.1, 0.3, 1.0):
        p = (counts + alpha) / (counts + alpha).sum(1, keepdims=True)
        loss = -np.log(p[val._data[:-1], val._data[1:]]).mean()
        if best is None or loss < best[0]:
            best = (loss, alpha)
    bigram_val, alpha = best
    print(f"bigram (counts, add-{alpha} smoothing): validation loss {bigram_val:.4f} nats/char")

    # ---------------------------------------------------------------- GPT
    model = nn.GPT(V, args.context, n_layer=args.layers, n_head=args.heads, n_embd=args.width)
    opt = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = optim.lr_scheduler.WarmupCosineLR(opt, warmup_steps=min(50, args.steps // 10), total_steps=args.steps,
                                              eta_min=args.lr / 10)
    gen = np.random.default_rng(args.seed)
    val_gen = np.random.default_rng(12345)
    val_batches = [val.batch(64, generator=val_gen) for _ in range(8)]

    def val_loss():
        model.eval()
        with gradlab.no_grad():
            losses = [model(x, y)[1].item() for x, y in val_batches]
        model.train()
        return float(np.mean(losses))

    print(f"GPT: {args.layers} layers, {args.heads} heads, width {args.width}, context {args.context}, "
          f"{model.num_parameters():,} parameters; {args.steps} steps of batch {args.batch}")
    t0, c0 = time.perf_counter(), time.process_time()
    for step in range(1, args.steps + 1):
        x, y = train.batch(args.batch, generator=gen)
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % max(1, args.steps // 6) == 0 or step == args.steps:
            print(f"step {step:5d}  train loss {loss.item():.4f}  val loss {val_loss():.4f}  "
                  f"{time.perf_counter() - t0:6.1f} s", flush=True)
    gpt_val = val_loss()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"\nvalidation loss (nats/char): GPT {gpt_val:.4f}   bigram {bigram_val:.4f}   "
          f"(uniform would be {math.log(V):.4f});  GPT training wall time {wall:.1f} s (CPU time {cpu:.1f} s, "
          f"load average {os.getloadavg()[0]:.1f})")
    prompt = val.text[:40]
    out = model.generate(gradlab.tensor(full.encode(prompt)[None]), 120, temperature=0.8, top_k=20)
    print("sample:", repr(full.decode(out[0])))
    return {"gpt_val": gpt_val, "bigram_val": bigram_val, "wall": wall}


if __name__ == "__main__":
    main()
