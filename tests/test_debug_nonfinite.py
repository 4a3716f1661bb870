"""find_nonfinite: the first op that made a NaN/Inf, its line, input ranges and likely cause."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
import gradlab.nn as nn
from gradlab.debug import DebugInputError, NonfiniteReport, find_nonfinite


def test_log_of_zero_forward():
    x = gradlab.tensor([0.0, 1.0, 2.0], requires_grad=True)

    def f():
        y = x * 2
        return y.log().sum()  # the culprit line

    r = find_nonfinite(f)
    assert isinstance(r, NonfiniteReport) and r.found
    assert (r.phase, r.op) == ("forward", "log")
    assert "log of 0" in r.likely_cause
    assert "y.log().sum()" in str(r.site) and "test_debug_nonfinite.py" in str(r.site)
    assert r.inputs[0][1].startswith("0 .. 4")  # the input range of log's input
    assert str(r).startswith("find_nonfinite: the first non-finite value")


def test_exp_overflow_float16():
    x = gradlab.tensor([1.0, 5.0, 12.0])
    r = find_nonfinite(lambda: x.half().exp().sum())
    assert r.op == "exp" and "float16" in r.likely_cause and "11.09" in r.likely_cause
    assert not np.isfinite(np.exp(np.float16(12.0)))  # the premise: float16 overflows there


def test_division_by_zero():
    a = gradlab.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = gradlab.tensor([1.0, 0.0, 2.0])
    r = find_nonfinite(lambda: (a / b).sum())
    assert r.op == "div" and "division by zero" in r.likely_cause


def test_softmax_without_max_subtraction():
    logits = gradlab.tensor([[10.0, 100.0, 1000.0]], requires_grad=True)

    def naive_softmax(z):
        e = z.exp()
        return e / e.sum(dim=-1, keepdim=True)

    r = find_nonfinite(lambda: naive_softmax(logits).sum())
    assert r.op == "exp"
    assert "softmax without max-subtraction" in r.likely_cause
    # the stable form finds nothing
    stable = find_nonfinite(lambda: naive_softmax(logits - logits.amax(dim=-1, keepdim=True)).sum())
    assert not stable.found


def test_backward_sqrt_at_zero():
    x = gradlab.tensor([0.0, 1.0, 4.0], requires_grad=True)

    def f():
        return x.sqrt().sum()  # finite forward, infinite gradient at 0

    r = find_nonfinite(f)
    assert r.found and r.phase == "backward" and r.op == "sqrt"
    assert "x.sqrt().sum()" in str(r.site)
    assert "sqrt" in r.likely_cause
    assert x.grad is None  # the check does not touch .grad


def test_model_and_loss_tensor():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    x = gradlab.randn(5, 3)
    assert not find_nonfinite(model, x).found
    x_bad = x.clone()
    x_bad._data[0, 0] = np.nan
    r = find_nonfinite(model, x_bad)
    assert r.found and r.phase == "forward" and "already contains NaN" in r.likely_cause
    assert r.module == "0"  # the first Linear, from node.meta["module"]
    # a loss tensor: backward is still checked
    w = gradlab.tensor([0.0, 1.0], requires_grad=True)
    loss = (w ** 0.5).sum()
    r = find_nonfinite(loss)
    assert r.found and r.phase == "backward" and r.op == "pow"
    # a non-finite loss tensor: the graph's saved tensors point at the op
    z = gradlab.tensor([0.0, 1.0], requires_grad=True)
    r = find_nonfinite((z.log() * 2).sum())
    assert r.found and r.phase == "forward"


def test_nothing_found_and_bad_input():
    w = gradlab.randn(3, requires_grad=True)
    r = find_nonfinite(lambda: (w * 2).sum())
    assert not r and "no NaN/Inf" in r.verdict and r.ops_checked == 2
    r = find_nonfinite(lambda: gradlab.randn(3).sum())
    assert not r.found and "no graph" in r.verdict
    with pytest.raises(DebugInputError, match="expected a model"):
        find_nonfinite(42)
    with pytest.raises(DebugInputError, match="returned"):
        find_nonfinite(lambda: 3.0)


def test_works_alongside_detect_anomaly():
    detect = pytest.importorskip("gradlab.autograd.anomaly", reason="anomaly detection has not landed").detect_anomaly
    x = gradlab.tensor([0.0, 1.0], requires_grad=True)
    with detect():
        loss = x.sqrt().sum()  # created with anomaly on: node.meta["creation"] has this line
        r = find_nonfinite(loss)
    assert r.found and r.phase == "backward" and r.op == "sqrt"
    assert "x.sqrt().sum()" in str(r.site)


def test_loss_fn_for_a_model():
    model = nn.Sequential(nn.Linear(3, 2))
    x = gradlab.randn(4, 3)
    target = gradlab.tensor([1.0, 0.0])
    r = find_nonfinite(model, x, loss_fn=lambda out: (out.sigmoid() * 0.0 + target).log().sum())
    assert r.found and r.op == "log" and "log of 0" in r.likely_cause


def test_nonfinite_loss_tensor_points_at_the_culprit():
    x = gradlab.tensor([0.0, 1.0, 2.0], requires_grad=True)
    r = find_nonfinite((x * 2).log().sum())
    assert r.found and r.op == "log" and "log of 0" in r.likely_cause
    a = gradlab.tensor([1.0, 2.0], requires_grad=True)
    b = gradlab.tensor([0.0, 1.0], requires_grad=True)
    r = find_nonfinite(((a / b) * 3).sum())
    assert r.op == "div" and "division by zero" in r.likely_cause
    r = find_nonfinite(((a * 100).exp() * 3).sum())
    assert r.op == "exp" and "exp overflow" in r.likely_cause
