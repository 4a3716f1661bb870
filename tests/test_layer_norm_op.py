"""``layer_norm`` as one fused op (``LayerNorm``): its graph, its dtypes and its two backward rules.

The registry suite already gradchecks, gradgradchecks and compares it with PyTorch
in float64; here are the cases it does not reach: 16-bit inputs, non-contiguous
inputs, big rows, partial affine, the saved-memory bookkeeping and in-place errors.
"""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
import gradlab.nn.functional as F
from gradlab.backend import dtypes as _dt
from gradlab.errors import GradError
from gradlab.ops.layer_batch_norm import LayerNorm


def _composite(x, k, w, b, eps):
    """The op-by-op formula the fused op replaced: the reference for values and gradients."""
    dims = tuple(range(-k, 0))
    xc = x - x.mean(dim=dims, keepdim=True)
    y = xc / ((xc * xc).mean(dim=dims, keepdim=True) + eps).sqrt()
    if w is not None:
        y = y * w
    return y + b if b is not None else y


def _np(t):
    return t.detach().numpy()


def _leaves(rng, shapes, dtype="float64"):
    return [None if s is None else gradlab.tensor(rng.standard_normal(s).astype(dtype), requires_grad=True)
            for s in shapes]


def test_one_node_whose_edges_go_to_the_three_inputs():
    x, w, b = _leaves(np.random.default_rng(0), [(2, 3, 4), (4,), (4,)], "float32")
    y = F.layer_norm(x, (4,), w, b)
    node = y.grad_fn
    assert isinstance(node, LayerNorm) and node.name == "layer_norm"
    assert [e[0].variable for e in node.next_functions[:3]] == [x, w, b]
    assert "rstd" in node.formula


@pytest.mark.parametrize("shape,k,affine", [((3, 5, 7), 1, "wb"), ((2, 3, 4, 5), 2, "w"), ((4, 6), 1, "b"),
                                             ((6,), 1, ""), ((2, 300), 1, "wb")])
