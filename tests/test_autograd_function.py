"""Custom autograd Functions, backward-rule overrides and anomaly detection."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
from gradlab.autograd import Function, gradcheck, override_vjp, register_vjp
from gradlab.autograd.anomaly import AnomalyError
from gradlab.errors import ArgumentError, GradcheckError, GradError


def T(a, rg=True):
    return gradlab.tensor(np.asarray(a, dtype=np.float64), dtype=gradlab.float64, requires_grad=rg)


# --------------------------------------------------------------- Function
class Exp(Function):
    """Saves its *output* (as torch's docs example)."""

    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class MulAdd(Function):
    """(a * b + c, a - b): two outputs, a non-tensor arg, needs_input_grad."""

    @staticmethod
    def forward(ctx, a, b, c, scale):
        ctx.save_for_backward(a, b)
        ctx.scale = scale
        ctx.needs_in_forward = ctx.needs_input_grad
        return a * b * scale + c, a - b

    @staticmethod
    def backward(ctx, g1, g2):
        a, b = ctx.saved_tensors
        ga = g1 * b * ctx.scale + g2 if ctx.needs_input_grad[0] else None
        gb = g1 * a * ctx.scale - g2 if ctx.needs_input_grad[1] else None
        gc = g1 if ctx.needs_input_grad[2] else None
        return ga, gb, gc, None


def test_function_saving_its_output_matches_torch(torch):
    x = T([0.1, -0.5, 1.2])
    y = Exp.apply(x)
    assert y.grad_fn is not None and type(y.grad_fn) is Exp
    (y * y).sum().backward()
    tx = torch.tensor(x._data, requires_grad=True)
    (tx.exp() ** 2).sum().backward()
    np.testing.assert_allclose(x.grad._data, tx.grad.numpy(), rtol=1e-12)
    assert gradcheck(Exp.apply, (T([0.3, 0.7]),))
    # its backward is made of gradlab ops: second order works too
    assert gradlab.autograd.gradgradcheck(Exp.apply, (T([0.3, 0.7]),))


def test_multiple_outputs_needs_input_grad_and_gradcheck():
    a, b, c = T([1.0, 2.0]), T([3.0, -1.0]), T([0.5, 0.5], rg=False)
    out1, out2 = MulAdd.apply(a, b, c, 2.0)
    assert out1.grad_fn is out2.grad_fn and out2._output_nr == 1
    assert out1.grad_fn.needs_in_forward == (True, True, False, False)
    assert out1.grad_fn.needs_input_grad == (True, True, False, False)
    (out1.sum() + 3 * out2.sum()).backward()
    np.testing.assert_allclose(a.grad._data, b._data * 2 + 3)
    np.testing.assert_allclose(b.grad._data, a._data * 2 - 3)
    assert gradcheck(lambda x, y: MulAdd.apply(x, y, c, 2.0), (T([1.0, 2.0]), T([3.0, -1.0])))


def test_materialize_grads_and_unused_output():
    seen = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append((g1 is None, g2 is None))
            total = g1 * 2 if g1 is not None else 0
            if g2 is not None:
                total = total + g2 * 3
            return total, None

    x = T([1.0, 2.0])
    Two.apply(x, True)[0].sum().backward()
    Two.apply(x, False)[0].sum().backward()
    assert seen == [(False, False), (False, True)]  # unused output: zeros, or None without materializing
    np.testing.assert_allclose(x.grad._data, [4.0, 4.0])


def test_mark_non_differentiable():
    class SortLike(Function):
        @staticmethod
        def forward(ctx, x):
            idx = gradlab.tensor(np.argsort(x._data).astype(np.float64), dtype=gradlab.float64)
            ctx.mark_non_differentiable(idx)
            return x * 1, idx

        @staticmethod
        def backward(ctx, g, g_idx):
            return g

    x = T([3.0, 1.0, 2.0])
    y, idx = SortLike.apply(x)
    assert y.requires_grad and not idx.requires_grad and idx.grad_fn is None
    (y * 2).sum().backward()
    np.testing.assert_allclose(x.grad._data, 2.0)


def test_function_with_jvp_staticmethod_works_in_forward_mode():
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

        @staticmethod
        def jvp(ctx, t):
            return 2 * ctx.args[0] * t

    x = T([1.5, -2.0], rg=False)
    _, t = gradlab.func.jvp(Square.apply, (x,), (T([1.0, 1.0], rg=False),))
    np.testing.assert_allclose(t._data, 2 * x._data)
    with pytest.raises(GradError, match="Exp has no JVP rule"):
        gradlab.func.jvp(Exp.apply, (x,), (x,))


def test_function_returning_a_wrong_shape_is_named():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return g  # should be expanded to x's shape

    x = T([1.0, 2.0])
    with pytest.raises(gradlab.ShapeError, match=r"Bad: backward gave a gradient of shape \(\) for input 0"):
        Bad.apply(x).backward()


# ------------------------------------------------------------ overrides
def test_override_vjp_straight_through_and_restore():
    def straight_through(ctx, g):
        return (g,)

    x = T([0.2, -0.3, 0.9])
    with override_vjp("relu", straight_through):
        gradlab.relu(x).sum().backward()
    np.testing.assert_allclose(x.grad._data, [1.0, 1.0, 1.0])   # relu's true grad would zero the middle
    x.grad = None
    gradlab.relu(x).sum().backward()
    np.testing.assert_allclose(x.grad._data, [1.0, 0.0, 1.0])   # restored
    assert not gradlab.autograd.overrides.overridden()


def test_register_vjp_handle_and_gradcheck_catches_a_wrong_rule():
    h = register_vjp("tanh", lambda ctx, g: (g * 2,))  # deliberately wrong
    try:
        with pytest.raises(GradcheckError, match="analytic"):
            gradcheck(gradlab.tanh, (T([0.1, 0.4]),))
        assert "tanh" in gradlab.autograd.overrides.overridden()
    finally:
        h.remove()
    assert gradcheck(gradlab.tanh, (T([0.1, 0.4]),))
    # stacked overrides: the last one wins, removing it restores the earlier one
    h1 = register_vjp("exp", lambda ctx, g: (g * 0,))
    h2 = register_vjp("exp", lambda ctx, g: (g * 5,))
    x = T([0.0])
    gradlab.exp(x).sum().backward()
    assert x.grad.item() == 5.0
    h2.remove()
    x.grad = None
    gradlab.exp(x).sum().backward()
    assert x.grad.item() == 0.0
    h1.remove()
    x.grad = None
    gradlab.exp(x).sum().backward()
    assert x.grad.item() == 1.0


def test_override_bad_names():
    with pytest.raises(ArgumentError, match="no op named 'nope'"):
        register_vjp("nope", lambda ctx, g: g)
    with pytest.raises(TypeError, match="callable"):
        register_vjp("exp", 3)


# ------------------------------------------------------------- anomaly
def test_detect_anomaly_names_the_op_and_the_users_line():
    x = T([0.0, 1.0])
    with gradlab.autograd.detect_anomaly():
        y = x.sqrt()  # the line to be named
        line = __import__("inspect").currentframe().f_lineno - 1
        assert y.grad_fn.meta["creation"]["line"] == line
        assert y.grad_fn.meta["creation"]["file"] == __file__
        with pytest.raises(AnomalyError) as e:
            y.sum().backward()
    msg = str(e.value)
    assert "backward of sqrt produced Inf" in msg
    assert f"{__file__}:{line}" in msg and "y = x.sqrt()" in msg
    assert not gradlab.autograd.is_anomaly_enabled()
    assert not gradlab.autograd.function.node_observers  # nothing left behind


def test_detect_anomaly_nan_and_meta_is_updated_not_replaced():
    x = T([-1.0, 2.0])

    def tag(node):
        node.meta = {"module": "encoder.layer0"}
    gradlab.autograd.function.node_observers.insert(0, tag)
    try:
        with gradlab.autograd.detect_anomaly():
            z = (x * 0).log() * 0  # log(0) -> -inf; its backward: g / 0 -> nan/inf
            node = z.grad_fn.next_functions[0][0]
            assert node.meta["module"] == "encoder.layer0" and node.meta["creation"]["op"] == "log"
            with pytest.raises(AnomalyError, match="backward of log produced"):
                z.sum().backward()
    finally:
        gradlab.autograd.function.node_observers.remove(tag)


def test_without_anomaly_mode_nan_passes_silently_and_no_meta():
    x = T([0.0])
    y = x.sqrt()
    assert y.grad_fn.meta is None
    y.sum().backward()
    assert np.isinf(x.grad._data).all()
    gradlab.autograd.set_detect_anomaly(True)
    try:
        assert gradlab.autograd.is_anomaly_enabled()
    finally:
        gradlab.autograd.set_detect_anomaly(False)
    assert not gradlab.autograd.is_anomaly_enabled()


def test_once_differentiable_and_save_for_forward():
    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return x * x * x

        @staticmethod
        @gradlab.autograd.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return 3 * x * x * t

    x = T([0.5, -2.0])
    (g,) = gradlab.grad(Cube.apply(x).sum(), x)
    np.testing.assert_allclose(g._data, 3 * x._data ** 2)           # first order is fine
    (g,) = gradlab.grad(Cube.apply(x).sum(), x, create_graph=True)
    with pytest.raises(GradError, match="Cube: its backward is marked @once_differentiable"):
        gradlab.grad(g.sum(), x)
    _, t = gradlab.func.jvp(Cube.apply, (T([0.5, -2.0], rg=False),), (T([1.0, 1.0], rg=False),))
    np.testing.assert_allclose(t._data, [0.75, 12.0])


def test_detect_anomaly_as_decorator_and_check_nan_off():
    @gradlab.autograd.detect_anomaly()
    def step(x):
        assert gradlab.autograd.is_anomaly_enabled()
        (x * 0).log().sum().backward()

    with pytest.raises(AnomalyError, match="log"):
        step(T([1.0]))
    assert not gradlab.autograd.is_anomaly_enabled()
    x = T([1.0])
    with gradlab.autograd.detect_anomaly(check_nan=False):
        (x * 0).log().sum().backward()   # records creation sites but does not stop
    assert not np.isfinite(x.grad._data).all()


def test_an_op_class_with_an_init_is_refused_when_it_is_defined():
    """``Op.apply`` makes each node as ``cls()``; an ``__init__`` taking arguments would fail on every
    call, so defining one is refused at once, with the reason."""
    from gradlab.autograd.function import Op

    with pytest.raises(TypeError, match="an Op takes no __init__"):
        class _WithInit(Op):  # noqa: F841 - defining it is the test
            def __init__(self, scale):
                self.scale = scale

    class Scale(Op):  # without one, the op runs and records its node as usual
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(None, k)
            return x._data * k

        def vjp(self, g):
            return g * self.saved_tensors[1], None

    x = gradlab.tensor([1.0, 2.0], requires_grad=True)
    Scale.apply(x, 3.0).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_a_staticmethod_array_twin_receives_the_node_in_both_engine_loops():
    """``vjp_arrays`` written PyTorch-style (``@staticmethod``, ``ctx`` first) gets the node, whether the
    fast loop runs it (nothing watching) or the general one (a hook on the leaf)."""
    from gradlab.autograd.function import Op

    class Triple(Op):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x._data * 3.0

        def vjp(self, g):
            return (g * 3.0,)

        @staticmethod
        def vjp_arrays(ctx, g):
            assert isinstance(ctx, Triple) and len(ctx.saved_arrays) == 1
            return (g * 3.0,)

    for hooked in (False, True):
        x = gradlab.tensor([1.0, 2.0], requires_grad=True)
        y = Triple.apply(x)
        if hooked:
            y.register_hook(lambda g: g)
        y.sum().backward()
        assert x.grad.tolist() == [3.0, 3.0]
