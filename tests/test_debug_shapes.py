"""trace_shapes: the table of op shapes and modules, and the table up to a shape error."""
from __future__ import annotations

import io

import pytest

import gradlab
import gradlab.nn as nn
from gradlab.debug import trace_shapes


class _MLP(nn.Module):
    def __init__(self, hidden_in=8):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(hidden_in, 2)

    def forward(self, x):
        return self.fc2(self.fc1(x).relu())


def test_table_lists_ops_shapes_and_modules():
    buf = io.StringIO()
    model = _MLP()
    x = gradlab.randn(5, 4)
    with trace_shapes(file=buf) as tr:
        out = model(x)
    text = buf.getvalue()
    assert out.shape == (5, 2)
    ops = [r.op for r in tr.rows]
    assert "matmul" in ops and "relu" in ops
    mm = [r for r in tr.rows if r.op == "matmul"]
    assert mm[0].inputs[0] == "(5, 4)" and mm[0].outputs == ["(5, 8)"] and mm[0].module == "fc1"
    assert mm[1].outputs == ["(5, 2)"] and mm[1].module == "fc2"
    relu = next(r for r in tr.rows if r.op == "relu")
    assert relu.inputs == ["(5, 8)"]
    assert "op" in text.splitlines()[0] and "input shapes" in text and "fc2" in text
    assert "<table" in tr._repr_html_()


def test_shape_error_prints_table_and_reraises_original():
    buf = io.StringIO()
    a = gradlab.randn(3, 4)
    b = gradlab.randn(5, 2)
    with pytest.raises(gradlab.ShapeError) as info:
        with trace_shapes(file=buf) as tr:
            c = a * 2
            c @ b  # inner dimensions 4 and 5 differ
    text = buf.getvalue()
    assert "matmul" in str(info.value)  # the original gradlab error, unchanged
    assert tr.failed is not None and tr.failed.op == "matmul"
    assert tr.failed.inputs == ["(3, 4)", "(5, 2)"]
    assert "FAILED" in text and "failed at op #1 (matmul)" in text
    assert "mul" in text and str(info.value) in text


def test_error_in_module_before_an_op():
    buf = io.StringIO()
    model = _MLP(hidden_in=3)  # fc2 expects 3 features, gets 8
    with pytest.raises(gradlab.ShapeError):
        with trace_shapes(file=buf) as tr:
            model(gradlab.randn(2, 4))
    text = buf.getvalue()
    last = tr.rows[-1]
    assert tr.failed is last and last.op == "linear" and last.module == "fc2"
    assert "(2, 8)" in last.inputs  # the shapes the layer was called with
    assert tr.rows[-2].op == "relu"
    assert f"failed at op #{last.index} (linear)" in text and "test_debug_shapes.py" in text


def test_empty_block():
    buf = io.StringIO()
    with trace_shapes(file=buf) as tr:
        pass
    assert tr.rows == [] and "no ops ran" in buf.getvalue()


def test_backward_ops_are_marked():
    w = gradlab.randn(3, 2, requires_grad=True)
    x = gradlab.randn(4, 3)
    with trace_shapes(file=io.StringIO()) as tr:
        (x @ w).sum().backward()
    ops = [r.op for r in tr.rows]
    assert ops[:2] == ["matmul", "sum"]
    assert any(o.endswith("(backward)") for o in ops[2:])
    assert all(o.endswith("(backward)") for o in ops[2:])


def test_silent_broadcast_is_flagged():
    pred = gradlab.randn(16, 1)
    target = gradlab.randn(16)
    buf = io.StringIO()
    with trace_shapes(file=buf) as tr:
        ((pred - target) ** 2).mean()   # (16, 1) - (16,) -> (16, 16): the classic bug
        (pred.squeeze(-1) - target).sum()  # the fix: no note
    sub = [r for r in tr.rows if r.op == "sub"]
    assert sub[0].outputs == ["(16, 16)"] and "both inputs broadcast" in sub[0].note
    assert sub[1].note is None
    assert all(r.note is None for r in tr.rows if r.op in ("pow", "mean", "sum"))
    assert "note" in buf.getvalue().splitlines()[0] and "intended?" in buf.getvalue()
