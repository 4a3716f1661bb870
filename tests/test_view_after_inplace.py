"""A view made before its base changes in place follows the base's new graph (as in PyTorch).

``v = h[0:2]; h.mul_(2)``: ``v``'s values are doubled with ``h``'s memory, so its
gradient must go through the ``mul_`` too. gradlab used to keep the view's old
graph and give a silently wrong gradient.
"""
import numpy as np
from hypothesis import given, settings, strategies as st

import gradlab

VIEWS = [
    ("slice", lambda h: h[1:3]),
    ("step", lambda h: h[:, ::2]),
    ("negative", lambda h: h[-1]),
    ("transpose", lambda h: h.T),
    ("reshape", lambda h: h.reshape(-1)),
    ("view of view", lambda h: h.T[1:, :2]),
    ("expand", lambda h: h[:1].expand(3, 4)),
    ("unsqueeze", lambda h: h.unsqueeze(0)),
]
INPLACE = [
    ("mul_", lambda h, w: h.mul_(2.0)),
    ("add_ tensor", lambda h, w: h.add_(w)),
    ("setitem", lambda h, w: h.__setitem__((slice(0, 2), slice(1, 3)), w[:2, :2] * 3.0)),
    ("exp_", lambda h, w: h.exp_()),
]


def _run(lib, view, inplace, extra_use):
    x = lib.tensor(np.arange(1.0, 13.0).reshape(3, 4) / 7.0, dtype=lib.float64, requires_grad=True)
    w = lib.tensor(np.linspace(-1.0, 1.0, 12).reshape(3, 4), dtype=lib.float64, requires_grad=True)
    h = x * 1.5
    v = view(h)
    inplace(h, w)
    out = (v * v).sum()
    if extra_use:
        out = out + (h * w).sum()
    out.backward()
    return x.grad.numpy(), w.grad.numpy() if w.grad is not None else None


@settings(max_examples=40, deadline=None)
@given(view=st.sampled_from(VIEWS), inplace=st.sampled_from(INPLACE), extra_use=st.booleans())
def test_views_follow_an_in_place_change_of_their_base_like_pytorch(torch, view, inplace, extra_use):
    gx, gw = _run(gradlab, view[1], inplace[1], extra_use)
    tx, tw = _run(torch, view[1], inplace[1], extra_use)
    np.testing.assert_allclose(gx, tx, rtol=1e-12, atol=1e-12, err_msg=f"{view[0]} after {inplace[0]}")
    if tw is None:
        assert gw is None or not gw.any()
    else:
        np.testing.assert_allclose(gw if gw is not None else 0 * tw, tw, rtol=1e-12, atol=1e-12)


def test_the_example_that_was_silently_wrong():
    x = gradlab.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    v = h[0:1]
    h.mul_(2)
    (v * v).sum().backward()
    assert x.grad.tolist() == [8.0, 0.0]  # d/dx0 of (2 x0)^2 at x0 = 1


def test_a_view_of_a_leaf_updated_under_no_grad_keeps_its_node():
    p = gradlab.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    pt = p.T
    node = pt.grad_fn
    with gradlab.no_grad():
        p.mul_(0.5)  # an optimizer step: the leaf's graph is the same
    (pt * gradlab.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert pt.grad_fn is node
    assert p.grad.tolist() == [[1.0, 3.0], [2.0, 4.0]]


def test_a_stale_view_as_the_root_of_backward_is_rebuilt_too():
    x = gradlab.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 1
    v = h[1:]
    h.mul_(3)
    v.backward(gradlab.ones(2))
    assert x.grad.tolist() == [0.0, 3.0, 3.0]


def test_a_stale_view_is_rebuilt_even_when_backward_runs_under_no_grad():
    x = gradlab.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 1
    v = h[:2]
    h.mul_(2)
    with gradlab.no_grad():
        v.backward(gradlab.ones(2))
    assert x.grad.tolist() == [2.0, 2.0, 0.0]
