"""A foreign engine's graph drawn and animated by gradlab (``gradlab/viz/foreign_graph.py``), and the
gradient diff view (``gradlab/viz/grad_diff_view.py``), on micrograd's published ``Value`` (the real package)."""
from __future__ import annotations

import time

import numpy as np
import pytest

import gradlab
from gradlab.viz import EngineProtocolError, NotATensorError, grad_diff

micrograd_engine = pytest.importorskip("micrograd.engine", reason="micrograd (the dev extra) is not installed")
Value = micrograd_engine.Value


def _small():
    a, b, c = Value(2.0), Value(-3.0), Value(10.0)
    loss = ((a * b + c).relu() * a) ** 2
    return a, b, c, loss


def test_micrograd_value_is_drawn_forward_and_backward():
    a, b, c, loss = _small()
    gv = gradlab.show_graph(loss)
    ops = sorted(o.op for o in gv.model.ops)
    assert ops == sorted(["*", "+", "ReLU", "*", "**2"])
    names = {t.name for t in gv.model.tensors if t.role == "leaf"}
    assert names == {"a", "b", "c"}                      # the caller's variable names
    assert "<svg" in gv.svg()
    loss.backward()
    bv = gradlab.show_graph(loss, view="backward")
    leaf_a = next(t for t in bv.model.tensors if t.name == "a")
    assert leaf_a.grad is not None and leaf_a.grad.max == pytest.approx(a.grad)


def test_animate_backward_replays_micrograds_own_order():
    a, b, c, loss = _small()
    order = []                                           # micrograd's own topological order, reversed
    topo, seen = [], set()

    def build(v):
        if v not in seen:
            seen.add(v)
            for ch in v._prev:
                build(ch)
            topo.append(v)
    build(loss)
    w = gradlab.animate_backward(loss)
    model_ids = [w.order[i] for i in range(len(w.order))]
    assert len(w.frames) == len(topo)                    # one step per _backward call
    ops_in_order = [w.nodes[n]["label"] if w.nodes[n]["kind"] == "tensor" else w.nodes[n]["op"] for n in model_ids]
    order = [v._op or "leaf" for v in reversed(topo)]
    assert [o if o in ("*", "+", "ReLU", "**2") else "leaf" for o in ops_in_order] == order
    assert a.grad != 0 and w.nodes[w.order[0]]["op"] == "**2"
    first = w.frames[0]
    assert first["gout"] and first["gout"][0]["v"]["p"][0] == pytest.approx(2 * loss.data ** 0.5)


def test_an_object_without_the_protocol_names_what_is_missing_and_how_to_map():
    class Node:
        def __init__(self, value, children=(), how=""):
            self.value, self.gradient, self.children, self.how = value, 0.0, tuple(children), how

    n = Node(1.0)
    with pytest.raises(EngineProtocolError) as ei:
        gradlab.show_graph(Node(2.0, (n, n), "*"))
    msg = str(ei.value)
    assert "no inputs" in msg and "'_prev'" in msg and "no grad" in msg
    assert "attrs={'inputs': 'children', 'data': 'value', 'grad': 'gradient', 'op': 'how'}" in msg
    assert isinstance(ei.value, NotATensorError) and isinstance(ei.value, TypeError)
    gv = gradlab.show_graph(Node(2.0, (n,), "*"), attrs={"inputs": "children", "data": "value", "grad": "gradient",
                                                         "op": "how"})
    assert [o.op for o in gv.model.ops] == ["*"]
    with pytest.raises(gradlab.errors.ArgumentError, match="unknown role"):
        gradlab.show_graph(n, attrs={"kids": "children"})


def test_a_cycle_is_drawn_with_a_note_and_stepped():
    a = Value(1.0)
    b = a * 2
    c = b.relu()
    b._prev = {a, c}                 # a broken engine: b computed from c, which is computed from b
    gv = gradlab.show_graph(c)
    assert any("cycle" in n for n in gv.notes)
    w = gradlab.animate_backward(c)
    assert len(w.frames) >= 2


