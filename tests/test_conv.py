"""conv2d, unfold/fold, pooling: semantics vs PyTorch beyond the registry suite, and bad input."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
import gradlab.nn.functional as F
from gradlab.errors import ArgumentError, GradError, ShapeError
from gradlab.ops.conv import conv2d_naive

from .oracle import assert_close


def _leaf(torch, shape, seed=0, dtype="float64"):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return gradlab.tensor(a.copy(), requires_grad=True), torch.from_numpy(a.copy()).requires_grad_(True)


def _check(torch, out, tout, ins, tins, atol=1e-8, rtol=1e-6):
    assert out.shape == tuple(tout.shape)
    assert_close(out._data, tout.detach().numpy(), atol=atol, rtol=rtol, what="forward")
    cot = np.random.default_rng(1).standard_normal(out.shape)
    (out * gradlab.tensor(cot, dtype=out.dtype)).sum().backward()
    (tout * torch.from_numpy(cot).to(tout.dtype)).sum().backward()
    for i, (a, b) in enumerate(zip(ins, tins)):
        assert_close(a.grad._data, b.grad.numpy(), atol=atol, rtol=rtol, what=f"grad of input {i}")


CONV_CASES = [
    dict(),
    dict(stride=2, padding=1),
    dict(stride=(2, 1), padding=(0, 2), dilation=(2, 1)),
    dict(groups=2, padding=1),
    dict(groups=4, padding="same", dilation=2),       # depthwise
    dict(padding="same", dilation=(1, 2)),             # odd total padding: the extra goes bottom/right
    dict(padding="valid", stride=3),
]


@pytest.mark.parametrize("kw", CONV_CASES)
@pytest.mark.parametrize("impl", ["im2col", "naive"])
def test_conv2d_matches_torch(torch, kw, impl):
    g = kw.get("groups", 1)
    (x, tx), (w, tw), (b, tb) = _leaf(torch, (2, 4, 7, 6), 0), _leaf(torch, (8, 4 // g, 3, 2), 1), _leaf(torch, (8,), 2)
    fn = F.conv2d if impl == "im2col" else conv2d_naive
    _check(torch, fn(x, w, b, **kw), torch.nn.functional.conv2d(tx, tw, tb, **kw), [x, w, b], [tx, tw, tb])


@pytest.mark.parametrize("chunk_bytes", [1, 12000, 24000])  # one image per chunk, or 5 in chunks of 2, 2, 1 (of 3, 2)
@pytest.mark.parametrize("kw", CONV_CASES + [dict(padding=3), dict(padding=(2, 0), dilation=(1, 2))])
def test_conv2d_in_chunks_matches_torch(torch, monkeypatch, kw, chunk_bytes):
    # the fast path builds the columns a few images at a time (gradlab.ops.conv.Columns); shrink the
    # chunk so that a small batch spans several, the last one partly filled (padding 3 > the kernel's
    # reach 2: the input gradient crops dY instead of padding it)
    import gradlab.ops.conv as conv
    monkeypatch.setattr(conv, "CHUNK_BYTES", chunk_bytes)
    g = kw.get("groups", 1)
    (x, tx), (w, tw), (b, tb) = _leaf(torch, (5, 4, 7, 6), 3), _leaf(torch, (8, 4 // g, 3, 2), 4), _leaf(torch, (8,), 5)
    _check(torch, F.conv2d(x, w, b, **kw), torch.nn.functional.conv2d(tx, tw, tb, **kw), [x, w, b], [tx, tw, tb])


@pytest.mark.parametrize("k, kw", [
    ((3, 3), dict(stride=2, padding=1)),                            # the ResNet's: phases of 1, 2 and 4 taps
    ((1, 1), dict(stride=2)),                                       # 3 phases in 4 reached by no tap
    ((1, 1), dict(stride=3, groups=2)),
    ((5, 4), dict(stride=(3, 2), padding=(2, 3), dilation=(2, 1))), # taps reading rows before and after dY
    ((2, 3), dict(stride=(1, 3), padding=(0, 4))),                  # padding past the kernel's reach
    ((3, 2), dict(stride=4, dilation=3)),                           # a dilation sharing a factor with the stride
])
def test_strided_input_gradient_by_phases_matches_torch(torch, k, kw):
    # a strided conv's dX is folded phase by phase (gradlab.ops.conv.conv_input_grad_fold): each phase
    # of input pixels gathers its own taps, with dY in a zero-bordered frame; odd sizes, 2 chunks
    g = kw.get("groups", 1)
    (x, tx), (w, tw) = _leaf(torch, (3, 4, 11, 13), 8), _leaf(torch, (6, 4 // g) + k, 9)
    _check(torch, F.conv2d(x, w, **kw), torch.nn.functional.conv2d(tx, tw, **kw), [x, w], [tx, tw])


@pytest.mark.parametrize("kw", [dict(padding=1), dict(padding="same", dilation=2), dict(groups=2, padding=1)])
def test_conv2d_widening_layer_matches_torch(torch, monkeypatch, kw):
    # a stride-1 layer that widens the channels more than 4x (2 -> 12) gets its input gradient by fold,
    # not as a convolution of dY (whose columns would have 12*3*3 rows to make 2 channels)
    import gradlab.ops.conv as conv

    def not_this_path(*a):
        raise AssertionError("conv_input_grad used for a 6x widening layer")
    monkeypatch.setattr(conv, "conv_input_grad", not_this_path)
    g = kw.get("groups", 1)
    (x, tx), (w, tw), (b, tb) = _leaf(torch, (3, 2, 6, 5), 6), _leaf(torch, (12, 2 // g, 3, 3), 7), _leaf(torch, (12,), 8)
    _check(torch, F.conv2d(x, w, b, **kw), torch.nn.functional.conv2d(tx, tw, tb, **kw), [x, w, b], [tx, tw, tb])


@pytest.mark.parametrize("stride", [1, 2])
def test_conv2d_infinite_input_gives_pytorchs_inf_and_nan(torch, stride):
    # stride-1 columns are computed a padded row wide (conv.Columns); the extra "margin" columns must
    # not add 0 * inf = nan to the weight gradient where PyTorch has none (stride 2: no margin, and no
    # look for infinities)
    a = np.random.default_rng(6).standard_normal((2, 3, 6, 6)).astype(np.float32)
    a[1, 2, 3, 5] = np.inf
    x, tx = gradlab.tensor(a.copy(), requires_grad=True), torch.from_numpy(a.copy()).requires_grad_(True)
    (w, tw) = _leaf(torch, (4, 3, 3, 3), 7, "float32")
    out, tout = F.conv2d(x, w, padding=1, stride=stride), torch.nn.functional.conv2d(tx, tw, padding=1, stride=stride)
    cot = np.random.default_rng(8).standard_normal(out.shape).astype(np.float32)
    (out * gradlab.tensor(cot)).sum().backward()
    (tout * torch.from_numpy(cot)).sum().backward()
    for mine, theirs in ((out._data, tout.detach().numpy()), (w.grad._data, tw.grad.numpy())):
        np.testing.assert_array_equal(np.isnan(mine), np.isnan(theirs))
        np.testing.assert_array_equal(np.isinf(mine), np.isinf(theirs))
    assert np.isinf(w.grad._data).any()   # (the inf does reach the weight gradient)


def test_conv2d_float32_and_no_bias(torch):
    (x, tx), (w, tw) = _leaf(torch, (3, 2, 8, 8), 0, "float32"), _leaf(torch, (5, 2, 3, 3), 1, "float32")
    out = F.conv2d(x, w, stride=2, padding=1)
    assert out.dtype == gradlab.float32
    _check(torch, out, torch.nn.functional.conv2d(tx, tw, stride=2, padding=1), [x, w], [tx, tw], atol=1e-4, rtol=1e-4)


def test_conv2d_second_order_matches_torch(torch):
    (x, tx), (w, tw) = _leaf(torch, (1, 2, 5, 5), 0), _leaf(torch, (3, 2, 3, 3), 1)
    v = np.random.default_rng(2).standard_normal((3, 2, 3, 3))
    gw, = gradlab.grad((F.conv2d(x, w, padding=1) ** 2).sum(), [w], create_graph=True)
    hx, = gradlab.grad((gw * gradlab.tensor(v)).sum(), [x])
    tgw, = torch.autograd.grad((torch.nn.functional.conv2d(tx, tw, padding=1) ** 2).sum(), [tw], create_graph=True)
    thx, = torch.autograd.grad((tgw * torch.from_numpy(v)).sum(), [tx])
    assert_close(hx._data, thx.numpy(), what="d/dx of (dL/dw . v)")


def test_conv2d_naive_refuses_second_order():
    x = gradlab.randn(1, 1, 4, 4, dtype=gradlab.float64, requires_grad=True)
    w = gradlab.randn(1, 1, 2, 2, dtype=gradlab.float64, requires_grad=True)
    gw, = gradlab.grad(conv2d_naive(x, w).sum(), [w])  # first order works
    assert gw.shape == w.shape
    with pytest.raises(GradError, match="conv2d_naive.*create_graph.*functional.conv2d"):
        gradlab.grad(conv2d_naive(x, w).sum(), [w], create_graph=True)


def test_conv2d_graph_is_one_node_with_formula():
    x = gradlab.randn(1, 1, 4, 4, requires_grad=True)
    y = F.conv2d(x, gradlab.randn(2, 1, 3, 3))
    assert y.grad_fn.name == "conv2d" and "unfold" in y.grad_fn.formula


# ------------------------------------------------------------------ bad input
def test_conv2d_input_not_4d():
    with pytest.raises(ShapeError, match=r"input must be 4-D.*\(3, 8\)"):
        F.conv2d(gradlab.randn(3, 8), gradlab.randn(2, 3, 3, 3))


def test_conv2d_weight_channel_mismatch():
    with pytest.raises(ShapeError, match=r"weight \(4, 2, 3, 3\) expects 2 input channels.*\(1, 3, 8, 8\) has 3"):
        F.conv2d(gradlab.randn(1, 3, 8, 8), gradlab.randn(4, 2, 3, 3))
    with pytest.raises(ShapeError, match=r"weight \(4, 4, 3, 3\) expects 8 input channels.*groups=2.*must be "
                                         r"in_channels / groups = 2"):
        F.conv2d(gradlab.randn(1, 4, 8, 8), gradlab.randn(4, 4, 3, 3), groups=2)
    with pytest.raises(ShapeError, match=r"groups=2 must divide.*in_channels 3"):
        F.conv2d(gradlab.randn(1, 3, 8, 8), gradlab.randn(4, 1, 3, 3), groups=2)


def test_conv2d_other_bad_arguments():
    x = gradlab.randn(1, 3, 4, 4)
    with pytest.raises(ShapeError, match=r"bias has shape \(3,\).*\(4,\)"):
        F.conv2d(x, gradlab.randn(4, 3, 3, 3), gradlab.randn(3))
    with pytest.raises(ShapeError, match=r"kernel \(5, 5\).*larger than input \(1, 3, 4, 4\)"):
        F.conv2d(x, gradlab.randn(4, 3, 5, 5))
    with pytest.raises(ArgumentError, match="'same' needs stride 1"):
        F.conv2d(x, gradlab.randn(4, 3, 3, 3), stride=2, padding="same")
    with pytest.raises(ShapeError, match=r"weight must be 4-D"):
        F.conv2d(x, gradlab.randn(4, 3, 3))


# -------------------------------------------------------------- unfold / fold
@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=(2, 3), stride=(1, 2), padding=1, dilation=(2, 1))])
def test_unfold_fold_match_torch(torch, kw):
    x, tx = _leaf(torch, (2, 3, 6, 7))
    u = F.unfold(x, **kw)
    _check(torch, u, torch.nn.functional.unfold(tx, **kw), [x], [tx])
    c, tc = _leaf(torch, tuple(u.shape), 3)
    _check(torch, F.fold(c, (6, 7), **kw), torch.nn.functional.fold(tc, (6, 7), **kw), [c], [tc])


def test_fold_is_unfolds_adjoint():
    """<unfold(x), c> == <x, fold(c)>: the identity that makes fold unfold's backward."""
    rng = np.random.default_rng(0)
    x = gradlab.tensor(rng.standard_normal((1, 2, 5, 5)))
    u = F.unfold(x, 3, padding=1, stride=2)
    c = gradlab.tensor(rng.standard_normal(u.shape))
    lhs = (u * c).sum().item()
    rhs = (x * F.fold(c, (5, 5), 3, padding=1, stride=2)).sum().item()
    assert abs(lhs - rhs) < 1e-10


