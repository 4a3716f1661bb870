"""show_graph: the structure of what is drawn (nodes, ids, classes, labels), not pixels.

DOT is parsed with pygraphviz, SVG with ElementTree. Expected values come
from the graph itself (``node.saved``, ``.grad``) or from NumPy, never typed in.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from contextlib import contextmanager

import numpy as np
import pytest

import gradlab
from gradlab.autograd import engine as _engine, function as _function
from gradlab.backend.memory_limit import format_bytes
from gradlab.errors import fmt_shape
from gradlab.viz import NotATensorError, build_model, plan, render_svg, show_graph, to_dot
from gradlab.viz.model import collect

pgv = pytest.importorskip("pygraphviz")
SVG = "{http://www.w3.org/2000/svg}"


# ------------------------------------------------------------------ helpers
def mlp(batch=8, d_in=4, hidden=16, d_out=3, named=True):
    x = gradlab.randn(batch, d_in)
    w1 = gradlab.randn(d_in, hidden, requires_grad=True)
    b1 = gradlab.zeros(hidden, requires_grad=True)
    w2 = gradlab.randn(hidden, d_out, requires_grad=True)
    w1._is_param = b1._is_param = w2._is_param = True
    if named:
        w1.name, b1.name, w2.name = "w1", "b1", "w2"
    h = (x @ w1 + b1).relu()
    loss = ((h @ w2) ** 2).mean()
    return loss, dict(x=x, w1=w1, b1=b1, w2=w2, h=h)


def dot_graph(view):
    return pgv.AGraph(string=view.source)


def footer(view):
    """The footer's text, tags and line breaks removed."""
    g = dot_graph(view)
    return " ".join(re.sub(r"<[^>]+>", " ", dict(g.graph_attr)["label"]).split())


def drawn_nodes(g):
    """Node name -> attrs for every non-legend node (legend nodes live in cluster_legend)."""
    return {n.name: dict(n.attr) for n in g.nodes() if "legend" not in n.attr.get("class", "")}


def svg_groups(svg, kind):
    root = ET.fromstring(svg)
    return [g for g in root.iter(SVG + "g") if (g.get("class") or "").split()[:1] == [kind]]


def svg_text(g):
    return " ".join(t.text or "" for t in g.iter(SVG + "text"))


@contextmanager
def module_scope():
    """Label every node recorded inside with the module path on a stack (as nn does)."""
    stack = []

    def observer(node):
        if stack:
            node.meta = {"module": stack[-1][0], "module_type": stack[-1][1]}
    _function.node_observers.append(observer)

    @contextmanager
    def enter(path, type_name):
        stack.append((path, type_name))
        try:
            yield
        finally:
            stack.pop()
    try:
        yield enter
    finally:
        _function.node_observers.remove(observer)


def tiny_transformer(enter, blocks=4, d=8, t=5):
    """A transformer-shaped graph from gradlab ops, with module paths recorded."""
    x = gradlab.randn(t, d)
    params = {}

    def p(name, *shape):
        w = gradlab.randn(*shape, requires_grad=True) * 0.1
        w = w.detach().requires_grad_()
        w._is_param = True
        params[name] = w
        return w

    for i in range(blocks):
        with enter(f"blocks.{i}", "Block"):
            with enter(f"blocks.{i}.attn", "Attention"):
                q = x @ p(f"blocks.{i}.attn.wq", d, d)
                k = x @ p(f"blocks.{i}.attn.wk", d, d)
                s = (q @ k.T).exp()
                a = s / s.sum(dim=-1, keepdim=True)
                att = a @ (x @ p(f"blocks.{i}.attn.wv", d, d))
            x = x + att
            with enter(f"blocks.{i}.mlp", "MLP"):
                m = (x @ p(f"blocks.{i}.mlp.w1", d, 2 * d)).relu() @ p(f"blocks.{i}.mlp.w2", 2 * d, d)
            x = x + m
    with enter("head", "Linear"):
        out = x @ p("head.w", d, 3)
    return (out * out).mean(), params


