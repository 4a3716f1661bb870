"""The engine's two loops (``_run_plain`` for the everyday pass, ``_run_node`` for every case) agree.

A backward observer that does nothing forces the general loop; the same program
run without it takes the fast one. Gradients must match bit for bit, on
generated programs that mix broadcasting, dtypes, integer inputs, multi-output
ops, leaves used many times, hooks and retain_grad on some nodes.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gradlab
from gradlab.autograd import engine

from .random_programs import build, steps_strategy

class _Quiet:
    """Watches backward and does nothing: its presence sends every node through _run_node."""

    def node_start(self, node, grads):
        pass

    def node_end(self, node, grads_in, grads_out):
        pass


def _program(steps, hooked, dtype):
    (x, w), pool, seen = build(steps, hooked, dtype)
    loss = sum(t.sum() for t in pool[2:])
    loss.backward()
    return [x.grad, w.grad] + [t.grad for t in seen]


@settings(max_examples=60, deadline=None)
@given(steps=steps_strategy(12), hooked=st.sets(st.integers(0, 11), max_size=3),
       dtype=st.sampled_from([gradlab.float32, gradlab.float64]))
def test_the_fast_loop_and_the_general_loop_give_the_same_gradients(steps, hooked, dtype):
    fast = _program(steps, hooked, dtype)
    engine.backward_observers.append(_Quiet())
    try:
        general = _program(steps, hooked, dtype)
    finally:
        engine.backward_observers.clear()
    assert len(fast) == len(general)
    for f, g in zip(fast, general):
        assert (f is None) == (g is None)
        if f is not None:
            assert f.dtype == g.dtype and f.shape == g.shape
            np.testing.assert_array_equal(f.numpy(), g.numpy())


def test_the_fast_loop_is_the_one_taken_when_nothing_watches(monkeypatch):
    calls = []
    real = engine._run_node
    monkeypatch.setattr(engine, "_run_node", lambda *a: (calls.append(a[0]), real(*a)))
    x = gradlab.randn(3, requires_grad=True)
    (x * 2.0 + 1.0).tanh().sum().backward()
    assert calls == []  # every node ran inline
    y = x * 2.0
    y.register_hook(lambda g: g)
    (y + 1.0).sum().backward()
    assert [n.name for n in calls] == ["mul"]  # only the hooked node took the general path


def test_a_freed_graph_still_raises_in_the_fast_loop():
    x = gradlab.randn(3, requires_grad=True)
    y = (x * 2.0).tanh().sum()
    y.backward()
    with pytest.raises(gradlab.errors.GradError, match="already freed"):
        y.backward()