def test_fold_bad_sizes():
    with pytest.raises(ShapeError, match=r"has 5 columns.*gives 2 x 2 = 4"):
        F.fold(gradlab.randn(1, 4, 5), (3, 3), 2)
    with pytest.raises(ShapeError, match="not a multiple of kh\\*kw = 4"):
        F.fold(gradlab.randn(1, 6, 4), (3, 3), 2)


# -------------------------------------------------------------------- pooling
POOL_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0)),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
]


@pytest.mark.parametrize("kw", POOL_CASES + [dict(kernel_size=2, dilation=2, stride=1, padding=1)])
def test_max_pool2d_matches_torch(torch, kw):
    x, tx = _leaf(torch, (2, 3, 7, 6))
    _check(torch, F.max_pool2d(x, **kw), torch.nn.functional.max_pool2d(tx, **kw), [x], [tx])


def test_max_pool2d_indices_and_overlap(torch):
    x, tx = _leaf(torch, (1, 2, 5, 5))
    out, idx = F.max_pool2d(x, 3, stride=1, padding=1, return_indices=True)
    tout, tidx = torch.nn.functional.max_pool2d(tx, 3, stride=1, padding=1, return_indices=True)
    np.testing.assert_array_equal(idx.numpy(), tidx.numpy())
    _check(torch, out, tout, [x], [tx])  # overlapping windows sharing a max add their gradients


