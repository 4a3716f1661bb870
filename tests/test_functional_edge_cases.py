"""The extra F functions beyond the registry suite: running statistics, stability, edge values, bad input."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
import gradlab.nn.functional as F
from gradlab.errors import ArgumentError, ShapeError

from .oracle import assert_close


def _pair(torch, a):
    a = np.asarray(a, dtype=np.float64)
    return gradlab.tensor(a.copy(), requires_grad=True), torch.from_numpy(a.copy()).requires_grad_(True)


def _grads_match(torch, out, tout, ins, tins):
    assert_close(out._data, tout.detach().numpy(), what="forward")
    out.sum().backward()
    tout.sum().backward()
    for a, b in zip(ins, tins):
        assert_close(a.grad._data, b.grad.numpy(), what="grad")


@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 5)])
def test_batch_norm_training_updates_running_stats_like_torch(torch, shape):
    rng = np.random.default_rng(0)
    x, tx = _pair(torch, rng.standard_normal(shape) * 2 + 1)
    w, tw = _pair(torch, rng.uniform(0.5, 2, 3))
    rm, rv = gradlab.zeros(3, dtype=gradlab.float64), gradlab.ones(3, dtype=gradlab.float64)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    for _ in range(2):
        out = F.batch_norm(x, rm, rv, w, None, training=True, momentum=0.3)
        tout = torch.nn.functional.batch_norm(tx, trm, trv, tw, None, training=True, momentum=0.3)
    assert_close(rm._data, trm.numpy(), what="running_mean")
    assert_close(rv._data, trv.numpy(), what="running_var (unbiased)")
    _grads_match(torch, out, tout, [x, w], [tx, tw])
    ev = F.batch_norm(x.detach(), rm, rv, training=False)
    tev = torch.nn.functional.batch_norm(tx.detach(), trm, trv, training=False)
    assert_close(ev._data, tev.numpy(), what="eval mode")


def test_batch_norm_bad_input():
    with pytest.raises(ShapeError, match=r"more than 1 value per channel.*\(1, 3\)"):
        F.batch_norm(gradlab.randn(1, 3), None, None, training=True)
    with pytest.raises(ArgumentError, match="running_mean and running_var"):
        F.batch_norm(gradlab.randn(4, 3), None, None, training=False)
    with pytest.raises(ShapeError, match=r"weight has shape \(2,\).*\(3,\)"):
        F.batch_norm(gradlab.randn(4, 3), None, None, weight=gradlab.ones(2), training=True)


def test_instance_norm_running_stats_like_torch(torch):
    a = np.random.default_rng(1).standard_normal((2, 3, 4, 5))
    x, tx = _pair(torch, a)
    rm, rv = gradlab.zeros(3, dtype=gradlab.float64), gradlab.ones(3, dtype=gradlab.float64)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    out = F.instance_norm(x, rm, rv)
    tout = torch.nn.functional.instance_norm(tx, trm, trv)
    assert_close(rm._data, trm.numpy(), what="running_mean")
    assert_close(rv._data, trv.numpy(), what="running_var")
    _grads_match(torch, out, tout, [x], [tx])


def test_group_norm_bad_groups():
    with pytest.raises(ShapeError, match=r"num_groups=4 must divide the 6 channels"):
        F.group_norm(gradlab.randn(2, 6, 3), 4)


def test_logsigmoid_and_elu_stay_finite(torch):
    x, tx = _pair(torch, [-1000.0, -50.0, 0.0, 50.0, 1000.0])
    _grads_match(torch, F.logsigmoid(x), torch.nn.functional.logsigmoid(tx), [x], [tx])
    y, ty = _pair(torch, [-1000.0, -1.0, 0.5, 800.0])
    _grads_match(torch, F.elu(y), torch.nn.functional.elu(ty), [y], [ty])
    assert np.isfinite(y.grad._data).all(), "exp in elu's unused branch must not overflow into nan"


def test_binary_cross_entropy_at_exact_zero_and_one(torch):
    p, tp = _pair(torch, [0.0, 1.0, 0.3])
    t = np.array([1.0, 0.0, 1.0])
    out = F.binary_cross_entropy(p, gradlab.tensor(t), reduction="none")
    tout = torch.nn.functional.binary_cross_entropy(tp, torch.from_numpy(t), reduction="none")
    assert_close(out._data, tout.detach().numpy(), what="log clamped at -100")
    with pytest.raises(ArgumentError, match=r"probabilities in \[0, 1\].*with_logits"):
        F.binary_cross_entropy(gradlab.tensor([1.5]), gradlab.tensor([1.0]))


def test_kl_div_batchmean_is_the_kl_divergence(torch):
    rng = np.random.default_rng(2)
    p, q = rng.dirichlet(np.ones(5), size=3), rng.dirichlet(np.ones(5), size=3)
    p[0, 1] = 0.0  # a zero target contributes 0, not nan
    x, tx = _pair(torch, np.log(q))
    out = F.kl_div(x, gradlab.tensor(p), reduction="batchmean")
    tout = torch.nn.functional.kl_div(tx, torch.from_numpy(p), reduction="batchmean")
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.nansum(np.where(p > 0, p * np.log(p / q), 0.0)) / 3
    assert abs(out.item() - expected) < 1e-12
    _grads_match(torch, out, tout, [x], [tx])


def test_adaptive_avg_pool_global_is_the_mean():
    x = gradlab.randn(2, 3, 5, 7, dtype=gradlab.float64)
    np.testing.assert_allclose(F.adaptive_avg_pool2d(x, 1).numpy(), x.numpy().mean(axis=(2, 3), keepdims=True))


def test_conv1d_and_pool1d_match_torch(torch):
    rng = np.random.default_rng(3)
    (x, tx), (w, tw) = _pair(torch, rng.standard_normal((2, 4, 9))), _pair(torch, rng.standard_normal((6, 2, 3)))
    out = F.max_pool1d(F.conv1d(x, w, stride=2, padding=1, groups=2), 2)
    tout = torch.nn.functional.max_pool1d(torch.nn.functional.conv1d(tx, tw, stride=2, padding=1, groups=2), 2)
    _grads_match(torch, out, tout, [x, w], [tx, tw])


def test_conv1d_bad_shapes():
    with pytest.raises(ShapeError, match=r"conv1d: input must be 3-D.*\(2, 3, 4, 5\)"):
        F.conv1d(gradlab.randn(2, 3, 4, 5), gradlab.randn(2, 3, 3))
    with pytest.raises(ShapeError, match=r"weight \(2, 2, 3\) expects 2 input channels.*\(1, 3, 8\) has 3"):
        F.conv1d(gradlab.randn(1, 3, 8), gradlab.randn(2, 2, 3))


def test_activation_inplace_flag_is_accepted(torch):
    a = np.random.default_rng(4).standard_normal(6)
    for name in ("relu", "silu", "leaky_relu", "elu", "relu6", "hardswish"):
        out = getattr(F, name)(gradlab.tensor(a), inplace=False)
        tout = getattr(torch.nn.functional, name)(torch.from_numpy(a), inplace=False)
        assert_close(out._data, tout.numpy(), what=name)


@pytest.mark.parametrize("kw", [dict(scale_factor=1.7), dict(scale_factor=0.6), dict(size=(7, 3)),
                                dict(scale_factor=1.7, recompute_scale_factor=True), dict(size=(2, 9))])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "bilinear-corners", "area"])
def test_interpolate_matches_torch(torch, kw, mode):
    extra = dict(align_corners=True) if mode == "bilinear-corners" else {}
    mode = mode.replace("-corners", "")
    x, tx = _pair(torch, np.random.default_rng(5).standard_normal((2, 3, 5, 6)))
    _grads_match(torch, F.interpolate(x, mode=mode, **kw, **extra),
                 torch.nn.functional.interpolate(tx, mode=mode, **kw, **extra), [x], [tx])


def test_interpolate_bad_arguments():
    x = gradlab.randn(1, 2, 4, 4)
    with pytest.raises(ArgumentError, match="exactly one of size= and scale_factor="):
        F.interpolate(x)
    with pytest.raises(ArgumentError, match="mode 'linear' is not available for a 2-D resize"):
        F.interpolate(x, scale_factor=2, mode="linear")


def test_dropout2d_zeroes_whole_channels():
    x = gradlab.ones(8, 16, 3, 3, requires_grad=True)
    gradlab.manual_seed(0)
    y = F.dropout2d(x, 0.5)
    per_channel = y.detach().numpy().reshape(8, 16, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1)), "each channel is all kept or all dropped"
    assert 0.25 < float((per_channel[..., 0] == 0).mean()) < 0.75
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())
    assert F.dropout2d(x, 0.5, training=False) is x
