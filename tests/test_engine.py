"""The reverse-mode engine: order, accumulation, freeing, errors, deep graphs."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import gradlab
from gradlab import GradError, ShapeError

from .oracle import assert_close


def f64(*shape, **kw):
    return gradlab.randn(*shape, dtype=gradlab.float64, requires_grad=True, **kw)


def test_simple_backward_matches_hand_derivative():
    x = gradlab.tensor([1.0, 2.0, 3.0], dtype=gradlab.float64, requires_grad=True)
    y = (x * x * 3 + x.exp()).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * x.detach().numpy() + np.exp(x.detach().numpy()))


def test_tensor_used_twice_accumulates():
    x = f64(3)
    y = (x * x).sum()  # x feeds mul twice: dx = 2x
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())


def test_grad_accumulates_across_backward_calls_until_cleared():
    x = f64(2)
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_broadcast_gradient_is_reduced_to_each_input_shape():
    x, y = f64(3, 1), f64(1, 3)
    (x * y).sum().backward()
    assert x.grad.shape == (3, 1) and y.grad.shape == (1, 3)
    np.testing.assert_allclose(x.grad.numpy(), np.full((3, 1), y.detach().numpy().sum()))
    np.testing.assert_allclose(y.grad.numpy(), np.full((1, 3), x.detach().numpy().sum()))


def test_bias_broadcast_over_batch():
    h, b = f64(5, 4), f64(4)
    (h + b).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), np.full(4, 5.0))


def test_repeated_indices_accumulate():
    x = f64(4)
    x[gradlab.tensor([0, 0, 2, 0])].sum().backward()
    assert x.grad.tolist() == [3.0, 0.0, 1.0, 0.0]


def test_boolean_mask_gradient():
    x = f64(2, 3)
    mask = x > 0
    x[mask].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), mask.numpy().astype(float))


def test_deep_chain_of_100k_ops_has_no_recursion_limit():
    x = gradlab.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y + 1.0
    y.backward()
    assert x.grad.item() == 1.0


def test_second_backward_raises_freed_error_and_retain_graph_allows_it():
    x = f64(3)
    loss = (x.exp() * 2).sum()
    loss.name = "loss"
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * np.exp(x.detach().numpy()))
    with pytest.raises(GradError, match=r"graph behind 'loss' was already freed.*retain_graph=True"):
        loss.backward()


def test_saved_tensors_are_released_after_backward():
    x = f64(100)
    y = x.exp()
    node = y.grad_fn
    assert node.saved_bytes == 800
    y.sum().backward()
    assert node.saved_bytes == 0 and node.saved == ()


def test_backward_on_non_scalar_needs_a_gradient():
    x = f64(3)
    y = x * 2
    with pytest.raises(GradError, match=r"3 elements.*\.sum\(\)"):
        y.backward()
    y.backward(gradlab.ones(3, dtype=gradlab.float64))
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_backward_gradient_shape_is_checked():
    x = f64(3)
    with pytest.raises(ShapeError, match=r"\(2,\).*\(3,\)"):
        (x * 2).backward(gradlab.ones(2, dtype=gradlab.float64))


def test_backward_without_graph_is_explained():
    x = gradlab.ones(3)
    with pytest.raises(GradError, match="does not require grad"):
        x.sum().backward()


def test_grad_function_leaves_dot_grad_untouched():
    x, w = f64(3), f64(3)
    y = (x * w).sum()
    gx, gw = gradlab.grad(y, [x, w])
    np.testing.assert_allclose(gx.numpy(), w.detach().numpy())
    np.testing.assert_allclose(gw.numpy(), x.detach().numpy())
    assert x.grad is None and w.grad is None


def test_grad_unreachable_input_needs_allow_unused():
    x, z = f64(3), f64(3)
    y = (x * 2).sum()
    with pytest.raises(GradError, match=r"input 1.*not reachable.*allow_unused=True"):
        gradlab.grad(y, [x, z], retain_graph=True)
    gx, gz = gradlab.grad(y, [x, z], allow_unused=True)
    assert gz is None and gx.tolist() == [2.0, 2.0, 2.0]


def test_grad_of_intermediate_tensor():
    x = f64(3)
    h = x * 3
    y = (h * h).sum()
    (gh,) = gradlab.grad(y, [h])
    np.testing.assert_allclose(gh.numpy(), 2 * h.detach().numpy())


def test_retain_grad_and_non_leaf_grad_is_none_without_it():
    x = f64(3)
    h = x * 2
    h2 = x * 3
    h.retain_grad()
    (h * h2).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), h2.detach().numpy())
    assert h2.grad is None


def test_hooks_see_and_replace_gradients():
    x = f64(3)
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()))
    h = x * 2
    h.register_hook(lambda g: g * 10)
    h.sum().backward()
    assert seen[0].tolist() == [20.0, 20.0, 20.0]
    assert x.grad.tolist() == [20.0, 20.0, 20.0]


def test_no_grad_records_nothing():
    x = f64(3)
    with gradlab.no_grad():
        y = x * 2
    assert y.grad_fn is None and not y.requires_grad

    @gradlab.no_grad()
    def f(t):
        return t.exp()
    assert f(x).grad_fn is None
    assert (x * 2).grad_fn is not None


def test_order_is_reverse_creation_order():
    """Among ready nodes the engine runs the latest created first (as PyTorch)."""
    from gradlab.autograd import engine
    x = f64(2)
    a = x.exp()
    b = x.sin() if hasattr(x, "sin") else x.tanh()
    c = (a * b).sum()
    order = []

    class Rec:
        def node_start(self, node, grads):
            order.append(node.name)

        def node_end(self, node, gin, gout):
            pass
    engine.backward_observers.append(Rec())
    try:
        c.backward()
    finally:
        engine.backward_observers.clear()
    assert order[:2] == ["sum", "mul"]
    assert order.index(b.grad_fn.name) < order.index("exp")  # b was created after a
    assert order[-1] == "AccumulateGrad"


def test_float32_leaf_gets_float32_grad_through_float64_op():
    x = gradlab.ones(3, requires_grad=True)
    y = gradlab.ones(3, dtype=gradlab.float64)
    (x * y).sum().backward()
    assert x.grad.dtype == gradlab.float32


# --------------------------------------------------------------------- oracle
UNARY = ["exp", "tanh", "sigmoid", "relu", "neg", "abs"]
BINARY = ["add", "sub", "mul", "div", "maximum"]


@given(data=st.data())
def test_random_programs_match_pytorch(data, torch):
    """Random compositions of ops with broadcasting: values and gradients equal torch's."""
    seed = data.draw(st.integers(0, 10_000))
    rng = np.random.default_rng(seed)
    shapes = [(3, 1), (1, 4), (3, 4), (4,), ()]
    leaves = [rng.uniform(0.5, 1.5, size=shapes[data.draw(st.integers(0, len(shapes) - 1))]) for _ in range(3)]
    g_leaves = [gradlab.tensor(a, requires_grad=True) for a in leaves]
    t_leaves = [torch.tensor(a, requires_grad=True) for a in leaves]
    g_vals, t_vals = list(g_leaves), list(t_leaves)
    for _ in range(data.draw(st.integers(1, 8))):
        if data.draw(st.booleans()):
            op = data.draw(st.sampled_from(UNARY))
            i = data.draw(st.integers(0, len(g_vals) - 1))
            g_vals.append(getattr(gradlab, op)(g_vals[i]))
            t_vals.append(getattr(torch, op)(t_vals[i]))
        else:
            op = data.draw(st.sampled_from(BINARY))
            i, j = data.draw(st.integers(0, len(g_vals) - 1)), data.draw(st.integers(0, len(g_vals) - 1))
            if op == "div":
                g_vals.append(gradlab.div(g_vals[i], g_vals[j].abs() + 0.5))
                t_vals.append(torch.div(t_vals[i], t_vals[j].abs() + 0.5))
            else:
                g_vals.append(getattr(gradlab, op)(g_vals[i], g_vals[j]))
                t_vals.append(getattr(torch, op)(t_vals[i], t_vals[j]))
    g_out = sum(v.sum() for v in g_vals[3:]) if len(g_vals) > 3 else g_vals[0].sum()
    t_out = sum(v.sum() for v in t_vals[3:]) if len(t_vals) > 3 else t_vals[0].sum()
    assert_close(g_out._data, t_out.detach().numpy(), what="loss")
    g_out.backward()
    t_out.backward()
    for g, t in zip(g_leaves, t_leaves):
        if t.grad is None:
            assert g.grad is None or not np.any(g.grad.numpy())
        else:
            assert_close(g.grad.numpy(), t.grad.numpy(), what="leaf grad")


def test_mlp_gradients_match_pytorch(torch):
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((8, 5))
    w1, b1 = rng.standard_normal((5, 16)) * 0.5, rng.standard_normal(16) * 0.1
    w2, b2 = rng.standard_normal((16, 3)) * 0.5, rng.standard_normal(3) * 0.1
    gp = [gradlab.tensor(a, requires_grad=True) for a in (w1, b1, w2, b2)]
    tp = [torch.tensor(a, requires_grad=True) for a in (w1, b1, w2, b2)]

    def run(lib, p, x):
        h = (x @ p[0] + p[1]).tanh()
        out = h @ p[2] + p[3]
        return ((out - 1.0) ** 2).mean()
    gl = run(gradlab, gp, gradlab.tensor(xs))
    tl = run(torch, tp, torch.tensor(xs))
    gl.backward()
    tl.backward()
    assert_close(gl._data, tl.detach().numpy())
    for a, b in zip(gp, tp):
        assert_close(a.grad.numpy(), b.grad.numpy())
