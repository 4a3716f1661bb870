"""An in-place change through a view is a change of its base, and the base's graph follows it (PyTorch's
``CopySlices``; ``gradlab.autograd.inplace.write_through_view``).

``v = h[0]; v.mul_(w)`` doubles ``h``'s first row too: the gradient of anything computed from ``h``
afterwards must flow through the ``mul_`` to ``w`` and to the old ``h``. Every case here is compared
with PyTorch in float64 (values and gradients) and gradchecked; what PyTorch refuses is refused, with a
RuntimeError that names the method called.
"""
import numpy as np
import pytest

import gradlab
from gradlab.autograd import gradcheck, gradgradcheck
from gradlab.errors import GradError

VIEWS = {
    "x[0]": lambda x: x[0], "x[:, 1:]": lambda x: x[:, 1:], "x[:, ::2]": lambda x: x[:, ::2],
    "x.t()": lambda x: x.t(), "x.view(6)": lambda x: x.view(6), "x.diagonal()": lambda x: x.diagonal(),
    "x.unsqueeze(0)": lambda x: x.unsqueeze(0), "x.t()[1:]": lambda x: x.t()[1:],
    "x.expand(2, 3)": lambda x: x.expand(2, 3), "x.diagonal(1)": lambda x: x.diagonal(1),
}
CHANGES = {
    "mul_(w)": lambda v, w: v.mul_(w), "add_(1)": lambda v, w: v.add_(1.0), "zero_()": lambda v, w: v.zero_(),
    "v[0] = w": lambda v, w: v.__setitem__(0, w), "exp_()": lambda v, w: v.exp_(),
    "copy_(2w)": lambda v, w: v.copy_((w * 2).expand(v.shape)), "clamp_": lambda v, w: v.clamp_(2.5, 6.0),
}
A = np.arange(6.0).reshape(2, 3) + 1
C = np.arange(6.0).reshape(2, 3) * 0.3 + 1


def _program(lib, view, change, base="computed"):
    """Change a view of ``x`` in place, then use both ``x`` and the view; returns (x, the loss, leaves)."""
    a = lib.tensor(A, dtype=lib.float64, requires_grad=True)
    w = lib.tensor(1.5, dtype=lib.float64, requires_grad=True)
    x = a * 2 if base == "computed" else lib.tensor(A, dtype=lib.float64)
    v = view(x)
    change(v, w)
    loss = (x * lib.tensor(C, dtype=lib.float64)).sum() + (v * v).sum()
    return x, loss, a, w


@pytest.mark.parametrize("base", ["computed", "plain"])
@pytest.mark.parametrize("change", list(CHANGES))
@pytest.mark.parametrize("view", list(VIEWS))
def test_values_and_gradients_match_pytorch(view, change, base, torch):
    got, want = {}, {}
    for lib, out in ((gradlab, got), (torch, want)):
        x, loss, a, w = _program(lib, VIEWS[view], CHANGES[change], base)
        out["requires_grad"] = x.requires_grad
        if loss.requires_grad:
            loss.backward()
        out["x"] = x.detach().numpy().copy()
        out["loss"] = float(loss)
        out["a.grad"] = None if a.grad is None else a.grad.numpy().copy()
        out["w.grad"] = None if w.grad is None else float(w.grad)
    assert got["requires_grad"] == want["requires_grad"]
    np.testing.assert_allclose(got["x"], want["x"], rtol=1e-12)
    assert got["loss"] == pytest.approx(want["loss"], rel=1e-12)
    for k in ("a.grad", "w.grad"):
        assert (got[k] is None) == (want[k] is None), k
        if got[k] is not None:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-12, atol=1e-12, err_msg=k)


