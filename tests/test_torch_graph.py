"""gradlab's drawings, animations and diagnostics on PyTorch's own graphs (``gradlab/viz/torch_graph.py``).

Oracle tests: they need PyTorch and skip with a reason without it (the ``torch``
fixture in conftest.py). What is checked against PyTorch itself:

* the graph of an MLP, a CNN, an attention block and a small GPT has the nodes,
  edges and shapes that walking ``grad_fn.next_functions`` gives;
* saved bytes are the sizes of the nodes' ``_saved_*`` tensors;
* the recorded backward is what independent node hooks see (order, gradients in
  and out), and the ``.grad`` it leaves equals a plain ``backward()``'s;
* ``depth=`` folds the torch GPT's identical blocks (layout time reported);
* ``import gradlab`` and ``show_graph`` on a gradlab tensor never import torch.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import gradlab
from gradlab.viz import torch_graph as tg

from .optional import require


# ---------------------------------------------------------------- torch never imported by gradlab itself
def test_import_gradlab_does_not_import_torch():
    code = textwrap.dedent("""
        import sys
        import gradlab, gradlab.viz, gradlab.debug
        from gradlab.viz import torch_graph
        x = gradlab.randn(3, 2, requires_grad=True)
        w = gradlab.randn(2, 2, requires_grad=True)
        loss = ((x @ w).relu() ** 2).mean()
        v = gradlab.show_graph(loss, view="backward")
        v.svg()
        gradlab.memory_report([x, w], loss=loss)
        loss.backward()
        gradlab.explain_grad(x)
        assert not torch_graph.is_torch_tensor(x)
        bad = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))
        print("TORCH_MODULES", bad)
        assert not bad, bad
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       cwd=str(__import__("pathlib").Path(__file__).resolve().parents[1]))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "TORCH_MODULES []" in r.stdout


# ---------------------------------------------------------------- the programs
def mlp(torch):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16), torch.nn.ReLU(),
                              torch.nn.Linear(16, 3))
    x, y = torch.randn(6, 5), torch.tensor([0, 1, 2, 0, 1, 2])
    with tg.track_modules(net):
        loss = torch.nn.functional.cross_entropy(net(x), y)
    return net, loss


def cnn(torch):
    torch.manual_seed(0)
    nn = torch.nn
    net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 8, 3), nn.ReLU(),
                        nn.Flatten(), nn.Linear(8 * 2 * 2, 10))
    x, y = torch.randn(3, 1, 8, 8), torch.tensor([1, 5, 9])
    with tg.track_modules(net):
        loss = nn.functional.cross_entropy(net(x), y)
    return net, loss


def _attention_block(torch):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, d=16, heads=2):
            super().__init__()
            self.ln = nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
            self.ff = nn.Sequential(nn.Linear(d, 32), nn.GELU(), nn.Linear(32, d))

        def forward(self, x):
            h = self.ln(x)
            x = x + self.attn(h, h, h, need_weights=False)[0]
            return x + self.ff(x)
    return Block


def attention(torch):
    torch.manual_seed(0)
    block = _attention_block(torch)()
    x = torch.randn(2, 5, 16, requires_grad=True)
    with tg.track_modules(block):
        loss = block(x).pow(2).mean()
    return block, loss


def small_gpt(torch, n_layer=4, d=32, heads=4, T=12, B=2, vocab=40):
    nn = torch.nn
    F = nn.functional

    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.register_buffer("mask", torch.tril(torch.ones(T, T, dtype=torch.bool)))

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(x).split(d, dim=2)
            q, k, v = (z.view(b, t, heads, d // heads).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / (d // heads) ** 0.5
            att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(-1)
            return self.proj((att @ v).transpose(1, 2).reshape(b, t, d))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(d, 4 * d)
            self.proj = nn.Linear(4 * d, d)

        def forward(self, x):
            return self.proj(F.gelu(self.fc(x)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.attn, self.ln2, self.mlp = nn.LayerNorm(d), Attn(), nn.LayerNorm(d), MLP()

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, d)
            self.pos = nn.Embedding(T, d)
            self.blocks = nn.ModuleList(Block() for _ in range(n_layer))
            self.ln_f = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, idx, targets):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
            for blk in self.blocks:
                x = blk(x)
            logits = self.head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, vocab), targets.view(-1))

    torch.manual_seed(0)
    model = GPT()
    idx = torch.randint(0, vocab, (B, T))
    with tg.track_modules(model):
        loss = model(idx, torch.roll(idx, -1, 1))
    return model, loss


PROGRAMS = {"mlp": mlp, "cnn": cnn, "attention": attention, "gpt": small_gpt}


