"""The transformer's kernels on arrays: layer_norm, softmax, masked_fill and causal attention.

Each is checked against PyTorch (values and gradients, float32 and float64) on the shapes a
transformer gives them (the benchmark GPT's residual stream (32, 64, 128), its attention scores
(32, 4, 64, 64)) and on the awkward ones: a transposed input, ``normalized_shape`` over two dims, no
weight or bias, another ``eps``, a mask that broadcasts, an integer input. Also: layer_norm and
softmax's backward run on the calling thread at any thread count (memory-bound: slower split).
"""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
import gradlab.nn.functional as F
from gradlab.backend import threads as backend_threads

TOL = {"float32": dict(rtol=2e-4, atol=2e-5), "float64": dict(rtol=1e-10, atol=1e-12)}


@pytest.fixture
def threads():
    old = gradlab.get_num_threads()
    yield
    gradlab.set_num_threads(old)


def _pair(torch, a, grad=True):
    """The same array as a gradlab and a torch tensor (leaves that require grad)."""
    return (gradlab.from_numpy(a.copy()).requires_grad_(grad), torch.from_numpy(a.copy()).requires_grad_(grad))


def _close(ours, theirs, dtype, scale=1.0):
    theirs = theirs.detach().numpy()
    np.testing.assert_allclose(ours.detach().numpy() / scale, theirs / scale, **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,k,affine,eps,transposed", [
    ((32, 64, 128), 1, "wb", 1e-5, False),   # the GPT's residual stream
    ((6, 5, 7), 2, "wb", 1e-5, False),       # normalized over two dims
    ((9, 12), 1, "", 1e-5, True),            # a transposed view, no weight or bias
    ((4, 3, 16), 1, "w", 1e-3, False),       # weight only, another eps
    ((4, 3, 16), 1, "b", 0.5, True),         # bias only, a big eps, transposed
])
def test_layer_norm_matches_pytorch(torch, dtype, shape, k, affine, eps, transposed):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(shape) * 3 + 2).astype(dtype)
    leaf, tleaf = _pair(torch, a)
    x, tx = (leaf.mT, tleaf.mT) if transposed else (leaf, tleaf)  # (transposed: a non-contiguous input)
    ns = tuple(x.shape[x.ndim - k:])
    w = b = tw = tb = None
    if "w" in affine:
        w, tw = _pair(torch, rng.standard_normal(ns).astype(dtype))
    if "b" in affine:
        b, tb = _pair(torch, rng.standard_normal(ns).astype(dtype))
    g = rng.standard_normal(tuple(x.shape)).astype(dtype)
    y = F.layer_norm(x, ns, w, b, eps)
    ty = torch.nn.functional.layer_norm(tx, ns, tw, tb, eps)
    _close(y, ty, dtype)
    y.backward(gradlab.from_numpy(g))
    ty.backward(torch.from_numpy(g))
    for ours, theirs in ((leaf, tleaf), (w, tw), (b, tb)):
        if ours is not None:
            _close(ours.grad, theirs.grad, dtype, float(np.abs(theirs.grad.numpy()).max()) or 1.0)
    assert y.dtype == x.dtype


def test_layer_norm_gradcheck_float64_over_two_dims_and_a_view():
    rng = np.random.default_rng(2)
    base = gradlab.from_numpy(rng.standard_normal((5, 3, 4))).requires_grad_()
    w = gradlab.from_numpy(rng.standard_normal((4, 3))).requires_grad_()
    b = gradlab.from_numpy(rng.standard_normal((4, 3))).requires_grad_()
    assert gradlab.autograd.gradcheck(lambda x, w, b: F.layer_norm(x.mT, (4, 3), w, b, 1e-3), (base, w, b))
    assert gradlab.autograd.gradcheck(lambda x: F.layer_norm(x, (3, 4)), (base,))


