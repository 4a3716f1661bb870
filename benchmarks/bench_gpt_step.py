"""One GPT training step (forward, backward, AdamW step): gradlab vs the same model in PyTorch CPU.

    python benchmarks/bench_gpt_step.py [--steps N] [--setups noscipy default one] [--profile] [--separate] [--system-malloc]

Model: 4 layers, 4 heads, width 128, context 64, batch 32, vocab 65, float32,
pre-norm blocks with GPT-2's tanh GELU, tied head, AdamW. Both libraries get
the same weights (copied from gradlab into torch) and the same batches, and run
with the same number of BLAS/intra-op threads, once per set-up of ``benchmarks/_setups.py``. Prints the median step time of
each, the ratio, and (with --profile) where gradlab's time goes.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _setups  # noqa: E402  (the set-ups: thread counts and SciPy are set up per subprocess)


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
        wall, cpu, losses = {}, {}, {}
        for name, step in steps.items():
            w, c, l_ = _time_interleaved({name: step}, batches)
            wall.update(w), cpu.update(c), losses.update(l_)
    else:
        wall, cpu, losses = _time_interleaved(steps, batches)
    for name in steps:
        print(f"{name:8s}: median {statistics.median(wall[name]) * 1e3:8.1f} ms/step   (min "
              f"{min(wall[name]) * 1e3:.1f}; CPU {statistics.median(cpu[name]) * 1e3:.1f} ms)")
    if torch is not None:
        ratio = statistics.median(wall["gradlab"]) / statistics.median(wall["PyTorch"])
        cpu_ratio = statistics.median(cpu["gradlab"]) / statistics.median(cpu["PyTorch"])
        how = "one library after the other" if args.separate else "steps interleaved: noise hits both alike"
        print(f"ratio gradlab / PyTorch = {ratio:.2f}x wall, {cpu_ratio:.2f}x CPU time   (target <= 1.5x; {how})")
        print(f"first-step loss: gradlab {losses['gradlab'][0]:.5f}  PyTorch {losses['PyTorch'][0]:.5f} "
              "(same weights and batch)")

    if args.profile:
        import cProfile
        import pstats
        prof = cProfile.Profile(time.process_time)  # CPU time: what a busy machine does not distort
        prof.enable()
        for x, y in batches[:5]:
            gl_step(x, y)
        prof.disable()
        print("\nwhere gradlab's time goes (5 steps, CPU seconds, by own time):")
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)


def _time_interleaved(steps, batches):
    """Wall and CPU seconds per step for each library, one step of each in turn (after 3 warm-up steps)."""
    wall = {k: [] for k in steps}
    cpu = {k: [] for k in steps}
    losses = {k: [] for k in steps}
    for i, (x, y) in enumerate(batches):
        for name, step in steps.items():
            t0, c0 = time.perf_counter(), time.process_time()
            losses[name].append(step(x, y))
            if i >= 3:
                wall[name].append(time.perf_counter() - t0)
                cpu[name].append(time.process_time() - c0)
    return wall, cpu, losses


def report_steps(steps, batches, profile=False, profile_steps=10, digits=2):
    """Time ``steps`` ({library: step(x, y) -> loss}) interleaved on ``batches``; print each library's
    median, min and CPU time per step, the ratio gradlab / PyTorch with the load average, the first
    losses side by side, and (``profile``) where gradlab's CPU time goes over ``profile_steps`` steps."""
    import os
    import statistics
    wall, cpu, losses = _time_interleaved(steps, batches)
    for name in steps:
        print(f"{name:8s}: median {statistics.median(wall[name]) * 1e3:7.{digits}f} ms/step   (min "
              f"{min(wall[name]) * 1e3:.{digits}f}; CPU {statistics.median(cpu[name]) * 1e3:.{digits}f} ms)")
    ratio = statistics.median(wall["gradlab"]) / statistics.median(wall["PyTorch"])
    cpu_ratio = statistics.median(cpu["gradlab"]) / statistics.median(cpu["PyTorch"])
    print(f"ratio gradlab / PyTorch = {ratio:.2f}x wall, {cpu_ratio:.2f}x CPU time   (target <= 1.5x); "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"first-step loss: gradlab {losses['gradlab'][0]:.5f}  PyTorch {losses['PyTorch'][0]:.5f}")
    if profile:
        import cProfile
        import pstats
        prof = cProfile.Profile(time.process_time)
        prof.enable()
        for x, y in batches[:profile_steps]:
            steps["gradlab"](x, y)
        prof.disable()
        print(f"\nwhere gradlab's time goes ({profile_steps} steps, CPU seconds, by own time):")
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    if not _setups.dispatch(__file__):  # noscipy / default / one, each in its own process
        main()