def test_matches_the_composite_formula_with_both_backward_paths(shape, k, affine):
    rng = np.random.default_rng(1)
    ns = shape[len(shape) - k:]
    x, w, b = _leaves(rng, [shape, ns if "w" in affine else None, ns if "b" in affine else None])
    g = gradlab.tensor(rng.standard_normal(shape))
    leaves = [t for t in (x, w, b) if t is not None]
    ref = _composite(x, k, w, b, 1e-5)
    want = gradlab.autograd.grad(ref, leaves, g)
    y = F.layer_norm(x, ns, w, b)
    np.testing.assert_allclose(_np(y), _np(ref), rtol=1e-10, atol=1e-12)
    fast = gradlab.autograd.grad(y, leaves, g)  # array twin (vjp_arrays)
    y = F.layer_norm(x, ns, w, b)
    slow = gradlab.autograd.grad(y, leaves, g, create_graph=True)  # tensor vjp
    for a, s, r in zip(fast, slow, want):
        np.testing.assert_allclose(_np(a), _np(r), rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(_np(s), _np(r), rtol=1e-9, atol=1e-11)


def test_second_derivative_through_the_gradient():
    rng = np.random.default_rng(2)
    x, w, b = _leaves(rng, [(2, 5), (5,), (5,)])
    (gx,) = gradlab.autograd.grad((F.layer_norm(x, (5,), w, b) ** 3).sum(), [x], create_graph=True)
    (ggx,) = gradlab.autograd.grad((gx * gx).sum(), [x])
    (gr,) = gradlab.autograd.grad((_composite(x, 1, w, b, 1e-5) ** 3).sum(), [x], create_graph=True)
    (ggr,) = gradlab.autograd.grad((gr * gr).sum(), [x])
    np.testing.assert_allclose(_np(ggx), _np(ggr), rtol=1e-8, atol=1e-10)


def test_non_contiguous_input():
    rng = np.random.default_rng(3)
    base = gradlab.tensor(rng.standard_normal((6, 4)), requires_grad=True)
    x = base.mT  # (4, 6), a transposed view
    y = F.layer_norm(x, (6,))
    ref = _composite(x, 1, None, None, 1e-5)
    np.testing.assert_allclose(_np(y), _np(ref), rtol=1e-10)
    g = gradlab.tensor(rng.standard_normal((4, 6)))
    (a,) = gradlab.autograd.grad(y, [base], g)
    (r,) = gradlab.autograd.grad(ref, [base], g)
    np.testing.assert_allclose(_np(a), _np(r), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_16_bit_inputs_compute_in_float32_like_pytorch(torch, low):
    dt = getattr(gradlab, low, None)
    if dt is None:
        pytest.skip("bfloat16 needs ml_dtypes")
    rng = np.random.default_rng(4)
    xs, ws, bs, gs = (rng.standard_normal(s) * 3 + 1 for s in ((4, 8, 32), (32,), (32,), (4, 8, 32)))
    x, w, b = (gradlab.tensor(v, dtype=dt, requires_grad=True) for v in (xs, ws, bs))
    g = gradlab.tensor(gs, dtype=dt)
    y = F.layer_norm(x, (32,), w, b)
    assert y.dtype == dt
    y.backward(g)
    tdt = getattr(torch, low)
    tx, tw, tb = (torch.tensor(_np(t).astype("float32")).to(tdt).requires_grad_() for t in (x, w, b))
    ty = torch.nn.functional.layer_norm(tx, (32,), tw, tb)
    ty.backward(torch.tensor(_np(g).astype("float32")).to(tdt))
    tol = dict(rtol=2e-2, atol=2e-2) if low == "bfloat16" else dict(rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(_np(y).astype("float32"), ty.detach().float().numpy(), **tol)
    for ours, theirs in ((x, tx), (w, tw), (b, tb)):
        assert ours.grad.dtype == dt
        scale = float(np.abs(theirs.grad.float().numpy()).max())
        np.testing.assert_allclose(_np(ours.grad).astype("float32") / scale,
                                   theirs.grad.float().numpy() / scale, **tol)


def test_autocast_runs_it_in_float32():
    ln = gradlab.nn.LayerNorm(16)
    x = gradlab.randn(3, 16, requires_grad=True)
    with gradlab.amp.autocast(dtype=gradlab.float16):
        y = ln(x.half())
    assert y.dtype == gradlab.float32
    y.sum().backward()
    assert x.grad.dtype == gradlab.float32 and ln.weight.grad.dtype == gradlab.float32


def test_mixed_dtypes_promote_as_the_composite_did():
    x = gradlab.randn(2, 4).half().requires_grad_()
    w = gradlab.randn(4, requires_grad=True)
    y = F.layer_norm(x, (4,), w)
    assert y.dtype == _dt.result_type(x, w) == gradlab.float32
    y.sum().backward()
    assert x.grad.dtype == gradlab.float16 and w.grad.dtype == gradlab.float32


def test_saves_the_input_and_two_numbers_per_row_like_pytorch():
    x = gradlab.randn(8, 64, requires_grad=True)
    node = F.layer_norm(x, (64,)).grad_fn
    assert node.saved_bytes == x.nbytes  # xhat is recomputed in backward from mean and rstd
    mean, rstd = node.saved_arrays[3:]
    np.testing.assert_allclose(mean.ravel(), _np(x).mean(-1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd.ravel(), 1 / np.sqrt(_np(x).var(-1) + 1e-5), rtol=1e-5)


def test_inference_saves_nothing():
    x = gradlab.randn(8, 64)
    y = F.layer_norm(x, (64,), gradlab.ones(64), gradlab.zeros(64))
    assert y.grad_fn is None
    np.testing.assert_allclose(_np(y).mean(-1), 0, atol=1e-5)


def test_changing_the_input_in_place_after_the_forward_is_caught():
    x = gradlab.randn(3, 4, requires_grad=True)
    h = x * 1
    y = F.layer_norm(h, (4,))
    h.mul_(2)
    with pytest.raises(GradError, match="in-place"):
        y.sum().backward()


def test_empty_inputs():
    x = gradlab.zeros(0, 5, requires_grad=True)
    y = F.layer_norm(x, (5,), gradlab.ones(5, requires_grad=True))
    assert y.shape == (0, 5)
    y.sum().backward()
    assert x.grad.shape == (0, 5)


def test_forward_mode_matches_reverse_mode():
    rng = np.random.default_rng(5)
    x, w, b = _leaves(rng, [(3, 4), (4,), (4,)])
    jf = gradlab.func.jacfwd(lambda a: F.layer_norm(a, (4,), w, b))(x)
    jr = gradlab.func.jacrev(lambda a: F.layer_norm(a, (4,), w, b))(x)
    np.testing.assert_allclose(_np(jf), _np(jr), rtol=1e-9, atol=1e-12)


def test_a_constant_row_with_eps_zero_gives_nan_quietly_like_pytorch(torch):
    import warnings
    x = gradlab.tensor(np.ones((2, 4)), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = F.layer_norm(x, (4,), eps=0.0)
        y.sum().backward()
    tx = torch.ones(2, 4, dtype=torch.float64, requires_grad=True)
    ty = torch.nn.functional.layer_norm(tx, (4,), eps=0.0)
    ty.sum().backward()
    np.testing.assert_array_equal(np.isnan(_np(y)), np.isnan(ty.detach().numpy()))
    np.testing.assert_array_equal(np.isnan(_np(x.grad)), np.isnan(tx.grad.numpy()))


def test_16_bit_tensor_backward_agrees_with_the_array_backward():
    rng = np.random.default_rng(6)
    x, w, b = (gradlab.tensor(rng.standard_normal(s), dtype=gradlab.float16, requires_grad=True)
               for s in ((3, 8), (8,), (8,)))
    g = gradlab.tensor(rng.standard_normal((3, 8)), dtype=gradlab.float16)
    slow = gradlab.autograd.grad(F.layer_norm(x, (8,), w, b), [x, w, b], g, create_graph=True)
    fast = gradlab.autograd.grad(F.layer_norm(x, (8,), w, b), [x, w, b], g)
    for s, f in zip(slow, fast):
        assert s.dtype == f.dtype == gradlab.float16
        np.testing.assert_allclose(_np(s).astype(np.float32), _np(f).astype(np.float32), rtol=1e-3, atol=1e-3)
