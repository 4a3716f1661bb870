"""Optimizers and schedulers against PyTorch: 20 steps on the same params and gradients (float64)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import gradlab
from gradlab import nn, optim
from gradlab.optim import lr_scheduler as gsched

SHAPES = [(3, 4), (4,), (2, 3, 2)]


def _run_pair(torch, make_gl, make_torch, steps=20, groups=False):
    rng = np.random.default_rng(1)
    init = [rng.standard_normal(s) for s in SHAPES]
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(steps)]
    gp = [gradlab.tensor(a, dtype=gradlab.float64, requires_grad=True) for a in init]
    tp = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in init]
    if groups:
        gopt = make_gl([{"params": gp[:2]}, {"params": gp[2:], "lr": 0.05}])
        topt = make_torch([{"params": tp[:2]}, {"params": tp[2:], "lr": 0.05}])
    else:
        gopt, topt = make_gl(gp), make_torch(tp)
    for step in range(steps):
        for p, q, g in zip(gp, tp, grads[step]):
            # gradients that also depend on the parameter, so weight decay and momentum interact
            p.grad = gradlab.tensor(g + 0.1 * p.detach().numpy(), dtype=gradlab.float64)
            q.grad = torch.tensor(g, dtype=torch.float64) + 0.1 * q.detach()
        gopt.step()
        topt.step()
    for p, q in zip(gp, tp):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6, atol=1e-6)
    return gopt, topt, gp, tp


CASES = {
    "sgd": ("SGD", dict(lr=0.1)),
    "sgd_momentum": ("SGD", dict(lr=0.05, momentum=0.9)),
    "sgd_dampening_wd": ("SGD", dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.01)),
    "sgd_nesterov": ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3)),
    "sgd_maximize": ("SGD", dict(lr=0.05, momentum=0.5, maximize=True)),
    "adam": ("Adam", dict(lr=0.01)),
    "adam_wd_amsgrad": ("Adam", dict(lr=0.01, betas=(0.8, 0.95), weight_decay=0.1, amsgrad=True)),
    "adam_maximize": ("Adam", dict(lr=0.01, maximize=True)),
    "adamw": ("AdamW", dict(lr=0.01)),
    "adamw_wd": ("AdamW", dict(lr=0.02, weight_decay=0.3, eps=1e-6)),
    "adamw_amsgrad": ("AdamW", dict(lr=0.02, amsgrad=True)),
    "rmsprop": ("RMSprop", dict(lr=0.01)),
    "rmsprop_full": ("RMSprop", dict(lr=0.01, alpha=0.9, momentum=0.5, centered=True, weight_decay=0.01)),
}


@pytest.mark.oracle
@pytest.mark.parametrize("case", sorted(CASES))
def test_optimizer_matches_torch(torch, case):
    name, kw = CASES[case]
    _run_pair(torch, lambda ps: getattr(optim, name)(ps, **kw), lambda ps: getattr(torch.optim, name)(ps, **kw))


@pytest.mark.oracle
def test_param_groups_match_torch(torch):
    _run_pair(torch, lambda ps: optim.Adam(ps, lr=0.01), lambda ps: torch.optim.Adam(ps, lr=0.01), groups=True)


@pytest.mark.oracle
def test_state_matches_torch_names(torch):
    gopt, topt, gp, tp = _run_pair(torch, lambda ps: optim.Adam(ps, lr=0.01), lambda ps: torch.optim.Adam(ps, lr=0.01))
    assert set(gopt.state[gp[0]]) == set(topt.state[tp[0]])
    np.testing.assert_allclose(gopt.state[gp[0]]["exp_avg_sq"].numpy(), topt.state[tp[0]]["exp_avg_sq"].numpy())
    assert float(gopt.state[gp[0]]["step"]) == float(topt.state[tp[0]]["step"]) == 20
    gsd, tsd = gopt.state_dict(), topt.state_dict()
    assert gsd["param_groups"][0]["params"] == tsd["param_groups"][0]["params"]
    assert sorted(gsd["state"]) == sorted(tsd["state"])


def test_state_dict_round_trip_continues_identically():
    def make():
        gradlab.manual_seed(3)
        return [gradlab.randn(4, 3, dtype=gradlab.float64, requires_grad=True)]
    a, b = make(), make()
    oa, ob = optim.AdamW(a, lr=0.05), optim.AdamW(b, lr=0.05)
    for _ in range(3):
        for ps, o in ((a, oa), (b, ob)):
            (ps[0] ** 2).sum().backward()
            o.step()
            o.zero_grad()
    c = [b[0].detach().clone().requires_grad_()]
    oc = optim.AdamW(c, lr=0.5)
    oc.load_state_dict(ob.state_dict())
    assert oc.param_groups[0]["lr"] == 0.05
    for _ in range(3):
        for ps, o in ((a, oa), (c, oc)):
            (ps[0] ** 2).sum().backward()
            o.step()
            o.zero_grad()
    np.testing.assert_array_equal(a[0].detach().numpy(), c[0].detach().numpy())


def test_zero_grad_and_skips_params_without_grad():
    p = gradlab.ones(3, requires_grad=True)
    q = gradlab.ones(3, requires_grad=True)
    opt = optim.SGD([p, q], lr=0.1, momentum=0.9)
    (p * 2).sum().backward()
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), 0.8)
    np.testing.assert_allclose(q.detach().numpy(), 1.0)
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(p.grad.numpy(), 0)
    opt.zero_grad()
    assert p.grad is None


def test_errors_are_clear():
    with pytest.raises(TypeError, match="single Tensor"):
        optim.SGD(gradlab.ones(2, requires_grad=True), lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.Adam([], lr=0.1)
    with pytest.raises(ValueError, match="learning rate"):
        optim.Adam([gradlab.ones(2, requires_grad=True)], lr=-1)
    x = gradlab.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="not a leaf"):
        optim.SGD([x * 2], lr=0.1)


def test_gradient_accumulation_equals_big_batch():
    w = gradlab.tensor([1.0, -2.0], requires_grad=True)
    xs = gradlab.tensor([[1.0, 2.0], [3.0, 4.0]])
    (xs @ w).sum().backward()
    full = w.grad.numpy().copy()
    w.grad = None
    for i in range(2):
        (xs[i] @ w).backward()  # backward twice: gradients add up
    np.testing.assert_allclose(w.grad.numpy(), full)


SCHEDS = {
    "step": (lambda o: gsched.StepLR(o, step_size=3, gamma=0.5), lambda t, o: t.optim.lr_scheduler.StepLR(o, 3, 0.5)),
    "lambda": (lambda o: gsched.LambdaLR(o, lambda e: 0.9 ** e),
               lambda t, o: t.optim.lr_scheduler.LambdaLR(o, lambda e: 0.9 ** e)),
    "multistep": (lambda o: gsched.MultiStepLR(o, [2, 5, 5, 9], 0.5),
                  lambda t, o: t.optim.lr_scheduler.MultiStepLR(o, [2, 5, 5, 9], 0.5)),
    "exponential": (lambda o: gsched.ExponentialLR(o, 0.9), lambda t, o: t.optim.lr_scheduler.ExponentialLR(o, 0.9)),
    "linear": (lambda o: gsched.LinearLR(o, 0.25, 1.0, 6), lambda t, o: t.optim.lr_scheduler.LinearLR(o, 0.25, 1.0, 6)),
    "cosine": (lambda o: gsched.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
               lambda t, o: t.optim.lr_scheduler.CosineAnnealingLR(o, T_max=7, eta_min=0.001)),
}


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(SCHEDS))
def test_scheduler_matches_torch(torch, name):
    import warnings
    g, t = SCHEDS[name]
    gopt = optim.SGD([gradlab.ones(2, requires_grad=True)], lr=0.1)
    topt = torch.optim.SGD([torch.ones(2, requires_grad=True)], lr=0.1)
    gs, ts = g(gopt), t(torch, topt)
    got, want = [gs.get_last_lr()[0]], [ts.get_last_lr()[0]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(25):
            gopt.step()
            topt.step()
            gs.step()
            ts.step()
            got.append(gs.get_last_lr()[0])
            want.append(ts.get_last_lr()[0])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_warmup_cosine_shape():
    opt = optim.AdamW([gradlab.ones(2, requires_grad=True)], lr=1.0)
    s = gsched.WarmupCosineLR(opt, warmup_steps=4, total_steps=14, eta_min=0.1)
    lrs = [s.get_last_lr()[0]]
    for _ in range(16):
        opt.step()
        s.step()
        lrs.append(opt.param_groups[0]["lr"])
    np.testing.assert_allclose(lrs[:4], [0.25, 0.5, 0.75, 1.0])
    assert all(a >= b for a, b in zip(lrs[3:], lrs[4:]))
    np.testing.assert_allclose(lrs[9], 0.1 + 0.9 * (1 + math.cos(math.pi * 0.5)) / 2)
    assert lrs[-1] == pytest.approx(0.1)
    # resumable from its state dict
    s2 = gsched.WarmupCosineLR(optim.AdamW([gradlab.ones(2, requires_grad=True)], lr=1.0), 4, 14)
    s2.load_state_dict(s.state_dict())
    assert s2.last_epoch == s.last_epoch


def test_clip_grad_norm_matches_torch(torch):
    rng = np.random.default_rng(0)
    arrs = [rng.standard_normal(s) * 3 for s in SHAPES]
    for norm_type in (2.0, 1.0, math.inf):
        gp = [gradlab.zeros(s, dtype=gradlab.float64, requires_grad=True) for s in SHAPES]
        tp = [torch.zeros(s, dtype=torch.float64, requires_grad=True) for s in SHAPES]
        for p, q, a in zip(gp, tp, arrs):
            p.grad = gradlab.tensor(a, dtype=gradlab.float64)
            q.grad = torch.tensor(a)
        gn = nn.utils.clip_grad_norm_(gp, 1.5, norm_type=norm_type)
        tn = torch.nn.utils.clip_grad_norm_(tp, 1.5, norm_type=norm_type)
        assert float(gn) == pytest.approx(float(tn), rel=1e-9)
        for p, q in zip(gp, tp):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9)
    nn.utils.clip_grad_value_(gp, 0.1)
    assert max(float(abs(p.grad.numpy()).max()) for p in gp) <= 0.1
