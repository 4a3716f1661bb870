"""A makemore-style character transformer's training step: gradlab vs the same code in PyTorch CPU.

    python benchmarks/bench_char_transformer.py [--steps N] [--setups noscipy default one] [--profile]

The model is makemore's ``Transformer`` (4 layers, 4 heads, width 64, context 16, vocabulary 27,
batch 32, float32) written once for both libraries: attention spelled out as makemore writes it
(``q @ k^T * scale``, ``masked_fill`` with a lower-triangular buffer, ``softmax``, ``@ v``), the
tanh GELU written with ``tanh`` and ``pow``, AdamW. One step = forward, cross-entropy, backward and
the optimizer step. Both libraries get the same weights and batches; the steps interleave (one of
each in turn) so a busy machine slows both alike. Prints the medians, the ratio and the load average.
"""
from __future__ import annotations

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _setups  # noqa: E402
from _timing import report_steps  # noqa: E402  (one home for interleaved timing and its report)


def build(lib, V=27, T=16, n_layer=4, n_head=4, C=64):
    """makemore's Transformer in ``lib`` (gradlab or torch): the same source for both."""
    nn, F = lib.nn, lib.nn.functional

    class NewGELU(nn.Module):
        def forward(self, x):
            return 0.5 * x * (1.0 + lib.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * lib.pow(x, 3.0))))

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(C, 3 * C)
            self.c_proj = nn.Linear(C, C)
            self.register_buffer("bias", lib.tril(lib.ones(T, T)).view(1, 1, T, T))

        def forward(self, x):
            B, T_, C_ = x.size()
            q, k, v = self.c_attn(x).split(C, dim=2)
            k = k.view(B, T_, n_head, C_ // n_head).transpose(1, 2)
            q = q.view(B, T_, n_head, C_ // n_head).transpose(1, 2)
            v = v.view(B, T_, n_head, C_ // n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T_, :T_] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T_, C_)
            return self.c_proj(y)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(C)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(C)
            self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(C, 4 * C), c_proj=nn.Linear(4 * C, C), act=NewGELU()))

        def forward(self, x):
            m = self.mlp
            x = x + self.attn(self.ln_1(x))
            return x + m.c_proj(m.act(m.c_fc(self.ln_2(x))))

    class Transformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(V, C), wpe=nn.Embedding(T, C),
                                                  h=nn.ModuleList([Block() for _ in range(n_layer)]),
                                                  ln_f=nn.LayerNorm(C)))
            self.lm_head = nn.Linear(C, V, bias=False)

        def forward(self, idx, targets):
            t = idx.size(1)
            pos = lib.arange(0, t, dtype=lib.long).unsqueeze(0)
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)

    return Transformer()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--profile", action="store_true", help="cProfile 10 gradlab steps (CPU time)")
    args = ap.parse_args(argv)
    import numpy as np

    import gradlab
    V, T, B = 27, 16, args.batch
    gradlab.manual_seed(0)
    gm = build(gradlab)
    steps = {}
    rng = np.random.default_rng(0)
    batches = [(rng.integers(0, V, (B, T)), rng.integers(0, V, (B, T))) for _ in range(args.steps + 3)]

    def stepper(lib, model):
        opt = lib.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01, betas=(0.9, 0.99), eps=1e-8)

        def step(x, y):
            loss = model(lib.from_numpy(x), lib.from_numpy(y))
            model.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss.item()
        return step

    steps["gradlab"] = stepper(gradlab, gm)
    import torch
    _setups.configure(torch)
    print(_setups.describe(torch))
    tm = build(torch)
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in gm.state_dict().items()}, strict=True)
    steps["PyTorch"] = stepper(torch, tm)
    print(f"makemore Transformer step: 4 layers, 4 heads, width 64, context {T}, batch {B}, vocab {V}, "
          f"{sum(p.numel() for p in gm.parameters()):,} parameters, float32, AdamW")
    report_steps(steps, batches, digits=2, profile_steps=10 if args.profile else 0)

if __name__ == "__main__":
    if not _setups.dispatch(__file__):
        main()