# --------------------------------------------------------------- the model
def test_forward_mlp_nodes_edges_and_ids_match_the_graph():
    loss, t = mlp()
    v = show_graph(loss)
    ops, accs = collect(loss.grad_fn)
    g = dot_graph(v)
    nodes = drawn_nodes(g)
    op_nodes = {k: a for k, a in nodes.items() if a["class"].split()[0] == "op"}
    assert sorted(op_nodes) == sorted(f"op{i}" for i in range(len(ops)))
    # op ids follow creation order: op<r> is the r-th recorded node
    for r, n in enumerate(ops):
        assert v.model.node_ids[n] == f"op{r}"
        assert f"<B>{n.name}</B>" in op_nodes[f"op{r}"]["label"]
    leaves = {a.variable.name: v.model.node_ids[a] for a in accs}
    assert set(leaves) == {"w1", "b1", "w2"}
    for name, nid in leaves.items():
        assert nodes[nid]["class"] == "tensor parameter"
        assert nodes[nid]["peripheries"] == "2"                      # told apart by border, not colour only
        assert name in nodes[nid]["label"] and "parameter" in nodes[nid]["label"]
        leaf = t[name]
        assert f"{fmt_shape(leaf.shape)} float32 {leaf.device} requires_grad" in nodes[nid]["label"]
    const = [k for k, a in nodes.items() if a["class"] == "tensor constant"]
    assert len(const) == 1 and "(8, 4)" in nodes[const[0]]["label"]   # x, no grad
    out = v.model.root_id
    assert nodes[out]["class"].startswith("tensor output")
    # every edge has a unique id and carries the shape flowing along it
    ids = [e.attr["id"] for e in g.edges() if "legend" not in e.attr.get("class", "")]
    assert len(ids) == len(set(ids)) and all(ids)
    w1_edge = g.get_edge(leaves["w1"], "op0")
    assert w1_edge.attr["label"] == "(4, 16)" and w1_edge.attr["class"] == "data"


def test_svg_has_stable_ids_and_classes_on_every_node_and_edge():
    loss, _ = mlp()
    v = show_graph(loss)
    svg = v.svg()
    nodes, edges = svg_groups(svg, "node"), svg_groups(svg, "edge")
    assert nodes and edges
    assert all(n.get("id") and len(n.get("class").split()) >= 2 for n in nodes)
    assert all(e.get("id") and len(e.get("class").split()) >= 2 for e in edges)
    assert {n.get("id") for n in nodes} >= set(v.plan.items)
    loss, _ = mlp()                                    # the same program (bound to the same names)
    again = show_graph(loss)                           # gives the same drawing source
    assert again.source == v.source


def test_saved_tensors_and_memory_footer():
    loss, t = mlp()
    v = show_graph(loss)
    ops, accs = collect(loss.grad_fn)
    expected_saved = {}
    for n in ops:
        for s in n.saved:
            expected_saved[id(s._data)] = s.nbytes
        op = v.model.nodes[v.model.node_ids[n]]
        assert [(s.shape, s.nbytes) for s in op.saved] == [(tuple(s.shape), s.nbytes) for s in n.saved]
    assert v.model.memory.saved == sum(expected_saved.values())
    assert v.model.memory.parameters == sum(a.variable._data.nbytes for a in accs)
    g = dot_graph(v)
    matmul = g.get_node("op0").attr["label"]
    assert "saved" in matmul and format_bytes(t["w1"]._data.nbytes) in matmul
    assert "saved activations " + format_bytes(v.model.memory.saved) in footer(v)
    assert "parameters " + format_bytes(v.model.memory.parameters) in footer(v)


def test_grads_after_backward_are_summarised():
    loss, t = mlp()
    loss.backward()
    v = show_graph(loss)
    for name in ("w1", "b1", "w2"):
        node = next(n for n in v.model.tensors if n.name == name)
        g = t[name].grad._data.astype(np.float64)
        assert node.grad.shape == g.shape
        assert node.grad.norm == pytest.approx(np.linalg.norm(g))
        assert (node.grad.min, node.grad.mean, node.grad.max) == pytest.approx((g.min(), g.mean(), g.max()))
        g_ = dot_graph(v)
        attrs = dict(g_.get_node(node.id).attr)
        assert "has-grad" in attrs["class"] and f"norm {node.grad.norm:.3g}" in attrs["label"]
    assert v.model.memory.gradients == sum(t[k].grad._data.nbytes for k in ("w1", "b1", "w2"))
    assert any("freed" in n for n in v.notes)             # saved tensors were released by backward


