"""A view op that changes nothing still returns a new view tensor, as PyTorch's do.

``x.view(x.shape)``, ``x.reshape(x.shape)``, ``x.t()`` of a vector, ``x.transpose(0, 0)``,
``x.expand(x.shape)``... return a new tensor with its own ``grad_fn`` that shares memory, the version
counter and the base with ``x`` (DESIGN: views). Returning ``x`` itself made
``x.view(3).requires_grad_(False)`` freeze ``x`` silently.
"""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
from gradlab.errors import GradError

SAME = {  # each call changes nothing about a (2, 3) tensor
    "view(shape)": lambda x: x.view(x.shape), "view(2, 3)": lambda x: x.view(2, 3),
    "reshape(shape)": lambda x: x.reshape(x.shape), "reshape(-1, 3)": lambda x: x.reshape(-1, 3),
    "view_as": lambda x: x.view_as(x), "reshape_as": lambda x: x.reshape_as(x),
    "permute(0, 1)": lambda x: x.permute(0, 1), "transpose(0, 0)": lambda x: x.transpose(0, 0),
    "swapaxes(1, 1)": lambda x: x.swapaxes(1, 1), "movedim(0, 0)": lambda x: x.movedim(0, 0),
    "expand(2, 3)": lambda x: x.expand(2, 3), "expand(-1, -1)": lambda x: x.expand(-1, -1),
    "expand_as": lambda x: x.expand_as(x), "broadcast_to": lambda x: x.broadcast_to((2, 3)),
    "squeeze()": lambda x: x.squeeze(), "squeeze(0)": lambda x: x.squeeze(0),
    "unflatten(1, (3,))": lambda x: x.unflatten(1, (3,)),
    "x[:]": lambda x: x[:], "x[...]": lambda x: x[...], "narrow(0, 0, 2)": lambda x: x.narrow(0, 0, 2),
}
SAME_1D = {"t()": lambda v: v.t(), "T": lambda v: v.T, "ravel()": lambda v: v.ravel(), "view(-1)": lambda v: v.view(-1)}


def _cases():
    for name, f in SAME.items():
        yield name, (2, 3), f
    for name, f in SAME_1D.items():
        yield name, (3,), f


@pytest.mark.parametrize("name,shape,f", list(_cases()), ids=[c[0] for c in _cases()])
def test_a_view_that_changes_nothing_is_a_new_view(name, shape, f):
    base = gradlab.arange(float(np.prod(shape))).reshape(shape)
    x = base.detach().requires_grad_()
    v = f(x)
    assert v is not x, f"{name} returned its input itself"
    assert v.shape == x.shape and v.grad_fn is not None and not v.is_leaf
    assert v._version is x._version and v._view_base is x
    v.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(shape))
    # memory is shared: an in-place change through a view of a plain tensor shows in it, once counted
    y = base.detach().clone()
    w = f(y)
    before = y._version.value
    w.mul_(2)
    assert y._version.value == before + 1 and w._version is y._version
    np.testing.assert_array_equal(y.numpy(), 2 * base.numpy())


def test_requires_grad_false_on_a_view_is_refused_and_x_keeps_its_flag():
    """The issue's repro: ``x.view(3).requires_grad_(False)`` froze x; PyTorch refuses (a non-leaf)."""
    x = gradlab.ones(3, requires_grad=True)
    with pytest.raises(GradError, match="only leaves"):
        x.view(3).requires_grad_(False)
    with pytest.raises(GradError, match="only leaves"):
        x.reshape(x.shape).requires_grad_(False)
    assert x.requires_grad and x.is_leaf


def test_flatten_of_nothing_to_merge_is_the_input_as_pytorch():
    """(PyTorch's flatten returns its input when start_dim == end_dim; so does gradlab's.)"""
    v = gradlab.ones(3)
    assert v.flatten() is v and gradlab.ones(2, 3).flatten(1, 1).shape == (2, 3)


def test_identity_matches_pytorch(torch):
    """Which calls hand back the input itself, compared with PyTorch call by call."""
    for name, shape, f in list(_cases()) + [("flatten 1-d", (3,), lambda v: v.flatten()),
                                           ("contiguous", (2, 3), lambda x: x.contiguous()),
                                           ("to(dtype)", (2, 3), lambda x: x.to(x.dtype))]:
        got = []
        for mod in (torch, gradlab):
            x = mod.ones(*shape, requires_grad=True) * 1
            got.append(f(x) is x)
        assert got[0] == got[1], f"{name}: PyTorch returns the input itself: {got[0]}, gradlab: {got[1]}"
