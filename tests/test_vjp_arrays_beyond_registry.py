"""Array twins (``vjp_arrays``) that the registry sweep in test_vjp_arrays.py does not reach.

Some ops only appear inside a backward pass (the scatter that is indexing's
gradient), on a second device, or are not
differentiable as registry entries; and matmul's twin skips the product for
an input that needs no gradient, which the registry samples (every input
requires grad) never exercise. Each test compares the twin with ``vjp``.
"""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
import gradlab.nn.functional as F
from gradlab.ops.cast import ToDevice
from gradlab.ops.indexing import IndexAddZeros
from gradlab.ops.products import MatMul
from gradlab.ops.quant import FakeQuantize

from .test_vjp_arrays import _compare_node, _nodes


def _randn(*shape, requires_grad=True):
    return gradlab.tensor(np.random.default_rng(len(shape)).standard_normal(shape), requires_grad=requires_grad)


def _check_graph(out, want_classes):
    """Compare twin and vjp at every node behind ``out``; the classes in ``want_classes`` must be among them."""
    rng = np.random.default_rng(1)
    seen = set()
    for node in _nodes(out):
        if node.vjp_arrays is not None:
            seen.add(type(node))
            _compare_node(node, rng)
    assert set(want_classes) <= seen, f"no node of {set(want_classes) - seen} in the graph"


def test_index_backward_op_has_a_matching_twin():
    x = _randn(5, 3)
    y = x[[0, 2, 0, 4]] * x[1:3].sum()
    (gx,) = gradlab.autograd.grad(y.sum() ** 2, x, create_graph=True)
    _check_graph(gx, [IndexAddZeros])


def test_fake_quantize_twin_passes_the_gradient_inside_the_range_only():
    x = gradlab.tensor(np.linspace(-3, 3, 13), requires_grad=True)
    y = gradlab.ops.fake_quantize_per_tensor_affine(x, 0.25, 0, -8, 7)
    assert isinstance(y.grad_fn, FakeQuantize)
    _check_graph(y, [FakeQuantize])
    y.sum().backward()
    inside = (np.rint(x.detach().numpy() / 0.25) >= -8) & (np.rint(x.detach().numpy() / 0.25) <= 7)
    np.testing.assert_array_equal(x.grad.numpy(), inside.astype(np.float64))


@pytest.mark.parametrize("shapes", [((4, 3), (3, 2)), ((2, 4, 3), (3, 2)), ((3,), (2, 3, 2)), ((2, 1, 4, 3), (3, 3, 2))])
@pytest.mark.parametrize("which", [0, 1])
def test_matmul_twin_computes_only_the_gradient_that_is_needed(shapes, which):
    a = _randn(*shapes[0], requires_grad=which == 0)
    b = _randn(*shapes[1], requires_grad=which == 1)
    y = gradlab.matmul(a, b)
    g = np.random.default_rng(2).standard_normal(y.shape)
    got = y.grad_fn.vjp_arrays(g)
    assert got[1 - which] is None  # no matmul was spent on the input that needs no gradient
    with gradlab.no_grad():
        want = y.grad_fn.vjp(gradlab.tensor(g))
    np.testing.assert_allclose(got[which], want[which].numpy(), rtol=1e-12, atol=1e-12)


def test_matmul_twin_on_a_transposed_batch_input_matches_torch(torch):
    # a (B, T, k) input that is a transposed view, times a matrix: the weight's gradient is one (k, B*T) @ (B*T, m)
    base = _randn(2, 3, 4)
    a = base.transpose(0, 1)                      # (3, 2, 4), not contiguous
    w = _randn(4, 5)
    (gradlab.matmul(a, w) ** 2).sum().backward()
    tb = torch.tensor(base.detach().numpy(), requires_grad=True)
    tw = torch.tensor(w.detach().numpy(), requires_grad=True)
    (torch.matmul(tb.transpose(0, 1), tw) ** 2).sum().backward()
    np.testing.assert_allclose(base.grad.numpy(), tb.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-10)
    assert isinstance(gradlab.matmul(a, w).grad_fn, MatMul)