def test_missing_grad_is_marked():
    loss, t = mlp()
    unused = gradlab.randn(5, requires_grad=True)
    with gradlab.no_grad():
        _ = unused * 2
    loss.backward(inputs=[t["w2"]])
    v = show_graph(loss, params={"w1": t["w1"], "b1": t["b1"], "w2": t["w2"], "unused": unused})
    g = dot_graph(v)
    nodes = drawn_nodes(g)
    missing = {a["label"].split("</B>")[0].split("<B>")[-1] for a in nodes.values()
               if "missing-grad" in a["class"]}
    assert missing == {"w1", "b1", "unused"}          # exactly the tensors that require grad and got none
    assert "grad: None" in next(a["label"] for a in nodes.values() if "<B>unused</B>" in a["label"])
    assert any("'unused' has no grad: not reached" in n for n in v.notes)
    assert "missing-grad" not in nodes[v.model.node_ids[t["w2"].grad_fn]]["class"] if t["w2"].grad_fn else True


def test_no_missing_marks_before_backward():
    loss, _ = mlp()
    assert not any(n.missing_grad for n in show_graph(loss).model.tensors)


def test_retained_intermediate_is_drawn_with_its_grad():
    loss, t = mlp()
    t["h"].retain_grad()
    loss.backward()
    v = show_graph(loss, params={"h": t["h"]})
    h = next(n for n in v.model.tensors if n.name == "h")
    assert h.role == "intermediate" and h.grad.norm == pytest.approx(np.linalg.norm(t["h"].grad._data))
    g = dot_graph(v)
    # drawn in place: relu -> h -> the matmul that consumes it
    assert g.in_degree(h.id) == 1 and g.out_degree(h.id) == 1
    assert g.successors(h.id)[0].attr["label"].startswith("<TABLE") and "matmul" in g.successors(h.id)[0].attr["label"]


# -------------------------------------------------------------- backward view
def test_backward_view_marks_accumulation_and_matches_the_engine():
    x = gradlab.randn(3, 4, requires_grad=True)
    x.name = "x"
    h = x.tanh()
    loss = (h * h + h).sum() + x.sum()           # h used 3 times; x used twice
    v = show_graph(loss, view="backward")
    g = dot_graph(v)
    tanh_id = v.model.node_ids[h.grad_fn]
    assert g.get_node(tanh_id).attr["class"] == "op accumulate"
    assert "adds 3 incoming gradients" in g.get_node(tanh_id).attr["label"]
    leaf = v.model.node_ids[x.grad_fn] if x.grad_fn else v.model.id_of(next(
        a for a in collect(loss.grad_fn)[1]))
    assert "accumulate" in g.get_node(leaf).attr["class"] and g.in_degree(leaf) == 2
    # gradients flow from the output to the leaves: the root has no incoming grad edge
    assert g.in_degree(v.model.root_id) == 0 and g.out_degree(v.model.root_id) == 1
    assert all(e.attr["class"] == "grad" for e in g.edges() if "legend" not in e.attr.get("class", ""))

    ran = []

    class Obs:
        def node_start(self, node, grads):
            ran.append(node)

        def node_end(self, node, grads_in, grads_out):
            pass
    _engine.backward_observers.append(Obs())
    try:
        loss.backward()
    finally:
        _engine.backward_observers.pop()
    # every node the engine ran has an id in the model (what the animation relies on)
    assert ran and all(v.model.id_of(n) in v.model.nodes for n in ran)
    assert {v.model.id_of(n) for n in ran} == {nid for nid in v.model.nodes if nid != v.model.root_id}


# ------------------------------------------------------------- bad input
def test_leaf_and_no_grad_draw_one_node_and_say_why():
    x = gradlab.randn(3, requires_grad=True)
    v = show_graph(x)
    assert len(drawn_nodes(dot_graph(v))) == 1 and "leaf" in v.reason
    assert len(svg_groups(v.svg(), "node")) >= 1
    with gradlab.no_grad():
        y = x * 2
    v = show_graph(y)
    assert len(drawn_nodes(dot_graph(v))) == 1 and "no_grad" in v.reason
    assert "no_grad" in footer(v)                             # the reason is drawn too
    assert "no_grad" in repr(v)