# ---------------------------------------------------------------- an independent walk of next_functions
def walk_torch(torch, loss):
    """Nodes, edges and edge shapes exactly as PyTorch's graph has them (no gradlab code)."""
    seen, stack, nodes = {loss.grad_fn}, [loss.grad_fn], []
    while stack:
        n = stack.pop()
        nodes.append(n)
        for src, _ in n.next_functions:
            if src is not None and src not in seen:
                seen.add(src)
                stack.append(src)
    edges = []
    for n in nodes:
        for i, (src, nr) in enumerate(n.next_functions):
            if src is None:
                continue
            if hasattr(src, "variable"):
                shape = tuple(src.variable.shape)
            else:
                shape = tuple(src._input_metadata[nr].shape)
            edges.append((n, src, i, shape))
    return nodes, edges


def saved_of(torch, n):
    out = []
    for a in dir(n):
        if a.startswith("_saved_"):
            v = getattr(n, a)
            if isinstance(v, torch.Tensor):
                out.append(v)
            elif isinstance(v, (list, tuple)):
                out += [x for x in v if isinstance(x, torch.Tensor)]
    return out


@pytest.mark.parametrize("prog", list(PROGRAMS))
def test_graph_matches_next_functions(torch, prog):
    _net, loss = PROGRAMS[prog](torch)
    nodes, edges = walk_torch(torch, loss)
    accs = [n for n in nodes if hasattr(n, "variable")]
    ops = [n for n in nodes if not hasattr(n, "variable")]
    for view in ("backward", "forward"):
        m = gradlab.viz.build_model(loss, view=view)
        assert len(m.ops) == len(ops), view
        leaves = [t for t in m.tensors if t.role in ("leaf", "parameter")]
        assert len(leaves) == len(accs), view
        assert {m.id_of(n) for n in nodes} == {o.id for o in m.ops} | {t.id for t in leaves}
        # every next_functions entry is one edge, with the shape that flows along it
        want = sorted((m.id_of(n), m.id_of(src), i, shape) for n, src, i, shape in edges)
        if view == "backward":
            got = sorted((e.src, e.dst, int(e.id.rsplit("_in", 1)[1]), tuple(e.shape)) for e in m.edges
                         if e.id != "g_start")
        else:
            got = sorted((e.dst, e.src, int(e.id.rsplit("_in", 1)[1]), tuple(e.shape)) for e in m.edges
                         if "_out" not in e.id and not e.src.endswith(tuple(f"_in{k}" for k in range(64))))
        assert got == want, view
        for o, n in ((m.nodes[m.id_of(n)], n) for n in ops):
            assert o.op == n.name()
            assert o.out_shapes == tuple(tuple(im.shape) for im in n._input_metadata)
        for a in accs:
            t = m.nodes[m.id_of(a)]
            assert t.shape == tuple(a.variable.shape)
            assert t.role == ("parameter" if isinstance(a.variable, torch.nn.Parameter) else "leaf")
    # the forward view draws one constant per input that needs no grad
    m = gradlab.viz.build_model(loss, view="forward")
    consts = [t for t in m.tensors if t.role == "constant"]
    assert len(consts) == sum(1 for n in ops for src, _ in n.next_functions if src is None)
    # parameters are named as the model names them (named_parameters of the module in this frame)
    net = _net  # noqa: F841 - bound here so that show_graph finds the module's parameter names
    m = gradlab.viz.build_model(loss, view="backward")
    names = {t.name for t in m.tensors if t.role == "parameter"}
    assert names <= {n for n, _ in _net.named_parameters()}
    assert len(names) == len({id(a.variable) for a in accs if isinstance(a.variable, torch.nn.Parameter)})


@pytest.mark.parametrize("prog", list(PROGRAMS))
def test_saved_bytes_are_the_saved_tensors(torch, prog):
    _net, loss = PROGRAMS[prog](torch)
    nodes, _ = walk_torch(torch, loss)
    m = gradlab.viz.build_model(loss, view="backward")
    distinct = {}
    for n in nodes:
        if hasattr(n, "variable"):
            continue
        ts = saved_of(torch, n)
        o = m.nodes[m.id_of(n)]
        assert o.saved_bytes == sum(t.numel() * t.element_size() for t in ts), n.name()
        assert len(o.saved) == len(ts)
        for t in ts:
            key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()))
            distinct[key] = t.numel() * t.element_size()
    assert m.memory.saved == sum(distinct.values()) > 0
    params = {id(a.variable): a.variable for a in nodes if hasattr(a, "variable")
              and isinstance(a.variable, torch.nn.Parameter)}
    assert m.memory.parameters == sum(p.numel() * p.element_size() for p in params.values())


