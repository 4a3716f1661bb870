"""The backward/forward recorders and the widgets' payload (no browser; see tests/browser for that)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import gradlab
from gradlab.autograd import engine
from gradlab.viz.record import BackwardRecorder, observing_backward, record_backward, record_forward, summed_axes


class _Order:
    """The plainest observer: the engine's node order, to compare the recorder with."""

    def __init__(self):
        self.nodes = []

    def node_start(self, node, grads):
        self.nodes.append(node)

    def node_end(self, node, grads_in, grads_out):
        pass


def _mlp():
    x = gradlab.randn(5, 4, requires_grad=True)
    W = gradlab.randn(4, 3, requires_grad=True)
    b = gradlab.randn(3, requires_grad=True)
    return x, W, b, lambda x: ((x @ W + b).tanh() * x.sum(dim=1, keepdim=True)).sum()


def test_recorded_steps_are_the_engines_order_and_results():
    x, W, b, f = _mlp()
    loss = f(x)
    plain = _Order()
    engine.backward_observers.append(plain)
    try:
        rec = record_backward(loss)
    finally:
        engine.backward_observers.remove(plain)
    assert [s.node for s in rec.steps] == plain.nodes
    # a leaf's recorded .grad after its step is what the engine left in .grad
    for s in rec.steps:
        if s.leaf_after is not None:
            np.testing.assert_array_equal(s.leaf_after.array.reshape(s.leaf_after.shape),
                                          s.node.variable.grad.numpy())


def test_broadcast_axes_and_the_summed_gradient():
    a = gradlab.randn(2, 3, 4, requires_grad=True)
    b = gradlab.randn(3, 1, requires_grad=True)
    rec = record_backward((a * b).sum())
    mul = next(s for s in rec.steps if s.name == "mul")
    out_b = next(o for o in mul.grads_out if o.input == 1)
    assert out_b.summed_axes == summed_axes((2, 3, 4), (3, 1)) == (0, 2)
    # the gradient sent to b is the full-shape gradient dY * a summed over exactly those axes
    full = np.ones((2, 3, 4)) * a.detach().numpy()
    np.testing.assert_allclose(out_b.value.array.reshape(3, 1), full.sum(axis=(0, 2)).reshape(3, 1), rtol=1e-5)
    assert next(o for o in mul.grads_out if o.input == 0).summed_axes is None
    assert summed_axes((3, 4), (5, 4)) is None      # not a broadcast pair


def test_a_tensor_used_several_times_shows_each_contribution_accumulated():
    x = gradlab.randn(3, requires_grad=True)
    y = (x * 2).sum() + (x * x).sum()
    rec = record_backward(y)
    acc = next(s for s in rec.steps if s.leaf_after is not None)
    # x is used three times (x * 2, and both inputs of x * x): three gradients are added up into x.grad
    assert len(acc.contributions) == 3
    assert sorted(i for _, i in acc.contributions) == [0, 0, 1]
    assert acc.leaf_before is None
    np.testing.assert_allclose(acc.leaf_after.array, 2 + 2 * x.detach().numpy(), rtol=1e-6)


def test_memory_timeline_rises_in_forward_and_falls_in_backward():
    x, W, b, f = _mlp()
    out, frec = record_forward(f, x)
    grows = [s.saved_bytes for s in frec.steps]
    assert grows == sorted(grows) and grows[-1] > 0
    view = gradlab.show_graph(out)
    assert frec.saved_bytes == view.model.memory.saved     # each array counted once, as show_graph counts
    rec = record_backward(out)
    assert rec.start_bytes == frec.saved_bytes
    falls = [s.saved_bytes for s in rec.steps]
    assert falls == sorted(falls, reverse=True) and falls[-1] == 0
    assert sum(s.saved_freed for s in rec.steps) == rec.start_bytes


