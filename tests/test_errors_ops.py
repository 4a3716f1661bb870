"""Issue #24 at the tensor-op level, checked against PyTorch call by call:

* ``requires_grad``: the checked attribute and ``requires_grad_()`` follow PyTorch's rules (a bool;
  True only on floating tensors; only leaves may change it), and so do the factories;
* the ops PyTorch does not promote in refuse a mix of dtypes (``gradlab.checks.same_dtype``), and the
  ones it promotes in still promote;
* ``median``/``nanmedian``/``mode``/``kthvalue``/``topk`` give PyTorch's values *and indices* with NaNs
  and ties, over generated arrays;
* no NumPy ``RuntimeWarning`` escapes an op (overflow, invalid value, divide by zero), with
  ``warnings.simplefilter('error')``, and the values are PyTorch's inf/nan.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradlab
import gradlab.nn.functional  # noqa: F401
from gradlab.errors import GradlabError

from .fuzz_calls import builtin_base


def _outcome(fn):
    try:
        return True, fn()
    except Exception as e:  # noqa: BLE001 - compared by the caller
        return False, e


def _same_outcome(name, gl_fn, pt_fn):
    """Both libraries accept, or both refuse with gradlab's error catchable as PyTorch's."""
    ok, r = _outcome(gl_fn)
    tok, tr = _outcome(pt_fn)
    assert ok == tok, f"{name}: gradlab {'accepted' if ok else f'refused ({r!r})'} but PyTorch " \
                      f"{'accepted' if tok else f'refused ({tr!r})'}"
    if not ok:
        assert isinstance(r, GradlabError), f"{name}: a bare {type(r).__name__}: {r}"
        assert isinstance(r, builtin_base(type(tr))), f"{name}: {type(r).__name__} is not a " \
                                                      f"{builtin_base(type(tr)).__name__} ({tr!r})"
    return ok, r, tr


# ---------------------------------------------------------------- requires_grad
def _set(t, v):
    t.requires_grad = v
    return t.requires_grad


REQUIRES_GRAD_CASES = {
    "int leaf = True": lambda L: _set(L.tensor([1, 2]), True),
    "int leaf = False": lambda L: _set(L.tensor([1, 2]), False),
    "bool leaf = True": lambda L: _set(L.tensor([True]), True),
    "float leaf = True": lambda L: _set(L.tensor([1.0]), True),
    "float leaf = 1": lambda L: _set(L.tensor([1.0]), 1),
    "float leaf = None": lambda L: _set(L.tensor([1.0]), None),
    "non-leaf = False": lambda L: _set(L.ones(2, requires_grad=True) * 2, False),
    "non-leaf = True": lambda L: _set(L.ones(2, requires_grad=True) * 2, True),
    "view of a leaf = False": lambda L: _set(L.ones(2, requires_grad=True)[:1], False),
    "int requires_grad_()": lambda L: L.tensor([1, 2]).requires_grad_().requires_grad,
    "int requires_grad_(False)": lambda L: L.tensor([1, 2]).requires_grad_(False).requires_grad,
    "non-leaf requires_grad_()": lambda L: (L.ones(2, requires_grad=True) * 2).requires_grad_().requires_grad,
    "non-leaf requires_grad_(False)": lambda L: (L.ones(2, requires_grad=True) * 2).requires_grad_(False),
    "requires_grad_(1)": lambda L: L.ones(2).requires_grad_(1),
    "requires_grad_('yes')": lambda L: L.ones(2).requires_grad_("yes"),
    "detached non-leaf = True": lambda L: _set((L.ones(2, requires_grad=True) * 2).detach(), True),
    "made under no_grad = False": lambda L: _set(_no_grad_product(L), False),
    "int result of a float op = False": lambda L: _set(L.ones(2, requires_grad=True).argmax(), False),
    "tensor(int, requires_grad=True)": lambda L: L.tensor([1, 2], requires_grad=True),
    "zeros(int64, requires_grad=True)": lambda L: L.zeros(2, dtype=L.int64, requires_grad=True),
    "arange(3, requires_grad=True)": lambda L: L.arange(3, requires_grad=True),
    "full((2,), 3, requires_grad=True)": lambda L: L.full((2,), 3, requires_grad=True),
    "ones(bool, requires_grad=True)": lambda L: L.ones(2, dtype=L.bool, requires_grad=True),
    "zeros_like(int, requires_grad=True)": lambda L: L.zeros_like(L.tensor([1]), requires_grad=True),
    "Parameter(int)": lambda L: L.nn.Parameter(L.tensor([1, 2])),
    "Parameter(int, requires_grad=False)": lambda L: L.nn.Parameter(L.tensor([1, 2]), requires_grad=False).shape,
}


def _no_grad_product(L):
    a = L.ones(2, requires_grad=True)
    with L.no_grad():
        return a * 2


@pytest.mark.parametrize("case", sorted(REQUIRES_GRAD_CASES))
def test_requires_grad_rules_match_pytorch(torch, case):
    f = REQUIRES_GRAD_CASES[case]
    ok, r, tr = _same_outcome(case, lambda: f(gradlab), lambda: f(torch))
    if ok and isinstance(tr, bool):
        assert r == tr


def test_requires_grad_messages_say_what_to_do():
    with pytest.raises(RuntimeError, match=r"requires_grad.*int64.*only floating.*\.float\(\)"):
        gradlab.tensor([1, 2]).requires_grad = True
    b = gradlab.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match=r"not a leaf.*detach\(\)"):
        b.requires_grad = False
    assert b.requires_grad and b.grad_fn is not None  # unchanged by the refused assignment


def test_the_engine_still_sets_the_flag_on_what_it_makes():
    a = gradlab.ones(2, requires_grad=True)
    b = (a * 2).exp()
    assert b.requires_grad and not b.is_leaf
    b.sum().backward()
    assert a.grad is not None
    d = b.detach()
    assert not d.requires_grad and d.is_leaf
    b.detach_()
    assert not b.requires_grad and b.is_leaf
    b.requires_grad = True  # a leaf again: allowed, as in PyTorch
    assert b.requires_grad


# ---------------------------------------------------------------- one dtype where PyTorch does not promote
def _f64(L, *s):
    return L.ones(s, dtype=L.float64) * 0.5


def _f32(L, *s):
    return L.ones(s, dtype=L.float32) * 0.5


def _i64(L, *s):
    return L.ones(s, dtype=L.int64)


def _idx(L):
    return L.tensor([0, 1])


SAME_DTYPE = {  # (A, B): the first operand's maker, the second's
    "matmul": lambda L, A, B: L.matmul(A(L, 2, 3), B(L, 3, 2)),
    "mm": lambda L, A, B: L.mm(A(L, 2, 3), B(L, 3, 2)),
    "bmm": lambda L, A, B: L.bmm(A(L, 1, 2, 3), B(L, 1, 3, 2)),
    "mv": lambda L, A, B: L.mv(A(L, 2, 3), B(L, 3)),
    "dot": lambda L, A, B: L.dot(A(L, 3), B(L, 3)),
    "addmm input": lambda L, A, B: L.addmm(B(L, 2, 2), A(L, 2, 3), A(L, 3, 2)),
    "addmm mat2": lambda L, A, B: L.addmm(A(L, 2, 2), A(L, 2, 3), B(L, 3, 2)),
    "tensordot": lambda L, A, B: L.tensordot(A(L, 2, 3), B(L, 3, 2), 1),
    "einsum ij,jk": lambda L, A, B: L.einsum("ij,jk->ik", A(L, 2, 3), B(L, 3, 2)),
    "linear weight": lambda L, A, B: L.nn.functional.linear(A(L, 2, 3), B(L, 4, 3)),
    "linear bias": lambda L, A, B: L.nn.functional.linear(A(L, 2, 3), A(L, 4, 3), B(L, 4)),
    "bilinear input2": lambda L, A, B: L.nn.functional.bilinear(A(L, 2, 3), B(L, 2, 3), A(L, 4, 3, 3)),
    "bilinear bias": lambda L, A, B: L.nn.functional.bilinear(A(L, 2, 3), A(L, 2, 3), A(L, 4, 3, 3), B(L, 4)),
    "index_add": lambda L, A, B: A(L, 3, 2).index_add(0, _idx(L), B(L, 2, 2)),
    "index_copy": lambda L, A, B: A(L, 3, 2).index_copy(0, _idx(L), B(L, 2, 2)),
    "index_put": lambda L, A, B: A(L, 3, 2).index_put((_idx(L),), B(L, 2, 2)),
    "scatter": lambda L, A, B: A(L, 3, 2).scatter(0, _idx(L).view(2, 1).expand(2, 2), B(L, 2, 2)),
    "scatter_add": lambda L, A, B: A(L, 3, 2).scatter_add(0, _idx(L).view(2, 1).expand(2, 2), B(L, 2, 2)),
    "masked_scatter": lambda L, A, B: A(L, 2, 2).masked_scatter(L.ones(2, 2, dtype=L.bool), B(L, 2, 2)),
    "meshgrid": lambda L, A, B: L.meshgrid(A(L, 2), B(L, 3), indexing="ij"),
    "isclose": lambda L, A, B: L.isclose(A(L, 2), B(L, 2)),
    "allclose": lambda L, A, B: L.allclose(A(L, 2), B(L, 2)),
    "lerp end": lambda L, A, B: L.lerp(A(L, 2), B(L, 2), 0.5),
    "lerp weight tensor": lambda L, A, B: L.lerp(A(L, 2), A(L, 2), B(L, 2)),
    # promoting ops stay promoting
    "add": lambda L, A, B: A(L, 2) + B(L, 2),
    "where": lambda L, A, B: L.where(L.ones(2, dtype=L.bool), A(L, 2), B(L, 2)),
    "cat": lambda L, A, B: L.cat([A(L, 2), B(L, 2)]),
    "outer": lambda L, A, B: L.outer(A(L, 2), B(L, 3)),
    "einsum i,j->ij": lambda L, A, B: L.einsum("i,j->ij", A(L, 2), B(L, 3)),
    "einsum i,i->i": lambda L, A, B: L.einsum("i,i->i", A(L, 2), B(L, 2)),
    "einsum i,i->": lambda L, A, B: L.einsum("i,i->", A(L, 2), B(L, 2)),
    "einsum i,i,i->": lambda L, A, B: L.einsum("i,i,i->", A(L, 2), B(L, 2), B(L, 2)),
    "einsum ij,i->i": lambda L, A, B: L.einsum("ij,i->i", A(L, 2, 2), B(L, 2)),
    "x[idx] = v": lambda L, A, B: A(L, 3, 2).__setitem__(_idx(L), B(L, 2, 2)),
    "x[[0, 2]] = 0-d v": lambda L, A, B: A(L, 3, 2).__setitem__([0, 2], B(L)),
    "x[0] = v": lambda L, A, B: A(L, 3, 2).__setitem__(0, B(L, 2)),
    "x[1:3] = v": lambda L, A, B: A(L, 3, 2).__setitem__(slice(1, 3), B(L, 2, 2)),
    "x[mask] = 0-d v": lambda L, A, B: A(L, 3, 2).__setitem__(A(L, 3, 2) > 0, B(L)),
    "x[mask] = v": lambda L, A, B: A(L, 3, 2).__setitem__(A(L, 3, 2) > 0, B(L, 6)),
}


@pytest.mark.parametrize("pair", ["f64,i64", "i64,f64", "f64,f32"])
@pytest.mark.parametrize("case", sorted(SAME_DTYPE))
def test_one_dtype_where_pytorch_does_not_promote(torch, case, pair):
    A, B = {"f64,i64": (_f64, _i64), "i64,f64": (_i64, _f64), "f64,f32": (_f64, _f32)}[pair]
    f = SAME_DTYPE[case]
    ok, r, _ = _same_outcome(f"{case} ({pair})", lambda: f(gradlab, A, B), lambda: f(torch, A, B))
    if not ok and case[0].isalpha() and not case.startswith("x["):
        assert case.split()[0] in str(r), f"the message does not name {case.split()[0]}: {r}"


def test_same_dtype_message_names_both_and_the_fix():
    with pytest.raises(RuntimeError, match=r"scatter_add: input \(3,\) has dtype float64 but src \(2,\) has "
                                           r"dtype int64.*must have the same dtype.*src\.to\(gradlab\.float64\)"):
        gradlab.zeros(3, dtype=gradlab.float64).scatter_add(0, gradlab.tensor([0, 1]), gradlab.ones(2, dtype=gradlab.int64))


def test_same_dtype_passes_equal_dtypes_and_skips_none():
    from gradlab.checks import same_dtype
    a = gradlab.ones(2)
    assert same_dtype("f", a=a, b=gradlab.zeros(3), c=None) == a.dtype
    assert same_dtype("f", a=None) is None


# ---------------------------------------------------------------- integer and argument checks
ARG_CASES = {
    "round(int)": lambda L: L.round(L.tensor([1, 25])),
    "round(int, decimals=0)": lambda L: L.round(L.tensor([1, 25]), decimals=0),
    "round(int, decimals=-1)": lambda L: L.round(L.tensor([1, 25]), decimals=-1),
    "round(bool)": lambda L: L.round(L.tensor([True])),
    "round(float, decimals=1.5)": lambda L: L.round(L.ones(2), decimals=1.5),
    "round(float, decimals=1)": lambda L: L.round(L.tensor([1.25, 2.5]), decimals=1),
    "diff(n=0)": lambda L: L.diff(L.arange(5.0), n=0),
    "diff(n=-1)": lambda L: L.diff(L.arange(5.0), n=-1),
    "diff(n=True)": lambda L: L.diff(L.arange(5.0), n=True),
    "diff(n='2')": lambda L: L.diff(L.arange(5.0), n="2"),
    "diff(n=10)": lambda L: L.diff(L.arange(5.0), n=10),
    "pdist(p=-0.5)": lambda L: L.nn.functional.pdist(L.ones(3, 2), p=-0.5),
    "pdist(p=None)": lambda L: L.nn.functional.pdist(L.ones(3, 2), p=None),
    "pdist(p=0)": lambda L: L.nn.functional.pdist(L.ones(3, 2), p=0),
    "pairwise_distance(p=None)": lambda L: L.nn.functional.pairwise_distance(L.ones(3, 2), L.ones(3, 2), p=None),
    "pairwise_distance(p=-1)": lambda L: L.nn.functional.pairwise_distance(L.ones(3, 2), L.ones(3, 2), p=-1),
    "pairwise_distance(eps='a')": lambda L: L.nn.functional.pairwise_distance(L.ones(3, 2), L.ones(3, 2), eps="a"),
    "broadcast_to((2, 3.0))": lambda L: L.broadcast_to(L.ones(3), (2, 3.0)),
    "broadcast_to(3)": lambda L: L.broadcast_to(L.ones(3), 3),
    "broadcast_to((2, -1))": lambda L: L.broadcast_to(L.ones(3), (2, -1)),
    "broadcast_to((-1, 3))": lambda L: L.broadcast_to(L.ones(3), (-1, 3)),
    "lerp(int, int)": lambda L: L.lerp(L.tensor([1, 2]), L.tensor([3, 4]), 0.5),
    "cosine_similarity(int, float)": lambda L: L.nn.functional.cosine_similarity(L.tensor([[1, 2, 3]]),
                                                                               L.tensor([[1.0, 0.0, 1.0]])),
    "cosine_similarity(int, int)": lambda L: L.nn.functional.cosine_similarity(L.tensor([[1, 2]]), L.tensor([[1, 0]])),
}


@pytest.mark.parametrize("case", sorted(ARG_CASES))
def test_argument_checks_match_pytorch(torch, case):
    f = ARG_CASES[case]
    ok, r, tr = _same_outcome(case, lambda: f(gradlab), lambda: f(torch))
    if ok:
        np.testing.assert_allclose(np.asarray(r.detach().numpy(), dtype=np.float64),
                                   tr.detach().numpy().astype(np.float64), rtol=1e-6)


# ---------------------------------------------------------------- NaN and ties: order statistics vs PyTorch
def _pair(g, t):
    if isinstance(t, tuple):
        return [(np.asarray(g[0]._data), t[0].numpy()), (np.asarray(g[1]._data), t[1].numpy())]
    return [(np.asarray(g._data), t.numpy())]


def _check(name, g, t):
    for x, y in _pair(g, t):
        assert x.shape == y.shape and np.array_equal(x, y, equal_nan=True), f"{name}: gradlab {x} vs torch {y}"


@pytest.mark.parametrize("seed", range(4))
def test_order_statistics_match_pytorch_with_nans_and_ties(torch, seed):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        shape = tuple(int(s) for s in rng.integers(1, 7, size=int(rng.integers(1, 4))))
        a = rng.integers(0, 4, shape).astype(np.float64)  # small integers: many ties
        if rng.random() < 0.7:
            a[rng.random(shape) < rng.random()] = np.nan
        if rng.random() < 0.2 and not np.isnan(a).any():
            a = a.astype(np.int64)
        g, t = gradlab.tensor(a), torch.tensor(a)
        d = int(rng.integers(-len(shape), len(shape)))
        k = int(rng.integers(1, shape[d] + 1))
        keep = bool(rng.integers(0, 2))
        _check(f"median() of {a.tolist()}", g.median(), t.median())
        _check(f"median({d}) of {a.tolist()}", g.median(d, keep), t.median(d, keep))
        _check(f"mode({d}) of {a.tolist()}", g.mode(d, keep), t.mode(d, keep))
        _check(f"kthvalue({k}, {d}) of {a.tolist()}", g.kthvalue(k, d, keep), t.kthvalue(k, d, keep))
        for largest in (True, False):
            for srt in (True, False):
                _check(f"topk({k}, {d}, {largest}, {srt}) of {a.tolist()}", g.topk(k, d, largest, srt),
                       t.topk(k, d, largest, srt))
        if a.dtype.kind == "f":
            _check(f"nanmedian() of {a.tolist()}", g.nanmedian(), t.nanmedian())
            _check(f"nanmedian({d}) of {a.tolist()}", g.nanmedian(d, keep), t.nanmedian(d, keep))


def test_longer_rows_with_ties_match_pytorch(torch):
    """Rows past libstdc++'s insertion-sort threshold (16): the replayed introsort/introselect/heap paths."""
    rng = np.random.default_rng(7)
    for n in (17, 40, 130, 300):
        a = rng.integers(0, 5, (3, n)).astype(np.float64)
        a[1, rng.random(n) < 0.3] = np.nan
        a[2] = np.nan
        g, t = gradlab.tensor(a), torch.tensor(a)
        for k in (1, 2, n // 2, n):
            _check(f"topk {n} {k}", g.topk(k, 1), t.topk(k, 1))
            _check(f"topk smallest {n} {k}", g.topk(k, 1, largest=False), t.topk(k, 1, largest=False))
            _check(f"kthvalue {n} {k}", g.kthvalue(k, 1), t.kthvalue(k, 1))
        _check(f"mode {n}", g.mode(1), t.mode(1))
        _check(f"nanmedian {n}", g.nanmedian(1), t.nanmedian(1))
        _check(f"median {n}", g.median(1), t.median(1))


def test_median_of_nans_sends_the_gradient_to_the_nans_as_pytorch(torch):
    data = [1.0, float("nan"), 3.0, float("nan")]
    g = gradlab.tensor(data, requires_grad=True)
    t = torch.tensor(data, requires_grad=True)
    g.median().backward()
    t.median().backward()
    np.testing.assert_array_equal(g.grad.numpy(), t.grad.numpy())
    g2 = gradlab.tensor([1.0, float("nan"), 3.0, 2.0], requires_grad=True)
    t2 = torch.tensor([1.0, float("nan"), 3.0, 2.0], requires_grad=True)
    g2.median(0).values.backward()
    t2.median(0).values.backward()
    np.testing.assert_array_equal(g2.grad.numpy(), t2.grad.numpy())


def test_median_of_tied_values_shares_the_gradient_as_pytorch(torch):
    """median()/nanmedian() over all elements: when several elements equal the median, PyTorch splits
    dY evenly among them; the value stays exactly the median (generated ties, NaNs, infinities)."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        a = rng.integers(0, 3, size=int(rng.integers(1, 9))).astype(np.float64) * 0.1
        if rng.random() < 0.2:
            a[rng.integers(0, a.size)] = np.nan
        if rng.random() < 0.1:
            a[:] = np.inf
        for name in ("median", "nanmedian"):
            g, t = gradlab.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
            yg, yt = getattr(g, name)(), getattr(t, name)()
            yg.backward()
            yt.backward()
            np.testing.assert_array_equal(yg.detach().numpy(), yt.detach().numpy(), err_msg=f"{name} {a}")
            np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=1e-15, err_msg=f"{name} {a}")


# ---------------------------------------------------------------- no NumPy RuntimeWarning escapes
WARN_CASES = {
    "float16 overflow in *": lambda L: L.full((3,), 60000.0, dtype=L.float16, requires_grad=True) * 10,
    "float16 overflow in +": lambda L: L.full((3,), 60000.0, dtype=L.float16) + 60000.0,
    "float32 overflow in *": lambda L: L.full((3,), 3e38, requires_grad=True) * 10,
    "exp of large values": lambda L: L.exp(L.tensor([1000.0, -1000.0, 0.0], requires_grad=True)),
    "division by zero": lambda L: L.tensor([1.0, -1.0, 0.0], requires_grad=True) / L.zeros(3),
    "log of 0 and of -1": lambda L: L.log(L.tensor([0.0, -1.0, 1.0], requires_grad=True)),
    "sqrt of -1": lambda L: L.sqrt(L.tensor([-1.0, 4.0], requires_grad=True)),
    "inf - inf": lambda L: L.full((2,), float("inf"), requires_grad=True) - float("inf"),
    "pow overflow": lambda L: L.pow(L.tensor([1e30], requires_grad=True), 3.0),
    "matmul of infs": lambda L: L.matmul(L.full((2, 2), float("inf"), requires_grad=True), L.zeros(2, 2)),
    "sin of inf": lambda L: L.sin(L.tensor([float("inf")], requires_grad=True)),
    "reciprocal of 0": lambda L: L.reciprocal(L.zeros(2, requires_grad=True)),
    "softplus of large": lambda L: L.nn.functional.softplus(L.tensor([3e38, float("nan")], requires_grad=True)),
    "tanh of float16 large": lambda L: L.tanh(L.full((2,), 60000.0, dtype=L.float16, requires_grad=True) * 4),
    "mean of float16 overflow": lambda L: L.full((4,), 60000.0, dtype=L.float16, requires_grad=True).sum(),
}


@pytest.mark.parametrize("case", sorted(WARN_CASES))
def test_no_numpy_warning_escapes_and_values_are_pytorchs(torch, case):
    f = WARN_CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = f(gradlab)
        if y.requires_grad:
            y.sum().backward()
    ty = f(torch)
    np.testing.assert_array_equal(np.asarray(y.detach().numpy(), dtype=np.float64),
                                  ty.detach().double().numpy())


def test_the_users_own_numpy_settings_are_kept():
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradlab.exp(gradlab.tensor([1000.0]))
        with pytest.raises(RuntimeWarning):
            np.exp(np.array([1000.0]))  # the user's own NumPy call still warns
    assert np.geterr() == before