@pytest.mark.parametrize("kw", POOL_CASES + [dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                                             dict(kernel_size=3, padding=1, ceil_mode=True, count_include_pad=False),
                                             dict(kernel_size=2, divisor_override=3)])
def test_avg_pool2d_matches_torch(torch, kw):
    x, tx = _leaf(torch, (2, 3, 7, 6))
    _check(torch, F.avg_pool2d(x, **kw), torch.nn.functional.avg_pool2d(tx, **kw), [x], [tx])


def test_pool_bad_input():
    with pytest.raises(ArgumentError, match="at most half"):
        F.max_pool2d(gradlab.randn(1, 1, 4, 4), 2, padding=2)
    with pytest.raises(ShapeError, match=r"\(4, 4\)"):
        F.avg_pool2d(gradlab.randn(4, 4), 2)


def test_small_cnn_step_matches_torch(torch):
    """conv -> relu -> max_pool -> flatten -> linear -> cross_entropy, end to end."""
    (x, tx) = _leaf(torch, (4, 1, 8, 8), 0)
    (w1, tw1), (b1, tb1) = _leaf(torch, (3, 1, 3, 3), 1), _leaf(torch, (3,), 2)
    (w2, tw2) = _leaf(torch, (5, 3 * 4 * 4), 3)
    y = np.array([0, 4, 2, 2])
    h = F.max_pool2d(F.relu(F.conv2d(x, w1, b1, padding=1)), 2)
    loss = F.cross_entropy(F.linear(h.reshape(4, -1), w2), gradlab.tensor(y))
    tf = torch.nn.functional
    th = tf.max_pool2d(tf.relu(tf.conv2d(tx, tw1, tb1, padding=1)), 2)
    tloss = tf.cross_entropy(tf.linear(th.reshape(4, -1), tw2), torch.from_numpy(y))
    _check(torch, loss, tloss, [x, w1, b1, w2], [tx, tw1, tb1, tw2])


