"""The operator library beyond the generic registry suite: semantics worth a test of their own.

prod with zeros (first and second derivatives), einsum's many spellings and its
errors, split/chunk returns, roll/flip values, as_strided (view, bounds, overlap),
numerical stability, bad inputs, and JVP rules checked against finite differences.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import gradlab
from gradlab import DTypeError, GradlabError, ShapeError
from gradlab.autograd import function as F_mod, gradcheck, gradgradcheck

from .oracle import assert_close


def t64(a, requires_grad=True):
    return gradlab.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def grads_vs_torch(torch, fn_g, fn_t, *arrays, second_order=False):
    """Compare forward, first (and optionally second) derivatives of f with PyTorch."""
    xs = [t64(a) for a in arrays]
    txs = [torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
    y, ty = fn_g(*xs), fn_t(*txs)
    assert_close(y._data, ty.detach().numpy(), what="forward")
    cot = np.random.default_rng(1).standard_normal(y.shape)
    gs = gradlab.grad(y, xs, gradlab.tensor(cot), create_graph=second_order)
    tgs = torch.autograd.grad(ty, txs, torch.tensor(cot), create_graph=second_order)
    for g, tg in zip(gs, tgs):
        assert_close(g._data, tg.detach().numpy(), what="gradient")
    if second_order:
        s = sum((g * g).sum() for g in gs)
        ts = sum((g * g).sum() for g in tgs)
        if not s.requires_grad:  # a linear op: its gradient does not depend on the input
            assert not ts.requires_grad or not any(
                np.any(h.numpy()) for h in torch.autograd.grad(ts, txs, allow_unused=True) if h is not None)
            return
        hs = gradlab.grad(s, xs, allow_unused=True)
        ths = torch.autograd.grad(ts, txs, allow_unused=True)
        for h, th in zip(hs, ths):
            assert_close(h._data, th.numpy(), what="second derivative")


# ------------------------------------------------------------------ prod with zeros
@pytest.mark.parametrize("zeros", [0, 1, 2, 3])
def test_prod_gradient_with_zeros_matches_torch(torch, zeros):
    v = np.array([[1.5, -2.0, 0.7, 3.0, -0.5], [0.9, 1.1, -1.3, 2.0, 0.4]])
    v[0, :zeros] = 0.0
    v[1, 1:1 + zeros] = 0.0
    grads_vs_torch(torch, lambda x: gradlab.prod(x, 1), lambda x: torch.prod(x, 1), v, second_order=True)
    grads_vs_torch(torch, lambda x: x.prod(), lambda x: x.prod(), v[0], second_order=True)


def test_prod_one_zero_gradient_is_product_of_the_others():
    x = t64([2.0, 0.0, 3.0, 5.0])
    x.prod().backward()
    assert x.grad.tolist() == [0.0, 30.0, 0.0, 0.0]
    x = t64([2.0, 0.0, 3.0, 0.0])
    x.prod().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 0.0]


def test_prod_with_zeros_passes_gradgradcheck():
    for v in ([0.0, 1.5, -2.0], [0.0, 0.0, 1.3], [[0.0, 0.0, 2.0], [0.5, 0.0, 1.0]]):
        x = t64(v)
        assert gradcheck(lambda a: gradlab.prod(a, -1), (x,))
        assert gradgradcheck(lambda a: gradlab.prod(a, -1), (x,))


def test_prod_of_integers_is_int64(torch):
    x = gradlab.tensor([[1, 2], [3, 4]], dtype=gradlab.int32)
    assert gradlab.prod(x).dtype == gradlab.int64 and gradlab.prod(x).item() == 24
    assert gradlab.cumsum(x, 0).dtype == gradlab.int64


@pytest.mark.parametrize("exponent", [3, 3.0], ids=["int", "float"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cube_is_the_product_for_every_spelling_of_3(torch, exponent, dtype):
    """``x ** 3`` is ``x * x * x`` (PyTorch's CPU kernel for this exponent, same bits), also when the
    float ``3.0`` reaches the kernel as the cached 0-d array of ``x``'s dtype; gradients as PyTorch's."""
    from gradlab.ops import arithmetic

    a = np.random.default_rng(0).standard_normal((5, 7)).astype(dtype) * 3
    calls = []
    real_power = np.power
    arithmetic.np.power = lambda *args: calls.append(args) or real_power(*args)
    try:
        x = gradlab.tensor(a, requires_grad=True)
        y = gradlab.pow(x, exponent)
        y2 = x ** exponent
    finally:
        arithmetic.np.power = real_power
    assert not calls  # np.power (C pow per element, 45x slower) never ran
    np.testing.assert_array_equal(y.detach().numpy(), a * a * a)
    np.testing.assert_array_equal(y2.detach().numpy(), y.detach().numpy())
    tx = torch.tensor(a, requires_grad=True)
    np.testing.assert_array_equal(y.detach().numpy(), torch.pow(tx, exponent).detach().numpy())
    y.sum().backward()
    torch.pow(tx, exponent).sum().backward()
    assert_close(x.grad.numpy(), tx.grad.numpy(), what="gradient")


# ------------------------------------------------------------------------ einsum
EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iij->ji", [(2, 2, 3)]),
    ("ij->", [(2, 3)]),
    ("ba", [(2, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (4, 3, 2)]),
    ("...ij,...jk", [(2, 2, 3), (2, 3, 2)]),
    ("b...d,b...d->b...", [(2, 3, 4), (2, 3, 4)]),
    ("i...->...", [(2, 3, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("i,i,i->", [(4,), (4,), (4,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ij,ij->ij", [(3, 1), (3, 2)]),
    (",ij->ji", [(), (2, 3)]),
    ("iji->j", [(2, 3, 2)]),
    ("Ab,bC->AC", [(2, 3), (3, 2)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM_CASES, ids=[c[0] or "scalar" for c in EINSUM_CASES])
def test_einsum_forward_and_gradients_match_torch(torch, eq, shapes):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    grads_vs_torch(torch, lambda *xs: gradlab.einsum(eq, *xs), lambda *xs: torch.einsum(eq, *xs), *arrays,
                   second_order=sum(a.size for a in arrays) <= 60)


def test_einsum_other_spellings():
    a, b = gradlab.randn(2, 3), gradlab.randn(3, 4)
    ref = gradlab.matmul(a, b).numpy()
    np.testing.assert_allclose(gradlab.einsum("ij,jk->ik", [a, b]).numpy(), ref, rtol=1e-5)
    np.testing.assert_allclose(gradlab.einsum(a, [0, 1], b, [1, 2], [0, 2]).numpy(), ref, rtol=1e-5)
    np.testing.assert_allclose(gradlab.einsum(a, [Ellipsis, 1], b, [1, 2]).numpy(), ref, rtol=1e-5)
    np.testing.assert_allclose(gradlab.einsum(" ij , jk -> ik ", a, b).numpy(), ref, rtol=1e-5)


def test_einsum_vjp_is_an_einsum_and_the_node_says_which():
    a, b = t64(np.ones((2, 3))), t64(np.ones((3, 4)))
    y = gradlab.einsum("ij,jk->ik", a, b)
    assert "dA = einsum('ik,jk->ij', dY, ...)" in y.grad_fn.formula
    assert "dB = einsum('ik,ij->jk', dY, ...)" in y.grad_fn.formula
    (ga,) = gradlab.grad(y.sum(), [a], create_graph=True)
    assert ga.grad_fn is not None and ga.grad_fn.name == "einsum"


def test_einsum_errors_name_operand_and_ranks():
    a, b = gradlab.randn(2, 3), gradlab.randn(3, 4, 5)
    with pytest.raises(ShapeError, match=r"operand 1 has 3 dim\(s\) \(3, 4, 5\) but its subscripts 'jk' name 2"):
        gradlab.einsum("ij,jk->ik", a, b)
    with pytest.raises(ShapeError, match=r"operand 0 has 2 dim\(s\) \(2, 3\) but its subscripts 'ijk' name 3"):
        gradlab.einsum("ijk->i", a)
    with pytest.raises(ShapeError, match=r"'j' has size 3 in operand 0 but 4 in operand 1"):
        gradlab.einsum("ij,jk->ik", a, gradlab.randn(4, 2))
    with pytest.raises(GradlabError, match=r"subscripts for 2 operand\(s\) but 1"):
        gradlab.einsum("ij,jk->ik", a)
    with pytest.raises(GradlabError, match=r"output letter 'z' appears in no operand"):
        gradlab.einsum("ij->z", a)
    with pytest.raises(GradlabError, match=r"letters a-z"):
        gradlab.einsum("i1->i", a)
    with pytest.raises(ValueError):  # the gradlab errors are still ValueErrors
        gradlab.einsum("ij,jk->ik", a, b)


def test_outer_tensordot_bmm_match_torch(torch):
    rng = np.random.default_rng(2)
    grads_vs_torch(torch, gradlab.outer, torch.outer, rng.standard_normal(3), rng.standard_normal(4))
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 3, 5))
    grads_vs_torch(torch, lambda x, y: gradlab.tensordot(x, y, dims=([1, 2], [1, 0])),
                   lambda x, y: torch.tensordot(x, y, dims=([1, 2], [1, 0])), a, b)
    grads_vs_torch(torch, lambda x, y: gradlab.tensordot(x, y, 1), lambda x, y: torch.tensordot(x, y, 1),
                   a, rng.standard_normal((4, 2)))
    grads_vs_torch(torch, gradlab.bmm, torch.bmm, rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5)))


def test_bmm_and_tensordot_errors():
    with pytest.raises(ShapeError, match=r"bmm: expects two 3-D tensors .* got input \(3, 4\) and mat2 \(4, 5\)"):
        gradlab.bmm(gradlab.randn(3, 4), gradlab.randn(4, 5))
    with pytest.raises(ShapeError, match=r"batch sizes differ"):
        gradlab.bmm(gradlab.randn(2, 3, 4), gradlab.randn(3, 4, 5))
    with pytest.raises(ShapeError, match=r"dim 1 of a \(2, 3\) has size 3 but dim 0 of b \(4,\) has size 4"):
        gradlab.tensordot(gradlab.randn(2, 3), gradlab.randn(4), dims=([1], [0]))


# ------------------------------------------------------------- split, chunk
@pytest.mark.parametrize("size,arg,dim", [(7, 3, 0), (6, 2, 0), (5, [1, 4], 0), (5, [0, 5], 0), (4, 5, -1)])
def test_split_returns_like_torch(torch, size, arg, dim):
    x = gradlab.arange(float(size * 2)).reshape(size, 2) if dim == 0 else gradlab.arange(float(size * 2)).reshape(2, size)
    parts = gradlab.split(x, arg, dim)
    tparts = torch.split(torch.from_numpy(x.numpy()), arg, dim)
    assert isinstance(parts, tuple) and len(parts) == len(tparts)
    for p, tp in zip(parts, tparts):
        assert p.shape == tuple(tp.shape)
        np.testing.assert_array_equal(p.numpy(), tp.numpy())
    assert x.split(arg, dim)[0].shape == parts[0].shape  # also a method


@pytest.mark.parametrize("n,chunks", [(5, 3), (6, 4), (6, 3), (2, 5), (0, 3)])
def test_chunk_returns_like_torch(torch, n, chunks):
    x = gradlab.zeros(n, 2)
    parts, tparts = gradlab.chunk(x, chunks), torch.chunk(torch.zeros(n, 2), chunks)
    assert [p.shape for p in parts] == [tuple(tp.shape) for tp in tparts]


def test_split_gradient_and_errors():
    x = t64(np.arange(6.0))
    a, b = gradlab.split(x, [2, 4])
    (a.sum() * 2 + (b * b).sum()).backward()
    assert x.grad.tolist() == [2.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    with pytest.raises(ShapeError, match=r"sections \[2, 2\] sum to 4 but dim 0 of input \(6,\) has size 6"):
        gradlab.split(x, [2, 2])


# ---------------------------------------------------------------- roll, flip
@pytest.mark.parametrize("shifts,dims", [(1, None), (-7, None), (2, 0), (-1, 1), ((1, 2), (0, 2)), ((3,), (-1,)),
                                         (5, -2)])
def test_roll_values_and_grad_vs_torch(torch, shifts, dims):
    v = np.arange(24.0).reshape(2, 3, 4)
    grads_vs_torch(torch, lambda x: gradlab.roll(x, shifts, dims), lambda x: torch.roll(x, shifts, dims), v)


@pytest.mark.parametrize("dims", [0, -1, (0, 2), [1, 2], (0, 1, 2)])
def test_flip_values_and_grad_vs_torch(torch, dims):
    v = np.arange(24.0).reshape(2, 3, 4)
    tdims = dims if isinstance(dims, (list, tuple)) else (dims,)
    grads_vs_torch(torch, lambda x: gradlab.flip(x, dims), lambda x: torch.flip(x, tdims), v)
    assert gradlab.flip(t64(v), dims).is_contiguous()  # a copy, as in PyTorch


def test_repeat_tile_vs_torch(torch):
    v = np.arange(6.0).reshape(2, 3)
    for sizes in [(2, 1), (1, 3), (2, 2, 2), (0, 1)]:
        grads_vs_torch(torch, lambda x: x.repeat(*sizes), lambda x: x.repeat(*sizes), v)
    for dims in [(2,), (2, 1), (3, 1, 2)]:
        grads_vs_torch(torch, lambda x: gradlab.tile(x, dims), lambda x: torch.tile(x, dims), v)
    with pytest.raises(ShapeError, match=r"1 repeat counts given for a tensor with 2 dims \(2, 3\)"):
        gradlab.tensor(v).repeat(2)


# ---------------------------------------------------------------- as_strided
def test_as_strided_is_a_read_only_view_of_the_memory():
    x = gradlab.arange(6.0)
    w = x.as_strided((4, 3), (1, 1))  # sliding windows of 3
    np.testing.assert_array_equal(w.numpy(), [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5]])
    assert w.strides == (1, 1)
    assert np.shares_memory(w.numpy(), x.numpy())
    with pytest.raises(ValueError):
        w.numpy()[0, 0] = 7.0  # read-only: writing through overlapping windows would be confusing
    t = gradlab.arange(12.0).reshape(3, 4).as_strided((4, 3), (1, 4))
    np.testing.assert_array_equal(t.numpy(), np.arange(12.0).reshape(3, 4).T)


def test_as_strided_values_and_overlapping_gradient_vs_torch(torch):
    v = np.arange(10.0) * 0.5
    for size, stride, off in [((4, 3), (1, 1), 0), ((2, 2), (5, 2), 1), ((3, 3), (2, 1), 2), ((3,), (0,), 4)]:
        grads_vs_torch(torch, lambda x: gradlab.as_strided(x, size, stride, off),
                       lambda x: torch.as_strided(x, size, stride, off), v, second_order=True)


def test_as_strided_out_of_bounds_is_a_clear_error():
    with pytest.raises(GradlabError, match=r"reaches memory slot 6, but input \(2, 3\) has only 6 elements"):
        gradlab.zeros(2, 3).as_strided((2, 2), (3, 3))


# ---------------------------------------------------------- stability
def test_logsumexp_on_huge_logits_is_finite_and_matches_torch(torch):
    rng = np.random.default_rng(3)
    logits = (rng.standard_normal((4, 6)) * 1e4).astype(np.float32)
    x = gradlab.tensor(logits, requires_grad=True)
    y = gradlab.logsumexp(x, 1)
    ty = torch.logsumexp(torch.from_numpy(logits), 1)
    assert np.all(np.isfinite(y.numpy() if not y.requires_grad else y.detach().numpy()))
    np.testing.assert_allclose(y.detach().numpy(), ty.numpy(), rtol=1e-6)
    y.sum().backward()
    assert np.all(np.isfinite(x.grad.numpy()))
    np.testing.assert_allclose(x.grad.numpy().sum(1), 1.0, rtol=1e-5)  # each row of the gradient is a softmax


def test_logsumexp_with_infinite_rows_matches_torch(torch):
    v = np.array([[-np.inf, -np.inf, -np.inf], [1.0, -np.inf, 2.0], [np.inf, 0.0, 1.0]])
    y = gradlab.logsumexp(gradlab.tensor(v), 1, keepdim=True)
    np.testing.assert_array_equal(y.numpy(), torch.logsumexp(torch.from_numpy(v), 1, keepdim=True).numpy())


def test_sigmoid_and_tanh_stay_finite_in_float32():
    x = gradlab.tensor([-100.0, -30.0, 0.0, 30.0, 100.0], requires_grad=True)
    s = gradlab.sigmoid(x)
    assert s.dtype == gradlab.float32 and np.all(np.isfinite(s.detach().numpy()))
    assert s.detach().numpy()[0] >= 0.0 and s.detach().numpy()[-1] == 1.0
    s.sum().backward()
    assert np.all(np.isfinite(x.grad.numpy())) and np.all(x.grad.numpy() >= 0)
    x2 = gradlab.tensor([-100.0, -20.0, 0.5, 20.0, 100.0], requires_grad=True)
    gradlab.tanh(x2).sum().backward()
    assert np.all(np.isfinite(x2.grad.numpy())) and x2.grad.numpy()[0] == 0.0


def test_softplus_large_inputs_and_threshold(torch):
    v = np.array([-1e4, -30.0, 0.0, 19.0, 21.0, 1e4], dtype=np.float32)
    x = gradlab.tensor(v, requires_grad=True)
    y = gradlab.softplus(x)
    ty = torch.nn.functional.softplus(torch.from_numpy(v))
    np.testing.assert_allclose(y.detach().numpy(), ty.numpy(), rtol=1e-6)
    y.sum().backward()
    assert np.all(np.isfinite(x.grad.numpy())) and x.grad.numpy()[-1] == 1.0


def test_norm_and_std_gradients_at_zero_are_zero_as_torch(torch):
    for fn_g, fn_t in [(lambda x: gradlab.norm(x), lambda x: torch.norm(x)),
                       (lambda x: gradlab.norm(x, 2, dim=1), lambda x: torch.norm(x, 2, dim=1)),
                       (lambda x: gradlab.std(x), lambda x: torch.std(x))]:
        grads_vs_torch(torch, fn_g, fn_t, np.zeros((2, 3)))


@pytest.mark.parametrize("p", ["fro", 2, 1, math.inf, 3.0, 0.5, -math.inf])
def test_norm_variants_vs_torch(torch, p):
    v = np.array([[1.5, -2.0, 0.7], [0.3, 1.1, -2.5]])
    grads_vs_torch(torch, lambda x: gradlab.norm(x, p), lambda x: torch.norm(x, p), v)
    grads_vs_torch(torch, lambda x: gradlab.norm(x, p, dim=1, keepdim=True),
                   lambda x: torch.norm(x, p, dim=1, keepdim=True), v)


def test_var_std_arguments_vs_torch(torch):
    v = np.random.default_rng(4).standard_normal((3, 4))
    for kw in [dict(), dict(dim=1), dict(dim=0, correction=0), dict(dim=(0, 1), keepdim=True, correction=2)]:
        for name in ("var", "std"):
            grads_vs_torch(torch, lambda x: getattr(gradlab, name)(x, **kw), lambda x: getattr(torch, name)(x, **kw),
                           v, second_order=True)
    x = gradlab.tensor(v)
    assert_close(gradlab.var(x, 1, False).numpy(), torch.var(torch.from_numpy(v), 1, False).numpy())
    assert_close(x.std(unbiased=False).numpy(), torch.from_numpy(v).std(unbiased=False).numpy())


def test_gelu_forms_and_round_vs_torch(torch):
    v = np.linspace(-4, 4, 17)
    for approx in ("none", "tanh"):
        grads_vs_torch(torch, lambda x: gradlab.gelu(x, approximate=approx),
                       lambda x: torch.nn.functional.gelu(x, approximate=approx), v, second_order=True)
    r = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.25, 1.2345])
    assert_close(gradlab.round(gradlab.tensor(r)).numpy(), torch.round(torch.from_numpy(r)).numpy())
    assert_close(gradlab.round(gradlab.tensor(r), decimals=2).numpy(),
                 torch.round(torch.from_numpy(r), decimals=2).numpy())
    x = t64(r)
    (gradlab.floor(x) + gradlab.round(x) + gradlab.ceil(x) + gradlab.trunc(x)).sum().backward()
    assert np.all(x.grad.numpy() == 0)  # step functions pass no gradient


# ---------------------------------------------------------- scatter & co.
def test_scatter_forms_vs_torch(torch):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4))
    index = np.array([[0, 2, 1, 0], [2, 0, 0, 1]])
    src = rng.standard_normal((2, 4))
    tidx = torch.from_numpy(index)
    grads_vs_torch(torch, lambda a, s: gradlab.scatter(a, 0, gradlab.tensor(index), s),
                   lambda a, s: torch.scatter(a, 0, tidx, s), x, src)
    grads_vs_torch(torch, lambda a: a.scatter(0, gradlab.tensor(index), 7.5),
                   lambda a: a.scatter(0, tidx, 7.5), x)
    dup = np.array([[0, 0, 0, 0], [0, 0, 1, 1]])
    grads_vs_torch(torch, lambda a, s: gradlab.scatter_add(a, 0, gradlab.tensor(dup), s),
                   lambda a, s: torch.scatter_add(a, 0, torch.from_numpy(dup), s), x, src)
    grads_vs_torch(torch, lambda a: gradlab.index_select(a, 1, gradlab.tensor([3, 0, 3])),
                   lambda a: torch.index_select(a, 1, torch.tensor([3, 0, 3])), x)


def test_scatter_with_a_larger_src_uses_its_leading_block():
    x, src = t64(np.zeros((3, 3))), t64(np.arange(12.0).reshape(3, 4))
    idx = gradlab.tensor([[2, 0, 1]])
    y = gradlab.scatter(x, 0, idx, src)
    np.testing.assert_array_equal(y.detach().numpy(), [[0, 1, 0], [0, 0, 2], [0, 0, 0]])
    assert gradcheck(lambda a, s: gradlab.scatter(a, 0, idx, s), (x, src))
    assert gradcheck(lambda a, s: gradlab.scatter_add(a, 0, idx, s), (x, src))


def test_index_dtype_errors_name_argument_and_shapes():
    x = gradlab.randn(3, 4)
    bad = gradlab.tensor([[0.0, 1.0]])
    for fn in (lambda: gradlab.gather(x, 1, bad), lambda: gradlab.scatter(x, 1, bad, 1.0),
               lambda: gradlab.scatter_add(x, 1, bad, gradlab.randn(1, 2)), lambda: gradlab.index_select(x, 0, bad[0])):
        with pytest.raises(DTypeError, match=r"index must be an integer tensor, got dtype float32 \(index shape "
                                             r"\((1, 2|2,)\)?,? input shape \(3, 4\)\)"):
            fn()
    with pytest.raises(TypeError):  # still a TypeError for code that catches the built-in
        gradlab.gather(x, 1, bad)


def test_masked_fill_and_tril_triu_vs_torch(torch):
    rng = np.random.default_rng(6)
    v = rng.standard_normal((2, 3, 3))
    mask = rng.random((3, 3)) > 0.5
    tm = torch.from_numpy(mask)
    grads_vs_torch(torch, lambda x: x.masked_fill(gradlab.tensor(mask), -1e9), lambda x: x.masked_fill(tm, -1e9), v)
    grads_vs_torch(torch, lambda x, val: x.masked_fill(gradlab.tensor(mask), val),
                   lambda x, val: x.masked_fill(tm, val), v, np.array(0.5))
    for k in (-1, 0, 1):
        grads_vs_torch(torch, lambda x: gradlab.tril(x, k), lambda x: torch.tril(x, k), v)
        grads_vs_torch(torch, lambda x: x.triu(diagonal=k), lambda x: x.triu(diagonal=k), v)
    with pytest.raises(DTypeError, match=r"mask must be a bool tensor, got dtype int64 \(mask shape \(3, 3\)\)"):
        gradlab.tensor(v).masked_fill(gradlab.tensor(mask.astype(np.int64)), 0.0)
    with pytest.raises(ShapeError, match=r"mask \(4,\) does not broadcast to input \(2, 3, 3\)"):
        gradlab.tensor(v).masked_fill(gradlab.tensor(np.ones(4, bool)), 0.0)
    with pytest.raises(ShapeError, match=r"tril: input must have at least 2 dims, got shape \(3,\)"):
        gradlab.tril(gradlab.zeros(3))


# ----------------------------------------------------------- JVP rules
class _Capture:
    """An op observer keeping the outermost op call: its class, args, outputs and node."""

    def __init__(self):
        self.calls = []

    def before(self, cls, args):
        return None

    def after(self, token, cls, args, outputs, node):
        self.calls.append((cls, args, outputs, node))


JVP_CASES = [
    ("gelu", lambda x: gradlab.gelu(x), (3, 4)),
    ("gelu tanh", lambda x: gradlab.gelu(x, approximate="tanh"), (3, 4)),
    ("silu", gradlab.silu, (5,)),
    ("softplus", lambda x: gradlab.softplus(x, beta=2.0), (5,)),
    ("leaky_relu", gradlab.leaky_relu, (5,)),
    ("sin", gradlab.sin, (4,)), ("cos", gradlab.cos, (4,)), ("erf", gradlab.erf, (4,)),
    ("log1p", lambda x: gradlab.log1p(x.detach().abs().requires_grad_()), (4,)),
    ("expm1", gradlab.expm1, (4,)), ("reciprocal", lambda x: gradlab.reciprocal(x + 5.0), (4,)),
    ("var", lambda x: gradlab.var(x, 1), (3, 4)), ("std", lambda x: gradlab.std(x, 0, keepdim=True), (3, 4)),
    ("logsumexp", lambda x: gradlab.logsumexp(x, 1), (3, 4)),
    ("prod", lambda x: gradlab.prod(x, 1), (3, 4)), ("cumsum", lambda x: gradlab.cumsum(x, 1), (3, 4)),
    ("norm", lambda x: gradlab.norm(x, dim=1), (3, 4)), ("norm1", lambda x: gradlab.norm(x, 1), (3, 4)),
    ("scatter", lambda x: gradlab.scatter(x, 0, gradlab.tensor([[1, 0, 2, 1]]), 2.0), (3, 4)),
    ("masked_fill", lambda x: x.masked_fill(gradlab.tensor([True, False, True, False]), 0.5), (3, 4)),
    ("tril", lambda x: gradlab.tril(x, -1), (3, 4)), ("repeat", lambda x: x.repeat(2, 1, 2), (3, 4)),
    ("flip", lambda x: gradlab.flip(x, (0, 1)), (3, 4)), ("roll", lambda x: gradlab.roll(x, (1, -1), (0, 1)), (3, 4)),
    ("as_strided", lambda x: gradlab.as_strided(x, (3, 3), (2, 1)), (3, 4)),
    ("einsum", lambda x: gradlab.einsum("ij,kj->ik", x, x), (3, 4)),
    ("einsum diag", lambda x: gradlab.einsum("ii->i", x[:3, :3].contiguous()), (3, 4)),
]


@pytest.mark.parametrize("name,fn,shape", JVP_CASES, ids=[c[0] for c in JVP_CASES])
def test_jvp_rules_match_finite_differences(name, fn, shape):
    """Run the op, then ask its node for the JVP (self.args / self.out as the contract says)."""
    rng = np.random.default_rng(7)
    x = t64(rng.uniform(-1.5, 1.5, shape))
    cap = _Capture()
    F_mod.op_observers.append(cap)
    try:
        y = fn(x)
    finally:
        F_mod.op_observers.remove(cap)
    cls, args, out, node = cap.calls[-1]
    assert node is not None and node is y.grad_fn, name
    node.args, node.out = args, out
    tangent_of = {}
    for a in args:
        if isinstance(a, gradlab.Tensor) and a.requires_grad and id(a) not in tangent_of:
            tangent_of[id(a)] = gradlab.tensor(rng.standard_normal(a.shape))
    tangents = [tangent_of.get(id(a)) if isinstance(a, gradlab.Tensor) else None for a in args]
    jvp = node.jvp(*tangents)
    # numeric: each differentiable arg moves along its tangent; the op is re-run on the moved args
    eps = 1e-6

    def moved(sign):
        new = [gradlab.tensor(a._data + sign * eps * tangent_of[id(a)]._data) if id(a) in tangent_of and
               isinstance(a, gradlab.Tensor) else a for a in args]
        with gradlab.no_grad():
            return cls.apply(*new)
    numeric = (moved(1)._data - moved(-1)._data) / (2 * eps)
    np.testing.assert_allclose(jvp._data, numeric, rtol=1e-5, atol=1e-6, err_msg=name)


def test_numpy_only_erf_is_accurate_without_scipy():
    """gelu's exact form needs erf; gradlab computes it with NumPy alone (tests/test_erf.py: more)."""
    from gradlab.backend.special import erf
    xs = np.concatenate([np.linspace(-7, 7, 4001), [1.9999999, 2.0, 2.0000001, -2.0, 30.0, np.inf, -np.inf]])
    ref = np.array([math.erf(v) for v in xs])
    np.testing.assert_allclose(erf(xs), ref, rtol=0, atol=5e-16)
