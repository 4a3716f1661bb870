"""nn.utils.weight_norm / spectral_norm (PyTorch's hook API) against PyTorch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradlab
from gradlab import nn

pytestmark = pytest.mark.oracle


def _copy(g, t):
    assert list(g.state_dict()) == list(t.state_dict())
    g.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})


def _check(torch, g, t, shape, steps=2):
    for _ in range(steps):
        x = np.random.randn(*shape)
        gx, tx = gradlab.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        go, to = g(gx), t(tx)
        np.testing.assert_allclose(go.detach().numpy(), to.detach().numpy(), atol=1e-10)
        go.sum().backward()
        to.sum().backward()
        np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), atol=1e-10)
    tp = dict(t.named_parameters())
    for name, p in g.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tp[name].grad.numpy(), atol=1e-9, err_msg=name)
    for name, b in g.named_buffers():
        np.testing.assert_allclose(b.numpy(), dict(t.named_buffers())[name].numpy(), atol=1e-10, err_msg=name)


@pytest.mark.parametrize("make,shape,dim", [(lambda N: N.Linear(4, 3), (5, 4), 0),
                                            (lambda N: N.Conv2d(2, 3, 3), (1, 2, 5, 5), 0),
                                            (lambda N: N.Linear(4, 3), (5, 4), None),
                                            (lambda N: N.Conv1d(2, 3, 2), (2, 2, 5), 1)])
def test_weight_norm_matches_torch(torch, make, shape, dim):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.nn.utils.weight_norm(make(torch.nn).double(), dim=dim)
    g = nn.utils.weight_norm(make(nn).double(), dim=dim)
    _copy(g, t)
    _check(torch, g, t, shape)
    nn.utils.remove_weight_norm(g)
    assert [n for n, _ in g.named_parameters()] == ["bias", "weight"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.nn.utils.remove_weight_norm(t)
    np.testing.assert_allclose(g.weight.detach().numpy(), t.weight.detach().numpy(), atol=1e-12)


@pytest.mark.parametrize("make,shape", [(lambda N: N.Linear(4, 3), (5, 4)), (lambda N: N.Conv2d(2, 3, 3), (1, 2, 5, 5)),
                                        (lambda N: N.ConvTranspose2d(2, 3, 3), (1, 2, 4, 4))])
def test_spectral_norm_matches_torch(torch, make, shape):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.nn.utils.spectral_norm(make(torch.nn).double(), n_power_iterations=2)
    g = nn.utils.spectral_norm(make(nn).double(), n_power_iterations=2)
    _copy(g, t)
    _check(torch, g, t, shape)  # training: one power iteration per forward, updating weight_u / weight_v
    g.eval(), t.eval()
    x = np.random.randn(*shape)
    np.testing.assert_allclose(g(gradlab.tensor(x)).detach().numpy(), t(torch.tensor(x)).detach().numpy(), atol=1e-10)
    nn.utils.remove_spectral_norm(g)
    assert "weight" in dict(g.named_parameters()) and "weight_u" not in dict(g.named_buffers())


def test_zero_dim_parameter_accumulates_over_two_backwards():
    """A 0-d parameter (a learned scale, weight_g with dim=None) keeps a 0-d array grad when grads accumulate."""
    s = nn.Parameter(gradlab.tensor(2.0))
    (s * 3).backward()
    (s * s).backward()
    assert float(s.grad.item()) == 7.0 and s.grad.shape == ()