@pytest.mark.parametrize("view", ["x[0]", "x.t()[1:]", "x.diagonal()", "x.view(6)"])
@pytest.mark.parametrize("change", ["mul_(w)", "v[0] = w", "exp_()", "copy_(2w)"])
def test_gradcheck_and_gradgradcheck(view, change):
    def f(a, w):
        x = a * 2
        v = VIEWS[view](x)
        CHANGES[change](v, w)
        return x * x + 0, (v * v).sum()  # (x * x: a nonlinear use, so second derivatives are not zero)
    a = gradlab.tensor(A / 3, dtype=gradlab.float64, requires_grad=True)
    w = gradlab.tensor(0.7, dtype=gradlab.float64, requires_grad=True)
    assert gradcheck(f, (a, w))
    assert gradgradcheck(f, (a, w))


def test_the_base_records_the_change_and_the_view_follows_it():
    a = gradlab.ones(2, 3, requires_grad=True)
    x = a * 2
    v = x[0]
    v.mul_(3)
    assert x.grad_fn.next_functions[0][0].name == "setitem"  # reshape(setitem(old x flat, positions, 3 v))
    assert x.tolist() == [[6, 6, 6], [2, 2, 2]]
    assert x._version is v._version and x._version.value == 1
    v.sum().backward()  # the view's graph now goes through the base's new node
    assert a.grad.tolist() == [[6, 6, 6], [0, 0, 0]]


def test_sibling_views_and_views_of_views_follow_the_base(torch):
    def run(lib):
        a = lib.tensor(A, dtype=lib.float64, requires_grad=True)
        x = a * 1
        col, row = x[:, 1], x.t()[2]  # row: a view of a view (x.t() is the middle one)
        x[0].mul_(10)
        row.add_(col)  # col and row were both made before the change; row also overlaps x[0]
        (x.sum() + (col * row).sum()).backward()
        return x.detach().numpy().copy(), a.grad.numpy().copy()
    for g, t in zip(run(gradlab), run(torch)):
        np.testing.assert_allclose(g, t)


def test_retain_grad_moves_with_the_view_and_the_base(torch):
    def run(lib):
        a = lib.tensor(A, dtype=lib.float64, requires_grad=True)
        x = a * 2
        v = x[1]
        x.retain_grad()
        v.retain_grad()
        v.mul_(3)
        ((x * lib.tensor(C, dtype=lib.float64)).sum() + (v * v).sum()).backward()  # v.grad: its own use only
        return x.grad.numpy().copy(), v.grad.numpy().copy(), a.grad.numpy().copy()
    for g, t in zip(run(gradlab), run(torch)):
        np.testing.assert_allclose(g, t)


def test_a_saved_base_changed_through_a_view_is_caught_at_backward(torch):
    for lib in (gradlab, torch):
        a = lib.ones(2, 3, requires_grad=True)
        x = a * 2
        y = x.exp()  # saves its output, not x: the change of x below is fine for it
        z = x * x  # saves x
        x[0].mul_(3)
        y.sum().backward(retain_graph=True)
        with pytest.raises(RuntimeError, match="modified by an inplace operation|in-place change"):
            z.sum().backward()


def test_a_copy_is_not_a_view():
    """``x.t().reshape(6)`` copies (as PyTorch's): changing it leaves ``x`` and its version alone."""
    x = gradlab.ones(2, 3, requires_grad=True) * 2
    y = x.t().reshape(6)
    y.add_(1)
    assert x.tolist() == [[2, 2, 2], [2, 2, 2]] and x._version.value == 0
    assert y._view_base is None