def test_matmul_twin_float16_overflow_is_quiet_as_in_forward():
    a = gradlab.full((2, 2), 60000.0, dtype=gradlab.float16, requires_grad=True)
    b = gradlab.full((2, 2), 2.0, dtype=gradlab.float16, requires_grad=True)
    y = gradlab.matmul(a, b)
    with np.errstate(over="raise"):  # the backward pass runs quietly (backend/fperr.py), whatever the user's setting
        y.backward(gradlab.full((2, 2), 60000.0, dtype=gradlab.float16))
    assert np.isinf(b.grad.numpy()).all() and a.grad.dtype == gradlab.float16


def test_to_device_twin_sends_the_gradient_back_to_the_host(sim_device):
    x = _randn(3, 4)
    y = x.to(sim_device)
    assert isinstance(y.grad_fn, ToDevice)
    g = gradlab.backend.xp_of(y._data).asarray(np.arange(12.0).reshape(3, 4))
    (got,) = y.grad_fn.vjp_arrays(g)[:1]
    with gradlab.no_grad():
        want = y.grad_fn.vjp(gradlab.Tensor._make(g))[0]
    assert type(got) is np.ndarray and type(got) is type(want._data)
    np.testing.assert_array_equal(got, want.numpy())
    (y * y).sum().backward()
    assert x.grad.device == "cpu"
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())


def test_twins_run_on_the_simulated_device(sim_device):
    """The twins make their arrays with the gradient's array module: nothing lands on the host."""
    rng = np.random.default_rng(3)
    x = gradlab.tensor(rng.standard_normal((2, 3, 6, 6)), requires_grad=True, device=sim_device)
    w = gradlab.tensor(rng.standard_normal((4, 3, 3, 3)), requires_grad=True, device=sim_device)
    h = F.max_pool2d(F.conv2d(x, w, padding=1), 2)                  # (2, 4, 3, 3)
    h = gradlab.where(h > 0, h, h * 0.1)[:, [0, 2, 2]]              # advanced indexing
    h = F.pad(h, (1, 1)).flatten(1)
    m = gradlab.tensor(rng.standard_normal((h.shape[1], 5)), requires_grad=True, device=sim_device)
    out = gradlab.einsum("bi,ij->bj", h, m).logsumexp(1).sum()
    out.backward()
    for t in (x, w, m):
        assert t.grad.device == sim_device
    # the same program on the cpu gives the same gradients
    xc, wc, mc = (gradlab.tensor(t.detach().cpu().numpy(), requires_grad=True) for t in (x, w, m))
    hc = F.max_pool2d(F.conv2d(xc, wc, padding=1), 2)
    hc = gradlab.where(hc > 0, hc, hc * 0.1)[:, [0, 2, 2]]
    hc = F.pad(hc, (1, 1)).flatten(1)
    gradlab.einsum("bi,ij->bj", hc, mc).logsumexp(1).sum().backward()
    for t, c in ((x, xc), (w, wc), (m, mc)):
        np.testing.assert_allclose(t.grad.cpu().numpy(), c.grad.numpy(), rtol=1e-10)


def test_matmul_reads_broadcast_and_flipped_operands_through_blas():
    from gradlab.ops.products import blas_ready
    a = np.arange(12.0).reshape(3, 4)
    at, part = a.T, a[:, 1:3]
    assert blas_ready(a) is a and blas_ready(at) is at and blas_ready(part) is part  # no copy needed
    for odd in (np.broadcast_to(np.float64(1), (3, 4)), a[::-1], a[:, ::2]):
        fixed = blas_ready(odd)
        assert fixed.flags.c_contiguous
        np.testing.assert_array_equal(fixed, odd)


def test_matmul_and_conv_backward_from_a_sum_match_torch(torch):
    # y.sum()'s backward hands matmul and conv2d a broadcast gradient (every stride 0)
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((2, 5, 3)), rng.standard_normal((3, 4))
    x, w = rng.standard_normal((2, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3))
    ga, gb, gx, gw = (gradlab.tensor(v, requires_grad=True) for v in (a, b, x, w))
    (gradlab.matmul(ga, gb).sum() + F.conv2d(gx, gw, padding=1, stride=2).sum()).backward()
    ta, tb, tx, tw = (torch.tensor(v, requires_grad=True) for v in (a, b, x, w))
    (torch.matmul(ta, tb).sum() + torch.nn.functional.conv2d(tx, tw, padding=1, stride=2).sum()).backward()
    for g, t in ((ga, ta), (gb, tb), (gx, tx), (gw, tw)):
        np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def _low_precision_programs():
    """Programs over this round's twins; each takes a list of leaves of the given dtype."""
    return {
        "matmul batch @ matrix": ((2, 3, 4), (4, 5)), "cumsum": ((3, 6),), "einsum": ((3, 4), (4, 2)),
        "conv2d + max_pool2d": ((2, 3, 6, 6), (4, 3, 3, 3)), "logsumexp + var": ((4, 5),),
        "getitem + where + pad": ((4, 5),),
    }


