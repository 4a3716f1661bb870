"""The lessons' reference answers (gradlab/course/lessons.py) are right: a wrong reference would mark a right student wrong."""
from __future__ import annotations

import pathlib

import numpy as np

import gradlab
import gradlab.nn.functional as F
from gradlab.course import lessons

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_topological_order_is_valid_on_diamonds_and_deeper_than_the_recursion_limit():
    a = gradlab.tensor([0.5, -1.0], requires_grad=True)
    d = a
    for _ in range(5):
        d = d * 0.5 + d.tanh()
    deep = a
    for _ in range(3000):
        deep = deep * 1.0
    for root in (d.sum(), deep.sum()):
        report = lessons.order_report(lessons.topological_order(root), root)
        assert all(v for k, v in report.items() if k != "number of nodes"), report
        assert report["number of nodes"] == len(lessons.graph_nodes(root))


def test_leaf_names_and_saved_bytes():
    x = gradlab.randn(4, 3); x.name = "x"
    w = gradlab.randn(3, 2, requires_grad=True); w.name = "w"
    b = gradlab.zeros(2, requires_grad=True); b.name = "b"
    loss = (x @ w + b).tanh().sum()
    assert lessons.leaf_names(loss) == ["b", "w"]
    assert lessons.saved_bytes(loss) > 0
    with gradlab.no_grad():
        assert lessons.saved_bytes((x @ w).sum()) == 0


def test_causal_softmax_masks_the_future_and_matches_sdpa():
    rng = np.random.default_rng(0)
    q, k, v = (gradlab.tensor(rng.standard_normal((2, 5, 4))) for _ in range(3))
    w = lessons.causal_softmax(q @ k.transpose(-2, -1) / 2.0)
    assert np.allclose(np.triu(w.numpy(), 1), 0) and np.allclose(w.numpy().sum(-1), 1)
    assert np.allclose((w @ v).numpy(), F.scaled_dot_product_attention(q, k, v, is_causal=True).numpy())
    assert lessons.split_heads(gradlab.zeros(2, 5, 12), 3).shape == (2, 3, 5, 4)


def test_gradcheck_report_passes_right_gradients_and_catches_a_wrong_one():
    class Half(gradlab.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 3

        @staticmethod
        def backward(ctx, g):
            return g * 1.5

    x = gradlab.tensor([0.3, -0.7, 1.1], dtype=gradlab.float64, requires_grad=True)
    before = x.detach().numpy().copy()
    assert lessons.gradcheck_report(lambda t: t.tanh() * t, x) == "ok"
    assert lessons.gradcheck_report(Half.apply, x).startswith("mismatch at input 0, output 0")
    assert np.array_equal(x.detach().numpy(), before)


def test_where_points_at_the_definition():
    text = lessons.where(gradlab.autograd.engine.backward)
    path, line = text.split(":")
    assert (ROOT / path).read_text().splitlines()[int(line) - 1].lstrip().startswith("def backward(")
    assert lessons.where("gradlab.ops.registry") == "gradlab/ops/registry.py"
    assert "gradlab.data.DataLoader" in lessons.where_table(["gradlab.data.DataLoader"])
    assert lessons.matmul_intensity(2, 2, 2) == 2 * 8 / (4 * 12)