def test_non_tensor_raises_a_clear_type_error():
    with pytest.raises(TypeError, match="expected a gradlab Tensor.*ndarray"):
        show_graph(np.ones(3))
    with pytest.raises(NotATensorError):
        show_graph([1.0, 2.0])


def test_long_chain_is_walked_iteratively_and_capped():
    x = gradlab.randn(2, requires_grad=True)
    y = x
    n = 100_000
    for _ in range(n):
        y = y * 1.0001
    v = show_graph(y, max_nodes=300)
    assert len(v.model.ops) == n
    nodes = drawn_nodes(dot_graph(v))
    assert len(nodes) == 300 and "more" in nodes
    assert "max_nodes=None" in " ".join(v.notes)
    assert v.element_id(x.grad_fn or y.grad_fn) is not None
    svg = v.svg()
    assert any(g.get("id") == "more" for g in svg_groups(svg, "node"))


# ------------------------------------------------------------ module grouping
def test_depth_collapses_modules_into_boxes_with_counts():
    with module_scope() as enter:
        loss, params = tiny_transformer(enter, blocks=2)
    full = show_graph(loss, max_nodes=None)
    assert {n.module for n in full.model.ops} >= {"blocks.0.attn", "blocks.1.mlp", "head", None}
    v = show_graph(loss, depth=2, fold=False, max_nodes=None)
    nodes = drawn_nodes(dot_graph(v))
    groups = {k: a for k, a in nodes.items() if a["class"].startswith("group")}
    assert set(groups) == {"mod_blocks_0", "mod_blocks_1"}
    n_params = sum(p.numel() for k, p in params.items() if k.startswith("blocks.0."))
    assert f"{n_params:,} params" in groups["mod_blocks_0"]["label"]
    ops_in_block0 = [o for o in full.model.ops if o.module and o.module.startswith("blocks.0")]
    assert f"{len(ops_in_block0)} ops" in groups["mod_blocks_0"]["label"]
    # every backward node of block 0 maps to the box that shows it
    for o in ops_in_block0:
        assert v.plan.element_of[o.id] == "mod_blocks_0"
    # ops outside the collapsed depth stay visible, framed by their module
    assert any(a["class"] == "op" for a in nodes.values())
    assert 'id="cluster_mod_head"' in v.svg() or "cluster_mod_head" in v.source


def test_identical_blocks_fold():
    with module_scope() as enter:
        loss, _ = tiny_transformer(enter, blocks=4)
    v = show_graph(loss, depth=2)
    groups = {k: a for k, a in drawn_nodes(dot_graph(v)).items() if a["class"].startswith("group")}
    assert list(groups) == ["mod_blocks_0"] and groups["mod_blocks_0"]["class"] == "group folded"
    assert "Block &#215;4" in groups["mod_blocks_0"]["label"] and "blocks.3" in groups["mod_blocks_0"]["label"]
    svg_group = [g for g in svg_groups(v.svg(), "node") if g.get("id") == "mod_blocks_0"]
    assert "Block ×4" in svg_text(svg_group[0])


def test_max_nodes_collapses_automatically_with_a_note():
    with module_scope() as enter:
        loss, _ = tiny_transformer(enter, blocks=4)
    full = len(build_model(loss).nodes)
    v = show_graph(loss, max_nodes=30)
    assert v.plan.count <= 30 < full
    assert any("collapsed to depth=" in n and "max_nodes=None" in n for n in v.notes)
    assert "collapsed to depth=" in footer(v)


def test_api_for_the_widgets():
    loss, _ = mlp()
    m = build_model(loss, view="backward")
    p = plan(m, max_nodes=None)
    dot = to_dot(m, plan=p, id_prefix="g1-")
    svg = render_svg(dot)
    ids = {g.get("id") for g in svg_groups(svg, "node")}
    for node, nid in m.node_ids.items():
        assert "g1-" + p.element_of[nid] in ids
    assert m.id_for_seq[loss.grad_fn.seq] == m.node_ids[loss.grad_fn]


