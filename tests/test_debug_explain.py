"""explain_grad: one small reproducer per cause of a missing or zero gradient."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
import gradlab.nn as nn
import gradlab.optim as optim
from gradlab.debug import DebugInputError, Explanation, explain_grad, track_grads, watch


def _w(*shape):
    w = gradlab.randn(*shape, requires_grad=True)
    w.name = "w"
    return w


def test_requires_grad_false():
    x = gradlab.randn(3)
    loss = (x * 2).sum()
    e = explain_grad(x, loss)
    assert isinstance(e, Explanation)
    assert e.cause == "requires_grad_false"
    assert "does not require grad" in e.verdict
    assert str(e).splitlines()[0].startswith("explain_grad(")  # verdict first
    assert "**" in e._repr_markdown_()


def test_frozen_parameter():
    lin = nn.Linear(3, 2)
    lin.weight.requires_grad_(False)
    lin(gradlab.randn(4, 3)).sum().backward()
    assert explain_grad(lin.weight).cause == "requires_grad_false"


def test_non_leaf_without_retain_grad():
    w = _w(3)
    h = w * 2
    loss = (h * h).sum()
    loss.backward()
    assert h.grad is None
    e = explain_grad(h, loss)
    assert e.cause == "non_leaf_no_retain_grad"
    assert "retain_grad()" in e.verdict
    # the fix works: with retain_grad the gradient is there and the verdict is "ok"
    h2 = w * 2
    h2.retain_grad()
    (h2 * h2).sum().backward()
    assert explain_grad(h2).cause == "ok"


def test_detach_static_and_recorded():
    w, v = _w(4), _w(4)
    # static: a saved tensor shares w's storage and version counter
    loss = (w.detach() * v).sum()
    loss.backward(retain_graph=True)  # the static check reads the saved tensors
    e = explain_grad(w, loss)
    assert w.grad is None and e.cause == "detached"
    # recorded: the line is named
    e2 = explain_grad(w, loss=lambda: (w.detach() * 3.0).sum())
    assert e2.cause == "detached"
    assert "test_debug_explain.py" in e2.verdict


def test_no_grad_cut_names_the_line():
    w = _w(3)
    x = gradlab.randn(3)

    def forward():
        with gradlab.no_grad():
            h = w * 2  # the cut
        return (h * x).sum()

    e = explain_grad(w, loss=forward)
    assert e.cause == "no_grad"
    assert "h = w * 2" in e.verdict


def test_integer_cast():
    w = _w(5)
    x = gradlab.randn(5)
    e = explain_grad(w, loss=lambda: (w.long().float() * x).sum())
    assert e.cause == "integer_cast"
    # statically: a saved tensor holds w's values truncated to integers
    w2 = gradlab.tensor([0.5, 1.7, -2.2, 3.9], requires_grad=True)
    v = _w(4)
    loss = (w2.long().float() * v).sum()
    assert explain_grad(w2, loss).cause == "integer_cast"


def test_numpy_round_trip():
    w, v = _w(4), _w(4)
    e = explain_grad(w, loss=lambda: (gradlab.tensor(w.detach().numpy()) * v).sum())
    assert e.cause == "numpy_round_trip"
    # from_numpy shares memory; the static check finds it in the saved tensors
    loss = (gradlab.from_numpy(w.detach().numpy().copy()) * v).sum()
    assert explain_grad(w, loss).cause == "numpy_round_trip"


def test_not_used():
    w, v = _w(3), _w(3)
    loss = (v * v).sum()
    e = explain_grad(w, loss)
    assert e.cause == "not_used"
    assert any("leaves" in c for c in e.checked)  # says what was checked
    assert explain_grad(w, loss=lambda: (v * 2).sum()).cause == "not_used"


def test_not_in_optimizer():
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 1))
    opt = optim.SGD(model[0].parameters(), lr=0.1)  # forgot the second layer
    model(gradlab.randn(2, 3)).sum().backward()
    e = explain_grad(model[1].weight, optimizer=opt)
    assert e.cause == "not_in_optimizer"
    assert explain_grad(model[0].weight, optimizer=opt).cause == "ok"
    with pytest.raises(DebugInputError, match="param_groups"):
        explain_grad(model[0].weight, optimizer=object())


def test_dead_relu_fraction():
    lin = nn.Linear(4, 6)
    lin.bias._data[:] = -100.0  # every unit's input is negative: all ReLUs dead
    head = nn.Linear(6, 1)
    x = gradlab.randn(8, 4)
    loss = head(lin(x).relu()).sum()
    loss.backward(retain_graph=True)
    assert not lin.weight.grad._data.any()
    e = explain_grad(lin.weight, loss)
    assert e.cause == "dead_relu"
    assert "100%" in e.verdict
    # with a function the forward is rerun, so it works after the graph was freed too
    lin.weight.grad = None
    e2 = explain_grad(lin.weight, loss=lambda: head(lin(x).relu()).sum())
    assert e2.cause == "dead_relu"


def test_half_dead_relu_reports_fraction():
    w = _w(4, 4)
    x = gradlab.randn(8, 4)
    b = gradlab.tensor([0.0, 0.0, -100.0, -100.0])
    out = (x @ w + b).relu()
    loss = (out[:, 2:] * 1.0).sum()  # only the dead half reaches the loss
    loss.backward(retain_graph=True)
    e = explain_grad(w, loss)
    assert e.cause == "dead_relu"
    frac = [line for line in e.evidence if "units are dead" in line][0]
    expected = float((out._data <= 0).all(axis=0).mean())
    assert f"{expected:.0%}" in frac


@pytest.mark.parametrize("act,cause", [("sigmoid", "saturated_sigmoid"), ("tanh", "saturated_tanh")])
def test_saturation(act, cause):
    w = _w(5)
    loss = (getattr(w * 1000.0 + 1000.0, act)() * 3.0).sum()
    loss.backward(retain_graph=True)
    assert not w.grad._data.any()
    assert explain_grad(w, loss).cause == cause


def test_cleared_by_zero_grad():
    model = nn.Linear(3, 1)
    opt = optim.SGD(model.parameters(), lr=0.1)
    loss = model(gradlab.randn(4, 3)).sum()
    loss.backward()
    opt.zero_grad()  # set_to_none=True: the gradient is gone before anyone read it
    e = explain_grad(model.weight, loss)
    assert e.cause == "cleared_by_zero_grad"
    # zero-filled variant, with the graph kept: the graph still gives a nonzero gradient
    loss = model(gradlab.randn(4, 3)).sum()
    loss.backward(retain_graph=True)
    opt.zero_grad(set_to_none=False)
    assert explain_grad(model.weight, loss).cause == "cleared_by_zero_grad"


def test_cleared_seen_by_track_grads():
    w = _w(3)
    assert track_grads([w]) == 1
    (w * 2).sum().backward()
    w.grad = None
    e = explain_grad(w)
    assert e.cause == "cleared_by_zero_grad"
    assert any("track_grads" in line for line in e.evidence)


def test_backward_not_run_and_ok():
    w = _w(3)
    loss = (w * 3).sum()
    assert explain_grad(w, loss).cause == "backward_not_run"
    loss.backward()
    e = explain_grad(w, loss)
    assert e.cause == "ok" and np.allclose(w.grad._data, 3)


def test_zero_for_another_reason():
    w = _w(3)
    loss = (w * 0.0).sum()
    loss.backward(retain_graph=True)
    assert explain_grad(w, loss).cause == "zero_other"


def test_watch_recording_is_used_for_a_loss_tensor():
    w = _w(3)
    with watch():
        with gradlab.no_grad():
            h = w + 1
        loss = (h * 2).sum()
    assert explain_grad(w, loss).cause == "no_grad"


def test_bad_input():
    with pytest.raises(DebugInputError, match="must be a gradlab Tensor"):
        explain_grad(np.zeros(3))
    with pytest.raises(DebugInputError, match="loss must be"):
        explain_grad(_w(2), loss=3)
    assert isinstance(DebugInputError("x"), gradlab.GradlabError)


def test_cleared_seen_in_optimizer_state():
    model = nn.Linear(3, 1)
    opt = optim.Adam(model.parameters())
    model(gradlab.randn(4, 3)).sum().backward()
    opt.step()
    opt.zero_grad()
    e = explain_grad(model.weight, optimizer=opt)
    assert e.cause == "cleared_by_zero_grad"
    assert any("optimizer keeps state" in line for line in e.evidence)


def test_graphless_loss_says_the_path_was_cut():
    w = _w(3)
    loss = (w.detach() * 2).sum()  # nothing in the loss requires grad: no trace of w anywhere
    e = explain_grad(w, loss)
    assert e.cause == "path_cut"
    assert "detach()" in e.verdict and "no_grad()" in e.verdict and "function" in e.verdict


def test_ok_gradient_notes_partly_dead_relus():
    w = _w(4, 4)
    x = gradlab.randn(8, 4)
    b = gradlab.tensor([0.0, 0.0, 0.0, -100.0])  # one unit of four is dead
    loss = (x @ w + b).relu().sum()
    loss.backward(retain_graph=True)
    e = explain_grad(w, loss)
    assert e.cause == "ok" and "25%" in e.verdict and "dead" in e.verdict


def test_dead_relus_after_backward_freed_the_graph():
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 1))
    model[0].bias._data[:] = -100.0
    model[2].bias._data[:] = -100.0
    x = gradlab.randn(8, 4)
    loss = model(x).sum()
    loss.backward()  # frees the saved relu outputs
    e = explain_grad(model[0].weight, loss)
    assert e.cause == "dead_relu" and "cannot be measured" in e.verdict
    e2 = explain_grad(model[0].weight, loss=lambda: model(x).sum())  # rerun: now measured
    assert e2.cause == "dead_relu" and "100%" in e2.verdict


def test_live_detached_copy_is_found_for_a_graphless_loss():
    w = _w(4, 3)
    frozen_copy = w.detach()  # the bug: the model uses a detached copy
    x = gradlab.randn(2, 4)
    loss = (x @ frozen_copy).sum()
    e = explain_grad(w, loss)
    assert e.cause == "detached" and "most likely" in e.verdict
    assert any("detach() copy" in line for line in e.evidence)
    del frozen_copy
