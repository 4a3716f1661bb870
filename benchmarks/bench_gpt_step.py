"""One GPT training step (forward, backward, AdamW step): gradlab vs the same model in PyTorch CPU.

    python benchmarks/bench_gpt_step.py [--steps N] [--setups noscipy default one] [--profile] [--separate] [--system-malloc]

Model: 4 layers, 4 heads, width 128, context 64, batch 32, vocab 65, float32,
pre-norm blocks with GPT-2's tanh GELU, tied head, AdamW. Both libraries get
the same weights (copied from gradlab into torch) and the same batches, and run
with the same number of BLAS/intra-op threads, once per set-up of ``benchmarks/_setups.py``. Prints the best and median
step time of each (wall and CPU), the ratios and the load average (``benchmarks/_timing.py``), and (with --profile)
where gradlab's time goes.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _setups  # noqa: E402  (the set-ups: thread counts and SciPy are set up per subprocess)
import _timing  # noqa: E402  (the harness: interleaved steps, each after the threads settle)


def build_torch_gpt(torch, vocab, block, n_layer, n_head, n_embd):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = nn.MultiheadAttention(n_embd, n_head, batch_first=True)
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(approximate="tanh"),
                                     nn.Linear(4 * n_embd, n_embd))
            self.dropout = nn.Dropout(0.0)

        def forward(self, x):
            h = self.ln_1(x)
            B, T, E = h.shape
            # the same computation as gradlab's MultiheadAttention(need_weights=False, is_causal=True)
            qkv = F.linear(h, self.attn.in_proj_weight, self.attn.in_proj_bias)
            q, k, v = qkv.view(B, T, 3, n_head, E // n_head).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            a = self.attn.out_proj(a.transpose(1, 2).reshape(B, T, E))
            x = x + a
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_emb = nn.Embedding(vocab, n_embd)
            self.pos_emb = nn.Embedding(block, n_embd)
            self.drop = nn.Dropout(0.0)
            self.blocks = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.head = nn.Linear(n_embd, vocab, bias=False)
            self.head.weight = self.tok_emb.weight

        def forward(self, idx, targets):
            T = idx.shape[1]
            x = self.tok_emb(idx) + self.pos_emb(torch.arange(T))
            for b in self.blocks:
                x = b(x)
            logits = self.head(self.ln_f(x))
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    return GPT()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--separate", action="store_true",
                    help="time all gradlab steps, then all PyTorch steps (default: one step of each in turn)")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--context", type=int, default=64)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--vocab", type=int, default=65)
    import _malloc
    _malloc.add_flag(ap)
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    print(_malloc.apply(args))
    import numpy as np

    import gradlab
    from gradlab import nn, optim

    V, T, B = args.vocab, args.context, args.batch
    gradlab.manual_seed(0)
    model = nn.GPT(V, T, n_layer=args.layers, n_head=args.heads, n_embd=args.width)
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    batches = [(rng.integers(0, V, (B, T)), rng.integers(0, V, (B, T))) for _ in range(args.steps + 3)]

    def gl_step(x, y):
        _, loss = model(gradlab.tensor(x), gradlab.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    print(f"GPT step: {args.layers} layers, {args.heads} heads, width {args.width}, context {T}, batch {B}, "
          f"vocab {V}, {model.num_parameters():,} parameters, float32")
    steps = {"gradlab": gl_step}
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: no side-by-side comparison (pip install 'gradlab[oracle]')")
        torch = None
    _setups.configure(torch)
    print(_setups.describe(torch))
    if torch is not None:
        tm = build_torch_gpt(torch, V, T, args.layers, args.heads, args.width)
        gradlab.manual_seed(0)
        fresh = nn.GPT(V, T, n_layer=args.layers, n_head=args.heads, n_embd=args.width)
        sd = {k: torch.tensor(v.numpy()) for k, v in fresh.state_dict().items()}
        tm.load_state_dict(sd, strict=True)
        topt = torch.optim.AdamW(tm.parameters(), lr=1e-3)

        def t_step(x, y):
            loss = tm(torch.from_numpy(x), torch.from_numpy(y))
            topt.zero_grad()
            loss.backward()
            topt.step()
            return loss.item()

        steps["PyTorch"] = t_step
    if args.separate:  # each library alone: its own allocation pattern, but noise differs between the two runs
        times, losses = {}, {}
        for name, step in steps.items():
            t, l_ = _timing.interleaved({name: step}, batches, warmup=3)
            times.update(t), losses.update(l_)
    else:
        times, losses = _timing.interleaved(steps, batches, warmup=3)
    print("steps " + ("one library after the other" if args.separate else "interleaved: noise hits both alike"))
    _timing.report(times)
    print("first-step loss: " + "  ".join(f"{k} {v[0]:.5f}" for k, v in losses.items()) + " (same weights and batch)")
    if args.profile:
        _timing.profile(gl_step, batches[:5], top=15)


if __name__ == "__main__":
    if not _setups.dispatch(__file__):  # noscipy / default / one, each in its own process
        main()