def _run_program(name, xs):
    if name == "matmul batch @ matrix":
        return gradlab.matmul(xs[0], xs[1]) * 0.5
    if name == "cumsum":
        return xs[0].cumsum(1)
    if name == "einsum":
        return gradlab.einsum("ij,jk->ik", xs[0], xs[1])
    if name == "conv2d + max_pool2d":
        return F.max_pool2d(F.conv2d(xs[0], xs[1], padding=1), 2)
    if name == "logsumexp + var":
        return xs[0].logsumexp(0) + xs[0].var(0)
    return F.pad(gradlab.where(xs[0][1:] > 0, xs[0][[0, 2, 2]], xs[0][1:]), (1, 2))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", list(_low_precision_programs()))
def test_twins_agree_with_vjp_in_low_precision(name, dtype):
    """Outside float64 (which the registry sweep uses) a twin must keep the dtype rules of its vjp."""
    dt = getattr(gradlab, dtype)
    rng = np.random.default_rng(5)
    values = [rng.standard_normal(s) for s in _low_precision_programs()[name]]
    grads, g = [], None
    for create_graph in (False, True):  # False: the twins; True: every node's vjp
        xs = [gradlab.tensor(v, dtype=dt, requires_grad=True) for v in values]
        y = _run_program(name, xs)
        if g is None:  # the same output gradient both times
            g = gradlab.tensor(rng.standard_normal(y.shape), dtype=dt)
        got = gradlab.autograd.grad(y, xs, grad_outputs=g, create_graph=create_graph)
        grads.append([t.detach().float().numpy() for t in got])
        for t, x in zip(got, xs):
            assert t.dtype == x.dtype and t.shape == x.shape
    tol = {"float32": 1e-6, "float16": 2e-3, "bfloat16": 2e-2}[dtype]
    for fast, slow in zip(*grads):
        np.testing.assert_allclose(fast, slow, rtol=tol, atol=tol * np.abs(slow).max())


@pytest.mark.parametrize("frozen", [0, 1])
@pytest.mark.parametrize("op", ["conv2d", "einsum", "where", "scatter"])
def test_twins_skip_an_input_that_needs_no_gradient(op, frozen):
    rng = np.random.default_rng(6)
    shapes = {"conv2d": ((2, 3, 5, 5), (4, 3, 3, 3)), "einsum": ((3, 4), (4, 5)),
              "where": ((3, 4), (3, 4)), "scatter": ((3, 4), (2, 4))}[op]
    xs = [gradlab.tensor(rng.standard_normal(s), requires_grad=i != frozen) for i, s in enumerate(shapes)]
    if op == "conv2d":
        y = F.conv2d(xs[0], xs[1], padding=1)
        slots = (0, 1)
    elif op == "einsum":
        y = gradlab.einsum("ij,jk->ik", xs[0], xs[1])
        slots = (1, 2)  # einsum's first input is the equation
    elif op == "where":
        y = gradlab.where(gradlab.tensor(rng.random((3, 4)) > 0.5), xs[0], xs[1])
        slots = (1, 2)
    else:
        y = gradlab.scatter(xs[0], 0, gradlab.tensor(np.array([[0, 1, 2, 0], [2, 0, 1, 1]])), xs[1])
        slots = (0, 1)
    g = rng.standard_normal(y.shape)
    got = y.grad_fn.vjp_arrays(g)
    with gradlab.no_grad():
        want = y.grad_fn.vjp(gradlab.tensor(g))
    assert got[slots[frozen]] is None
    live = slots[1 - frozen]
    np.testing.assert_allclose(got[live], want[live].numpy(), rtol=1e-12, atol=1e-12)
