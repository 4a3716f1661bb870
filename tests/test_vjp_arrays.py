"""Every op's fast array rule (``vjp_arrays``) equals its definition (``vjp``).

The engine runs ``vjp_arrays`` whenever backward is not recorded, so a twin
that drifts from ``vjp`` would give wrong gradients while gradgradcheck (which
runs ``vjp``) stays green. For every registry op and generated samples, each
node of the sample's graph that has a twin is called both ways with the same
random output gradients, and the results must agree.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import gradlab
import gradlab.nn.functional as F  # noqa: F401 - registers the nn.functional ops
from gradlab.autograd.function import AccumulateGrad, Function
from gradlab.backend.fperr import quiet
from gradlab.ops.registry import REGISTRY

from .test_registry import DIFF, _call, _samples

TWINS_SEEN: set = set()


def _nodes(outputs):
    """Every node of the graph behind ``outputs`` (no AccumulateGrad)."""
    outs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    stack = [o.grad_fn for o in outs if isinstance(o, gradlab.Tensor) and o.grad_fn is not None]
    seen = set()
    while stack:
        n = stack.pop()
        if n in seen or isinstance(n, AccumulateGrad):
            continue
        seen.add(n)
        yield n
        stack += [e[0] for e in n.next_functions if e is not None]


def _compare_node(node, rng):
    grads = [rng.standard_normal(shape).astype(dtype) if np.dtype(dtype).kind == "f" else None
             for shape, dtype in node.out_meta]
    if len(grads) > 1:  # the engine materializes missing gradients as zeros
        grads = [np.zeros(m[0], m[1]) if g is None else g for g, m in zip(grads, node.out_meta)]
    with gradlab.no_grad():
        want = node.vjp(*[None if g is None else gradlab.tensor(g) for g in grads])
    with quiet():  # as the engine runs every twin (inf/nan quietly: backend/fperr.py)
        got = node.vjp_arrays(*grads)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want), node
    for i, (w, g) in enumerate(zip(want, got)):
        if w is None or node.next_functions[i] is None:
            continue
        assert g is not None, f"{node.name}: vjp_arrays gave no gradient for input {i}"
        g = np.asarray(g)
        assert g.shape == tuple(w.shape), (node.name, i, g.shape, w.shape)
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-7, atol=1e-9, err_msg=f"{node.name} input {i}")


@pytest.mark.parametrize("name", DIFF)
@given(data=st.data())
def test_vjp_arrays_equal_vjp(name, data):
    info = REGISTRY[name]
    rng = np.random.default_rng(0)
    for s in _samples(name, data):
        out = _call(info, s)
        for node in _nodes(out):
            if node.vjp_arrays is not None:
                TWINS_SEEN.add(type(node).__name__)
                _compare_node(node, rng)


def test_hot_ops_have_array_twins():
    """The ops a training step spends its backward in run without making Tensors."""
    from gradlab.ops import arithmetic as elementwise, reduce, shape, unary as pointwise
    for cls in (elementwise.Add, elementwise.Sub, elementwise.Mul, elementwise.Div, pointwise.Tanh,
                reduce.Sum, shape.Reshape):
        assert cls.vjp_arrays is not None, cls.name


def test_a_user_subclass_with_its_own_vjp_does_not_inherit_the_twin():
    from gradlab.ops.unary import Tanh

    class MyTanh(Tanh):
        def vjp(self, g):
            return (g * 0,)

    assert MyTanh.vjp_arrays is None and Function.vjp_arrays is None


def test_an_override_bypasses_the_twin():
    x = gradlab.tensor([0.5, -1.0], requires_grad=True)
    with gradlab.autograd.override_vjp("tanh", lambda ctx, g: (g * 3,)):
        x.tanh().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    x.grad = None
    x.tanh().sum().backward()  # the twin is back after the override ends
    np.testing.assert_allclose(x.grad.numpy(), 1 - np.tanh([0.5, -1.0]) ** 2, rtol=1e-6)


def test_two_leaves_never_share_one_gradient_array():
    a = gradlab.ones(3, requires_grad=True)
    b = gradlab.ones(3, requires_grad=True)
    (a + b).sum().backward()
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())
    a.grad.mul_(2)  # in place on one leaf's grad leaves the other alone
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 1.0, 1.0])


@pytest.mark.parametrize("op", ["tanh", "sigmoid"])
def test_fused_backward_ops_twins_equal_their_vjp(op):
    """tanh_backward / sigmoid_backward only appear in a recorded backward (second order)."""
    x = gradlab.randn(3, 4, dtype=gradlab.float64, requires_grad=True)
    (g,) = gradlab.grad(getattr(x, op)().sum(), x, create_graph=True)
    nodes = [n for n in _nodes(g) if n.name == f"{op}_backward"]
    assert nodes
    for n in nodes:
        _compare_node(n, np.random.default_rng(1))
    # and the second derivative through the fast path equals the one through the ops
    (h_fast,) = gradlab.grad(g.sum(), x, retain_graph=True)
    (h_ops,) = gradlab.grad(g.sum(), x, create_graph=True)
    np.testing.assert_allclose(h_fast.numpy(), h_ops.detach().numpy(), rtol=1e-12)


def test_a_retained_grad_is_not_shared_with_a_leaf_grad():
    x = gradlab.ones(3, requires_grad=True)
    y = x + 0.0  # add's gradient for x is the very array y receives
    y.retain_grad()
    y.sum().backward()
    assert not np.shares_memory(x.grad.numpy(), y.grad.numpy())
    x.grad.zero_()
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 1.0, 1.0])
