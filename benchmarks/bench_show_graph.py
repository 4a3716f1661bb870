"""How long ``gradlab.show_graph`` takes, from the tensor to the SVG text.

Targets (issue 6): a 2-layer MLP's graph in under 0.2 s; a 4-block
transformer's graph collapsed by module in under 1 s, and at ``max_nodes``
(or fully expanded) in under 5 s.

The transformer is built from gradlab ops (embedding by one-hot matmul,
layer norm, multi-head causal attention with softmax, MLP, residuals), with
every op labelled by the module that "ran" it through
``gradlab.autograd.function.node_observers``, exactly as ``gradlab.nn`` does.

    python benchmarks/bench_show_graph.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import gradlab  # noqa: E402
from gradlab.autograd import function as _function  # noqa: E402
from gradlab.viz import build_model, plan, render_svg, show_graph, to_dot  # noqa: E402

_stack = []


def _observer(node):
    if _stack:
        node.meta = {"module": _stack[-1][0], "module_type": _stack[-1][1]}


@contextlib.contextmanager
def module(path, type_name):
    _stack.append((path, type_name))
    try:
        yield
    finally:
        _stack.pop()


def param(*shape, scale=0.02):
    w = (gradlab.randn(*shape) * scale).requires_grad_()
    w._is_param = True
    return w


def mlp_loss(batch=32, d_in=784, hidden=128, d_out=10):
    x = gradlab.randn(batch, d_in)
    w1, b1, w2, b2 = param(d_in, hidden), param(hidden), param(hidden, d_out), param(d_out)
    w1.name, b1.name, w2.name, b2.name = "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"
    logits = (x @ w1 + b1).relu() @ w2 + b2
    return (logits ** 2).mean()


def _softmax(s):
    e = (s - s.amax(dim=-1, keepdim=True)).exp()
    return e / e.sum(dim=-1, keepdim=True)


def _layer_norm(x, path, d):
    with module(path, "LayerNorm"):
        g, b = param(d, scale=1.0), param(d)
        mu = x.mean(dim=-1, keepdim=True)
        xc = x - mu
        var = (xc * xc).mean(dim=-1, keepdim=True)
        return xc / (var + 1e-5).sqrt() * g + b


def gpt_loss(blocks=4, d=64, heads=4, t=32, vocab=65, batch=4):
    """A 4-block GPT-shaped graph (about 400-500 ops)."""
    _function.node_observers.append(_observer)
    try:
        with module("", "GPT"):
            idx = np.random.default_rng(0).integers(0, vocab, size=(batch, t))
            onehot = gradlab.tensor(np.eye(vocab, dtype=np.float32)[idx])
            with module("tok_emb", "Embedding"):
                x = onehot @ param(vocab, d)
            with module("pos_emb", "Embedding"):
                x = x + param(t, d)
            mask = gradlab.tensor(np.triu(np.full((t, t), -1e9, dtype=np.float32), 1))
            hd = d // heads
            for i in range(blocks):
                p = f"blocks.{i}"
                with module(p, "Block"):
                    h = _layer_norm(x, f"{p}.ln1", d)
                    with module(f"{p}.attn", "CausalSelfAttention"):
                        qkv = h @ param(d, 3 * d) + param(3 * d)
                        q, k, v = (qkv[..., j * d:(j + 1) * d].reshape(batch, t, heads, hd).transpose(1, 2)
                                   for j in range(3))
                        att = _softmax(q @ k.transpose(-2, -1) * (1.0 / hd ** 0.5) + mask)
                        y = (att @ v).transpose(1, 2).reshape(batch, t, d)
                        y = y @ param(d, d) + param(d)
                    x = x + y
                    h = _layer_norm(x, f"{p}.ln2", d)
                    with module(f"{p}.mlp", "MLP"):
                        m = (h @ param(d, 4 * d) + param(4 * d)).relu() @ param(4 * d, d) + param(d)
                    x = x + m
            x = _layer_norm(x, "ln_f", d)
            with module("head", "Linear"):
                logits = x @ param(d, vocab)
            return (logits * logits).mean()
    finally:
        _function.node_observers.remove(_observer)


def nn_gpt_loss():
    """The real ``gradlab.nn.GPT`` (4 layers), when the nn layer has it; else the reason why not."""
    try:
        from gradlab import nn
        model = nn.GPT(65, 32, n_layer=4, n_head=4, n_embd=64)
        idx = gradlab.tensor(np.random.default_rng(0).integers(0, 65, size=(4, 32)))
        out = model(idx, idx)
        loss = out[1] if isinstance(out, tuple) else out
        return loss, dict(model.named_parameters())
    except Exception as exc:  # the nn layer is optional for this benchmark
        return f"{type(exc).__name__}: {exc}"


def timed(fn, repeat):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def full_render(root, **kw):
    v = show_graph(root, **kw)
    v.svg()
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    full_render(mlp_loss())                          # the one-time Graphviz/fontconfig start-up, not measured

    rows = []
    loss = mlp_loss()
    s, v = timed(lambda: full_render(loss), args.repeat)
    rows.append(("2-layer MLP, forward", v.plan.count, s, 0.2))
    s, v = timed(lambda: full_render(loss, view="backward"), args.repeat)
    rows.append(("2-layer MLP, backward", v.plan.count, s, 0.2))
    loss.backward()
    s, v = timed(lambda: full_render(loss), args.repeat)
    rows.append(("2-layer MLP, after backward (grad stats)", v.plan.count, s, 0.2))

    gpt = gpt_loss()
    n_ops = len(build_model(gpt).ops)
    s, v = timed(lambda: full_render(gpt, depth=2), args.repeat)
    rows.append((f"4-block GPT ({n_ops} ops), depth=2 (blocks folded)", v.plan.count, s, 1.0))
    s, v = timed(lambda: full_render(gpt, depth=2, fold=False), args.repeat)
    rows.append(("4-block GPT, depth=2, fold=False", v.plan.count, s, 1.0))
    s, v = timed(lambda: full_render(gpt, depth=3, fold=False), args.repeat)
    rows.append(("4-block GPT, depth=3, fold=False", v.plan.count, s, 1.0))
    s, v = timed(lambda: full_render(gpt), args.repeat)
    rows.append(("4-block GPT, default (max_nodes=400)", v.plan.count, s, 5.0))
    s, v = timed(lambda: full_render(gpt, max_nodes=None), 1)
    rows.append(("4-block GPT, fully expanded (max_nodes=None)", v.plan.count, s, 5.0))
    s, v = timed(lambda: full_render(gpt, view="backward", max_nodes=None), 1)
    rows.append(("4-block GPT, backward, fully expanded", v.plan.count, s, 5.0))

    big = gpt_loss(blocks=12)
    n_ops = len(build_model(big).ops)
    s, v = timed(lambda: full_render(big), args.repeat)
    rows.append((f"12-block GPT ({n_ops} ops), default: auto-collapsed", v.plan.count, s, 5.0))

    x = gradlab.randn(4, requires_grad=True)
    chain = x
    for _ in range(100_000):
        chain = chain * 1.0001
    s, v = timed(lambda: full_render(chain), 1)
    rows.append(("100 000-op chain, default (max_nodes=400)", v.plan.count, s, float("nan")))
    chain = v = None   # free the 100 000 nodes

    real = nn_gpt_loss()
    if isinstance(real, str):
        print(f"(gradlab.nn.GPT not measured: {real})")
    else:
        loss_r, params = real
        n_ops = len(build_model(loss_r).ops)
        s, v = timed(lambda: full_render(loss_r, depth=2, params=params), args.repeat)
        rows.append((f"nn.GPT 4 layers ({n_ops} ops), depth=2", v.plan.count, s, 1.0))
        s, v = timed(lambda: full_render(loss_r, params=params), args.repeat)
        rows.append(("nn.GPT 4 layers, default (max_nodes=400)", v.plan.count, s, 5.0))
        s, v = timed(lambda: full_render(loss_r, params=params, max_nodes=None), 1)
        rows.append(("nn.GPT 4 layers, fully expanded", v.plan.count, s, 5.0))

    # where the time goes, for the fully expanded graph
    t0 = time.perf_counter()
    m = build_model(gpt)
    t1 = time.perf_counter()
    p = plan(m, max_nodes=None)
    t2 = time.perf_counter()
    dot = to_dot(m, plan=p)
    t3 = time.perf_counter()
    render_svg(dot)
    t4 = time.perf_counter()

    print(f"{'graph':<52} {'nodes':>6} {'seconds':>8} {'target':>7}  ratio")
    for name, nodes, sec, target in rows:
        ratio = "    -" if target != target else f"{sec / target:5.2f}"
        print(f"{name:<52} {nodes:>6} {sec:8.3f} {target:7.1f}  {ratio}{'  SLOW' if sec > target else ''}")
    print(f"\nfully expanded GPT, split: model {t1 - t0:.3f} s, plan {t2 - t1:.3f} s, "
          f"dot text {t3 - t2:.3f} s, Graphviz layout+SVG {t4 - t3:.3f} s")


if __name__ == "__main__":
    main()