def test_retain_graph_keeps_the_saved_tensors():
    x, W, b, f = _mlp()
    loss = f(x)
    rec = BackwardRecorder()
    with observing_backward(rec):
        loss.backward(retain_graph=True)
    assert rec.start_bytes > 0 and all(s.saved_bytes == rec.start_bytes for s in rec.steps)


def test_forward_steps_come_in_creation_order_with_user_sites():
    x, W, b, f = _mlp()
    out, frec = record_forward(f, x)
    seqs = [s.node.seq for s in frec.steps]
    assert seqs == sorted(seqs) and len(seqs) == 6
    assert all(s.site and "test_viz_widgets.py" in s.site for s in frec.steps)


# ---------------------------------------------------------------- widgets
@pytest.fixture
def widgets():
    pytest.importorskip("anywidget", reason="the widgets need anywidget (pip install 'gradlab[lab]')")
    from gradlab.viz import widgets
    return widgets


def test_animate_backward_payload(widgets):
    x, W, b, f = _mlp()
    loss = f(x)
    w = gradlab.animate_backward(loss)
    assert W.grad is not None                      # the backward really ran
    assert len(w.frames) == len(w.order) > 0
    for fr in w.frames:
        assert fr["n"] in w.nodes and f'id="{fr["n"]}"' in w.svg   # each step's node is addressable in the SVG
    json.dumps({"n": w.nodes, "f": w.frames}, allow_nan=False)
    data, _ = w._repr_mimebundle_()
    assert data["image/svg+xml"].startswith("<svg") and "application/vnd.jupyter.widget-view+json" in data
    leaf = next(k for k, v in w.nodes.items() if v.get("role") in ("leaf", "parameter") and v["shape"] == [4, 3])
    assert w.nodes[leaf]["grad"]["s"] == [4, 3] and w.nodes[leaf]["strides"] == [3, 1]


def test_nonfinite_gradients_stay_json_safe(widgets):
    x = gradlab.tensor([1.0, 0.0, -1.0], requires_grad=True)
    w = gradlab.animate_backward(x.log().sum())       # log(0) -> inf; log(-1) -> nan
    text = json.dumps(w.frames, allow_nan=False)
    assert '"inf"' in text or '"nan"' in text


def test_animate_forward_then_backward_and_graph_widget(widgets):
    x, W, b, f = _mlp()
    w = gradlab.animate_forward(f, x)
    fw = [fr for fr in w.frames if fr.get("fw")]
    assert len(fw) == 6 and len(w.frames) > len(fw)
    assert w.frames[-1]["mem"] == 0 and max(fr["mem"] for fr in w.frames) > 0
    assert isinstance(w.result, gradlab.Tensor)
    g = widgets.graph_widget(w.result)
    assert g.frames == [] and len(g.nodes) >= 6


def test_errors_name_the_problem(widgets):
    leaf = gradlab.randn(3, requires_grad=True)
    with pytest.raises(gradlab.GradError, match="animate_backward: the tensor has no graph"):
        gradlab.animate_backward(leaf)
    with pytest.raises(gradlab.ArgumentError, match="animate_forward: the first argument must be a function"):
        gradlab.animate_forward(leaf)


def test_assets_exist_and_import_gradlab_does_not_import_anywidget(widgets):
    d = widgets.asset_dir()
    assert (d / "graph_player.js").read_text().count("export default") == 1
    assert (d / "graph_player.css").is_file()
    code = "import sys, gradlab; gradlab.tensor(1.0); print('anywidget' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_exported_html_shows_the_static_graph(widgets):
    """Without stored widget state, nbconvert falls back to the bundle's image/svg+xml."""
    nbformat = pytest.importorskip("nbformat")
    nbconvert = pytest.importorskip("nbconvert")
    x = gradlab.randn(3, requires_grad=True)
    w = gradlab.animate_backward((x * x).sum())
    data, _ = w._repr_mimebundle_()
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("gradlab.animate_backward(loss)")
    cell.outputs = [nbformat.v4.new_output("display_data", data=data)]
    nb.cells = [cell]
    html, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    assert 'data-mime-type="image/svg+xml"' in html
