"""(torch-data: this file uses `.data` as PyTorch's; the codemod leaves it alone.)
``x.data`` with PyTorch's semantics: a Tensor sharing storage, ``requires_grad=False``, outside version
tracking; every idiom public code uses it for, and optimizers written by hand in public examples, compared
step by step with PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab

oracle = pytest.mark.oracle


def test_data_is_a_tensor_sharing_storage_without_grad():
    w = gradlab.randn(3, 4, requires_grad=True)
    d = w.data
    assert isinstance(d, gradlab.Tensor)
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    assert d.shape == w.shape and d.dtype == w.dtype and d.device == w.device
    assert np.shares_memory(d.numpy(), w.detach().numpy())
    d[0, 0] = 5.0
    assert float(w[0, 0]) == 5.0
    y = (w * 2).sum()
    assert y.data.grad_fn is None and not y.data.requires_grad and float(y.data) == float(y)


def test_changes_through_data_are_outside_version_tracking_as_in_pytorch():
    w = gradlab.ones(3, requires_grad=True)
    v0 = w._version.value
    w.data.add_(1.0)
    assert w._version.value == v0          # the parameter's counter did not move
    x = gradlab.ones(3, requires_grad=True)
    y = x * 2
    z = (y * y).sum()                      # saves y
    y.data.mul_(10)                        # an in-place change autograd cannot see
    z.backward()                           # no error (PyTorch gives none either)
    np.testing.assert_allclose(x.grad.numpy(), 2 * 2 * 20.0 * np.ones(3))  # computed from the changed y
    y2 = x * 2
    z2 = (y2 * y2).sum()
    with gradlab.no_grad():
        y2.mul_(10)                        # the same change made on the tensor itself is caught
    with pytest.raises(RuntimeError, match="in-place|version"):
        z2.backward()


def test_data_setter_replaces_the_storage_as_in_pytorch():
    w = gradlab.zeros(2, requires_grad=True)
    w.data = gradlab.arange(6.0).reshape(2, 3)
    assert w.shape == (2, 3) and w.requires_grad
    np.testing.assert_array_equal(w.detach().numpy(), np.arange(6.0).reshape(2, 3))
    with pytest.raises(TypeError, match="needs a Tensor"):
        w.data = np.zeros(3)
    with pytest.raises(TypeError, match="floating"):
        w.data = gradlab.arange(3)


@oracle
def test_every_idiom_matches_pytorch(torch):
    """`p.data.add_(p.grad, alpha=-lr)`, `param.data.add_(-lr * param.grad)`, `w.data -= lr * w.grad.data`,
    `p.data.zero_()`, `.copy_()`, `.clamp_()`, `.normal_`-style init through `nn.init` on `.data`, `.fill_`."""
    def run(lib):
        rng = np.random.default_rng(0)
        w = lib.tensor(rng.normal(size=(3, 2)).astype(np.float32), requires_grad=True)
        b = lib.tensor(rng.normal(size=2).astype(np.float32), requires_grad=True)
        tgt = lib.tensor(rng.normal(size=(3, 2)).astype(np.float32))
        x = lib.tensor(rng.normal(size=(4, 3)).astype(np.float32))
        out = []
        for step in range(4):
            loss = ((x @ w + b) ** 2).mean()
            loss.backward()
            if step == 0:
                w.data.add_(w.grad, alpha=-0.1)        # word_language_model
                b.data.add_(-0.1 * b.grad)             # regression
            elif step == 1:
                w.data -= 0.1 * w.grad.data            # the older tutorials
                b.data.sub_(0.1 * b.grad.data)
            elif step == 2:
                w.data.copy_(0.5 * w.data + 0.5 * tgt.data)  # a soft target-network update (DDPG)
                b.data.clamp_(-0.01, 0.01)             # WGAN's weight clipping
            else:
                w.data.mul_(0.9)
                b.data.fill_(0.25)
            w.grad.data.zero_()                        # zeroing through .data, as old code does
            b.grad.zero_()
            out.append((loss.item(), w.detach().numpy().copy(), b.detach().numpy().copy()))
        lib.nn.init.constant_(w.data, 0.5)             # DCGAN's weights_init passes .data
        out.append((0.0, w.detach().numpy().copy(), b.detach().numpy().copy()))
        return out

    for (lg, wg, bg), (lt, wt, bt) in zip(run(gradlab), run(torch)):
        assert lg == pytest.approx(lt, rel=1e-6)
        np.testing.assert_allclose(wg, wt, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(bg, bt, rtol=1e-6, atol=1e-7)


def _sgd_momentum(lib, params, state, lr=0.1, momentum=0.9):
    """The hand-written SGD with momentum of many public notebooks (state kept in .data buffers)."""
    for i, p in enumerate(params):
        if i not in state:
            state[i] = p.grad.data.clone()
        else:
            state[i].mul_(momentum).add_(p.grad.data)
        p.data.add_(state[i], alpha=-lr)


def _adam(lib, params, state, lr=0.05, betas=(0.9, 0.999), eps=1e-8):
    """A hand-written Adam (the update of the Adam paper written with .data, as in tutorials)."""
    state["t"] = state.get("t", 0) + 1
    t = state["t"]
    for i, p in enumerate(params):
        m, v = state.setdefault(("m", i), lib.zeros_like(p.data)), state.setdefault(("v", i), lib.zeros_like(p.data))
        g = p.grad.data
        m.mul_(betas[0]).add_(g, alpha=1 - betas[0])
        v.mul_(betas[1]).addcmul_(g, g, value=1 - betas[1])
        mhat = m / (1 - betas[0] ** t)
        vhat = v / (1 - betas[1] ** t)
        p.data.addcdiv_(mhat, vhat.sqrt().add_(eps), value=-lr)


@oracle
@pytest.mark.parametrize("optimizer", [_sgd_momentum, _adam], ids=["sgd_momentum", "adam"])
def test_hand_written_optimizers_from_public_examples_match_pytorch(optimizer, torch):
    def run(lib):
        rng = np.random.default_rng(1)
        model = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh(), lib.nn.Linear(8, 1))
        for p in model.parameters():
            p.data.copy_(lib.tensor(rng.normal(0, 0.5, tuple(p.shape)).astype(np.float32)))
        x = lib.tensor(rng.normal(size=(16, 4)).astype(np.float32))
        y = lib.tensor(rng.normal(size=(16, 1)).astype(np.float32))
        state, losses = {}, []
        for _ in range(6):
            model.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            optimizer(lib, list(model.parameters()), state)
            losses.append(loss.item())
        return losses, [p.detach().numpy().copy() for p in model.parameters()]

    (lg, pg), (lt, pt) = run(gradlab), run(torch)
    np.testing.assert_allclose(lg, lt, rtol=1e-5, atol=1e-6)
    for a, b in zip(pg, pt):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
