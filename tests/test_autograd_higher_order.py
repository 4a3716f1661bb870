"""Higher-order gradients: create_graph, gradlab.grad, gradgradcheck, and the bad inputs of grad()."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
from gradlab.autograd import Function, gradcheck, gradgradcheck
from gradlab.errors import GradcheckError, GradError, ShapeError


def _t(a, rg=True):
    return gradlab.tensor(np.asarray(a, dtype=np.float64), dtype=gradlab.float64, requires_grad=rg)


def test_second_derivative_of_tanh_matches_formula_and_torch(torch):
    xs = np.linspace(-2.5, 2.5, 11)
    x = _t(xs)
    (g,) = gradlab.grad(x.tanh().sum(), x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None  # the backward pass built a graph
    (gg,) = gradlab.grad(g.sum(), x)
    y = np.tanh(xs)
    np.testing.assert_allclose(g._data, 1 - y ** 2, rtol=1e-12)
    np.testing.assert_allclose(gg._data, -2 * y * (1 - y ** 2), rtol=1e-10, atol=1e-14)
    tx = torch.tensor(xs, requires_grad=True)
    (tg,) = torch.autograd.grad(tx.tanh().sum(), tx, create_graph=True)
    (tgg,) = torch.autograd.grad(tg.sum(), tx)
    np.testing.assert_allclose(gg._data, tgg.numpy(), rtol=1e-10, atol=1e-14)


def test_backward_create_graph_then_backward_again():
    x = _t([0.3, -1.2])
    y = (x ** 3).sum()
    y.backward(create_graph=True)
    g = x.grad
    assert g.requires_grad
    x.grad = None
    g.sum().backward()
    np.testing.assert_allclose(x.grad._data, 6 * x._data)


def _mlp_params(rng, sizes=(3, 5, 4, 1)):
    return [rng.standard_normal((a, b)) * 0.7 for a, b in zip(sizes[:-1], sizes[1:])]


def _mlp_loss(lib, ws, x, y):
    h = x
    for i, w in enumerate(ws):
        h = h @ w
        if i < len(ws) - 1:
            h = h.tanh()
    d = h - y
    return (d * d).mean()


def _flat_grad(ws_arrays, x, y):
    ws = [_t(w) for w in ws_arrays]
    loss = _mlp_loss(gradlab, ws, gradlab.tensor(x, dtype=gradlab.float64), gradlab.tensor(y, dtype=gradlab.float64))
    gs = gradlab.grad(loss, ws)
    return np.concatenate([g._data.ravel() for g in gs])


def test_hessian_vector_product_of_mlp_loss_vs_finite_differences_and_torch(torch):
    rng = np.random.default_rng(0)
    ws_np = _mlp_params(rng)
    x = rng.standard_normal((6, 3))
    y = rng.standard_normal((6, 1))
    vs_np = [rng.standard_normal(w.shape) for w in ws_np]
    ws = [_t(w) for w in ws_np]
    loss = _mlp_loss(gradlab, ws, gradlab.tensor(x, dtype=gradlab.float64), gradlab.tensor(y, dtype=gradlab.float64))
    gs = gradlab.grad(loss, ws, create_graph=True)
    dot = sum((g * _t(v, rg=False)).sum() for g, v in zip(gs, vs_np))
    hv = gradlab.grad(dot, ws)
    hv_flat = np.concatenate([h._data.ravel() for h in hv])
    # finite differences of the gradient along v
    eps = 1e-5
    plus = _flat_grad([w + eps * v for w, v in zip(ws_np, vs_np)], x, y)
    minus = _flat_grad([w - eps * v for w, v in zip(ws_np, vs_np)], x, y)
    np.testing.assert_allclose(hv_flat, (plus - minus) / (2 * eps), rtol=1e-5, atol=1e-8)
    # torch
    tws = [torch.tensor(w, requires_grad=True) for w in ws_np]
    tl = _mlp_loss(torch, tws, torch.tensor(x), torch.tensor(y))
    tgs = torch.autograd.grad(tl, tws, create_graph=True)
    tdot = sum((g * torch.tensor(v)).sum() for g, v in zip(tgs, vs_np))
    thv = torch.autograd.grad(tdot, tws)
    np.testing.assert_allclose(hv_flat, np.concatenate([h.numpy().ravel() for h in thv]), rtol=1e-9, atol=1e-12)
    # and gradlab.func.hvp gives the same
    _, hv2 = gradlab.func.hvp(lambda *w: _mlp_loss(gradlab, w, gradlab.tensor(x, dtype=gradlab.float64),
                                                   gradlab.tensor(y, dtype=gradlab.float64)),
                              tuple(_t(w, rg=False) for w in ws_np), tuple(_t(v, rg=False) for v in vs_np))
    np.testing.assert_allclose(np.concatenate([h._data.ravel() for h in hv2]), hv_flat, rtol=1e-10, atol=1e-12)


def _maml_outer(lib, ws, xs, ys, xq, yq, lr, create_graph):
    """One inner SGD step on (xs, ys), then the loss on (xq, yq)."""
    inner = _mlp_loss(lib, ws, xs, ys)
    if lib is gradlab:
        gs = gradlab.grad(inner, ws, create_graph=create_graph)
    else:
        gs = lib.autograd.grad(inner, ws, create_graph=create_graph)
    fast = [w - lr * g for w, g in zip(ws, gs)]
    return _mlp_loss(lib, fast, xq, yq)


def test_maml_inner_step_gradient_vs_finite_differences_and_torch(torch):
    rng = np.random.default_rng(1)
    ws_np = _mlp_params(rng, (2, 4, 1))
    xs, ys = rng.standard_normal((5, 2)), rng.standard_normal((5, 1))
    xq, yq = rng.standard_normal((4, 2)), rng.standard_normal((4, 1))
    lr = 0.3
    T = lambda a: gradlab.tensor(a, dtype=gradlab.float64)  # noqa: E731
    ws = [_t(w) for w in ws_np]
    outer = _maml_outer(gradlab, ws, T(xs), T(ys), T(xq), T(yq), lr, create_graph=True)
    grads = gradlab.grad(outer, ws)

    def value(arrs):
        w2 = [_t(a) for a in arrs]
        return _maml_outer(gradlab, w2, T(xs), T(ys), T(xq), T(yq), lr, create_graph=False).item()
    eps = 1e-6
    for k, w in enumerate(ws_np):
        num = np.zeros_like(w)
        for idx in np.ndindex(w.shape):
            p = [a.copy() for a in ws_np]
            m = [a.copy() for a in ws_np]
            p[k][idx] += eps
            m[k][idx] -= eps
            num[idx] = (value(p) - value(m)) / (2 * eps)
        np.testing.assert_allclose(grads[k]._data, num, rtol=1e-5, atol=1e-8, err_msg=f"MAML grad of w{k}")
    tws = [torch.tensor(w, requires_grad=True) for w in ws_np]
    tt = torch.tensor
    touter = _maml_outer(torch, tws, tt(xs), tt(ys), tt(xq), tt(yq), lr, create_graph=True)
    tgrads = torch.autograd.grad(touter, tws)
    for g, tg in zip(grads, tgrads):
        np.testing.assert_allclose(g._data, tg.numpy(), rtol=1e-9, atol=1e-12)
    # first-order MAML (no create_graph) differs: the second-order term matters here
    w_fo = [_t(w) for w in ws_np]
    fo = gradlab.grad(_maml_outer(gradlab, w_fo, T(xs), T(ys), T(xq), T(yq), lr, False), w_fo)
    assert not all(np.allclose(a._data, b._data, rtol=1e-4) for a, b in zip(fo, grads))


class _CubeWrongSecond(Function):
    """x**3 with a correct first derivative computed *outside* the graph: its second derivative is wrong."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * (x * x).detach()  # detach: d/dx of this is lost


