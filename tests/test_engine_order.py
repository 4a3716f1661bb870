"""The order backward runs nodes in, against PyTorch's engine, on generated graphs.

The engine runs nodes from the most recently created down and a leaf's
AccumulateGrad right after its last user. Hooks make that order visible: a
tensor hook fires when its node's gradient is complete, a post-accumulate hook
when a leaf's ``.grad`` is final. The same program in both libraries must fire
the same hooks in the same order and give the same gradients.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gradlab

UNARY = ["tanh", "exp", "sigmoid"]


def _program(lib, draws, leaves_np, log):
    """Build a random DAG over a few leaves; every node's gradient is hooked."""
    leaves = [lib.tensor(a, requires_grad=True) for a in leaves_np]
    for i, t in enumerate(leaves):
        t.register_post_accumulate_grad_hook(lambda p, i=i: log.append(f"leaf{i}"))
    pool = list(leaves)
    for k, (kind, i, j, u) in enumerate(draws):
        a, b = pool[i % len(pool)], pool[j % len(pool)]
        if kind == 0:
            t = a * b
        elif kind == 1:
            t = a + b
        else:
            t = getattr(a, UNARY[u])()
        t.register_hook(lambda g, k=k: log.append(f"n{k}"))
        pool.append(t)
    tail = pool[len(leaves):] or pool
    loss = sum(t.sum() for t in tail[-3:])
    loss.backward()
    return [t.grad for t in leaves]


@pytest.mark.oracle
@settings(max_examples=40, deadline=None)
@given(n_leaves=st.integers(1, 3),
       draws=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 50), st.integers(0, 50), st.integers(0, 2)),
                      min_size=1, max_size=8))
def test_hook_order_and_grads_match_pytorch(torch, n_leaves, draws):
    rng = np.random.default_rng(len(draws))
    leaves_np = [rng.uniform(-1, 1, (3,)) for _ in range(n_leaves)]
    ours, theirs = [], []
    g = _program(gradlab, draws, leaves_np, ours)
    h = _program(torch, draws, leaves_np, theirs)
    assert ours == theirs
    for a, b in zip(g, h):
        if b is None:
            assert a is None
        else:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


def test_a_grad_fn_out_of_creation_order_is_an_error_not_a_lost_gradient():
    """The schedule trusts that users are created after their inputs; a graph that breaks it
    must fail loudly rather than drop a gradient."""
    x = gradlab.ones(2, requires_grad=True)
    a = x * 2
    b = x * 3
    b.grad_fn.seq, a.grad_fn.seq = a.grad_fn.seq, b.grad_fn.seq  # pretend b's node is older
    c = a * b
    c.grad_fn.seq = -1  # and c's node older than both of its inputs
    with pytest.raises(gradlab.GradError, match="after it ran"):
        c.sum().backward()
