"""gradlab.func (grad, value_and_grad, vjp, jvp, jacrev, jacfwd, hessian, hvp) and forward_ad, vs torch.func."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
from gradlab import func
from gradlab.autograd import forward_ad as fwAD
from gradlab.errors import ArgumentError, DTypeError, GradError, ShapeError


def T(a, rg=False):
    return gradlab.tensor(np.asarray(a, dtype=np.float64), dtype=gradlab.float64, requires_grad=rg)


def _f(lib, x, w):
    return ((x @ w).tanh() * x.sum()).sigmoid()


def _loss(lib, x, w):
    return (_f(lib, x, w) ** 2).sum()


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((2, 3)), rng.standard_normal((3, 2))


def test_grad_and_value_and_grad_match_torch_func(torch, data):
    x, w = data
    g = func.grad(lambda a, b: _loss(gradlab, a, b), argnums=(0, 1))(T(x), T(w))
    tg = torch.func.grad(lambda a, b: _loss(torch, a, b), argnums=(0, 1))(torch.tensor(x), torch.tensor(w))
    for a, b in zip(g, tg):
        np.testing.assert_allclose(a._data, b.numpy(), rtol=1e-10, atol=1e-12)
    (v, aux), g1 = func.value_and_grad(lambda a, b: (_loss(gradlab, a, b), a.sum()), argnums=1, has_aux=True)(
        T(x), T(w))
    np.testing.assert_allclose(v.item(), _loss(torch, torch.tensor(x), torch.tensor(w)).item(), rtol=1e-12)
    np.testing.assert_allclose(aux.item(), x.sum())
    np.testing.assert_allclose(g1._data, tg[1].numpy(), rtol=1e-10, atol=1e-12)
    g2, aux2 = func.grad(lambda b: (_loss(gradlab, T(x), b), "hello"), has_aux=True)(T(w))
    assert aux2 == "hello" and np.allclose(g2._data, tg[1].numpy())
    # plain inputs give plain results (no graph leaks out)
    assert not g1.requires_grad and g1.grad_fn is None


def test_grad_composes_and_stays_differentiable(torch):
    x = T([0.3, -0.8, 1.4])
    d2 = func.grad(lambda t: func.grad(lambda u: u.tanh().sum())(t).sum())(x)
    tx = torch.tensor(x._data)
    td2 = torch.func.grad(lambda t: torch.func.grad(lambda u: u.tanh().sum())(t).sum())(tx)
    np.testing.assert_allclose(d2._data, td2.numpy(), rtol=1e-10)
    # results w.r.t. a tensor that requires grad keep their graph for ordinary autograd
    xr = T([0.3, -0.8, 1.4], rg=True)
    g = func.grad(lambda t: (t ** 3).sum())(xr)
    assert g.requires_grad
    g.sum().backward()
    np.testing.assert_allclose(xr.grad._data, 6 * xr._data)


def test_closure_tensor_is_treated_as_a_constant():
    x = T([2.0])
    g = func.grad(lambda y: (y * x).sum())(x)  # d/dy (y*x) = x, not 2x
    np.testing.assert_allclose(g._data, [2.0])


def test_vjp_and_jvp_match_torch(torch, data):
    x, w = data
    rng = np.random.default_rng(1)
    ct = rng.standard_normal((2, 2))
    out, vjp_fn = func.vjp(lambda a, b: _f(gradlab, a, b), T(x), T(w))
    gx, gw = vjp_fn(T(ct))
    tout, tvjp = torch.func.vjp(lambda a, b: _f(torch, a, b), torch.tensor(x), torch.tensor(w))
    tgx, tgw = tvjp(torch.tensor(ct))
    np.testing.assert_allclose(out._data, tout.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gx._data, tgx.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gw._data, tgw.numpy(), rtol=1e-10, atol=1e-12)
    tx_, tw_ = rng.standard_normal(x.shape), rng.standard_normal(w.shape)
    p, t = func.jvp(lambda a, b: _f(gradlab, a, b), (T(x), T(w)), (T(tx_), T(tw_)))
    tp, tt = torch.func.jvp(lambda a, b: _f(torch, a, b), (torch.tensor(x), torch.tensor(w)),
                            (torch.tensor(tx_), torch.tensor(tw_)))
    np.testing.assert_allclose(p._data, tp.numpy(), rtol=1e-12)
    np.testing.assert_allclose(t._data, tt.numpy(), rtol=1e-10, atol=1e-12)


def test_jacobians_and_hessian_match_torch(torch, data):
    x, w = data
    jr = func.jacrev(lambda a, b: _f(gradlab, a, b), argnums=(0, 1))(T(x), T(w))
    jf = func.jacfwd(lambda a, b: _f(gradlab, a, b), argnums=(0, 1))(T(x), T(w))
    tj = torch.func.jacrev(lambda a, b: _f(torch, a, b), argnums=(0, 1))(torch.tensor(x), torch.tensor(w))
    for a, b, c in zip(jr, jf, tj):
        assert a.shape == tuple(c.shape) == b.shape
        np.testing.assert_allclose(a._data, c.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(b._data, c.numpy(), rtol=1e-10, atol=1e-12)
    h = func.hessian(lambda b: _loss(gradlab, T(x), b))(T(w))
    th = torch.func.hessian(lambda b: _loss(torch, torch.tensor(x), b))(torch.tensor(w))
    assert h.shape == tuple(th.shape) == (3, 2, 3, 2)
    np.testing.assert_allclose(h._data, th.numpy(), rtol=1e-9, atol=1e-12)
    # forward over reverse gives the same Hessian
    h2 = func.jacfwd(func.jacrev(lambda b: _loss(gradlab, T(x), b)))(T(w))
    np.testing.assert_allclose(h2._data, th.numpy(), rtol=1e-9, atol=1e-12)


def test_hvp_matches_hessian_times_vector(data):
    x, w = data
    v = np.random.default_rng(2).standard_normal(w.shape)
    f = lambda b: _loss(gradlab, T(x), b)  # noqa: E731
    out, hv = func.hvp(f, T(w), T(v))
    H = func.hessian(f)(T(w))._data.reshape(6, 6)
    np.testing.assert_allclose(hv._data.ravel(), H @ v.ravel(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(out.item(), f(T(w)).item())


def test_dual_numbers_flow_forward(torch):
    x, v = T([0.5, -1.0, 2.0]), T([1.0, 0.0, -2.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        assert fwAD.unpack_dual(d).tangent is v
        y = (d.exp() * d).sum()
        p, t = fwAD.unpack_dual(y)
        assert isinstance(fwAD.unpack_dual(y), fwAD.UnpackedDualTensor)
        assert fwAD.unpack_dual(x).tangent is None  # the original is untouched
    np.testing.assert_allclose(p.item(), float((np.exp(x._data) * x._data).sum()))
    np.testing.assert_allclose(t.item(), float((np.exp(x._data) * (1 + x._data) * v._data).sum()))
    assert y._fw_grad is None  # tangents are dropped when the level ends
    import torch.autograd.forward_ad as tfw
    with tfw.dual_level():
        td = tfw.make_dual(torch.tensor(x._data), torch.tensor(v._data))
        tt = tfw.unpack_dual((td.exp() * td).sum()).tangent
    np.testing.assert_allclose(t.item(), tt.item(), rtol=1e-12)


def test_forward_ad_with_reverse_mode_on_the_primal():
    x = T([0.5, 1.5], rg=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, T([1.0, 1.0]))
        y = (d * d).sum()
        tangent = fwAD.unpack_dual(y).tangent
    y.backward()
    np.testing.assert_allclose(x.grad._data, 2 * x._data)       # reverse mode went through make_dual
    np.testing.assert_allclose(tangent.item(), 2 * x._data.sum())


def test_forward_ad_bad_input():
    x = T([1.0, 2.0])
    with pytest.raises(GradError, match="no forward-AD level is active"):
        fwAD.make_dual(x, x)
    with fwAD.dual_level():
        with pytest.raises(ShapeError, match=r"tangent has shape \(3,\).*\(2,\)"):
            fwAD.make_dual(x, T([1.0, 2.0, 3.0]))
        with pytest.raises(DTypeError, match="float32.*float64"):
            fwAD.make_dual(x, gradlab.ones(2, dtype=gradlab.float32))
        with pytest.raises(GradError, match="cannot be nested"):
            with fwAD.dual_level():
                pass
    with pytest.raises(ShapeError, match=r"tangent 0 has shape \(3,\).*\(2,\)"):
        func.jvp(lambda a: a * 2, (x,), (T([1.0, 2.0, 3.0]),))
    with pytest.raises(DTypeError, match="tangent 0 has dtype float32"):
        func.jvp(lambda a: a * 2, (x,), (gradlab.ones(2, dtype=gradlab.float32),))
    with pytest.raises(ArgumentError, match="1 primal.*2 tangent"):
        func.jvp(lambda a: a * 2, (x,), (x, x))


def test_func_bad_input():
    x = T([1.0, 2.0])
    with pytest.raises(GradError, match="one-element tensor"):
        func.grad(lambda a: a * 2)(x)
    with pytest.raises(ArgumentError, match="argnums 3"):
        func.grad(lambda a: a.sum(), argnums=3)(x)
    with pytest.raises(TypeError, match="argument 0 must be a Tensor"):
        func.grad(lambda a: a)(3.0)
    out, vjp_fn = func.vjp(lambda a: a * 2, x)
    with pytest.raises(ShapeError, match=r"cotangent has shape \(3,\)"):
        vjp_fn(T([1.0, 2.0, 3.0]))


def test_transforms_work_under_no_grad():
    x = T([0.2, 0.4])
    with gradlab.no_grad():
        g = func.grad(lambda a: (a * a).sum())(x)
        j = func.jacrev(lambda a: a.exp())(x)
    np.testing.assert_allclose(g._data, 2 * x._data)
    np.testing.assert_allclose(j._data, np.diag(np.exp(x._data)))
    assert not g.requires_grad


def test_aux_and_multiple_outputs(torch):
    x = T([0.5, -1.0, 2.0])
    j, aux = func.jacrev(lambda a: (a.exp(), a.sum()), has_aux=True)(x)
    jf, auxf = func.jacfwd(lambda a: (a.exp(), a.sum()), has_aux=True)(x)
    np.testing.assert_allclose(j._data, np.diag(np.exp(x._data)))
    np.testing.assert_allclose(jf._data, j._data)
    assert aux.item() == auxf.item() == 1.5
    (o1, o2), vjp_fn = func.vjp(lambda a: (a * 2, a.exp()), x)
    g = vjp_fn((T([1.0, 1.0, 1.0]), T([1.0, 0.0, 0.0])))
    tx = torch.tensor(x._data)
    _, tvjp = torch.func.vjp(lambda a: (a * 2, a.exp()), tx)
    tg = tvjp((torch.ones(3, dtype=torch.float64), torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)))
    np.testing.assert_allclose(g[0]._data, tg[0].numpy())
    jm = func.jacrev(lambda a: (a * 2, a.exp()))(x)
    assert isinstance(jm, tuple) and jm[0].shape == (3, 3)
    p, t = func.jvp(lambda a: (a * 2, a.exp()), (x,), (T([1.0, 1.0, 1.0]),))
    np.testing.assert_allclose(t[1]._data, np.exp(x._data))


def test_unpack_dual_of_a_tensor_that_requires_grad():
    x = T([1.0, 2.0], rg=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, T([1.0, 0.0]))
        y = d * 3
        primal, tangent = fwAD.unpack_dual(y)
        assert primal.requires_grad and fwAD.unpack_dual(primal).tangent is None
        np.testing.assert_allclose(tangent._data, [3.0, 0.0])
        primal.sum().backward()
    np.testing.assert_allclose(x.grad._data, [3.0, 3.0])


def test_autograd_functional_matches_torch(torch):
    import torch.autograd.functional as TF

    import gradlab.autograd.functional as GF
    rng = np.random.default_rng(3)
    xa, wa = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    va, ua = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    g_in, t_in = (T(xa), T(wa)), (torch.tensor(xa), torch.tensor(wa))
    f = lambda a, b: _f(gradlab, a, b)           # noqa: E731
    tf = lambda a, b: _f(torch, a, b)            # noqa: E731
    loss = lambda a, b: _loss(gradlab, a, b)     # noqa: E731
    tloss = lambda a, b: _loss(torch, a, b)      # noqa: E731

    def close(a, b):
        if isinstance(a, tuple):
            assert isinstance(b, tuple) and len(a) == len(b)
            for x, y in zip(a, b):
                close(x, y)
        else:
            assert a.shape == tuple(b.shape)
            np.testing.assert_allclose(a._data, b.detach().numpy(), rtol=1e-9, atol=1e-12)
    for strategy in ("reverse-mode", "forward-mode"):
        close(GF.jacobian(f, g_in, strategy=strategy), TF.jacobian(tf, t_in))
    close(GF.jacobian(lambda a: a.exp(), T(xa)), TF.jacobian(lambda a: a.exp(), torch.tensor(xa)))
    close(GF.hessian(loss, g_in), TF.hessian(tloss, t_in))
    close(GF.vjp(loss, g_in)[1], TF.vjp(tloss, t_in)[1])
    close(GF.jvp(f, g_in, (T(va), T(ua)))[1], TF.jvp(tf, t_in, (torch.tensor(va), torch.tensor(ua)))[1])
    close(GF.hvp(loss, g_in, (T(va), T(ua)))[1], TF.hvp(tloss, t_in, (torch.tensor(va), torch.tensor(ua)))[1])
    close(GF.vhp(loss, g_in, (T(va), T(ua)))[1], TF.vhp(tloss, t_in, (torch.tensor(va), torch.tensor(ua)))[1])
    j = GF.jacobian(f, g_in)
    assert not j[0].requires_grad
    with pytest.raises(ArgumentError, match="pass v"):
        GF.vjp(f, g_in)


def test_vmap_per_sample_gradients_match_torch(torch):
    rng = np.random.default_rng(4)
    xa, ya, wa = rng.standard_normal((5, 3)), rng.standard_normal(5), rng.standard_normal(3)

    def loss(lib, w, x, y):
        return ((x * w).sum().tanh() - y) ** 2
    per = func.vmap(func.grad(lambda w, x, y: loss(gradlab, w, x, y)), in_dims=(None, 0, 0))(T(wa), T(xa), T(ya))
    tper = torch.func.vmap(torch.func.grad(lambda w, x, y: loss(torch, w, x, y)), in_dims=(None, 0, 0))(
        torch.tensor(wa), torch.tensor(xa), torch.tensor(ya))
    assert per.shape == (5, 3)
    np.testing.assert_allclose(per._data, tper.numpy(), rtol=1e-10, atol=1e-12)
    both = func.vmap(lambda a: (a.sum(), a * 2), in_dims=1, out_dims=(0, 1))(T(xa))
    np.testing.assert_allclose(both[0]._data, xa.sum(0))
    np.testing.assert_allclose(both[1]._data, xa * 2)
    with pytest.raises(ShapeError, match="batch sizes"):
        func.vmap(lambda a, b: a + b)(T(xa), T(wa))