REFUSED = {
    "a view of a leaf that requires grad": (lambda lib: lib.ones(2, 3, requires_grad=True)[0].add_(1), "a leaf"),
    "a view made under no_grad of a computed tensor": (
        lambda lib: _no_grad_view(lib, lib.ones(2, 3, requires_grad=True) * 2).add_(1), "no_grad"),
    "a view made under no_grad, a change that needs grad": (
        lambda lib: _no_grad_view(lib, lib.ones(2, 3)).add_(lib.ones(3, requires_grad=True)), "no_grad"),
    "a view made under no_grad of a leaf": (
        lambda lib: _no_grad_view(lib, lib.ones(2, 3, requires_grad=True)).mul_(2), "no_grad"),
    "a view of a view made under no_grad": (
        lambda lib: _no_grad_view(lib, lib.ones(2, 3, requires_grad=True) * 2)[1:].zero_(), "no_grad"),
    "an unbind view": (lambda lib: (lib.ones(2, 3, requires_grad=True) * 2).unbind(0)[0].add_(1), "one of the views unbind"),
    "a split view": (lambda lib: (lib.ones(2, 3, requires_grad=True) * 2).split(1)[0].mul_(2), "one of the views split"),
    "a chunk view, a change that needs grad": (
        lambda lib: lib.ones(2, 3).chunk(2)[0].add_(lib.ones(3, requires_grad=True)), "one of the views"),
    "an expand of a size-1 dim": (lambda lib: (lib.ones(3, requires_grad=True) * 2).expand(2, 3).add_(1), "memory"),
}


def _no_grad_view(lib, x):
    with lib.no_grad():
        return x[0]


@pytest.mark.parametrize("case", list(REFUSED))
def test_what_pytorch_refuses_is_refused(case, torch):
    call, words = REFUSED[case]
    with pytest.raises(RuntimeError):
        call(torch)
    with pytest.raises(GradError, match=words) as e:
        call(gradlab)
    assert isinstance(e.value, RuntimeError)
    assert e.value.args[0].split(":")[0] in ("add_", "mul_", "zero_")  # names the method called


def test_a_view_made_under_no_grad_is_fine_without_a_graph():
    """Changing a no_grad view inside no_grad, or with nothing that requires grad, is allowed (as in PyTorch)."""
    x = gradlab.ones(2, 3, requires_grad=True) * 2
    with gradlab.no_grad():
        v = x[0]
        v.add_(1)
    assert x.tolist()[0] == [3, 3, 3]
    p = gradlab.zeros(2, 3)
    _no_grad_view(gradlab, p).add_(gradlab.ones(3))
    assert p.tolist() == [[1, 1, 1], [0, 0, 0]] and not p.requires_grad


def test_a_no_grad_view_whose_base_changed_in_the_graph_is_refused_when_changed(torch):
    for lib in (gradlab, torch):
        x = lib.ones(2, 3, requires_grad=True) * 2
        with lib.no_grad():
            v = x[0]
        x.mul_(2)
        with pytest.raises(RuntimeError, match="no_grad"):
            v.add_(1)


PLAIN_VIEWS = {"b[:2]": lambda b: b[:2], "b.view(2, 2)[1]": lambda b: b.view(2, 2)[1],
               "b[1:][::2]": lambda b: b[1:][::2], "b.expand(3, 4)": lambda b: b.expand(3, 4)}
JOINS = {"b.copy_(2w)": lambda lib, b, w: b.copy_(w * 2), "b.add_(w)": lambda lib, b, w: b.add_(w),
         "b[2:] = w[2:] (another view)": lambda lib, b, w: b[2:].copy_(w[2:]),
         "b.mul_(0).add_(w)": lambda lib, b, w: b.mul_(0).add_(w)}


@pytest.mark.parametrize("join", JOINS)
@pytest.mark.parametrize("view", PLAIN_VIEWS)
def test_a_view_of_a_plain_tensor_that_joins_a_graph_requires_grad(view, join, torch):
    """``b = zeros(4); v = b[:2]; b.copy_(2 * w)``: ``v`` shows values computed from ``w`` now, so it requires
    grad and ``w`` gets its gradient through it, as in PyTorch (before, ``v`` stayed a constant: a silently
    missing gradient)."""
    got = {}
    for lib in (gradlab, torch):
        w = lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([0.5, -1.0, 2.0, 3.0], dtype=lib.float64)
        v = PLAIN_VIEWS[view](b)
        JOINS[join](lib, b, w)
        loss = (v * v * lib.arange(1, v.numel() + 1, dtype=lib.float64).reshape(v.shape)).sum()
        loss.backward()
        got[lib] = (v.requires_grad, loss.item(), w.grad.tolist())
    assert got[gradlab][0] and got[torch][0]
    assert got[gradlab][1] == pytest.approx(got[torch][1], rel=1e-12)
    np.testing.assert_allclose(got[gradlab][2], got[torch][2], rtol=1e-12)


