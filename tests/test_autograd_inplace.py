"""In-place methods: version counters, the stale-saved-tensor error, leaf refusal, graph rebasing."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
from gradlab.errors import DTypeError, GradError, ShapeError


def test_the_design_error_names_tensor_shape_op_and_versions():
    x = gradlab.randn(8, 16, requires_grad=True)
    h = x.tanh()
    h.name = "h"
    h += 1
    with pytest.raises(GradError) as e:
        h.sum().backward()
    msg = str(e.value)
    assert msg.startswith("in-place change: 'h' (shape (8, 16)) was saved by tanh for backward at version 0 "
                          "and is now at version 1; use h = h + ... instead of h += ...")


def test_saved_input_changed_in_place_is_detected_with_views():
    x = gradlab.randn(4, 3, requires_grad=True)
    y = x * 1
    z = (y * y).sum()  # mul saves y
    v = y.detach()[0]  # a view of y's memory: shares the version counter
    with gradlab.no_grad():
        v.mul_(2)
    assert y._version.value == 1
    with pytest.raises(GradError, match="version 0 and is now at version 1"):
        z.backward()


def test_inplace_on_a_leaf_that_requires_grad_is_refused_but_allowed_under_no_grad():
    w = gradlab.randn(3, requires_grad=True)
    w.name = "w"
    for f in (lambda: w.add_(1), lambda: w.mul_(2), lambda: w.zero_(), lambda: w.fill_(1.0),
              lambda: w.__setitem__(0, 1.0), lambda: w.copy_(gradlab.ones(3)), lambda: w.normal_()):
        with pytest.raises(GradError, match="'w' is a leaf that requires grad.*no_grad"):
            f()
    start = w._data.copy()
    with gradlab.no_grad():
        w.add_(gradlab.ones(3), alpha=2)
        w.sub_(1)
        w.mul_(3)
        w.div_(3)
        w.addcmul_(gradlab.ones(3), gradlab.full((3,), 2.0), value=0.5)   # +1
        w.addcdiv_(gradlab.ones(3), gradlab.full((3,), 2.0), value=2)     # +1
        w.lerp_(w + 4, 0.5)                                               # +2
        w.clamp_(-100, 100)
    np.testing.assert_allclose(w._data, start + 1 + 1 + 1 + 2, rtol=1e-6)
    assert w.is_leaf and w.requires_grad and w._version.value == 8
    with gradlab.no_grad():
        w.copy_(gradlab.tensor([1.0, 2.0, 3.0]))
        w[1] = 7.0
        w.uniform_(0, 1)
        assert np.all((w._data >= 0) & (w._data < 1))
        w.normal_(5.0, 0.001)
        assert np.allclose(w._data, 5.0, atol=0.01)
        w.fill_(0.25)
        w.zero_()
    assert np.all(w._data == 0)


def test_optimizer_style_update_keeps_training_correct():
    gradlab.manual_seed(0)
    w = gradlab.randn(3, requires_grad=True)
    target = gradlab.tensor([1.0, -2.0, 0.5])
    for _ in range(200):
        loss = ((w - target) ** 2).sum()
        w.grad = None
        loss.backward()
        with gradlab.no_grad():
            w.add_(w.grad, alpha=-0.1)
    np.testing.assert_allclose(w._data, target._data, atol=1e-4)


@pytest.mark.parametrize("kind", ["add_", "iadd", "mul_", "imul", "sub_", "div_", "setitem", "setitem_tensor",
                                  "clamp_", "copy_", "fill_", "addcmul_"])
def test_inplace_on_non_leaf_gives_pytorchs_gradients(kind, torch):
    rng = np.random.default_rng(0)
    xa, oa = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)) + 3

    def run(lib, x, o):
        y = x * 2
        if kind == "add_":
            y.add_(o, alpha=0.5)
        elif kind == "iadd":
            y += o
        elif kind == "mul_":
            y.mul_(o)
        elif kind == "imul":
            y *= o
        elif kind == "sub_":
            y.sub_(o)
        elif kind == "div_":
            y.div_(o)
        elif kind == "setitem":
            y[1] = 5.0
        elif kind == "setitem_tensor":
            y[:, 1:3] = o[0, :2] * 3
        elif kind == "clamp_":
            y.clamp_(-0.5, 0.5)
        elif kind == "copy_":
            y.copy_(o * o)
        elif kind == "fill_":
            y.fill_(2.0)
        elif kind == "addcmul_":
            y.addcmul_(o, x, value=0.5)
        return (y * y.exp()).sum()

    x = gradlab.tensor(xa, dtype=gradlab.float64, requires_grad=True)
    o = gradlab.tensor(oa, dtype=gradlab.float64, requires_grad=True)
    loss = run(gradlab, x, o)
    loss.backward()
    tx = torch.tensor(xa, requires_grad=True)
    to = torch.tensor(oa, requires_grad=True)
    tl = run(torch, tx, to)
    tl.backward()
    np.testing.assert_allclose(loss.item(), tl.item(), rtol=1e-12)
    np.testing.assert_allclose(x.grad._data, tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    tog = to.grad.numpy() if to.grad is not None else np.zeros_like(oa)
    og = o.grad._data if o.grad is not None else np.zeros_like(oa)
    np.testing.assert_allclose(og, tog, rtol=1e-10, atol=1e-12)


def test_inplace_rebases_grad_fn_and_bumps_version():
    x = gradlab.randn(3, requires_grad=True)
    y = x * 2
    before = y.grad_fn
    y.add_(1)
    assert y.grad_fn is not before and y.grad_fn.name == "add"
    assert y.grad_fn.next_functions[0][0] is before   # the old node feeds the in-place node
    assert y._version.value == 1
    y[0] = 0.0
    assert y.grad_fn.name == "setitem" and y._version.value == 2


def test_plain_tensor_meeting_one_that_requires_grad_joins_the_graph():
    x = gradlab.tensor([1.0, 2.0], requires_grad=True)
    acc = gradlab.zeros(2)
    acc += x * 3
    acc[0] = x[1]
    acc.sum().backward()
    np.testing.assert_allclose(x.grad._data, [0.0, 4.0])  # acc = [x1, 3 x1]


def test_inplace_bad_input():
    x = gradlab.zeros(3)
    with pytest.raises(ShapeError, match=r"shape \(2, 3\).*\(3,\).*cannot change a tensor's shape"):
        x.add_(gradlab.ones(2, 3))
    i = gradlab.zeros(3, dtype=gradlab.int64)
    with pytest.raises(DTypeError, match="float32.*int64"):
        i.add_(gradlab.ones(3))
    i.add_(2)
    assert i.tolist() == [2, 2, 2]
    with pytest.raises(ShapeError, match="setitem"):
        x[0:2] = gradlab.ones(3)
    with pytest.raises(ShapeError, match="one-element"):
        x.fill_(gradlab.ones(2))


def test_inplace_on_a_view_of_a_graph_tensor_rebases_its_base():
    """(PyTorch's CopySlices; the cases against PyTorch are tests/test_inplace_through_views.py.)"""
    x = gradlab.randn(4, 3, requires_grad=True)
    y = x * 1
    y[0].mul_(2)
    y.sum().backward()
    assert x.grad.tolist() == [[2, 2, 2]] + [[1, 1, 1]] * 3


_INPLACE_ARGS = {"pow": (2.5,), "clamp_min": (1.0,), "clamp_max": (1.0,), "clamp": (0.5, 2.0), "add": (0.7,),
                 "sub": (0.7,), "mul": (0.7,), "div": (0.7,), "lerp": lambda y: (y * 2, 0.25)}
_TORCH_INPLACE_UNDIFFERENTIABLE = {"asinh", "acosh", "atanh"}


@pytest.mark.parametrize("op", [i.name for i in gradlab.ops.REGISTRY.values() if i.inplace and i.elementwise])
def test_elementwise_inplace_methods_match_torch(op, torch):
    """Every elementwise op whose registry entry gives it an in-place variant (``x.exp_()``...)."""
    xa = np.array([0.3, 1.7, 0.9, 2.2])
    args = _INPLACE_ARGS.get(op, ())

    def run(lib, x):
        y = x * 1.5
        a = args(y) if callable(args) else args
        if lib is gradlab or op not in _TORCH_INPLACE_UNDIFFERENTIABLE:
            getattr(y, op + "_")(*a)
        else:  # the out-of-place op: PyTorch's asinh_ and kin have no derivative ("not implemented")
            y = getattr(y, op)(*a)
        return (y * y).sum()
    x = gradlab.tensor(xa, dtype=gradlab.float64, requires_grad=True)
    loss = run(gradlab, x)
    loss.backward()
    tx = torch.tensor(xa, requires_grad=True)
    tl = run(torch, tx)
    tl.backward()
    np.testing.assert_allclose(loss.item(), tl.item(), rtol=1e-12)
    np.testing.assert_allclose(x.grad._data, tx.grad.numpy(), rtol=1e-8, atol=1e-12)  # (trigamma: 5e-10)


def test_retain_grad_follows_the_tensor_through_an_inplace_change(torch):
    def run(lib, x):
        y = x * 2
        y.retain_grad()
        y.mul_(3)
        (y * y).sum().backward()
        return y.grad
    x = gradlab.tensor([1.0, -2.0], dtype=gradlab.float64, requires_grad=True)
    tx = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    np.testing.assert_allclose(run(gradlab, x)._data, run(torch, tx).numpy())
    np.testing.assert_allclose(x.grad._data, tx.grad.numpy())


def test_an_ops_inplace_variant_checks_what_the_op_checks(torch):
    """``x.masked_fill_(...)`` is ``masked_fill`` written back (its registry entry's variant), so it keeps the
    input's dtype and refuses a value with dims, as PyTorch; ``index_add_`` names itself on a leaf."""
    mask = [True, False, True]
    x = gradlab.zeros(3, dtype=gradlab.int64).masked_fill_(gradlab.tensor(mask), 1.5)
    assert x.tolist() == torch.zeros(3, dtype=torch.int64).masked_fill_(torch.tensor(mask), 1.5).tolist()
    with pytest.raises(ShapeError, match="0-d tensor"):
        gradlab.zeros(3).masked_fill_(gradlab.tensor(mask), gradlab.ones(3))
    with pytest.raises(GradError, match="index_add_: .* leaf that requires grad"):
        gradlab.ones(3, requires_grad=True).index_add_(0, gradlab.tensor([0]), gradlab.ones(1))