@pytest.mark.parametrize("fn", ["conv2d", "max_pool2d", "avg_pool2d"])
def test_empty_batch(torch, fn):
    x, tx = _leaf(torch, (0, 2, 5, 5))
    args = (gradlab.randn(3, 2, 3, 3, dtype=gradlab.float64),) if fn == "conv2d" else (2,)
    targs = (torch.from_numpy(args[0].numpy()),) if fn == "conv2d" else (2,)
    out = getattr(F, fn)(x, *args)
    assert out.shape == tuple(getattr(torch.nn.functional, fn)(tx, *targs).shape)
    out.sum().backward()
    assert x.grad.shape == x.shape


@pytest.mark.parametrize("kw", [dict(stride=2, padding=1, output_padding=1), dict(groups=2, dilation=2),
                                dict(stride=(2, 3), padding=(0, 1))])
def test_conv_transpose2d_matches_torch(torch, kw):
    g = kw.get("groups", 1)
    (x, tx), (w, tw), (b, tb) = _leaf(torch, (2, 4, 5, 4), 0), _leaf(torch, (4, 3, 3, 3), 1), _leaf(torch, (3 * g,), 2)
    _check(torch, F.conv_transpose2d(x, w, b, **kw), torch.nn.functional.conv_transpose2d(tx, tw, tb, **kw),
           [x, w, b], [tx, tw, tb])


def test_conv_transpose2d_is_conv2d_input_gradient():
    """conv_transpose2d(g, W) is exactly the gradient conv2d sends to its input."""
    x = gradlab.randn(1, 3, 7, 7, dtype=gradlab.float64, requires_grad=True)
    w = gradlab.randn(5, 3, 3, 3, dtype=gradlab.float64)
    y = F.conv2d(x, w, stride=2, padding=1)
    g = gradlab.randn(*y.shape, dtype=gradlab.float64)
    (dx,) = gradlab.grad(y, [x], g)
    np.testing.assert_allclose(F.conv_transpose2d(g, w, stride=2, padding=1).numpy(), dx.numpy(), atol=1e-12)
