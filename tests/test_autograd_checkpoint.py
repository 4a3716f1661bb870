"""Activation checkpointing: same gradients, far fewer saved bytes, dropout replayed."""
from __future__ import annotations

import numpy as np

import gradlab
import gradlab.nn.functional as F
from gradlab.autograd import graph
from gradlab.utils.checkpoint import checkpoint, checkpoint_sequential

D, LAYERS = 32, 8


def _params(seed=0):
    rng = np.random.default_rng(seed)
    return [(gradlab.tensor(rng.standard_normal((D, D)) / np.sqrt(D), dtype=gradlab.float32, requires_grad=True),
             gradlab.tensor(rng.standard_normal(D) * 0.1, dtype=gradlab.float32, requires_grad=True))
            for _ in range(LAYERS)]


def _layer(w, b, dropout=0.0):
    def f(h):
        h = (h @ w + b).tanh()
        return F.dropout(h, dropout) if dropout else h
    return f


def _block(layers):
    def f(h):
        for g in layers:
            h = g(h)
        return h
    return f


def _run(params, x, use_ckpt, dropout=0.0, per_block=4, **kw):
    """The 8-layer MLP; with ``use_ckpt`` each block of ``per_block`` layers is one checkpoint."""
    layers = [_layer(w, b, dropout) for w, b in params]
    h = x
    for i in range(0, len(layers), per_block):
        f = _block(layers[i:i + per_block])
        h = checkpoint(f, h, **kw) if use_ckpt else f(h)
    return (h * h).mean()


def _grads(params, x, use_ckpt, dropout=0.0, seed=0):
    for w, b in params:
        w.grad = b.grad = None
    x.grad = None
    gradlab.manual_seed(seed)
    loss = _run(params, x, use_ckpt, dropout)
    report = graph.saved_tensors(loss)
    loss.backward()
    return loss.item(), report, [x.grad._data.copy()] + [t.grad._data.copy() for p in params for t in p]


def test_checkpoint_gives_identical_gradients_and_saves_at_least_half():
    params = _params()
    x = gradlab.randn(64, D, requires_grad=True)
    l0, rep0, g0 = _grads(params, x, use_ckpt=False)
    l1, rep1, g1 = _grads(params, x, use_ckpt=True)
    assert l0 == l1
    for a, b in zip(g0, g1):
        np.testing.assert_array_equal(a, b)
    # the activations each layer kept are gone; only layer inputs remain
    assert rep1.activation_bytes <= rep0.activation_bytes / 2, (rep0.activation_bytes, rep1.activation_bytes)
    assert rep1.total_bytes < rep0.total_bytes  # parameters are kept by reference in both
    assert any(e.kind == "packed" and e.nbytes == 0 for e in rep1)  # dropped, to be recomputed
    assert all(e.shape is not None for e in rep1)                    # the report still knows their shapes


def test_checkpoint_replays_dropout_with_the_same_random_state():
    params = _params(1)
    x = gradlab.randn(16, D, requires_grad=True)
    l0, _, g0 = _grads(params, x, use_ckpt=False, dropout=0.3, seed=5)
    l1, _, g1 = _grads(params, x, use_ckpt=True, dropout=0.3, seed=5)
    assert l0 == l1
    for a, b in zip(g0, g1):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    # and without preserving the RNG state the masks differ (so the test can fail)
    for w, b in params:
        w.grad = b.grad = None
    x.grad = None
    gradlab.manual_seed(5)
    _run(params, x, True, 0.3, preserve_rng_state=False).backward()
    assert not np.allclose(x.grad._data, g0[0])


def test_checkpoint_works_with_grad_and_under_no_grad():
    params = _params(2)
    x = gradlab.randn(4, D, requires_grad=True)
    ws = [w for w, _ in params]
    g_plain = gradlab.grad(_run(params, x, False), ws)
    g_ckpt = gradlab.grad(_run(params, x, True), ws)
    for a, b in zip(g_plain, g_ckpt):
        np.testing.assert_allclose(a._data, b._data, rtol=1e-6)
    with gradlab.no_grad():
        assert _run(params, x, True).grad_fn is None


def test_checkpoint_sequential_matches():
    params = _params(3)
    layers = [_layer(w, b) for w, b in params]
    x = gradlab.randn(4, D, requires_grad=True)
    out = checkpoint_sequential(layers, 3, x)
    ref = x
    for f in layers:
        ref = f(ref)
    np.testing.assert_allclose(out._data, ref._data)
    out.sum().backward()
    g = x.grad._data.copy()
    x.grad = None
    ref.sum().backward()
    np.testing.assert_allclose(g, x.grad._data, rtol=1e-6)


def test_double_backward_through_checkpoint_is_refused_clearly():
    import pytest

    from gradlab.errors import GradError
    params = _params(4)
    x = gradlab.randn(2, D, requires_grad=True)
    loss = _run(params, x, True)
    with pytest.raises(GradError, match="higher-order gradients"):
        gradlab.grad(loss, x, create_graph=True)