# ------------------------------------------------------------ output formats
def test_real_nn_modules_group_by_their_recorded_paths():
    import gradlab.nn as nn
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    loss = (model(gradlab.randn(3, 4)) ** 2).mean()
    v = show_graph(loss, depth=1, params=dict(model.named_parameters()))
    groups = {n.path: n for n in v.plan.items.values() if n.kind == "group"}
    assert set(groups) == {"0", "1", "2", "3", "4"}
    assert groups["0"].module_type == "Linear" and groups["0"].param_count == 4 * 8 + 8
    expanded = show_graph(loss, params=dict(model.named_parameters()))
    names = {t.name for t in expanded.model.tensors if t.role == "parameter"}
    assert names == set(dict(model.named_parameters()))


def test_backward_view_collapses_and_boxes_report_grads():
    with module_scope() as enter:
        loss, params = tiny_transformer(enter, blocks=2)
    skip = params["blocks.1.mlp.w2"]
    loss.backward(inputs=[p for k, p in params.items() if p is not skip])
    v = show_graph(loss, view="backward", depth=2, fold=False)
    g = dot_graph(v)
    box0, box1 = dict(g.get_node("mod_blocks_0").attr), dict(g.get_node("mod_blocks_1").attr)
    norm0 = np.sqrt(sum(np.sum(p.grad._data.astype(np.float64) ** 2)
                        for k, p in params.items() if k.startswith("blocks.0.")))
    assert f"total norm {norm0:.3g}" in box0["label"] and "missing-grad" not in box0["class"]
    assert "missing-grad" in box1["class"] and "grad: None for 1" in box1["label"]
    # a leaf's AccumulateGrad inside a box maps to that box; grad edges keep their kind
    acc = next(n for n, nid in v.model.node_ids.items() if getattr(n, "variable", None) is skip)
    assert v.element_id(acc) == "mod_blocks_1"
    assert all(e.attr["class"] == "grad" for e in g.edges() if "legend" not in e.attr.get("class", ""))
    assert g.in_degree(v.model.root_id) == 0


def test_bad_view_and_depth_are_named_in_the_error():
    loss, _ = mlp()
    with pytest.raises(ValueError, match="view must be 'forward' or 'backward', got 'sideways'"):
        show_graph(loss, view="sideways")
    with pytest.raises(ValueError, match="depth must be None or >= 0, got -1"):
        show_graph(loss, depth=-1)


@pytest.mark.parametrize("view", ["forward", "backward"])
def test_random_programs_draw_every_node_and_edge(view):
    """Random small programs: every recorded node is drawn once, every input edge carries its shape."""
    from hypothesis import given, strategies as st

    unary = [gradlab.tanh, gradlab.exp, gradlab.relu, lambda a: a * 2.0, lambda a: a.sum(dim=-1, keepdim=True)]
    binary = [gradlab.add, gradlab.mul, gradlab.sub, gradlab.maximum]

    @given(st.lists(st.tuples(st.booleans(), st.integers(0, 99), st.integers(0, 99)), min_size=1, max_size=12))
    def check(steps):
        vals = [gradlab.randn(3, 4, requires_grad=True), gradlab.randn(3, 4), gradlab.randn(3, 4, requires_grad=True)]
        for is_binary, i, j in steps:
            a = vals[i % len(vals)]
            if is_binary:
                vals.append(binary[j % len(binary)](a, vals[j % len(vals)]))
            else:
                vals.append(unary[j % len(unary)](a))
        root = vals[-1].sum()
        v = show_graph(root, view=view, max_nodes=None)
        if root.grad_fn is None:                        # built from the constant only
            assert len(drawn_nodes(dot_graph(v))) == 1 and v.reason
            return
        ops, accs = collect(root.grad_fn)
        g = dot_graph(v)
        nodes = drawn_nodes(g)
        assert {v.model.node_ids[n] for n in ops} == {k for k, a in nodes.items() if a["class"].startswith("op")}
        assert {v.model.node_ids[a] for a in accs} <= set(nodes)
        for n in ops:
            nid = v.model.node_ids[n]
            for i, e in enumerate(n.next_functions):
                if n.input_meta[i] is None or (e is None and view == "backward"):
                    continue                            # a plain Python argument / no gradient flows
                eid = f"e_{nid}_in{i}" if view == "forward" else f"g_{nid}_in{i}"
                edge = next(x for x in g.edges() if x.attr["id"] == eid)
                assert edge.attr["label"] == fmt_shape(n.input_meta[i][0])
        ET.fromstring(v.svg())                           # Graphviz accepted it and the SVG is well-formed
    check()
