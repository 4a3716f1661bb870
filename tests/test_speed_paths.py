"""The fast paths of the small-program speed work give the same numbers as the straightforward code.

Each test runs the fast code and a plain reference (the formula written the obvious way, as the
code read before the speed work) and asks for bit-identical results, and where PyTorch has the
same thing, compares with it too.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import gradlab
from gradlab import nn, ops as O
from gradlab.errors import IndexOutOfRange


# ------------------------------------------------------------------ optimizers
def _ref_sgd(p, g, buf, lr, mom, damp, wd, nesterov, maximize):
    d = -g if maximize else g
    if wd != 0:
        d = d + wd * p
    if mom != 0:
        if buf is None:
            buf = d.copy()
        else:
            buf = buf * mom
            buf += (1 - damp) * d
        d = d + mom * buf if nesterov else buf
    return p - lr * d, buf


def _ref_adam(p, g, st, lr, beta1, beta2, eps, wd, amsgrad, maximize, decoupled):
    g = -g if maximize else g
    st["step"] += 1
    step = st["step"]
    if wd != 0:
        if decoupled:
            p = p * (1 - lr * wd)
        else:
            g = g + wd * p
    m, v = st["m"], st["v"]
    m += (g - m) * (1 - beta1)
    v *= beta2
    v += (1 - beta2) * g * g
    bc1 = 1 - beta1 ** step
    bc2_sqrt = math.sqrt(1 - beta2 ** step)
    if amsgrad:
        np.maximum(st["vmax"], v, out=st["vmax"])
        denom = np.sqrt(st["vmax"]) / bc2_sqrt + eps
    else:
        denom = np.sqrt(v) / bc2_sqrt + eps
    return p - (lr / bc1) * m / denom


def _params(dtype, rng, shapes=((5, 3), (3,), (4, 4, 2), ())):
    return [nn.Parameter(gradlab.from_numpy(rng.standard_normal(s).astype(dtype))) for s in shapes]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", [dict(momentum=0.9), dict(momentum=0.9, dampening=0.3, weight_decay=0.01),
                                dict(momentum=0.8, nesterov=True, maximize=True), dict(weight_decay=0.1), {}])
def test_sgd_matches_plain_formula_bit_for_bit(dtype, kw):
    rng = np.random.default_rng(0)
    ps = _params(dtype, rng)
    ref = [p._data.copy() for p in ps]
    bufs = [None] * len(ps)
    opt = gradlab.optim.SGD(ps, lr=0.05, **kw)
    args = dict(mom=kw.get("momentum", 0.0), damp=kw.get("dampening", 0.0), wd=kw.get("weight_decay", 0.0),
                nesterov=kw.get("nesterov", False), maximize=kw.get("maximize", False))
    for _ in range(4):
        for i, p in enumerate(ps):
            g = rng.standard_normal(p.shape).astype(dtype)
            p.grad = gradlab.from_numpy(g)
            ref[i], bufs[i] = _ref_sgd(ref[i], g, bufs[i], 0.05, **args)
        opt.step()
        for p, r in zip(ps, ref):
            assert p._data.dtype == dtype and np.array_equal(p._data, r)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cls,kw", [("Adam", {}), ("Adam", dict(weight_decay=0.1, amsgrad=True)),
                                    ("Adam", dict(maximize=True)), ("AdamW", {}),
                                    ("AdamW", dict(weight_decay=0.3, amsgrad=True))])
def test_adam_matches_plain_formula_bit_for_bit(dtype, cls, kw):
    rng = np.random.default_rng(1)
    ps = _params(dtype, rng)
    ref = [p._data.copy() for p in ps]
    states = [dict(step=0, m=np.zeros_like(r), v=np.zeros_like(r), vmax=np.zeros_like(r)) for r in ref]
    opt = getattr(gradlab.optim, cls)(ps, lr=0.01, **kw)
    wd = kw.get("weight_decay", 0.01 if cls == "AdamW" else 0.0)
    for _ in range(4):
        for i, p in enumerate(ps):
            g = rng.standard_normal(p.shape).astype(dtype)
            p.grad = gradlab.from_numpy(g)
            ref[i] = _ref_adam(ref[i], g, states[i], 0.01, 0.9, 0.999, 1e-8, wd, kw.get("amsgrad", False),
                               kw.get("maximize", False), cls == "AdamW")
        opt.step()
        for p, r in zip(ps, ref):
            assert p._data.dtype == dtype and np.array_equal(p._data, r)


@pytest.mark.parametrize("cls,kw", [("SGD", dict(momentum=0.9, weight_decay=0.01)), ("Adam", dict(amsgrad=True)),
                                    ("AdamW", dict(weight_decay=0.1))])
def test_optimizers_match_pytorch(torch, cls, kw):
    rng = np.random.default_rng(2)
    init = [rng.standard_normal(s).astype(np.float32) for s in ((6, 4), (4,))]
    gp = [nn.Parameter(gradlab.from_numpy(a.copy())) for a in init]
    tp = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in init]
    go = getattr(gradlab.optim, cls)(gp, lr=0.02, **kw)
    to = getattr(torch.optim, cls)(tp, lr=0.02, **kw)
    for _ in range(5):
        for a, b in zip(gp, tp):
            g = rng.standard_normal(a.shape).astype(np.float32)
            a.grad, b.grad = gradlab.from_numpy(g), torch.from_numpy(g.copy())
        go.step()
        to.step()
    for a, b in zip(gp, tp):
        np.testing.assert_allclose(a._data, b.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_update_of_a_read_only_parameter_replaces_its_array():
    p = nn.Parameter(gradlab.from_numpy(np.ones((2, 3), np.float32)))
    p._data = np.broadcast_to(np.float32(1.0), (2, 3))  # read-only
    v0 = p._version.value
    p.grad = gradlab.from_numpy(np.full((2, 3), 2.0, np.float32))
    gradlab.optim.SGD([p], lr=0.5).step()
    assert np.array_equal(p._data, np.zeros((2, 3), np.float32)) and p._version.value == v0 + 1


# ------------------------------------------------------------------ sigmoid
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_sigmoid_in_place_forward_is_the_stable_formula(dtype):
    a = (np.random.default_rng(3).standard_normal(500) * 30).astype(dtype)
    a[:5] = [0.0, -0.0, np.nan, np.inf, -np.inf]
    y = O.sigmoid(gradlab.from_numpy(a))._data
    b = a.astype(np.float32) if dtype == np.float16 else a
    e = np.exp(-np.abs(b))
    ref = np.where(b >= 0, 1 / (1 + e), e / (1 + e)).astype(dtype)
    assert y.dtype == dtype and np.array_equal(y, ref, equal_nan=True)
    assert np.array_equal(np.signbit(y), np.signbit(ref))


def test_sigmoid_of_a_0d_tensor():
    for v in (-3.0, 0.0, 2.5):
        x = gradlab.tensor(v, dtype=gradlab.float64, requires_grad=True)
        y = O.sigmoid(x)
        y.backward()
        e = math.exp(-abs(v))
        assert y.shape == () and y.item() == (1 / (1 + e) if v >= 0 else e / (1 + e))
        assert abs(x.grad.item() - y.item() * (1 - y.item())) < 1e-15


def test_sigmoid_matches_pytorch(torch):
    a = (np.random.default_rng(4).standard_normal((8, 32)) * 5).astype(np.float32)
    x = gradlab.from_numpy(a).requires_grad_()
    O.sigmoid(x).sum().backward()
    t = torch.from_numpy(a).requires_grad_()
    torch.sigmoid(t).sum().backward()
    np.testing.assert_allclose(O.sigmoid(x)._data, torch.sigmoid(t).detach().numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(x.grad._data, t.grad.numpy(), rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------------ getitem, transpose
@pytest.mark.parametrize("index", [(slice(None), slice(2, 5)), slice(1, 3), 2, (1, slice(None, None, 2)),
                                   (None, Ellipsis, 0), (Ellipsis, slice(-3, None))])
def test_plain_slices_are_views_with_the_right_gradient(index, torch):
    a = np.random.default_rng(5).standard_normal((4, 6)).astype(np.float32)
    x = gradlab.from_numpy(a.copy()).requires_grad_()
    y = x[index]
    assert np.array_equal(y._data, a[index]) and y._version is x._version  # a view: shares the version counter
    (y * y).sum().backward()
    t = torch.from_numpy(a.copy()).requires_grad_()
    (t[index] * t[index]).sum().backward()
    assert np.array_equal(x.grad._data, t.grad.numpy())


def test_non_plain_indices_still_take_the_general_path():
    x = gradlab.from_numpy(np.arange(12.0).reshape(3, 4))
    assert np.array_equal(x[np.int64(1)]._data, np.arange(4.0, 8.0))           # NumPy integer
    assert np.array_equal(x[[0, 2], 1:3]._data, np.arange(12.0).reshape(3, 4)[[0, 2], 1:3])
    assert x[True].shape == (1, 3, 4)                                           # a bool is not an int
    with pytest.raises(IndexOutOfRange):
        x[5]
    with pytest.raises(IndexOutOfRange):
        x[0, 0, 0]


def test_transpose_and_permute_backward(torch):
    a = np.random.default_rng(6).standard_normal((2, 3, 4)).astype(np.float64)
    x = gradlab.from_numpy(a).requires_grad_()
    for same in (O.transpose(x, 1, 1), O.transpose(x, -1, 2)):  # a new view, as PyTorch's, never x itself
        assert same is not x and same._version is x._version and np.array_equal(same.detach().numpy(), a)
    w = gradlab.from_numpy(np.random.default_rng(7).standard_normal((4, 3, 2)))
    (O.transpose(x, 0, 2) * w).sum().backward()
    gx = x.grad._data.copy()
    x.grad = None
    (O.permute(x, (1, 2, 0)).sum(0) * O.permute(w, (1, 0, 2)).sum(0)).sum().backward()
    t = torch.from_numpy(a).requires_grad_()
    tw = torch.from_numpy(w._data)
    (t.transpose(0, 2) * tw).sum().backward()
    assert np.array_equal(gx, t.grad.numpy())
    t.grad = None
    (t.permute(1, 2, 0).sum(0) * tw.permute(1, 0, 2).sum(0)).sum().backward()
    np.testing.assert_allclose(x.grad._data, t.grad.numpy(), rtol=1e-12)
    assert gradlab.autograd.gradcheck(lambda v: O.permute(v, (2, 0, 1)) * 2, (x,))


# ------------------------------------------------------------------ Module.__call__
class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.act = nn.Sequential(nn.Tanh())

    def forward(self, x, scale=1.0):
        return self.act(self.fc(x)) * scale


def test_module_call_labels_hooks_and_keyword_arguments():
    net = _Net()
    seen = []
    h = net.fc.register_forward_pre_hook(lambda m, args: seen.append(("pre", type(m).__name__)))
    h2 = net.register_forward_hook(lambda m, args, out: out * 2)
    x = gradlab.from_numpy(np.ones((2, 3), np.float32))
    y = net(x, scale=3.0)
    ref = np.tanh(x._data @ net.fc.weight._data.T + net.fc.bias._data) * np.float32(3.0) * 2
    np.testing.assert_array_equal(y._data, ref)
    assert seen == [("pre", "Linear")]
    labels = set()
    stack = [y.grad_fn]
    while stack:
        n = stack.pop()
        if n is None or not hasattr(n, "meta"):
            continue
        if n.meta and "module" in n.meta:
            labels.add((n.meta["module"], n.meta["module_type"]))
        stack.extend(e[0] for e in (n.next_functions or ()) if e is not None)
    assert {("fc", "Linear"), ("act.0", "Tanh"), ("", "_Net")} <= labels
    h.remove()
    h2.remove()


def test_module_call_cleans_up_after_an_error():
    from gradlab.autograd import function as fn
    from gradlab.nn import _naming

    class Bad(nn.Module):
        def forward(self, x):
            raise RuntimeError("boom")

    outer = nn.Sequential(nn.Identity(), Bad())
    with pytest.raises(RuntimeError, match="boom"):
        outer(gradlab.zeros(2))
    assert _naming._stack == [] and _naming._names == [None]
    assert _naming._observer not in fn.node_observers
    assert nn.Module.__call__ is _naming.module_call and nn.Module._version is _naming._version


def test_module_call_passes_any_keyword_through():
    class Kw(nn.Module):
        def forward(self, x, mod=None, args=None, kwargs=None):
            return (x, mod, args, kwargs)

    assert Kw()(1, mod=2, args=3, kwargs=4) == (1, 2, 3, 4)


# ------------------------------------------------------------------ batch_norm running statistics
@pytest.mark.parametrize("shape,dtype,transposed", [((64, 32), np.float32, False), ((40, 6), np.float64, True),
                                                    ((8, 4, 5, 5), np.float32, False), ((6, 3), np.float16, False)])
def test_batch_norm_running_stats_reuse_the_graph_statistics(shape, dtype, transposed):
    from gradlab.nn import functional as F
    rng = np.random.default_rng(8)
    a = (rng.standard_normal(shape[::-1] if transposed else shape) * 3 + 1).astype(dtype)
    a = a.T if transposed else a  # a non-contiguous batch
    c = shape[1]
    rm = gradlab.from_numpy(rng.standard_normal(c).astype(dtype))
    rv = gradlab.from_numpy(rng.random(c).astype(dtype) + 0.5)
    rm0, rv0 = rm._data.copy(), rv._data.copy()
    F.batch_norm(gradlab.from_numpy(a), rm, rv, training=True, momentum=0.2)
    dims = (0,) + tuple(range(2, a.ndim))
    n = a.size // c
    ref_m = (1 - 0.2) * rm0 + 0.2 * a.mean(axis=dims).astype(dtype)
    ref_v = (1 - 0.2) * rv0 + 0.2 * (a.var(axis=dims) * n / (n - 1)).astype(dtype)
    # (the fused forward sums per channel in another order than NumPy's mean: equal up to rounding)
    tol = {np.float16: 1e-3, np.float32: 2e-6, np.float64: 1e-14}[dtype]
    np.testing.assert_allclose(rm._data, ref_m, rtol=tol, atol=tol)
    np.testing.assert_allclose(rv._data, ref_v, rtol=tol, atol=tol)


def test_batch_norm_module_matches_pytorch(torch):
    rng = np.random.default_rng(9)
    a = rng.standard_normal((16, 3, 4, 4)).astype(np.float32)
    g, t = nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
    for _ in range(3):
        yg, yt = g(gradlab.from_numpy(a)), t(torch.from_numpy(a))
    np.testing.assert_allclose(yg._data, yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(g.running_mean._data, t.running_mean.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(g.running_var._data, t.running_var.numpy(), rtol=1e-6, atol=1e-7)


# ------------------------------------------------------------------ batch_norm as one op (training)
def _bn_composite(x, w, b, eps=1e-5):
    from gradlab.nn import _normalization as _norm
    dims = (0,) + tuple(range(2, x.ndim))
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    return _norm._affine(_norm._standardize(x, dims, eps), w, b, shape)


@pytest.mark.parametrize("shape,dtype", [((64, 16), np.float32), ((6, 3, 4, 5), np.float64), ((5, 2, 3), np.float32)])
def test_fused_batch_norm_forward_is_the_composite_up_to_rounding(shape, dtype):
    from gradlab.nn import functional as F
    rng = np.random.default_rng(10)
    a = (rng.standard_normal(shape) * 2 + 1).astype(dtype)
    c = shape[1]
    w = gradlab.from_numpy(rng.standard_normal(c).astype(dtype)).requires_grad_()
    b = gradlab.from_numpy(rng.standard_normal(c).astype(dtype)).requires_grad_()
    x = gradlab.from_numpy(a).requires_grad_()
    y = F.batch_norm(x, None, None, w, b, training=True)
    assert y.grad_fn.name == "batch_norm"   # one node, with its own formula
    yr = _bn_composite(x, w, b)
    # (its sums run in another order, and it multiplies by rstd * weight: a few ulps apart)
    close = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(y._data, yr._data, **close)
    g = gradlab.from_numpy(rng.standard_normal(shape).astype(dtype))
    fast = gradlab.autograd.grad((y * g).sum(), [x, w, b])
    slow = gradlab.autograd.grad((yr * g).sum(), [x, w, b])
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for f, s in zip(fast, slow):
        np.testing.assert_allclose(f._data, s._data, rtol=tol, atol=tol)


def test_fused_batch_norm_far_from_zero_matches_pytorch(torch):
    # a mean 10^4 times the spread: the variance is taken of x - mean (two passes), not as
    # E[x^2] - mean^2, which would lose every digit in float32 (the inputs' own rounding, an ulp of
    # 10^4 = 1e-3, is what the 1e-2 tolerance allows for)
    rng = np.random.default_rng(13)
    a = (rng.standard_normal((16, 4, 6, 6)) + 1e4).astype(np.float32)
    g = rng.standard_normal(a.shape).astype(np.float32)
    x, tx = gradlab.from_numpy(a).requires_grad_(), torch.from_numpy(a).requires_grad_()
    gm, tm = nn.BatchNorm2d(4), torch.nn.BatchNorm2d(4)
    y, ty = gm(x), tm(tx)
    y.backward(gradlab.from_numpy(g))
    ty.backward(torch.from_numpy(g))
    np.testing.assert_allclose(y._data, ty.detach().numpy(), rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(x.grad._data, tx.grad.numpy(), rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(gm.running_var._data, tm.running_var.numpy(), rtol=1e-2)


def test_fused_batch_norm_gradcheck_second_order_and_forward_mode():
    from gradlab.nn import functional as F
    rng = np.random.default_rng(11)
    x = gradlab.from_numpy(rng.standard_normal((4, 3, 2))).requires_grad_()
    w = gradlab.from_numpy(rng.standard_normal(3)).requires_grad_()
    b = gradlab.from_numpy(rng.standard_normal(3)).requires_grad_()
    fn = lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True)  # noqa: E731
    assert gradlab.autograd.gradcheck(fn, (x, w, b))
    assert gradlab.autograd.gradgradcheck(fn, (x, w, b))
    tangents = tuple(gradlab.from_numpy(rng.standard_normal(t.shape)) for t in (x, w, b))
    _, jf = gradlab.func.jvp(fn, (x, w, b), tangents)
    _, jc = gradlab.func.jvp(_bn_composite, (x, w, b), tangents)
    np.testing.assert_allclose(jf._data, jc._data, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("affine,momentum", [(True, 0.1), (False, None)])
def test_batch_norm_spread_per_channel_operands_match_pytorch(torch, affine, momentum):
    # a contiguous batch of images runs its per-channel passes against the values spread over one
    # image (layer_batch_norm._per_channel): values, gradients and running statistics as PyTorch's, in
    # training and then in eval mode; a transposed view of the same values keeps the (1, C, 1, 1) operand
    from gradlab.ops.layer_batch_norm import _per_channel
    rng = np.random.default_rng(14)
    a = (rng.standard_normal((8, 5, 6, 7)) * 2 + 3).astype(np.float32)
    v = np.arange(5, dtype=np.float32).reshape(1, 5, 1, 1)
    assert _per_channel(v, a).shape == (5, 6, 7) and _per_channel(v, a.transpose(0, 1, 3, 2)) is v
    gm = nn.BatchNorm2d(5, affine=affine, momentum=momentum)
    tm = torch.nn.BatchNorm2d(5, affine=affine, momentum=momentum)
    if affine:
        w, b = rng.standard_normal(5).astype(np.float32), rng.standard_normal(5).astype(np.float32)
        for m, lib in ((gm, gradlab), (tm, torch)):
            with lib.no_grad():
                m.weight.copy_(lib.tensor(w))
                m.bias.copy_(lib.tensor(b))
    g = rng.standard_normal(a.shape).astype(np.float32)
    for _ in range(2):
        x, tx = gradlab.from_numpy(a).requires_grad_(), torch.from_numpy(a).requires_grad_()
        y, ty = gm(x), tm(tx)
        y.backward(gradlab.from_numpy(g))
        ty.backward(torch.from_numpy(g))
        np.testing.assert_allclose(y._data, ty.detach().numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(x.grad._data, tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    if affine:
        np.testing.assert_allclose(gm.weight.grad._data, tm.weight.grad.numpy(), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(gm.bias.grad._data, tm.bias.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gm.running_mean._data, tm.running_mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gm.running_var._data, tm.running_var.numpy(), rtol=1e-5, atol=1e-6)
    gm.eval()
    tm.eval()
    np.testing.assert_allclose(gm(gradlab.from_numpy(a))._data, tm(torch.from_numpy(a)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)
    # the same values as a transposed (non-contiguous) view: the (1, C, 1, 1) operands, equal up to rounding
    gm.train()
    at = np.ascontiguousarray(a.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    assert not at.flags.c_contiguous
    y1, y2 = gm(gradlab.from_numpy(a)), gm(gradlab.from_numpy(at))
    np.testing.assert_allclose(y1._data, y2._data, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("hw", [(8, 8), (16, 16), (64, 128), (128, 128)])
def test_batch_norm_channel_dot_products_by_row_length(hw):
    # per-channel sums of a * b: einsum below 256 values a row, vecdot (one sdot a row) from 256 to 8192,
    # einsum above (OpenBLAS would thread a longer dot product); all the float64 answer up to rounding
    from gradlab.ops.layer_batch_norm import _channel_sums
    rng = np.random.default_rng(17)
    a, b = (rng.standard_normal((4, 3) + hw).astype(np.float32) for _ in range(2))
    ref = np.einsum("nchw,nchw->c", a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(_channel_sums(a, b), ref, rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(_channel_sums(a, a), (a.astype(np.float64) ** 2).sum(axis=(0, 2, 3)), rtol=1e-5)


def test_batch_norm_spread_path_gradcheck():
    # float64, a batch big enough for the spread operands (N >= 4, contiguous images)
    from gradlab.nn import functional as F
    rng = np.random.default_rng(15)
    x = gradlab.from_numpy(rng.standard_normal((5, 2, 3, 2))).requires_grad_()
    w = gradlab.from_numpy(rng.standard_normal(2)).requires_grad_()
    b = gradlab.from_numpy(rng.standard_normal(2)).requires_grad_()
    assert gradlab.autograd.gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), (x, w, b))
    assert gradlab.autograd.gradcheck(lambda x: F.batch_norm(x, None, None, training=True), (x,))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_against_a_block_of_zeros_is_maximum_with_zero(torch, dtype):
    # a large contiguous float array takes the maximum against a block of zeros (unary._relu_forward):
    # the same bits as maximum(a, 0), specials included; the gradient at 0 is 0, as PyTorch's
    from gradlab.ops.unary import _relu_forward
    rng = np.random.default_rng(16)
    a = rng.standard_normal((8, 4, 32, 32)).astype(dtype)
    a.reshape(-1)[:6] = [-0.0, 0.0, np.nan, -np.inf, np.inf, -np.nan]
    assert _relu_forward(a).tobytes() == np.maximum(a, 0).tobytes()
    assert _relu_forward(a[:, :, ::2]).tobytes() == np.maximum(a[:, :, ::2], 0).tobytes()  # a view: maximum(a, 0)
    a.reshape(-1)[:6] = [-0.0, 0.0, 0.0, -1.0, 1.0, 0.0]
    x, tx = gradlab.from_numpy(a).requires_grad_(), torch.from_numpy(a).requires_grad_()
    g = rng.standard_normal(a.shape).astype(dtype)
    gradlab.relu(x).backward(gradlab.from_numpy(g))
    torch.relu(tx).backward(torch.from_numpy(g))
    np.testing.assert_array_equal(gradlab.relu(x)._data, torch.relu(tx).detach().numpy())
    np.testing.assert_array_equal(x.grad._data, tx.grad.numpy())


def test_fused_batch_norm_training_matches_pytorch(torch):
    rng = np.random.default_rng(12)
    a = rng.standard_normal((32, 8)).astype(np.float32)
    g = nn.Sequential(nn.Linear(8, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 1))
    t = torch.nn.Sequential(torch.nn.Linear(8, 6), torch.nn.BatchNorm1d(6), torch.nn.ReLU(), torch.nn.Linear(6, 1))
    t.load_state_dict({k: torch.from_numpy(v._data.copy()) for k, v in g.state_dict().items()})
    g(gradlab.from_numpy(a)).sum().backward()
    t(torch.from_numpy(a)).sum().backward()
    for (name, p), q in zip(g.named_parameters(), t.parameters()):
        np.testing.assert_allclose(p.grad._data, q.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    np.testing.assert_allclose(g[1].running_var._data, t[1].running_var.numpy(), rtol=1e-6)


# ------------------------------------------------------------------ stacks of small products
@pytest.mark.parametrize("xs, ys", [
    ((32, 4, 64, 32), (32, 4, 32, 64)),       # attention's scores: both operands cut
    ((1, 4, 64, 32), (32, 4, 32, 64)),        # a size-1 batch dim broadcasts: only the right one is cut
    ((32, 4, 64, 32), (4, 32, 64)),           # fewer dims on the right: it broadcasts whole
    ((300, 48, 40), (40, 48)),                # a matrix on the right
    ((48, 40), (300, 40, 48)),                # a matrix on the left
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_stacks_of_small_products_are_split_across_threads_with_the_same_bits(monkeypatch, xs, ys, dtype):
    from gradlab.backend import threads
    from gradlab.ops import products
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(dtype)
    y = rng.standard_normal(ys).astype(dtype)
    calls = []
    real = threads.parallel_for
    monkeypatch.setattr(threads, "parallel_for", lambda part, n, **kw: (calls.append(n), real(part, n, **kw)))
    g = rng.standard_normal(np.broadcast_shapes(xs[:-2], ys[:-2]) + (xs[-2], ys[-1])).astype(dtype)
    results = {}
    old = gradlab.get_num_threads()
    try:
        for n in (2, 1):
            gradlab.set_num_threads(n)
            a, b = gradlab.tensor(x, requires_grad=True), gradlab.tensor(y, requires_grad=True)
            out = a @ b
            out.backward(gradlab.tensor(g))
            results[n] = (products.matmul_arrays(x, y), out.detach().numpy(), a.grad.numpy(), b.grad.numpy())
    finally:
        gradlab.set_num_threads(old)
    assert calls and set(calls) == {g.shape[0]}      # split (forward and dA/dB's stacks) along the first batch dim
    want = np.matmul(x, y)
    assert results[2][0].dtype == dtype and np.array_equal(results[2][0], want) and np.array_equal(results[2][1], want)
    for two, one in zip(results[2], results[1]):     # the same bits on one thread and on two, gradients too
        assert np.array_equal(two, one)


def test_attention_sized_stack_forward_and_backward_match_pytorch(torch):
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((32, 4, 64, 32)), rng.standard_normal((32, 4, 32, 64))
    g = rng.standard_normal((32, 4, 64, 64))
    a, b = gradlab.tensor(x, requires_grad=True), gradlab.tensor(y, requires_grad=True)
    (a @ b).backward(gradlab.tensor(g))
    ta, tb = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    (ta @ tb).backward(torch.tensor(g))
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_large_or_few_products_are_left_to_blas(monkeypatch):
    from gradlab.backend import threads
    from gradlab.ops import products
    calls = []
    monkeypatch.setattr(threads, "parallel_for", lambda *a, **kw: calls.append(a))
    rng = np.random.default_rng(1)
    old = gradlab.get_num_threads()
    try:
        gradlab.set_num_threads(2)
        big = rng.standard_normal((4, 128, 128)).astype(np.float32)       # each product 2M MACs: BLAS splits it
        assert np.array_equal(products.matmul_arrays(big, big), np.matmul(big, big))
        small = rng.standard_normal((2, 8, 8)).astype(np.float32)         # the whole stack too small to split
        assert np.array_equal(products.matmul_arrays(small, small), np.matmul(small, small))
    finally:
        gradlab.set_num_threads(old)
    assert calls == []
