"""gradlab.nn.functional beyond the registry suite: semantics vs PyTorch, stability, dropout, bad input."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
import gradlab.nn.functional as F
from gradlab.errors import ArgumentError, DTypeError, IndexOutOfRange, ShapeError

from .oracle import assert_close


def _pair(torch, a, requires_grad=True):
    """The same array as a gradlab leaf and a torch leaf."""
    a = np.asarray(a)
    g = gradlab.tensor(a.copy(), requires_grad=requires_grad and a.dtype.kind == "f")
    t = torch.from_numpy(a.copy())
    if requires_grad and a.dtype.kind == "f":
        t.requires_grad_(True)
    return g, t


def _check(torch, out, tout, ins, tins, atol=1e-8, rtol=1e-6):
    """Forward values and the gradients of sum(out * cotangent) agree with PyTorch."""
    assert_close(out._data, tout.detach().numpy(), atol=atol, rtol=rtol, what="forward")
    cot = np.random.default_rng(1).standard_normal(out.shape)
    (out * gradlab.tensor(cot, dtype=out.dtype)).sum().backward()
    (tout * torch.from_numpy(cot).to(tout.dtype)).sum().backward()
    for i, (a, b) in enumerate(zip(ins, tins)):
        assert_close(a.grad._data, b.grad.numpy(), atol=atol, rtol=rtol, what=f"grad of input {i}")


# ---------------------------------------------------------------- stability
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_family_is_stable_at_1e4(torch, dtype, fn):
    rng = np.random.default_rng(0)
    a = (rng.choice([-1.0, 1.0], size=(4, 7)) * 1e4 + rng.standard_normal((4, 7))).astype(dtype)
    x, tx = _pair(torch, a)
    out = getattr(F, fn)(x, dim=1)
    tout = getattr(torch.nn.functional, fn)(tx, dim=1)
    assert np.isfinite(out._data).all()
    tol = dict(atol=1e-3, rtol=1e-5) if dtype == "float32" else {}
    _check(torch, out, tout, [x], [tx], **tol)
    assert np.isfinite(x.grad._data).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cross_entropy_is_stable_at_1e4(torch, dtype):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((6, 5)) * 1e4).astype(dtype)
    y = rng.integers(0, 5, size=6)
    x, tx = _pair(torch, a)
    loss = F.cross_entropy(x, gradlab.tensor(y), label_smoothing=0.1)
    tloss = torch.nn.functional.cross_entropy(tx, torch.from_numpy(y), label_smoothing=0.1)
    assert np.isfinite(loss.item())
    rtol = 1e-5 if dtype == "float32" else 1e-10
    assert_close(loss._data, tloss.detach().numpy(), rtol=rtol, what="loss")
    loss.backward()
    tloss.backward()
    assert np.isfinite(x.grad._data).all()
    assert_close(x.grad._data, tx.grad.numpy(), atol=1e-6, rtol=rtol, what="grad")


def test_bce_with_logits_is_stable_at_100(torch):
    a = np.array([-100.0, -30.0, 0.0, 30.0, 100.0], dtype=np.float32)
    t = np.array([1.0, 0.0, 0.5, 1.0, 0.0], dtype=np.float32)
    x, tx = _pair(torch, a)
    out = F.binary_cross_entropy_with_logits(x, gradlab.tensor(t), reduction="none")
    tout = torch.nn.functional.binary_cross_entropy_with_logits(tx, torch.from_numpy(t), reduction="none")
    assert np.isfinite(out._data).all()
    _check(torch, out, tout, [x], [tx], atol=1e-5, rtol=1e-6)


def test_softmax_needs_dim():
    with pytest.raises(ArgumentError, match="dim"):
        F.softmax(gradlab.randn(3, 4))


# -------------------------------------------------------------- cross entropy
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("ignore_index", [-100, 2])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.25])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_semantics(torch, reduction, ignore_index, label_smoothing, weighted):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 5, 3, 2))
    y = rng.integers(0, 5, size=(4, 3, 2))
    y[rng.random(y.shape) < 0.3] = ignore_index
    x, tx = _pair(torch, a)
    kw = dict(reduction=reduction, ignore_index=ignore_index, label_smoothing=label_smoothing)
    tkw = dict(kw)
    if weighted:
        w = rng.uniform(0.5, 2.0, size=5)
        kw["weight"], tkw["weight"] = gradlab.tensor(w), torch.from_numpy(w)
    out = F.cross_entropy(x, gradlab.tensor(y), **kw)
    tout = torch.nn.functional.cross_entropy(tx, torch.from_numpy(y), **tkw)
    _check(torch, out, tout, [x], [tx])


def test_cross_entropy_all_ignored_is_nan_like_torch(torch):
    a = np.random.default_rng(0).standard_normal((3, 4))
    y = np.full(3, -100)
    x, tx = _pair(torch, a)
    out = F.cross_entropy(x, gradlab.tensor(y))
    tout = torch.nn.functional.cross_entropy(tx, torch.from_numpy(y))
    assert np.isnan(out.item()) and np.isnan(tout.item())
    out.backward()
    tout.backward()
    assert_close(x.grad._data, tx.grad.numpy())


@pytest.mark.parametrize("label_smoothing", [0.0, 0.3])
def test_cross_entropy_with_probabilities(torch, label_smoothing):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 4, 2))
    p = rng.uniform(0.1, 1, size=(3, 4, 2))
    p /= p.sum(1, keepdims=True)
    (x, tx), (pt, tpt) = _pair(torch, a), _pair(torch, p)
    w = rng.uniform(0.5, 2, size=4)
    out = F.cross_entropy(x, pt, weight=gradlab.tensor(w), label_smoothing=label_smoothing)
    tout = torch.nn.functional.cross_entropy(tx, tpt, weight=torch.from_numpy(w), label_smoothing=label_smoothing)
    _check(torch, out, tout, [x, pt], [tx, tpt])


def test_cross_entropy_gradient_is_softmax_minus_onehot():
    x = gradlab.randn(5, 7, dtype=gradlab.float64, requires_grad=True)
    y = gradlab.tensor([0, 6, 3, 3, 1])
    F.cross_entropy(x, y, reduction="sum").backward()
    expected = F.softmax(x.detach(), dim=1).numpy() - F.one_hot(y, 7).numpy()
    np.testing.assert_allclose(x.grad.numpy(), expected, atol=1e-12)


def test_cross_entropy_second_order_matches_torch(torch):
    rng = np.random.default_rng(5)
    a, v = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    y = np.array([1, 0, 3])
    x, tx = _pair(torch, a)
    (g,) = gradlab.grad(F.cross_entropy(x, gradlab.tensor(y), label_smoothing=0.1), [x], create_graph=True)
    (hv,) = gradlab.grad((g * gradlab.tensor(v)).sum(), [x])
    (tg,) = torch.autograd.grad(torch.nn.functional.cross_entropy(tx, torch.from_numpy(y), label_smoothing=0.1),
                                [tx], create_graph=True)
    (thv,) = torch.autograd.grad((tg * torch.from_numpy(v)).sum(), [tx])
    assert_close(hv._data, thv.numpy(), what="Hessian-vector product")


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_nll_loss_matches_torch(torch, reduction):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((5, 3))
    y = np.array([0, 2, 1, 2, -1])
    x, tx = _pair(torch, a)
    w = np.array([1.0, 0.5, 2.0])
    out = F.nll_loss(x, gradlab.tensor(y), weight=gradlab.tensor(w), ignore_index=-1, reduction=reduction)
    tout = torch.nn.functional.nll_loss(tx, torch.from_numpy(y), weight=torch.from_numpy(w), ignore_index=-1,
                                        reduction=reduction)
    _check(torch, out, tout, [x], [tx])


def test_legacy_size_average_and_reduce_flags(torch):
    a, b = np.random.default_rng(0).standard_normal((2, 3, 4))
    (x, tx), (t, tt) = _pair(torch, a, False), _pair(torch, b, False)
    for flags in (dict(size_average=False), dict(reduce=False), dict(size_average=True, reduce=True)):
        assert_close(F.mse_loss(x, t, **flags)._data, torch.nn.functional.mse_loss(tx, tt, **flags).numpy())


# ------------------------------------------------------------------ bad input
def test_cross_entropy_target_out_of_range():
    with pytest.raises(IndexOutOfRange, match=r"class 5.*\[0, 5\).*\(2, 5\)"):
        F.cross_entropy(gradlab.randn(2, 5), gradlab.tensor([1, 5]))
    with pytest.raises(IndexOutOfRange, match=r"class -3"):
        F.cross_entropy(gradlab.randn(2, 5), gradlab.tensor([1, -3]))


def test_cross_entropy_float_targets_where_indices_expected():
    with pytest.raises(ShapeError, match=r"float target.*\(2, 5\).*\(2,\).*long"):
        F.cross_entropy(gradlab.randn(2, 5), gradlab.tensor([1.0, 3.0]))
    with pytest.raises(DTypeError, match=r"target has dtype float32.*integers.*\(2,\)"):
        F.nll_loss(gradlab.randn(2, 5), gradlab.tensor([1.0, 3.0]))


def test_cross_entropy_target_shape_mismatch():
    with pytest.raises(ShapeError, match=r"target has shape \(3,\).*\(2, 5\).*\(2,\)"):
        F.cross_entropy(gradlab.randn(2, 5), gradlab.tensor([1, 2, 3]))
    with pytest.raises(ShapeError, match=r"target has shape \(2, 4\).*\(2, 5, 3\).*\(2, 3\)"):
        F.cross_entropy(gradlab.randn(2, 5, 3), gradlab.zeros(2, 4, dtype=gradlab.int64))
    with pytest.raises(ShapeError, match=r"weight has shape \(4,\).*5 classes"):
        F.cross_entropy(gradlab.randn(2, 5), gradlab.tensor([1, 2]), weight=gradlab.ones(4))
    with pytest.raises(ArgumentError, match="reduction"):
        F.cross_entropy(gradlab.randn(2, 5), gradlab.tensor([1, 2]), reduction="avg")


def test_layer_norm_bad_shapes():
    x = gradlab.randn(2, 3, 4)
    with pytest.raises(ShapeError, match=r"normalized_shape \(3,\).*\(2, 3, 4\).*\(4,\)"):
        F.layer_norm(x, (3,))
    with pytest.raises(ShapeError, match=r"normalized_shape \(2, 3, 4, 5\).*\(2, 3, 4\)"):
        F.layer_norm(x, (2, 3, 4, 5))
    with pytest.raises(ShapeError, match=r"weight has shape \(3,\).*\(4,\)"):
        F.layer_norm(x, (4,), weight=gradlab.ones(3))


# ------------------------------------------------------------------ layers
def test_layer_norm_over_two_dims(torch):
    rng = np.random.default_rng(7)
    (x, tx), (w, tw), (b, tb) = (_pair(torch, rng.standard_normal(s)) for s in ((2, 3, 4, 5), (4, 5), (4, 5)))
    out = F.layer_norm(x, (4, 5), w, b, eps=1e-3)
    tout = torch.nn.functional.layer_norm(tx, (4, 5), tw, tb, eps=1e-3)
    _check(torch, out, tout, [x, w, b], [tx, tw, tb])


def test_dropout_is_seeded_and_scaled():
    x = gradlab.ones(1000, requires_grad=True)
    gradlab.manual_seed(123)
    a = F.dropout(x, 0.25)
    gradlab.manual_seed(123)
    b = F.dropout(x, 0.25)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    vals = set(np.unique(a.detach().numpy()).tolist())
    assert vals <= {0.0, np.float32(1 / 0.75)}, vals
    assert 0.18 < float((a.detach().numpy() == 0).mean()) < 0.32
    a.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), a.detach().numpy())  # dX = mask / (1 - p)
    c = F.dropout(x, 0.25)
    assert not np.array_equal(c.detach().numpy(), a.detach().numpy()), "a second call draws a new mask"


def test_dropout_eval_mode_and_edges():
    x = gradlab.randn(4, 5)
    assert F.dropout(x, 0.9, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert not F.dropout(x, 1.0).numpy().any()
    with pytest.raises(ArgumentError, match=r"\[0, 1\]"):
        F.dropout(x, 1.5)


def test_embedding_accumulates_repeated_ids(torch):
    rng = np.random.default_rng(8)
    ids = np.array([[0, 3, 3], [1, 3, 0]])
    (w, tw) = _pair(torch, rng.standard_normal((5, 4)))
    for kw in (dict(), dict(padding_idx=3), dict(scale_grad_by_freq=True), dict(padding_idx=-5)):
        w.grad, tw.grad = None, None
        out = F.embedding(gradlab.tensor(ids), w, **kw)
        tout = torch.nn.functional.embedding(torch.from_numpy(ids), tw, **kw)
        _check(torch, out, tout, [w], [tw])


def test_embedding_max_norm_renormalizes_in_place(torch):
    a = np.random.default_rng(9).standard_normal((4, 3)) * 3
    w, tw = gradlab.tensor(a.copy()), torch.from_numpy(a.copy())
    ids = np.array([2, 0, 2])
    out = F.embedding(gradlab.tensor(ids), w, max_norm=1.0)
    tout = torch.nn.functional.embedding(torch.from_numpy(ids), tw, max_norm=1.0)
    assert_close(out._data, tout.numpy(), rtol=1e-6)
    assert_close(w._data, tw.numpy(), rtol=1e-6, what="weight after renorm")


def test_embedding_bad_ids():
    with pytest.raises(IndexOutOfRange, match=r"id 7 is outside \[0, 5\)"):
        F.embedding(gradlab.tensor([1, 7]), gradlab.randn(5, 2))
    with pytest.raises(DTypeError, match="integer"):
        F.embedding(gradlab.tensor([1.0]), gradlab.randn(5, 2))


def test_one_hot(torch):
    t = np.array([[0, 2], [4, 1]])
    assert_close(F.one_hot(gradlab.tensor(t))._data, torch.nn.functional.one_hot(torch.from_numpy(t)).numpy())
    assert F.one_hot(gradlab.tensor(t), 6).shape == (2, 2, 6)
    assert F.one_hot(gradlab.tensor(t)).dtype == gradlab.int64
    with pytest.raises(IndexOutOfRange, match="num_classes=3"):
        F.one_hot(gradlab.tensor(t), 3)


def test_linear_matches_torch_and_names_shapes(torch):
    rng = np.random.default_rng(10)
    (x, tx), (w, tw), (b, tb) = (_pair(torch, rng.standard_normal(s)) for s in ((2, 3, 4), (5, 4), (5,)))
    _check(torch, F.linear(x, w, b), torch.nn.functional.linear(tx, tw, tb), [x, w, b], [tx, tw, tb])
    with pytest.raises(ShapeError, match=r"input \(2, 3\).*weight \(5, 4\)"):
        F.linear(gradlab.randn(2, 3), gradlab.randn(5, 4))


# ---------------------------------------------------------------- attention
@pytest.mark.parametrize("L,S", [(3, 3), (2, 5), (5, 2)])
def test_sdpa_causal_matches_torch(torch, L, S):
    rng = np.random.default_rng(11)
    pairs = [_pair(torch, rng.standard_normal(s)) for s in ((2, 2, L, 4), (2, 2, S, 4), (2, 2, S, 3))]
    ins, tins = [p[0] for p in pairs], [p[1] for p in pairs]
    out = F.scaled_dot_product_attention(*ins, is_causal=True)
    tout = torch.nn.functional.scaled_dot_product_attention(*tins, is_causal=True)
    _check(torch, out, tout, ins, tins)


def test_sdpa_fully_masked_row_is_zero_not_nan(torch):
    rng = np.random.default_rng(12)
    pairs = [_pair(torch, rng.standard_normal(s)) for s in ((3, 4), (5, 4), (5, 2))]
    ins, tins = [p[0] for p in pairs], [p[1] for p in pairs]
    m = np.ones((3, 5), dtype=bool)
    m[1] = False
    out = F.scaled_dot_product_attention(*ins, attn_mask=gradlab.tensor(m))
    tout = torch.nn.functional.scaled_dot_product_attention(*tins, attn_mask=torch.from_numpy(m))
    assert not np.isnan(out._data).any()
    _check(torch, out, tout, ins, tins)
    assert np.isfinite(ins[0].grad._data).all()


def test_sdpa_dropout_is_seeded():
    q = gradlab.randn(2, 4, 3)
    gradlab.manual_seed(5)
    a = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    gradlab.manual_seed(5)
    b = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.allclose(a.numpy(), F.scaled_dot_product_attention(q, q, q).numpy())


def test_sdpa_bad_shapes():
    with pytest.raises(ShapeError, match=r"query \(2, 3, 4\) and key \(2, 3, 5\)"):
        F.scaled_dot_product_attention(gradlab.randn(2, 3, 4), gradlab.randn(2, 3, 5), gradlab.randn(2, 3, 5))


# ---------------------------------------------------------------------- pad
@pytest.mark.parametrize("mode,pad", [("constant", (1, -1, 2, 0)), ("constant", (-1, -2)), ("reflect", (2, 1, 1, 2)),
                                      ("replicate", (3, 0, 0, 2)), ("circular", (1, 2, 2, 1))])
def test_pad_matches_torch(torch, mode, pad):
    x, tx = _pair(torch, np.random.default_rng(13).standard_normal((1, 2, 3, 4)))
    kw = dict(value=2.5) if mode == "constant" else {}
    _check(torch, F.pad(x, pad, mode=mode, **kw), torch.nn.functional.pad(tx, pad, mode=mode, **kw), [x], [tx])


def test_pad_bad_input():
    with pytest.raises(ArgumentError, match="even length"):
        F.pad(gradlab.randn(2, 3), (1, 2, 3))
    with pytest.raises(ShapeError, match=r"reflect padding \(3, 0\).*\(2, 3\)"):
        F.pad(gradlab.randn(2, 3), (3, 0), mode="reflect")


# ----------------------------------------------------------- fake quantize
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fake_quantize_matches_torch_with_ste_gradient(torch, dtype):
    a = np.random.default_rng(14).uniform(-15, 15, size=200).astype(dtype)
    x, tx = _pair(torch, a)
    out = gradlab.fake_quantize_per_tensor_affine(x, 0.1, 3, -128, 127)
    tout = torch.fake_quantize_per_tensor_affine(tx, 0.1, 3, -128, 127)
    _check(torch, out, tout, [x], [tx])
    inside = np.abs(x.grad._data) > 0
    assert inside.any() and not inside.all(), "the STE passes some gradients and blocks the clamped ones"


def test_fake_quantize_int8_defaults_and_errors():
    x = gradlab.tensor([0.0, 0.26, 100.0])
    np.testing.assert_allclose(F.fake_quantize(x, 0.5).numpy(), [0.0, 0.5, 63.5])
    with pytest.raises(ArgumentError, match="scale"):
        F.fake_quantize(x, 0.0)
    with pytest.raises(ArgumentError, match="zero_point 300"):
        F.fake_quantize(x, 0.1, zero_point=300)


@pytest.mark.parametrize("fn", ["cross_entropy", "softmax", "log_softmax"])
def test_hessian_forward_over_reverse_matches_torch(torch, fn):
    """func.hessian runs forward mode over reverse mode: the backward ops need JVP rules too."""
    from gradlab import func
    a = np.random.default_rng(15).standard_normal((2, 4))
    y = np.array([1, 3])
    if fn == "cross_entropy":
        def g(x):
            return F.cross_entropy(x, gradlab.tensor(y), label_smoothing=0.1)

        def t(x):
            return torch.nn.functional.cross_entropy(x, torch.from_numpy(y), label_smoothing=0.1)
    else:
        def g(x):
            return (getattr(F, fn)(x, dim=1) ** 2).sum()

        def t(x):
            return (getattr(torch.nn.functional, fn)(x, dim=1) ** 2).sum()
    h = func.hessian(g)(gradlab.tensor(a))
    th = torch.autograd.functional.hessian(t, torch.from_numpy(a))
    assert np.abs(th.numpy()).max() > 1e-3
    assert_close(h._data, th.numpy(), what="Hessian")
