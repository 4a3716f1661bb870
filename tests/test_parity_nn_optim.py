"""PyTorch parity of layers, optimizers, schedulers and the data loader on student-style programs:
Conv2d padding modes, the BatchNorm modules in training and evaluation, pooling modules, Adagrad,
ReduceLROnPlateau, OneCycleLR, ParameterList/ParameterDict, and a DataLoader without batching.

Each case runs the same source with ``L = torch`` and ``L = gradlab`` and compares values, dtypes,
shapes, gradients, state_dicts and reprs.
"""
from __future__ import annotations

import numpy as np
import pytest

import gradlab

from .test_parity_edge_cases import _assert_same, _plain

pytestmark = pytest.mark.oracle


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("kw", [dict(padding=(1, 2)), dict(padding="same", dilation=(2, 1)), dict(padding=1, stride=2)])
def test_conv2d_padding_modes_match_pytorch(torch, mode, kw):
    x = np.random.default_rng(0).standard_normal((2, 2, 5, 6))
    w = np.random.default_rng(1).standard_normal((4, 1, 3, 2))

    def run(L):
        conv = L.nn.Conv2d(2, 4, (3, 2), padding_mode=mode, groups=2, **kw).double()
        with L.no_grad():
            conv.weight.copy_(L.tensor(w))
            conv.bias.fill_(0.3)
        xi = L.tensor(x, requires_grad=True)
        y = conv(xi)
        (y * y).sum().backward()
        return y, xi.grad, conv.weight.grad, conv.bias.grad

    _assert_same(_plain(run(gradlab), torch), _plain(run(torch), torch), f"{mode} {kw}")
    assert f"padding_mode={mode}" in repr(gradlab.nn.Conv2d(2, 4, 3, padding_mode=mode))


@pytest.mark.parametrize("name, shape, kw", [
    ("BatchNorm2d", (4, 3, 5, 5), {}), ("BatchNorm1d", (6, 3), {}), ("BatchNorm1d", (6, 3, 7), dict(momentum=None)),
    ("BatchNorm2d", (4, 3, 2, 2), dict(affine=False, momentum=0.3)),
    ("BatchNorm1d", (5, 3), dict(track_running_stats=False)),
    ("BatchNorm2d", (2, 3, 3, 3), dict(bias=False, eps=1e-3))])
def test_batchnorm_modules_match_pytorch(torch, name, shape, kw):
    def run(L):
        m = getattr(L.nn, name)(3, **kw).double()
        if m.weight is not None:
            with L.no_grad():
                m.weight.copy_(L.tensor([1.0, 2.0, 0.5]))
        outs = []
        for step in range(3):  # training: batch statistics, running averages updated
            x = L.tensor(np.random.default_rng(step).standard_normal(shape), requires_grad=True)
            y = m(x)
            (y * y).sum().backward()
            outs += [y, x.grad]
        m.eval()  # evaluation: the running averages
        x = L.tensor(np.random.default_rng(9).standard_normal(shape), requires_grad=True)
        y = m(x)
        (y * y).sum().backward()
        outs += [y, x.grad, [p.grad for p in m.parameters()]]
        return outs, list(m.state_dict().items()), repr(m).split("  #")[0]  # (gradlab adds a parameter count)

    _assert_same(_plain(run(gradlab), torch), _plain(run(torch), torch), f"{name} {kw}")


def test_pooling_modules_match_pytorch(torch):
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 7))

    def run(L):
        xi = L.tensor(x, requires_grad=True)
        a = L.nn.AvgPool2d(3, 2, 1, count_include_pad=False)(xi)
        b = L.nn.AdaptiveAvgPool2d((2, 3))(xi)
        (a.sum() + (b * b).sum()).backward()
        return a, b, xi.grad, repr(L.nn.AvgPool2d(2)).split("  #")[0], repr(L.nn.AdaptiveAvgPool2d(1)).split("  #")[0]

    _assert_same(_plain(run(gradlab), torch), _plain(run(torch), torch), "pooling modules")


@pytest.mark.parametrize("kw", [dict(lr=0.1), dict(lr=0.1, maximize=True),
                                dict(lr=0.1, lr_decay=0.1, weight_decay=0.05, initial_accumulator_value=0.2, eps=1e-6)])