class _CubeRight(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x


def test_gradgradcheck_catches_a_wrong_double_backward():
    x = _t([0.5, -1.3, 2.0])
    assert gradcheck(_CubeWrongSecond.apply, (x,))          # first order is right...
    with pytest.raises(GradcheckError, match="gradient of output"):
        gradgradcheck(_CubeWrongSecond.apply, (x,))          # ...second order is not
    assert gradgradcheck(_CubeWrongSecond.apply, (x,), raise_exception=False) is False
    assert gradgradcheck(_CubeRight.apply, (x,))


def test_grad_of_non_scalar_without_grad_outputs_is_a_clear_error():
    x = _t([1.0, 2.0])
    with pytest.raises(GradError, match="2 elements.*scalar"):
        gradlab.grad(x * 2, x)
    with pytest.raises(GradError, match="scalar"):
        (x * 2).backward()
    # with grad_outputs it works; a wrong shape is named
    (g,) = gradlab.grad(x * 2, x, gradlab.ones(2, dtype=gradlab.float64))
    np.testing.assert_allclose(g._data, [2.0, 2.0])
    with pytest.raises(ShapeError, match=r"\(3,\).*\(2,\)"):
        gradlab.grad(x * 2, x, gradlab.ones(3, dtype=gradlab.float64))


def test_unreachable_input_is_named_unless_allow_unused():
    x = _t([1.0, 2.0])
    w = _t([3.0])
    w.name = "w"
    with pytest.raises(GradError, match="input 1 \\('w'\\) is not reachable.*allow_unused=True"):
        gradlab.grad((x * 2).sum(), [x, w])
    gx, gw = gradlab.grad((x * 2).sum(), [x, w], allow_unused=True)
    assert gw is None and np.allclose(gx._data, 2)
    gx, gw = gradlab.grad((x * 2).sum(), [x, w], allow_unused=True, materialize_grads=True)
    assert np.all(gw._data == 0)


def test_third_derivative_through_three_create_graph_passes():
    x = _t([0.7])
    y = x.sin() if hasattr(x, "sin") else x.exp()
    g1 = gradlab.grad(y.sum(), x, create_graph=True)[0]
    g2 = gradlab.grad(g1.sum(), x, create_graph=True)[0]
    g3 = gradlab.grad(g2.sum(), x)[0]
    expected = -np.cos(0.7) if hasattr(x, "sin") else np.exp(0.7)
    np.testing.assert_allclose(g3._data, [expected], rtol=1e-10)