def test_layer_norm_and_softmax_backward_stay_on_the_calling_thread(threads, monkeypatch):
    # memory-bound passes: split across 2 threads they were slower (LayerNorm's and _softmax_vjp's docstrings)
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((32, 64, 128)).astype(np.float32)   # 262K elements: above MIN_ELEMENTS
    s0 = rng.standard_normal((32, 4, 64, 64)).astype(np.float32)
    results = []
    for k in (1, 2):
        gradlab.set_num_threads(k)
        x = gradlab.from_numpy(x0.copy()).requires_grad_()
        w = gradlab.ones(128, requires_grad=True)
        s = gradlab.from_numpy(s0.copy()).requires_grad_()
        p = F.softmax(s, dim=-1)  # (softmax's forward may go to threads: exp is arithmetic, not memory)
        if k == 2:
            assert backend_threads.threads_for(x0.size) == 2
            for name in ("parallel_for", "parallel_items", "map_rows", "map_blocks"):
                monkeypatch.setattr(backend_threads, name, lambda *a, **kw: pytest.fail("went to threads"))
        y = F.layer_norm(x, (128,), w)
        ((y * y * y).sum() + (p * p).sum()).backward()
        results.append((y.detach().numpy(), x.grad.numpy(), w.grad.numpy(), s.grad.numpy()))
    for a, b in zip(*results):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_of_causal_scores_matches_pytorch(torch, dtype):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((32, 4, 64, 64)).astype(dtype) * 4
    a[..., np.triu_indices(64, 1)[0], np.triu_indices(64, 1)[1]] = -np.inf
    s, ts = _pair(torch, a)
    g = rng.standard_normal(a.shape).astype(dtype)
    y, ty = F.softmax(s, dim=-1), torch.softmax(ts, dim=-1)
    _close(y, ty, dtype)
    y.backward(gradlab.from_numpy(g))
    ty.backward(torch.from_numpy(g))
    _close(s.grad, ts.grad, dtype)
    assert np.all(s.grad.numpy()[..., 0, 1:] == 0)  # masked scores get no gradient


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mask_shape", [(1, 1, 16, 16), (16, 16), (32, 4, 16, 16), (4, 1, 1)])
def test_masked_fill_matches_pytorch(torch, dtype, mask_shape):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((32, 4, 16, 16)).astype(dtype)
    m = rng.random(mask_shape) > 0.5
    x, tx = _pair(torch, a)
    g = rng.standard_normal(a.shape).astype(dtype)
    y = x.masked_fill(gradlab.from_numpy(m), float("-inf"))
    ty = tx.masked_fill(torch.from_numpy(m), float("-inf"))
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    y.backward(gradlab.from_numpy(g))
    ty.backward(torch.from_numpy(g))
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_masked_fill_values_dtypes_and_layouts_as_before():
    # the copy-and-fill kernel gives what np.where(mask, value, x).astype(x.dtype) gave, bit for bit
    rng = np.random.default_rng(6)
    cases = [(rng.standard_normal((5, 6)).astype(np.float32).T, 1e-3),          # a transposed view
             (rng.integers(-9, 9, (4, 6)), 3),                                   # integers
             (rng.integers(-9, 9, (4, 6)), 2.7),                                 # a float into integers
             (rng.standard_normal((4, 6)).astype(np.float16), 70000.0),          # overflows float16: inf
             (rng.random((4, 6)) > 0.5, True),                                   # bools
             (np.float64(2.5) * np.ones(()), -1.0)]                              # 0-d
    for a, v in cases:
        m = np.asarray(rng.random(a.shape[-1:]) > 0.4)
        got = gradlab.from_numpy(np.asarray(a)).masked_fill(gradlab.from_numpy(m), v).numpy()
        with np.errstate(all="ignore"):
            want = np.where(m, v, a).astype(a.dtype)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_masked_fill_with_a_0d_tensor_value_gets_its_gradient(torch):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 4, 5))
    m = rng.random((4, 1)) > 0.5
    x, tx = _pair(torch, a)
    v, tv = _pair(torch, np.array(0.25))
    g = rng.standard_normal(a.shape)
    y = x.masked_fill(gradlab.from_numpy(m), v)
    ty = tx.masked_fill(torch.from_numpy(m), tv)
    y.backward(gradlab.from_numpy(g))
    ty.backward(torch.from_numpy(g))
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    np.testing.assert_allclose(v.grad.numpy(), tv.grad.numpy(), rtol=1e-12)
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    assert gradlab.autograd.gradgradcheck(lambda t: t.masked_fill(gradlab.from_numpy(m), 0.5) ** 2,
                                          (gradlab.from_numpy(a[:1]).requires_grad_(),))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("L,S", [(64, 64), (5, 9), (9, 5)])