def test_adagrad_matches_pytorch(torch, kw):
    rng = np.random.default_rng(0)
    w0, x, y = rng.standard_normal((4, 3)), rng.standard_normal((6, 4)), rng.standard_normal((6, 3))

    def run(L):
        w, b = L.tensor(w0, requires_grad=True), L.zeros(3, dtype=L.float64, requires_grad=True)
        opt = L.optim.Adagrad([w, b], **kw)
        sched = L.optim.lr_scheduler.StepLR(opt, 2, gamma=0.5)
        for _ in range(5):
            opt.zero_grad()
            ((L.tensor(x) @ w + b - L.tensor(y)) ** 2).mean().backward()
            opt.step()
            sched.step()
        fresh = L.optim.Adagrad([L.tensor(w0, requires_grad=True)], lr=0.1)
        return w, b, opt.state[w]["sum"], float(opt.state[w]["step"]), float(fresh.state_dict()["state"][0]["step"])

    _assert_same(_plain(run(gradlab), torch), _plain(run(torch), torch), f"Adagrad {kw}")
    with pytest.raises(ValueError, match="lr_decay"):
        gradlab.optim.Adagrad([gradlab.ones(1, requires_grad=True)], lr_decay=-1)


@pytest.mark.parametrize("kw", [dict(patience=2), dict(patience=0, min_lr=0.02),
                                dict(mode="max", factor=0.5, patience=1, cooldown=2, threshold_mode="abs",
                                     threshold=0.1)])
def test_reduce_lr_on_plateau_matches_pytorch(torch, kw):
    def run(L):
        opt = L.optim.SGD([L.ones(1, requires_grad=True)], lr=0.1)
        sched = L.optim.lr_scheduler.ReduceLROnPlateau(opt, **kw)
        lrs = []
        for metric in [1.0, 0.9, 0.95, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85, 0.85, 0.9, 1.2, 1.2]:
            sched.step(L.tensor(metric))
            lrs.append(opt.param_groups[0]["lr"])
        return lrs, sched.get_last_lr(), sched.num_bad_epochs, sched.best

    _assert_same(_plain(run(gradlab), torch), _plain(run(torch), torch), f"ReduceLROnPlateau {kw}")


@pytest.mark.parametrize("opt, kw", [
    ("sgd", dict(max_lr=0.5, total_steps=10)),
    ("adam", dict(max_lr=0.5, epochs=2, steps_per_epoch=6, anneal_strategy="linear", three_phase=True)),
    ("groups", dict(max_lr=[0.5, 0.1], total_steps=8, pct_start=0.4, cycle_momentum=False))])
def test_one_cycle_lr_matches_pytorch(torch, opt, kw):
    def run(L):
        w, v = L.ones(2, requires_grad=True), L.ones(1, requires_grad=True)
        o = {"sgd": lambda: L.optim.SGD([w], lr=0.1, momentum=0.9), "adam": lambda: L.optim.Adam([w], lr=0.1),
             "groups": lambda: L.optim.SGD([{"params": [w]}, {"params": [v]}], lr=0.1)}[opt]()
        sched = L.optim.lr_scheduler.OneCycleLR(o, **kw)
        seen = []
        for _ in range(sched.total_steps - 1):
            (w.sum() + v.sum()).backward()
            o.step()
            sched.step()
            seen.append([(g["lr"], g.get("momentum"), g.get("betas")) for g in o.param_groups])
        return seen, w, v

    _assert_same(_plain(run(gradlab), torch), _plain(run(torch), torch), f"OneCycleLR {opt}")


def test_parameter_containers_match_pytorch(torch):
    def run(L):
        class M(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.ws = L.nn.ParameterList([L.nn.Parameter(L.ones(2)), L.zeros(3)])  # a plain tensor too
                self.ws.append(L.ones(1))
                self.d = L.nn.ParameterDict({"a": L.nn.Parameter(L.ones(2))})
                self.d["b"] = L.zeros(1)

        m = M()
        (sum(p.sum() for p in m.ws) + m.d["a"].sum() * 2).backward()
        opt = L.optim.SGD(m.parameters(), lr=0.5)
        opt.step()
        return ([n for n, _ in m.named_parameters()], len(m.ws), [p.requires_grad for p in m.ws], list(m.d.keys()),
                "a" in m.d, m.d["a"], m.ws[1], sorted(m.state_dict()), type(m.ws[1:]).__name__, len(m.ws[1:]))

    _assert_same(_plain(run(gradlab), torch), _plain(run(torch), torch), "ParameterList/ParameterDict")

def test_dataloader_without_batching_matches_pytorch(torch):
    x, y = np.arange(8.0).reshape(4, 2), np.arange(4)

    def run(L, data, **kw):
        ds = data.TensorDataset(L.tensor(x), L.tensor(y))
        loader = data.DataLoader(ds, batch_size=None, **kw)
        return len(loader), [tuple(b) for b in loader]

    import gradlab.data
    _assert_same(_plain(run(gradlab, gradlab.data), torch), _plain(run(torch, torch.utils.data), torch),
                 "batch_size=None")
    got = list(gradlab.data.DataLoader([1, 2, 3], batch_size=None, collate_fn=lambda v: v * 10))
    assert got == list(torch.utils.data.DataLoader([1, 2, 3], batch_size=None, collate_fn=lambda v: v * 10))
