"""Lazy layers: the input size is read from the first batch, then the module becomes the ordinary layer."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
from gradlab import nn


def _lenet(N):
    """D2L's LeNet, written with lazy layers."""
    return N.Sequential(
        N.LazyConv2d(6, kernel_size=5, padding=2), N.LazyBatchNorm2d(), N.Sigmoid(), N.AvgPool2d(2, stride=2),
        N.LazyConv2d(16, kernel_size=5), N.Sigmoid(), N.AvgPool2d(2, stride=2), N.Flatten(),
        N.LazyLinear(120), N.LazyBatchNorm1d(), N.Sigmoid(), N.LazyLinear(10),
    )


@pytest.mark.oracle
def test_lazy_lenet_matches_torch(torch):
    torch.manual_seed(0)
    g, t = _lenet(gradlab.nn), _lenet(torch.nn)
    assert repr(g[0]).startswith("LazyConv2d(0, 6,") and g[0].extra_repr() == t[0].extra_repr()
    assert g[8].extra_repr() == t[8].extra_repr() == "in_features=0, out_features=120, bias=True"
    x = np.random.randn(2, 1, 28, 28)
    g(gradlab.tensor(x, dtype=gradlab.float32))
    t(torch.tensor(x, dtype=torch.float32))
    assert [type(m).__name__ for m in g] == [type(m).__name__ for m in t]
    assert type(g[0]) is nn.Conv2d and type(g[8]) is nn.Linear
    assert [m.extra_repr() for m in g] == [m.extra_repr() for m in t]
    t.double()
    g.double()
    assert list(g.state_dict()) == list(t.state_dict())
    g.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    gx, tx = gradlab.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    go, to = g(gx), t(tx)
    np.testing.assert_allclose(go.detach().numpy(), to.detach().numpy(), atol=1e-10)
    go.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), atol=1e-10)
    tp = dict(t.named_parameters())
    for name, p in g.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tp[name].grad.numpy(), atol=1e-10, err_msg=name)


@pytest.mark.oracle
@pytest.mark.parametrize("name,args,shape", [
    ("LazyConv1d", (4, 3), (2, 6, 5)), ("LazyConvTranspose1d", (4, 3), (2, 6, 5)),
    ("LazyConvTranspose2d", (4, 3), (1, 3, 4, 4)), ("LazyBatchNorm3d", (), (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", (), (2, 3, 5)), ("LazyInstanceNorm2d", (1e-3, 0.2, False), (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", (), (2, 3, 2, 2, 2)), ("LazyConv3d", (4, 2), (1, 3, 3, 3, 3)),
    ("LazyConvTranspose3d", (4, 2), (1, 3, 2, 2, 2)),
])
def test_lazy_layers_become_torchs_layers(torch, name, args, shape):
    g, t = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert g.extra_repr() == t.extra_repr()
    g(gradlab.randn(*shape))
    t(torch.randn(*shape))
    assert type(g).__name__ == type(t).__name__ and g.extra_repr() == t.extra_repr()
    assert list(g.state_dict()) == list(t.state_dict())
    assert [tuple(v.shape) for v in g.state_dict().values()] == [tuple(v.shape) for v in t.state_dict().values()]


def test_lazy_keeps_hooks_mode_and_dtype():
    m = nn.LazyLinear(3)
    seen = []
    m.register_forward_hook(lambda mod, args, out: seen.append(tuple(out.shape)))
    m.eval()
    m.double()  # before the parameters exist: they are created in float64
    assert m.has_uninitialized_params() and list(m.parameters()) == []
    out = m(gradlab.randn(2, 5, dtype=gradlab.float64))
    assert type(m) is nn.Linear and m.in_features == 5 and not m.training
    assert m.weight.dtype == gradlab.float64 and tuple(m.weight.shape) == (3, 5)
    assert seen == [(2, 3)] and tuple(out.shape) == (2, 3)
    bound = 1 / np.sqrt(5)
    assert np.abs(m.weight.detach().numpy()).max() <= bound  # Linear's own init
    opt = gradlab.optim.SGD(m.parameters(), lr=0.1)  # the optimizer sees the new parameters
    m(gradlab.randn(2, 5, dtype=gradlab.float64)).sum().backward()
    opt.step()
    with pytest.raises(gradlab.errors.GradlabError, match="4-D"):
        nn.LazyConv2d(2, 3)(gradlab.randn(3, 4))


@pytest.mark.oracle
def test_data_parallel_is_a_pass_through_with_torchs_keys(torch):
    g, t = nn.DataParallel(nn.Linear(2, 3)), torch.nn.DataParallel(torch.nn.Linear(2, 3))
    assert list(g.state_dict()) == list(t.state_dict()) == ["module.weight", "module.bias"]
    x = gradlab.randn(4, 2)
    np.testing.assert_array_equal(g(x).detach().numpy(), g.module(x).detach().numpy())