def _chain_micrograd(n):
    y = Value(0.5)
    for _ in range(n):
        y = (y * 0.999).relu()
    return y


def _chain_gradlab(n):
    y = gradlab.tensor(0.5, requires_grad=True)
    for _ in range(n):
        y = (y * gradlab.tensor(0.999, requires_grad=True)).relu()
    return y


def test_a_10k_node_graph_folds_and_steps_as_fast_as_gradlabs_own():
    n = 3334                          # 3 nodes per step (mul, its constant leaf, relu): ~10 000 nodes each
    times = {}
    for name, make in (("engine", _chain_micrograd), ("gradlab", _chain_gradlab)):
        root = make(n)
        t = time.perf_counter()
        gv = gradlab.show_graph(root)
        gv.svg()
        w = gradlab.animate_backward(make(n))
        times[name] = time.perf_counter() - t
        assert len(gv.model.nodes) >= 10_000
        assert gv.plan.count <= 400 and any("max_nodes" in x for x in gv.notes)   # folded by default
        assert len(w.frames) >= 10_000
    assert times["engine"] < 3 * times["gradlab"] + 1.0, times


def _bad_mul(self, other):
    """micrograd's __mul__ with a deliberately wrong VJP: the second operand's gradient has its sign flipped."""
    other = other if isinstance(other, Value) else Value(other)
    out = Value(self.data * other.data, (self, other), "*")

    def _backward():
        self.grad += other.data * out.grad
        other.grad -= self.data * out.grad
    out._backward = _backward
    return out


def test_the_diff_view_marks_the_first_wrong_gradient():
    x, y, w = Value(1.5), Value(0.5), Value(4.0)
    h = (x + y).relu()
    z = h * h + _bad_mul(x, w)
    z.backward()
    d = grad_diff(z)
    assert not d.ok and d.first.kind == "grad" and d.first.name == "w"
    assert d.first.student == pytest.approx(-1.5) and d.first.gradlab == pytest.approx(1.5)
    assert "'*'" in d.first.text
    gv = gradlab.show_graph(z, view="backward", compare=True)
    marked = [n for n in gv.model.nodes.values() if n.diff]
    assert [n.name for n in marked] == ["w"]
    assert "grad&#45;diff" in gv.svg()          # the class graphviz writes ('-' escaped)
    # the animation marks the same node, on its step
    x, y, w = Value(1.5), Value(0.5), Value(4.0)
    z = (x + y).relu() * (x + y).relu() + _bad_mul(x, w)
    anim = gradlab.animate_backward(z, compare=True)
    steps = [f for f in anim.frames if f.get("diff")]
    assert len(steps) == 1 and anim.nodes[steps[0]["n"]]["label"] == "w"
    assert "gradlab 1.5" in steps[0]["diff"]


def test_the_diff_view_agrees_on_a_correct_engine_and_with_given_grads():
    a, b, c, loss = _small()
    loss.backward()
    assert grad_diff(loss).ok
    d = grad_diff(loss, compare={a: a.grad, b: b.grad + 1.0})
    assert d.first is not None and d.first.name == "b" and d.first.gradlab == pytest.approx(b.grad + 1.0)


def test_the_diff_view_reports_a_wrong_forward_first():
    a = Value(2.0)
    y = a * a
    y.data = 5.0                      # a forward that computed the wrong value
    y.backward()
    d = grad_diff(y)
    assert d.first.kind == "value" and d.first.gradlab == pytest.approx(4.0)


def test_compare_on_gradlabs_own_graph_is_refused():
    x = gradlab.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(gradlab.errors.ArgumentError, match="nothing to compare"):
        gradlab.show_graph((x * 2).sum(), compare=True)
    assert np.allclose(x.detach().numpy(), [1.0, 2.0])