def _hooked_backward(torch, loss, retain_graph=None):
    """Backward with our own node hooks: the order and gradients PyTorch's engine really produced."""
    nodes, _ = walk_torch(torch, loss)
    log, handles = [], []
    for n in nodes:
        def pre(go, n=n):
            log.append([n, [None if g is None else g.detach().clone() for g in go], None])

        def post(gi, go, n=n):
            log[-1][2] = [None if g is None else g.detach().clone() for g in gi]
        handles += [n.register_prehook(pre), n.register_hook(post)]
    return nodes, log, handles


def _norm(a):
    return float(np.sqrt(np.sum(np.asarray(a, dtype=np.float64) ** 2)))


@pytest.mark.parametrize("prog", list(PROGRAMS))
def test_recorded_backward_is_what_pytorch_did(torch, prog):
    _net, loss = PROGRAMS[prog](torch)
    saved_before = gradlab.viz.build_model(loss, view="backward").memory.saved
    nodes, log, handles = _hooked_backward(torch, loss)
    try:
        rec = tg.record_backward(loss)
    finally:
        for h in handles:
            h.remove()
    assert [s.node for s in rec.steps] == [entry[0] for entry in log]
    assert len(rec.steps) == len(nodes)          # every node ran once
    for step, (_n, gin, gout) in zip(rec.steps, log):
        assert len(step.grads_in) == len(gin)
        for v, g in zip(step.grads_in, gin):
            assert (v is None) == (g is None)
            if g is not None:
                assert v.shape == tuple(g.shape)
                assert v.norm == pytest.approx(_norm(g), rel=1e-6, abs=1e-12)
                np.testing.assert_array_equal(v.array.reshape(-1)[:3],
                                              g.double().numpy()[(0,) * max(0, g.dim() - 2)].reshape(-1)[:3])
        sent = {go.input: go for go in step.grads_out}
        for i, g in enumerate(gout):
            if g is None or step.node.next_functions[i][0] is None:
                assert i not in sent
            else:
                assert sent[i].to is step.node.next_functions[i][0]
                assert sent[i].value.norm == pytest.approx(_norm(g), rel=1e-6, abs=1e-12)
    # the memory timeline: everything PyTorch saved is freed by the end (no retain_graph)
    assert rec.start_bytes == saved_before
    assert sum(s.saved_freed for s in rec.steps) == saved_before
    assert rec.steps[-1].saved_bytes == 0
    assert all(a.saved_bytes >= b.saved_bytes for a, b in zip(rec.steps, rec.steps[1:]))


def test_retain_graph_keeps_saved_bytes(torch):
    _net, loss = mlp(torch)
    rec = tg.record_backward(loss, retain_graph=True)
    assert rec.start_bytes > 0
    assert all(s.saved_freed == 0 and s.saved_bytes == rec.start_bytes for s in rec.steps)
    loss.backward()                               # the graph is still there


require("anywidget", "the widgets need anywidget (gradlab[lab])")


@pytest.mark.parametrize("prog", list(PROGRAMS))
def test_animate_backward_leaves_the_grads_of_a_plain_backward(torch, prog):
    from gradlab.viz.widgets import animate_backward
    net, loss = PROGRAMS[prog](torch)
    w = animate_backward(loss)
    net2, loss2 = PROGRAMS[prog](torch)             # the same program, run again, plain backward
    loss2.backward()
    for (n1, p1), (n2, p2) in zip(net.named_parameters(), net2.named_parameters()):
        assert n1 == n2
        torch.testing.assert_close(p1.grad, p2.grad, rtol=0, atol=0)
    nodes, _ = walk_torch(torch, loss2)
    assert w.num_steps == len(nodes)
    assert {f["n"] for f in w.frames} == set(w.nodes) - {k for k, v in w.nodes.items() if "_out" in k}
    leaf_frames = [f for f in w.frames if "leaf" in f]
    assert len(leaf_frames) == sum(1 for n in nodes if hasattr(n, "variable"))
    assert all(f["f"].endswith(".grad = d" + f["f"].split(".grad")[0]) for f in leaf_frames)
    assert w.frames[-1]["mem"] == 0 and w.mem0 > 0
    assert "image/svg+xml" in w._repr_mimebundle_()[0]
    # the inspector shows the leaves' final .grad
    p_leaf = next(k for k, v in w.nodes.items() if v.get("role") == "parameter")
    assert w.nodes[p_leaf]["grad"]["k"] > 0


