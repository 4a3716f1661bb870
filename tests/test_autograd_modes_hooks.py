"""Grad modes, tensor hooks, saved-tensor hooks and the saved-bytes report."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
from gradlab.autograd import graph
from gradlab.errors import GradError


def _mlp(x, ws):
    h = x
    for w in ws:
        h = (h @ w).tanh()
    return (h * h).sum()


def _params(n=3, d=8):
    return [gradlab.randn(d, d, requires_grad=True) for _ in range(n)]


# ----------------------------------------------------------------- grad modes
@pytest.mark.parametrize("mode", ["no_grad", "inference_mode", "set_grad_enabled"])
def test_modes_record_no_graph_and_save_nothing(mode):
    x = gradlab.randn(4, 8)
    ws = _params()
    make = {"no_grad": gradlab.no_grad, "inference_mode": gradlab.inference_mode,
            "set_grad_enabled": lambda: gradlab.set_grad_enabled(False)}[mode]
    with make():
        assert not gradlab.is_grad_enabled()
        y = _mlp(x, ws)
    assert gradlab.is_grad_enabled()
    assert y.grad_fn is None and not y.requires_grad
    assert graph.saved_tensors(y).total_bytes == 0
    y2 = _mlp(x, ws)  # outside: recorded, and saves activations
    assert y2.grad_fn is not None and graph.saved_tensors(y2).total_bytes > 0


def test_modes_as_decorators_and_nesting():
    ws = _params(1)

    @gradlab.no_grad()
    def f(x):
        return _mlp(x, ws)

    @gradlab.enable_grad()
    def g(x):
        return _mlp(x, ws)

    @gradlab.set_grad_enabled(False)
    def h(x):
        return _mlp(x, ws)

    @gradlab.inference_mode()
    def k(x):
        assert gradlab.autograd.grad_mode.is_inference_mode_enabled()
        return _mlp(x, ws)

    x = gradlab.randn(2, 8)
    assert gradlab.is_grad_enabled()  # the decorator form did not switch anything at definition
    assert f(x).grad_fn is None and h(x).grad_fn is None and k(x).grad_fn is None
    with gradlab.no_grad():
        assert g(x).grad_fn is not None           # enable_grad inside no_grad records again
        with gradlab.enable_grad():
            assert _mlp(x, ws).requires_grad
        assert not _mlp(x, ws).requires_grad
    gradlab.set_grad_enabled(False)
    try:
        assert not gradlab.is_grad_enabled()
    finally:
        gradlab.set_grad_enabled(True)
    assert gradlab.is_grad_enabled()


def test_mode_restored_after_exception():
    with pytest.raises(ValueError):
        with gradlab.no_grad():
            raise ValueError("boom")
    assert gradlab.is_grad_enabled()


# --------------------------------------------------------------------- hooks
def test_register_hook_can_replace_the_gradient(torch):
    x = gradlab.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x * 2
    seen = []
    h1 = y.register_hook(lambda g: seen.append(g._data.copy()))
    y.register_hook(lambda g: g * 10)
    (y * y).sum().backward()
    tx = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    ty = tx * 2
    ty.register_hook(lambda g: g * 10)
    (ty * ty).sum().backward()
    np.testing.assert_allclose(x.grad._data, tx.grad.numpy())
    np.testing.assert_allclose(seen[0], 2 * y._data)
    h1.remove()
    # a leaf hook too
    x.grad = None
    x.register_hook(lambda g: g + 1)
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad._data, 4.0)


def test_hook_returning_wrong_shape_is_a_clear_error():
    x = gradlab.randn(3, 4, requires_grad=True)
    y = x.exp()
    y.register_hook(lambda g: g.sum(dim=0))
    with pytest.raises(GradError, match=r"returned \(4,\).*shape \(3, 4\)"):
        y.sum().backward()
    x2 = gradlab.randn(2, requires_grad=True)
    x2.register_hook(lambda g: 5.0)
    with pytest.raises(GradError, match="returned float"):
        (x2 * 2).sum().backward()


def test_post_accumulate_grad_hook_sees_the_final_grad():
    w = gradlab.randn(3, requires_grad=True)
    got = []
    w.register_post_accumulate_grad_hook(lambda t: got.append(t.grad._data.copy()))
    (w * 2 + w * 3).sum().backward()
    assert len(got) == 1 and np.allclose(got[0], 5.0)
    with pytest.raises(GradError, match="leaf"):
        (w * 2).register_post_accumulate_grad_hook(lambda t: None)


def test_saved_tensors_hooks_intercept_every_save():
    packed, unpacked = [], []

    def pack(t):
        packed.append(t.shape)
        return t._data.copy()

    def unpack(a):
        unpacked.append(a.shape)
        return gradlab.Tensor._make(a)
    x = gradlab.randn(4, 8, requires_grad=True)
    ws = _params(2)
    with graph.saved_tensors_hooks(pack, unpack):
        y = _mlp(x, ws)
    assert packed, "pack ran for each saved tensor"
    y.backward()
    assert sorted(packed) == sorted(unpacked)
    x2 = x.detach().requires_grad_()
    w2 = [w.detach().requires_grad_() for w in ws]
    _mlp(x2, w2).backward()
    np.testing.assert_allclose(x.grad._data, x2.grad._data, rtol=1e-6)
    assert not gradlab.autograd.function.saved_tensor_hooks()  # the stack is empty again


def test_save_on_cpu_gives_the_same_gradients():
    x = gradlab.randn(4, 8, requires_grad=True)
    ws = _params(2)
    with graph.save_on_cpu():
        y = _mlp(x, ws)
    y.backward()
    x2 = x.detach().requires_grad_()
    _mlp(x2, [w.detach() for w in ws]).backward()
    np.testing.assert_allclose(x.grad._data, x2.grad._data, rtol=1e-6)


# -------------------------------------------------------------- the report
def test_saved_tensors_report_lists_and_totals(torch):
    x = gradlab.randn(5, 8, requires_grad=True)
    w = gradlab.randn(8, 3, requires_grad=True)
    x.name = "x"
    h = (x @ w).tanh()
    loss = (h * h).sum()
    rep = graph.saved_tensors(loss)
    ops = [e.op for e in rep]
    assert ops.count("matmul") == 2 and "tanh" in ops and ops.count("mul") == 2
    for e in rep:
        assert e.nbytes == int(np.prod(e.shape)) * np.dtype(e.dtype).itemsize
    # tanh's saved output is h, and h*h saves h twice more: one piece of memory, counted once
    dup = [e for e in rep if e.duplicate]
    assert len(dup) == 2
    expected = x.nbytes + w.nbytes + h.nbytes
    assert rep.total_bytes == expected
    assert rep.activation_bytes == expected - x.nbytes - w.nbytes
    assert any(e.name == "x" for e in rep)
    assert "SavedTensorsReport" in repr(rep)
    assert set(rep.by_node()) == {e.node for e in rep}
    # reading it changed nothing
    loss.backward()
    assert x.grad is not None


def test_report_after_backward_is_empty():
    x = gradlab.randn(3, requires_grad=True)
    y = x.exp().sum()
    assert graph.saved_tensors(y).total_bytes == 12
    y.backward()
    assert graph.saved_tensors(y).total_bytes == 0  # freed by backward


def test_inplace_change_is_detected_through_saved_tensor_hooks_too():
    x = gradlab.randn(3, requires_grad=True)
    y = x * 1
    y.name = "y"
    with graph.save_on_cpu():
        z = (y * y).sum()
    rep = graph.saved_tensors(z)
    packed = [e for e in rep if e.kind == "packed"]
    assert len(packed) == 2 and sum(e.nbytes for e in packed) == 2 * y.nbytes  # two host copies, counted
    with gradlab.no_grad():
        y.add_(1)
    with pytest.raises(GradError, match="'y' \\(shape \\(3,\\)\\) was saved by mul"):
        z.backward()


def test_report_accepts_nodes_and_lists_and_disable_hooks():
    x = gradlab.randn(3, requires_grad=True)
    a, b = x.exp(), x.tanh()
    both = graph.saved_tensors([a, b])
    assert both.total_bytes == graph.saved_tensors(a).total_bytes + graph.saved_tensors(b.grad_fn).total_bytes
    calls = []
    with graph.saved_tensors_hooks(lambda t: calls.append(1) or t, lambda t: t):
        with graph.disable_saved_tensors_hooks():
            x.exp()
        assert not calls
        x.exp()
        assert calls == [1]


def test_enter_and_exit_dual_level():
    from gradlab.autograd import forward_ad as fwAD
    fwAD.enter_dual_level()
    try:
        assert fwAD.is_active()
        d = fwAD.make_dual(gradlab.tensor([2.0]), gradlab.tensor([1.0]))
        assert fwAD.unpack_dual(d * d).tangent.item() == 4.0
    finally:
        fwAD.exit_dual_level()
    assert not fwAD.is_active()
    with pytest.raises(GradError, match="no dual level"):
        fwAD.exit_dual_level()