def test_a_view_of_a_plain_tensor_stays_plain_while_no_change_involves_a_graph(torch):
    for lib in (gradlab, torch):
        b = lib.zeros(4)
        v = b[:2]
        b.add_(1.0)                                # changes with nothing that requires grad
        b[3:].mul_(lib.tensor([2.0]))
        with lib.no_grad():                        # ... or made under no_grad
            b.add_(lib.ones(4, requires_grad=True))
        assert not v.requires_grad and not b.requires_grad and v.grad_fn is None
        assert v.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("base", ["plain", "computed"])
def test_a_no_grad_view_whose_base_changes_in_a_graph_is_refused_when_used(base, torch):
    """The view was made under no_grad, its base then changed in place by a recorded op: using the view
    where gradients are recorded is ambiguous, and refused, as PyTorch refuses it; under no_grad it is
    fine."""
    for lib in (gradlab, torch):
        w = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = lib.zeros(3) if base == "plain" else lib.ones(3, requires_grad=True) * 2
        with lib.no_grad():
            v = b[:2]
        b.copy_(w * 2) if base == "plain" else b.mul_(w)
        with lib.no_grad():
            assert (v * 3).tolist() == ([6.0, 12.0] if base == "plain" else [6.0, 12.0])
        with pytest.raises(RuntimeError, match="no_grad"):
            (v * 3).sum().backward()


FORWARD = {"mul_": lambda y, w: y[0].mul_(3), "exp_": lambda y, w: y[1, 1:].exp_(), "zero_": lambda y, w: y[:, 0].zero_(),
           "fill_": lambda y, w: y[1].fill_(2.0), "copy_": lambda y, w: y.t()[1].copy_(w),
           "setitem": lambda y, w: y[0].__setitem__(1, 7.0), "add_": lambda y, w: y.diagonal().add_(w)}


@pytest.mark.parametrize("dual_w", [False, True])
@pytest.mark.parametrize("change", list(FORWARD))
def test_forward_mode_tangents_follow_a_change_through_a_view(change, dual_w, torch):
    """The base's tangent takes the view's new tangent at the view's positions (PyTorch's views share it)."""
    def run(lib, fwad):
        with fwad.dual_level():
            x = fwad.make_dual(lib.tensor(A, dtype=lib.float64), lib.tensor(C, dtype=lib.float64))
            w = lib.tensor([5.0, 6.0], dtype=lib.float64)
            if dual_w:
                w = fwad.make_dual(w, lib.tensor([0.25, -1.0], dtype=lib.float64))
            y = x * 2
            FORWARD[change](y, w)
            primal, tangent = fwad.unpack_dual(y)
            return primal.numpy().copy(), tangent.numpy().copy()
    ours, theirs = run(gradlab, gradlab.autograd.forward_ad), run(torch, torch.autograd.forward_ad)
    for g, t in zip(ours, theirs):
        np.testing.assert_allclose(g, t, rtol=1e-12)


def test_copy_passes_the_source_tangent_on(torch):
    for lib in (gradlab, torch):
        fwad = lib.autograd.forward_ad
        with fwad.dual_level():
            x = lib.zeros(3, dtype=lib.float64)
            x.copy_(fwad.make_dual(lib.ones(3, dtype=lib.float64), lib.full((3,), 2.0, dtype=lib.float64)))
            assert fwad.unpack_dual(x).tangent.tolist() == [2.0, 2.0, 2.0]