def test_graph_widget_and_show_graph_svg(torch):
    from gradlab.viz.widgets import graph_widget
    _net, loss = attention(torch)
    w = graph_widget(loss)
    assert w.frames == [] and w.nodes
    v = gradlab.show_graph(loss, view="backward")
    svg = v.svg()
    assert "MmBackward0" in svg or "AddmmBackward0" in svg
    assert 'id="op0"' in svg and "saved" in svg


def test_gpt_folds_by_module_and_animates(torch):
    from gradlab.viz.collapse import plan
    from gradlab.viz.widgets import animate_backward
    model, loss = small_gpt(torch)
    m = gradlab.viz.build_model(loss, view="backward")
    mods = {o.module for o in m.ops}
    assert {"blocks.0.attn", "blocks.3.mlp", "ln_f", "head", "tok"} <= mods
    p = plan(m, depth=2, max_nodes=None)
    boxes = [g for g in p.items.values() if g.kind == "group"]
    folded = [g for g in boxes if g.path == "blocks.0"]
    assert folded and folded[0].folded == 4 and folded[0].module_type == "Block"
    t0 = time.perf_counter()
    v = gradlab.show_graph(loss, view="backward", depth=2)
    svg = v.svg()
    layout = time.perf_counter() - t0
    t0 = time.perf_counter()
    full = gradlab.show_graph(loss, view="backward", max_nodes=None).svg()
    layout_full = time.perf_counter() - t0
    print(f"\ntorch GPT: {len(m.ops)} ops; layout+render depth=2 {layout:.3f} s, every op {layout_full:.2f} s")
    assert "Block" in svg and ("&#215;4" in svg or "×4" in svg)
    assert layout < 60 and layout_full < 300 and len(full) > len(svg)
    w = animate_backward(loss, depth=2)
    assert w.num_steps == len(m.ops) + sum(1 for t in m.tensors if t.role in ("leaf", "parameter"))
    assert any(v.startswith("mod_blocks_0") for v in w.elem.values())
    assert model.head.weight.grad is not None


def test_explain_grad_torch_verdicts(torch):
    nn = torch.nn
    torch.manual_seed(0)
    x = torch.randn(8, 4)
    net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
    with torch.no_grad():
        net[0].bias.fill_(-100.0)
    loss = net(x).pow(2).mean()
    e = gradlab.explain_grad(net[0].weight, loss)
    assert e.cause == "dead_relu" and "0.weight" in e.name
    assert gradlab.explain_grad(x).cause == "requires_grad_false"
    h = net[0](x)
    assert gradlab.explain_grad(h, h.sum()).cause == "non_leaf_no_retain_grad"
    d = net[2].weight.detach()
    assert gradlab.explain_grad(net[2].weight, (net[0](x) @ d.T).sum()).cause == "detached"
    with torch.no_grad():
        cut = net(x).sum()
    e = gradlab.explain_grad(net[2].weight, cut)
    assert e.cause == "path_cut" and "no trace" in e.verdict
    opt = torch.optim.SGD(net[2].parameters(), lr=0.1)
    net[2].bias.requires_grad_(True)
    loss = net(x).pow(2).mean()
    assert gradlab.explain_grad(net[2].bias, loss).cause == "backward_not_run"
    loss.backward()
    assert gradlab.explain_grad(net[2].bias, optimizer=opt).cause == "ok"
    assert gradlab.explain_grad(net[0].weight, optimizer=opt).cause in ("not_in_optimizer", "need_loss")
    net[2].bias.grad = None
    assert gradlab.explain_grad(net[2].bias, loss).cause == "cleared_by_zero_grad"


def test_memory_report_torch(torch):
    net, loss = mlp(torch)
    opt = torch.optim.Adam(net.parameters())
    nodes, _ = walk_torch(torch, loss)
    rep = gradlab.memory_report(net, loss=loss, optimizer=opt)
    pbytes = sum(p.numel() * p.element_size() for p in net.parameters())
    assert rep.trainable_parameters == pbytes and rep.gradients == 0
    ptrs = {p.untyped_storage().data_ptr() for p in net.parameters()}
    distinct = {}
    for n in nodes:
        if not hasattr(n, "variable"):
            for t in saved_of(torch, n):
                if t.untyped_storage().data_ptr() not in ptrs:
                    distinct[(t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape),
                              tuple(t.stride()))] = t.numel() * t.element_size()
    assert rep.activations == sum(distinct.values()) > 0
    assert set(rep.per_module) <= {"0", "1", "2", "3", "4", "(outside modules)"}
    loss.backward()
    opt.step()
    rep = gradlab.memory_report(net, optimizer=opt)
    assert rep.gradients == pbytes and rep.optimizer_state == 2 * pbytes + 4 * len(list(net.parameters()))
