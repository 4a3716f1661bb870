"""The array paths (``vjp_arrays``) of softmax, log_softmax, nll_loss, gelu, silu, softplus, embedding, dropout.

``tests/test_vjp_arrays.py`` compares every twin met in the registry samples' graphs
with its ``vjp``. Here: the twins of the *backward* ops (``softmax_backward`` & co,
which only appear in the graph of a gradient made with ``create_graph=True``),
the embedding's sort-based scatter-add against ``np.add.at``, and extreme or
16-bit values where a twin computes in place.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradlab
import gradlab.nn.functional as F
from gradlab.ops.embedding_lookup import _rows_added

from .test_vjp_arrays import _compare_node, _nodes


def _x(shape, seed=0, scale=2.0):
    return gradlab.tensor(np.random.default_rng(seed).standard_normal(shape) * scale, requires_grad=True)


@pytest.mark.parametrize("name,f", [
    ("softmax_backward", lambda x: F.softmax(x, dim=-1)),
    ("softmax_backward", lambda x: F.softmax(x, dim=0)),
    ("log_softmax_backward", lambda x: F.log_softmax(x, dim=1)),
    ("nll_loss_backward", lambda x: F.nll_loss(x, gradlab.tensor([0, 2, 1]), reduction="none")),
    ("nll_loss_backward", lambda x: F.nll_loss(x, gradlab.tensor([0, 2, 1]))),
])
def test_twins_of_the_backward_ops_equal_their_vjp(name, f):
    x = _x((3, 4))
    y = f(x)
    v = gradlab.tensor(np.random.default_rng(1).standard_normal(y.shape), requires_grad=True)
    (gx,) = gradlab.autograd.grad(y, [x], v,
                                  create_graph=True)
    nodes = [n for n in _nodes(gx) if n.name == name]
    assert nodes, f"no {name} node in the gradient's graph"
    for n in nodes:
        assert n.vjp_arrays is not None
        _compare_node(n, np.random.default_rng(2))


def test_second_derivatives_without_create_graph_use_the_twins():
    """A gradient of a gradient: the outer backward runs the backward ops' array paths (gelu_backward, which
    has none, through its ``vjp`` on wrapped arrays); compare with the ops path."""
    x = _x((2, 5))
    outs = []
    for create in (False, True):
        (g,) = gradlab.autograd.grad(F.gelu(F.softmax(x, dim=-1) * 3, approximate="tanh").sum(), [x],
                                     create_graph=True)
        (gg,) = gradlab.autograd.grad((g * g).sum(), [x], create_graph=create)
        outs.append(gg.detach().numpy())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape,n", [((2048,), 65), ((7, 3), 4), ((64,), 64), ((0,), 3), ((5,), 1)])
def test_rows_added_equals_add_at(shape, n):
    rng = np.random.default_rng(3)
    ids = rng.integers(0, n, shape) if n > 1 else np.zeros(shape, dtype=np.int64)
    g = rng.standard_normal(shape + (6,))
    want = np.zeros((n, 6))
    np.add.at(want, ids.reshape(-1), g.reshape(-1, 6))
    got = _rows_added(ids, g.reshape(-1, 6), n)
    assert got.shape == (n, 6) and got.dtype == g.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_embedding_gradient_with_padding_and_frequency_scaling(torch):
    ids = np.array([[1, 3, 3, 0], [2, 3, 1, 1]])
    w0 = np.random.default_rng(4).standard_normal((5, 3))
    g = np.random.default_rng(5).standard_normal((2, 4, 3))
    for kw in (dict(), dict(padding_idx=3), dict(scale_grad_by_freq=True), dict(padding_idx=1, scale_grad_by_freq=True)):
        w = gradlab.tensor(w0, requires_grad=True)
        F.embedding(gradlab.tensor(ids), w, **kw).backward(gradlab.tensor(g))
        tw = torch.tensor(w0, requires_grad=True)
        torch.nn.functional.embedding(torch.tensor(ids), tw, **kw).backward(torch.tensor(g))
        np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-12, atol=1e-12, err_msg=str(kw))


def test_dropout_twin_uses_the_forward_mask():
    x = gradlab.ones(1000, requires_grad=True)
    y = F.dropout(x, p=0.3)
    y.backward(gradlab.ones(1000))
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_activations_at_extreme_values_stay_finite_and_match_pytorch(torch, dtype):
    vals = np.array([-1e4, -300.0, -60.0, -20.0, -3.0, -1e-3, 0.0, 1e-3, 3.0, 20.0, 60.0, 300.0, 1e4])
    if dtype == "float16":
        vals = vals[np.abs(vals) < 6e4]
    cases = [("gelu tanh", lambda F_, x: F_.gelu(x, approximate="tanh")), ("gelu", lambda F_, x: F_.gelu(x)),
             ("silu", lambda F_, x: F_.silu(x)), ("softplus", lambda F_, x: F_.softplus(x, beta=2.0, threshold=5.0)),
             ("softmax", lambda F_, x: F_.softmax(x, dim=0)), ("log_softmax", lambda F_, x: F_.log_softmax(x, dim=0))]
    for name, f in cases:
        x = gradlab.tensor(vals, dtype=getattr(gradlab, dtype), requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no overflow warning leaks out of the in-place twins
            f(F, x).backward(gradlab.ones(vals.shape, dtype=x.dtype))
        tx = torch.tensor(vals, dtype=getattr(torch, dtype), requires_grad=True)
        f(torch.nn.functional, tx).backward(torch.ones(vals.shape, dtype=tx.dtype))
        ours, theirs = x.grad.numpy().astype(np.float64), tx.grad.double().numpy()
        assert np.isfinite(ours).all(), (name, ours)
        tol = 2e-3 if dtype == "float16" else 1e-5
        np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol, err_msg=name)


def test_the_gpt_steps_ops_have_array_twins():
    from gradlab.ops import (
        activations,
        dropout as _ops_dropout,
        embedding_lookup as _ops_embedding,
        layer_batch_norm as _ops_norm,
        nll_loss as _ops_loss,
        softmax_ops,
    )
    for cls in (_ops_norm.LayerNorm, softmax_ops.Softmax, softmax_ops.LogSoftmax, softmax_ops.SoftmaxBackward,
                softmax_ops.LogSoftmaxBackward, _ops_loss.NLLLoss, _ops_loss.NLLBackward, _ops_embedding.Embedding, _ops_dropout.Dropout,
                activations.Gelu, activations.Silu, activations.Softplus,
                activations.LeakyRelu):
        assert cls.vjp_arrays is not None, cls.name
