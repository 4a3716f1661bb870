"""The compiled loops (``gradlab/autograd/csrc/``) and their Python definitions agree.

``_accel.compiled()`` and ``_accel.pure_python()`` switch between the two in one
process. Generated programs (broadcasting, two dtypes, integer inputs, leaves
used many times, multi-output ops, hooks, retain_grad, saved outputs changed in
place) run under each; the gradients must be equal bit for bit, the graphs must
have the same nodes in the same backward order with the same saved tensors, and
the same mistakes must raise the same errors. CI sets GRADLAB_REQUIRE_SPEEDUPS=1,
so there the extension must be built (the comparisons cannot quietly skip), and
`make test` also runs the whole suite once more under GRADLAB_PURE_PYTHON=1.
"""
import gc
import os
import sys
import weakref

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gradlab
from gradlab.autograd import _accel, engine
from gradlab.autograd.function import AccumulateGrad

from .random_programs import build, steps_strategy

built = pytest.mark.skipif(_accel._speedups is None, reason="the C extension is not built (no C compiler at install)")


def test_the_extension_is_built_and_active_where_required():
    pure = os.environ.get("GRADLAB_PURE_PYTHON", "").strip() not in ("", "0")
    if os.environ.get("GRADLAB_REQUIRE_SPEEDUPS"):
        assert _accel._speedups is not None, "GRADLAB_REQUIRE_SPEEDUPS is set but gradlab/autograd/csrc was not built"
    assert _accel.ACTIVE == (_accel._speedups is not None and not pure)
    with _accel.pure_python():
        assert not _accel.ACTIVE
        assert gradlab.autograd.function.Op.__dict__["apply"] is _accel.PYTHON["apply"]
    assert _accel.ACTIVE == (_accel._speedups is not None and not pure)


def _program(steps, special, dtype):
    """Build and differentiate a random program; return everything that must not differ."""
    (x, w), pool, watched = build(steps, special, dtype)
    loss = sum(t.sum() for t in pool[2:])
    order = engine._schedule([loss.grad_fn])
    graph = [(n.name, [e is None for e in n.next_functions], [s.shape for s in n.saved]) for n in order]
    loss.backward()
    grads = [x.grad, w.grad] + [t.grad for t in watched]
    return graph, [None if g is None else (g.dtype, g.shape, g.numpy().tobytes()) for g in grads]


@built
@settings(max_examples=80, deadline=None)
@given(steps=steps_strategy(14), special=st.sets(st.integers(0, 13), max_size=3),
       dtype=st.sampled_from([gradlab.float32, gradlab.float64]))
def test_compiled_and_python_loops_build_the_same_graph_and_gradients(steps, special, dtype):
    with _accel.compiled():
        fast = _program(steps, special, dtype)
    with _accel.pure_python():
        slow = _program(steps, special, dtype)
    assert fast == slow


def _dag(edges_spec, roots_spec):
    """A graph of user-visible tensors from a spec: several roots, leaves used many times."""
    gradlab.manual_seed(1)
    leaves = [gradlab.randn(2, requires_grad=True) for _ in range(3)]
    pool = list(leaves)
    for p, q in edges_spec:
        pool.append(pool[p % len(pool)] * pool[q % len(pool)] + 1.0)
    return [pool[r % len(pool)] for r in roots_spec]


@built
@settings(max_examples=60, deadline=None)
@given(edges_spec=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), max_size=12),
       roots_spec=st.lists(st.integers(0, 30), min_size=1, max_size=4))
def test_the_compiled_schedule_is_the_python_schedule(edges_spec, roots_spec):
    roots = _dag(edges_spec, roots_spec)
    starts = [r.grad_fn if r.grad_fn is not None else gradlab.autograd.function._edge(r)[0] for r in roots]
    compiled = _accel._speedups.schedule(list(starts))
    python = _accel.PYTHON["schedule"](list(starts))
    assert [id(n) for n in compiled] == [id(n) for n in python]
    assert any(type(n) is AccumulateGrad for n in python)


def _errors(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the point is to compare whatever is raised
        return type(e), str(e)
    return None


def _backward_twice():
    x = gradlab.randn(3, requires_grad=True)
    y = (x * 2.0).tanh().sum()
    y.backward()
    y.backward()


def _changed_in_place():
    x = gradlab.randn(3, requires_grad=True)
    y = x.exp()
    y.mul_(2)  # exp saved its output: the gradient would now be wrong
    y.sum().backward()


def _bad_broadcast():
    gradlab.randn(3, requires_grad=True) * gradlab.randn(4)


def _bad_custom_function():
    class Twice(gradlab.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g[:1]  # the wrong shape

    Twice.apply(gradlab.randn(3, requires_grad=True)).sum().backward()


@built
@pytest.mark.parametrize("program", [_backward_twice, _changed_in_place, _bad_broadcast, _bad_custom_function])
def test_the_same_mistakes_raise_the_same_errors(program):
    with _accel.compiled():
        fast = _errors(program)
    with _accel.pure_python():
        slow = _errors(program)
    assert fast is not None and fast == slow


@built
def test_saved_tensor_hooks_and_observers_take_the_python_paths_with_the_same_results():
    def run():
        x = gradlab.randn(5, requires_grad=True)
        packed = []
        with gradlab.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
            y = (x.tanh() * x).sum()
        seen = []
        gradlab.autograd.function.node_observers.append(lambda n: seen.append(n.name))
        try:
            z = x.sigmoid().sum()
        finally:
            gradlab.autograd.function.node_observers.pop()
        (y + z).backward()
        return len(packed), seen, x.grad.numpy().tobytes()

    gradlab.manual_seed(3)
    with _accel.compiled():
        fast = run()
    gradlab.manual_seed(3)
    with _accel.pure_python():
        slow = run()
    assert fast == slow and fast[0] == 3 and fast[1] == ["sigmoid", "sum"]


@built
def test_the_compiled_loops_leak_nothing():
    """Build and free the same graph many times: no object may be left behind (a missed
    Py_DECREF in the C would keep nodes, tensors or arrays alive)."""
    def step():
        x = gradlab.randn(4, 4, requires_grad=True)
        w = gradlab.randn(4, requires_grad=True)
        y = x
        for _ in range(20):
            y = (y * 1.01 + w).tanh() - 0.05
        y = y.exp().sum() + (x * x).mean()
        y.backward()
        with gradlab.no_grad():
            (x * 2.0).sum()
        node = weakref.ref(y.grad_fn)
        return node

    with _accel.compiled():
        node = step()
        assert node() is None  # the graph was freed
        for _ in range(300):  # (warm up: caches and free lists fill once)
            step()
        gc.collect()
        before = sys.getallocatedblocks()
        for _ in range(600):
            step()
        gc.collect()
        after = sys.getallocatedblocks()
    # a missed decref leaks at least one block per step: 600 or more
    assert after - before < 150, f"{after - before} blocks more after 600 steps"


@built
def test_a_gradient_that_differs_in_dtype_is_cast_as_in_python():
    with _accel.compiled():
        x = gradlab.randn(3, dtype=gradlab.float64, requires_grad=True)
        y = (x.float() * 2.0).sum()
        y.backward()
    assert x.grad.dtype == gradlab.float64
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 2.0))