def test_causal_attention_matches_pytorch(torch, dtype, L, S):
    rng = np.random.default_rng(8)
    qa, ka, va = (rng.standard_normal(s).astype(dtype) for s in ((8, 4, L, 32), (8, 4, S, 32), (8, 4, S, 16)))
    (q, tq), (k, tk), (v, tv) = (_pair(torch, a) for a in (qa, ka, va))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    tout = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    _close(out, tout, dtype)
    g = rng.standard_normal(tuple(out.shape)).astype(dtype)
    out.backward(gradlab.from_numpy(g))
    tout.backward(torch.from_numpy(g))
    for ours, theirs in ((q, tq), (k, tk), (v, tv)):
        _close(ours.grad, theirs.grad, dtype, float(np.abs(theirs.grad.numpy()).max()) or 1.0)
    assert out.grad_fn is not None
    assert gradlab.autograd.gradcheck(
        lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True),
        tuple(gradlab.from_numpy(t[:1, :1].astype("float64")).requires_grad_() for t in (qa, ka, va)))


def test_causal_attention_a_nan_in_a_later_key_leaves_earlier_queries_alone(torch):
    # masked scores are -inf whatever q.k is there (masked_fill, not an added -inf): as PyTorch's is_causal
    rng = np.random.default_rng(9)
    q, k, v = (rng.standard_normal((1, 1, 6, 8)) for _ in range(3))
    k[0, 0, 4, 0] = np.nan
    out = F.scaled_dot_product_attention(*(gradlab.from_numpy(a) for a in (q, k, v)), is_causal=True).numpy()
    tout = torch.nn.functional.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)),
                                                            is_causal=True).numpy()
    assert np.isfinite(out[0, 0, :4]).all() and np.isnan(out[0, 0, 4:]).all()
    np.testing.assert_allclose(out[0, 0, :4], tout[0, 0, :4], rtol=1e-10)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_softmax_blocks_write_into_the_result_at_any_thread_count(threads, torch, dtype):
    # the threaded forward writes each block straight into the result (16-bit: computed in float32
    # and rounded into it); the same bits at 1 and 2 threads, and PyTorch's values
    rng = np.random.default_rng(10)
    a = (rng.standard_normal((1024, 256)) * 3).astype(dtype)
    outs = []
    for k in (1, 2):
        gradlab.set_num_threads(k)
        x = gradlab.from_numpy(a.copy()).requires_grad_()
        y, z = F.softmax(x, dim=-1), F.log_softmax(x, dim=-1)
        (y * y).sum().backward()
        (z * z).sum().backward()
        outs.append((y.detach().numpy(), z.detach().numpy(), x.grad.numpy()))
    for p, q in zip(*outs):
        assert p.dtype == np.dtype(dtype) and np.array_equal(p, q)
    tol = dict(rtol=2e-3, atol=1e-4) if dtype == "float16" else TOL[dtype]
    np.testing.assert_allclose(outs[0][0].astype(np.float32),
                               torch.softmax(torch.from_numpy(a), dim=-1).float().numpy(), **tol)
    np.testing.assert_allclose(outs[0][1].astype(np.float32),
                               torch.log_softmax(torch.from_numpy(a), dim=-1).float().numpy(), rtol=tol["rtol"],
                               atol=1e-2 if dtype == "float16" else 1e-4)


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_fully_masked_rows_get_zero_weights_wherever_the_mask_is(torch, kind):
    # the full-size check for rows that mask every key runs only when some row masks its first key:
    # rows masked everywhere (first key included) still get zero weights, and the rest PyTorch's values
    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal((2, 3, 6, 4)) for _ in range(3))
    keep = np.tril(np.ones((6, 6), bool))
    keep[2] = False                       # query 2 may attend to nothing
    keep[4, 0] = False                    # query 4 masks its first key only
    mask = keep if kind == "bool" else np.where(keep, 0.0, -np.inf)
    out = F.scaled_dot_product_attention(*(gradlab.from_numpy(a) for a in (q, k, v)), attn_mask=gradlab.from_numpy(mask))
    tout = torch.nn.functional.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)),
                                                            attn_mask=torch.from_numpy(mask)).numpy()
    assert np.all(out.numpy()[:, :, 2] == 0)
    np.testing.assert_allclose(out.numpy(), tout, rtol=1e-10, atol=1e-12)
    causal = np.triu(np.full((6, 6), -np.inf), 1)  # a causal float mask: no first key masked, no dead row
    out = F.scaled_dot_product_attention(*(gradlab.from_numpy(a) for a in (q, k, v)), attn_mask=gradlab.from_numpy(causal))
    assert np.isfinite(out.numpy()).all()
