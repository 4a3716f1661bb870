"""Mixed precision: the autocast policy, and GradScaler rescuing float16 gradients from underflow."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
from gradlab import amp, nn, optim
from gradlab.nn import functional as F


@pytest.mark.parametrize("low", [gradlab.float16, gradlab.bfloat16])
def test_policy_low_precision_products_float32_reductions(low):
    lin = nn.Linear(4, 3)
    conv = nn.Conv2d(1, 2, 3)
    ln = nn.LayerNorm(3)
    x = gradlab.randn(2, 4)
    with amp.autocast(dtype=low):
        assert amp.is_autocast_enabled() and amp.get_autocast_dtype() == low
        y = lin(x)
        assert y.dtype == low
        assert (x @ lin.weight.T).dtype == low
        assert conv(gradlab.randn(1, 1, 5, 5)).dtype == low
        assert F.softmax(y, dim=-1).dtype == gradlab.float32
        assert F.log_softmax(y, dim=-1).dtype == gradlab.float32
        assert ln(y).dtype == gradlab.float32
        loss = F.cross_entropy(y, gradlab.tensor([0, 2]))
        assert loss.dtype == gradlab.float32
        assert y.sum().dtype == gradlab.float32 and y.mean(dim=0).dtype == gradlab.float32
        # float64 is never touched
        assert (gradlab.ones(2, 2, dtype=gradlab.float64) @ gradlab.ones(2, 2, dtype=gradlab.float64)).dtype == gradlab.float64
        with amp.autocast(enabled=False):
            assert lin(x).dtype == gradlab.float32
        assert lin(x).dtype == low
    assert not amp.is_autocast_enabled()
    assert lin(x).dtype == gradlab.float32
    loss.backward()
    # master weights and their gradients stay float32
    assert lin.weight.dtype == gradlab.float32 and lin.weight.grad.dtype == gradlab.float32


def test_autocast_as_decorator_and_bad_dtype():
    @amp.autocast(dtype=gradlab.float16)
    def f(a, b):
        return a @ b
    assert f(gradlab.ones(2, 2), gradlab.ones(2, 2)).dtype == gradlab.float16
    with pytest.raises(ValueError, match="float16 or bfloat16"):
        amp.autocast(dtype=gradlab.float64)


def _fp16_grads(scaler):
    gradlab.manual_seed(0)
    lin = nn.Linear(8, 8)
    x = gradlab.randn(4, 8)
    opt = optim.SGD(lin.parameters(), lr=0.0)
    with amp.autocast(dtype=gradlab.float16):
        out = lin(x)
    # a tiny loss: its gradient (1e-8) is below float16's smallest subnormal (6e-8)
    loss = out.float().sum() * 1e-8
    if scaler is None:
        loss.backward()
    else:
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
    return lin.weight.grad.numpy(), x.numpy()


def test_float16_gradients_underflow_without_scaling_and_survive_with_it():
    g_plain, x = _fp16_grads(None)
    assert np.all(g_plain == 0), "without scaling the float16 gradient underflows to exactly zero"
    g_scaled, x = _fp16_grads(amp.GradScaler())
    true = np.tile(x.sum(0, dtype=np.float64), (8, 1)) * 1e-8  # d(sum(x W^T))/dW = sum_rows(x), times 1e-8
    assert np.all(g_scaled != 0)
    np.testing.assert_allclose(g_scaled, true, rtol=1e-2)


def test_scaler_skips_nonfinite_steps_backs_off_and_grows():
    p = gradlab.ones(3, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    scaler = amp.GradScaler(init_scale=8.0, growth_interval=2)
    assert scaler.get_scale() == 8.0
    # a step whose gradient overflows: skipped, scale halves
    p.grad = gradlab.tensor([1.0, float("inf"), 1.0])
    scaler.step(opt)
    scaler.update()
    np.testing.assert_array_equal(p.detach().numpy(), 1.0)
    assert scaler.get_scale() == 4.0
    # two clean steps: taken (with the unscaled gradient), then the scale doubles
    for _ in range(2):
        opt.zero_grad()
        scaler.scale((p * 1.0).sum()).backward()
        scaler.step(opt)
        scaler.update()
    np.testing.assert_allclose(p.detach().numpy(), 1.0 - 2 * 0.1)
    assert scaler.get_scale() == 8.0
    assert scaler.scale_history == [4.0, 4.0, 8.0]
    assert [s for _, _, s in scaler.history] == [True, False, False]
    with pytest.raises(RuntimeError, match="already"):
        scaler.unscale_(opt)
        scaler.unscale_(opt)


def test_scaler_defaults_match_torch(torch):
    s = amp.GradScaler()
    t = torch.amp.GradScaler("cpu")
    assert s.get_scale() == t.get_scale() == 2.0 ** 16
    assert (s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval()) == (
        t.get_growth_factor(), t.get_backoff_factor(), t.get_growth_interval())


def test_mixed_precision_training_step_learns():
    gradlab.manual_seed(0)
    X, y = gradlab.data.blobs(128, centers=2, cluster_std=0.5, seed=0)
    model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2))
    opt = optim.Adam(model.parameters(), lr=0.05)
    scaler = amp.GradScaler()
    for _ in range(30):
        with amp.autocast(dtype=gradlab.float16):
            loss = F.cross_entropy(model(X), y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    acc = float((model(X).argmax(-1) == y).float().mean())
    assert acc > 0.95
    assert all(p.dtype == gradlab.float32 for p in model.parameters())


def test_unscaling_float16_gradients_is_refused():
    p = gradlab.ones(2, dtype=gradlab.float16, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    (p * 2).sum().backward()
    with pytest.raises(ValueError, match="master weights"):
        amp.GradScaler().unscale_(opt)
