"""Dtypes: PyTorch's promotion over a grid, integer/bool tensors in forward ops, casts, and the refusals."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import gradlab
from gradlab import DTypeError
from gradlab.backend import dtypes as D

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
SCALARS = [True, 3, -2, 2.5]


def _name(dt):
    return D.dtype_name(dt)


def _tname(dt):
    return str(dt).replace("torch.", "")


def _g(name, zero_dim, value=1):
    arr = np.full(() if zero_dim else (2,), value).astype(D.as_dtype(name))
    return gradlab.Tensor._make(arr)


def _t(torch, name, zero_dim, value=1):
    return torch.full(() if zero_dim else (2,), value).to(getattr(torch, name))


@pytest.mark.parametrize("a", DTYPES)
def test_result_type_matches_torch_for_tensor_pairs(torch, a):
    for b, za, zb in itertools.product(DTYPES, (False, True), (False, True)):
        got = D.result_type(_g(a, za), _g(b, zb))
        want = torch.result_type(_t(torch, a, za), _t(torch, b, zb))
        assert _name(got) == _tname(want), (a, za, b, zb)


@pytest.mark.parametrize("a", DTYPES)
def test_result_type_matches_torch_with_python_scalars(torch, a):
    for s, za in itertools.product(SCALARS, (False, True)):
        got = D.result_type(_g(a, za), s)
        assert _name(got) == _tname(torch.result_type(_t(torch, a, za), s)), (a, za, s)
        got = D.result_type(s, _g(a, za))
        assert _name(got) == _tname(torch.result_type(s, _t(torch, a, za))), (s, a, za)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "maximum", "minimum", "eq", "lt"])
def test_binary_op_result_dtypes_match_torch(torch, op):
    """Not only result_type: the dtype an op really returns (fast paths included)."""
    names = [n for n in DTYPES if not (op == "sub" and n == "bool")]  # torch refuses bool - bool
    for a, b in itertools.product(names, repeat=2):
        for za, zb in ((False, False), (False, True), (True, False)):
            if op == "sub" and "bool" in (a, b):
                continue
            got = getattr(gradlab, op)(_g(a, za), _g(b, zb)).dtype
            want = getattr(torch, op)(_t(torch, a, za), _t(torch, b, zb)).dtype
            assert _name(got) == _tname(want), (op, a, za, b, zb)
    for a, s in itertools.product(names, SCALARS):
        if op in ("maximum", "minimum") or (op == "sub" and (a == "bool" or isinstance(s, bool))):
            continue
        got = getattr(gradlab, op)(_g(a, False), s).dtype
        want = getattr(torch, op)(_t(torch, a, False), s).dtype
        assert _name(got) == _tname(want), (op, a, s)
        if _name(got) in ("uint8", "int8", "int16"):  # out-of-range Python ints wrap around, as in PyTorch
            assert getattr(gradlab, op)(_g(a, False), s).tolist() == getattr(torch, op)(_t(torch, a, False), s).tolist()


def test_division_and_where_dtypes_match_torch(torch):
    for a, b in itertools.product(["bool", "int32", "int64", "float16", "bfloat16", "float32"], repeat=2):
        got = gradlab.div(_g(a, False, 3), _g(b, False, 2)).dtype
        assert _name(got) == _tname(torch.div(_t(torch, a, False, 3), _t(torch, b, False, 2)).dtype), (a, b)
    for a, b in itertools.product(["int32", "int64", "float16", "float32", "float64"], repeat=2):
        cond = gradlab.tensor([True, False])
        got = gradlab.where(cond, _g(a, False), _g(b, False))
        want = torch.where(torch.tensor([True, False]), _t(torch, a, False), _t(torch, b, False))
        assert _name(got.dtype) == _tname(want.dtype), (a, b)
    for a, s in itertools.product(["int64", "float16", "float32"], [0, 2.5]):
        got = gradlab.where(gradlab.tensor([True, False]), _g(a, False), s)
        want = torch.where(torch.tensor([True, False]), _t(torch, a, False), s)
        assert _name(got.dtype) == _tname(want.dtype), (a, s)


def test_default_dtype_decides_what_python_floats_bring(torch):
    prev = gradlab.get_default_dtype()
    try:
        gradlab.set_default_dtype(gradlab.float64)
        assert (gradlab.arange(3) * 2.5).dtype == gradlab.float64
        assert (gradlab.ones(2, dtype=gradlab.float32) * 2.5).dtype == gradlab.float32  # a float tensor keeps its own
        assert gradlab.tensor([1.0]).dtype == gradlab.float64
        assert D.result_type(_g("int64", False), 2.5) == D.float64
    finally:
        gradlab.set_default_dtype(prev)
    assert gradlab.tensor([1.0]).dtype == gradlab.float32
    with pytest.raises(DTypeError, match=r"set_default_dtype: int64 is not a floating dtype"):
        gradlab.set_default_dtype(gradlab.int64)


# ------------------------------------------------------------------- casts
@pytest.mark.parametrize("method,dtype", [("float", "float32"), ("half", "float16"), ("double", "float64"),
                                          ("bfloat16", "bfloat16"), ("long", "int64"), ("int", "int32"),
                                          ("bool", "bool")])
def test_cast_methods_match_torch(torch, method, dtype):
    v = np.array([-2.7, -0.5, 0.0, 0.3, 1.0, 3.14159, 1000.5])
    x, tx = gradlab.tensor(v), torch.from_numpy(v)
    y, ty = getattr(x, method)(), getattr(tx, method)()
    assert _name(y.dtype) == dtype == _tname(ty.dtype)
    np.testing.assert_array_equal(y.numpy().astype(np.float64), ty.to(torch.float64).numpy())
    z = x.to(getattr(gradlab, dtype))
    assert z.dtype == y.dtype and x.to(gradlab.float64) is x  # same dtype: no copy, as PyTorch
    for mod, t in ((gradlab, x), (torch, tx)):  # a string is a device in .to(), never a dtype
        with pytest.raises(RuntimeError):
            t.to(dtype)


def test_cast_gradient_comes_back_in_the_input_dtype():
    w = gradlab.tensor([1.0, 2.0, 3.0], requires_grad=True)
    for low in (gradlab.float16, gradlab.bfloat16):
        y = (w.to(low) * 2).sum()
        assert y.dtype == low
        y.backward()
        assert w.grad.dtype == gradlab.float32 and w.grad.tolist() == [2.0, 2.0, 2.0]
        w.grad = None


def test_16_bit_floats_flow_through_the_new_ops():
    for dt in (gradlab.float16, gradlab.bfloat16):
        x = gradlab.ones(2, 3, dtype=dt, requires_grad=True)
        outs = [gradlab.gelu(x), gradlab.gelu(x, approximate="tanh"), gradlab.silu(x), gradlab.softplus(x),
                gradlab.sin(x), gradlab.log1p(x), gradlab.var(x, 1), gradlab.logsumexp(x, 1), gradlab.prod(x, 0),
                gradlab.norm(x), gradlab.einsum("ij,kj->ik", x, x), gradlab.flip(x, 0), x * 2.5]
        for o in outs:
            assert o.dtype == dt, o.grad_fn
            o.sum().backward()
        assert x.grad.dtype == dt and np.all(np.isfinite(x.grad.numpy().astype(np.float32)))


# ------------------------------------------------ integer and bool tensors
def test_integer_and_bool_tensors_refuse_requires_grad():
    for make in (lambda: gradlab.tensor([1, 2, 3], requires_grad=True),
                 lambda: gradlab.tensor([True, False], requires_grad=True),
                 lambda: gradlab.arange(3).requires_grad_(),
                 lambda: gradlab.zeros(2, dtype=gradlab.int8, requires_grad=True)):
        with pytest.raises(DTypeError, match=r"only floating"):
            make()
    with pytest.raises(TypeError):  # still a TypeError for code catching the built-in
        gradlab.tensor([1, 2], requires_grad=True)


def test_integer_tensors_work_in_forward_ops(torch):
    v = np.array([[3, -1, 4, 1], [5, 9, -2, 6], [5, 3, 5, 8]], dtype=np.int64)
    x, tx = gradlab.tensor(v), torch.from_numpy(v)
    idx = np.array([[0, 2, 1, 1]])
    pairs = [
        (x[1:, ::2], tx[1:, ::2]), (x[[0, 2, 0]], tx[[0, 2, 0]]), (x[x > 2], tx[tx > 2]),
        (gradlab.gather(x, 0, gradlab.tensor(idx)), torch.gather(tx, 0, torch.from_numpy(idx))),
        (gradlab.index_select(x, 1, gradlab.tensor([3, 0])), torch.index_select(tx, 1, torch.tensor([3, 0]))),
        (gradlab.scatter(x, 0, gradlab.tensor(idx), 7), torch.scatter(tx, 0, torch.from_numpy(idx), 7)),
        (gradlab.scatter_add(x, 0, gradlab.tensor(idx), x[:1]), torch.scatter_add(tx, 0, torch.from_numpy(idx), tx[:1])),
        (x.masked_fill(x < 0, 0), tx.masked_fill(tx < 0, 0)),
        (gradlab.where(x > 3, x, -x), torch.where(tx > 3, tx, -tx)),
        (gradlab.where(x > 3, x, 0), torch.where(tx > 3, tx, 0)),
        (x == 5, tx == 5), (x < 4, tx < 4), (gradlab.maximum(x, 2 * x), torch.maximum(tx, 2 * tx)),
        (gradlab.tril(x), torch.tril(tx)), (gradlab.flip(x, 0), torch.flip(tx, (0,))),
        (gradlab.roll(x, 1, 1), torch.roll(tx, 1, 1)), (x.repeat(2, 1), tx.repeat(2, 1)),
        (gradlab.cumsum(x, 1), torch.cumsum(tx, 1)), (gradlab.prod(x, 1), torch.prod(tx, 1)), (x.sum(), tx.sum()),
        (gradlab.einsum("ij,ij->i", x, x), torch.einsum("ij,ij->i", tx, tx)),
        (gradlab.split(x, 2, 1)[1], torch.split(tx, 2, 1)[1]), (gradlab.floor(x), torch.floor(tx)),
        (x.as_strided((2, 2), (1, 4)), tx.as_strided((2, 2), (1, 4))),
    ]
    for i, (got, want) in enumerate(pairs):
        assert _name(got.dtype) == _tname(want.dtype), i
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=str(i))
        assert not got.requires_grad and got.grad_fn is None
    b = gradlab.tensor([True, False, True])
    assert (b & ~b).tolist() == [False, False, False] and (b | ~b).tolist() == [True, True, True]
    assert gradlab.where(b, 1.5, 0).dtype == gradlab.float32


def test_integer_outputs_of_differentiable_inputs_carry_no_graph():
    x = gradlab.tensor([0.5, 2.5, -1.0], requires_grad=True)
    i = gradlab.argmax(x)
    assert i.dtype == gradlab.int64 and not i.requires_grad
    y = x.long()
    assert y.dtype == gradlab.int64 and not y.requires_grad and y.grad_fn is None
    assert y.tolist() == [0, 2, -1]


def test_mixed_dtype_ops_promote_and_send_each_input_its_own_dtype(torch):
    a = gradlab.tensor([1.0, 2.0], dtype=gradlab.float32, requires_grad=True)
    b = gradlab.tensor([3.0, 4.0], dtype=gradlab.float64, requires_grad=True)
    h = gradlab.tensor([0.5, 0.25], dtype=gradlab.float16, requires_grad=True)
    # (einsum promotes where it only multiplies, as PyTorch's; a mixed contraction, "i,i->", is refused
    # there and here: tests/test_errors_ops.py)
    y = (a * b).sum() + gradlab.einsum("i,i->i", h, a).sum()
    ta = torch.tensor([1.0, 2.0], dtype=torch.float32, requires_grad=True)
    tb = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
    th = torch.tensor([0.5, 0.25], dtype=torch.float16, requires_grad=True)
    ty = (ta * tb).sum() + (th.float() * ta).sum()
    assert y.dtype == gradlab.float64 and _tname(ty.dtype) == "float64"
    y.backward()
    ty.backward()
    for g, tg in ((a, ta), (b, tb), (h, th)):
        assert _name(g.grad.dtype) == _tname(tg.grad.dtype)
        np.testing.assert_allclose(g.grad.numpy().astype(np.float64), tg.grad.double().numpy(), rtol=1e-3)


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64", None])
def test_finfo_gives_torchs_limits(torch, name):
    """``gradlab.finfo`` (one definition: ``backend.dtypes.finfo``) matches ``torch.finfo``; no argument means the
    default dtype."""
    mine = gradlab.finfo(getattr(gradlab, name) if name else None)
    theirs = torch.finfo(getattr(torch, name)) if name else torch.finfo()
    for field in ("eps", "max", "min", "tiny", "bits"):
        assert float(getattr(mine, field)) == float(getattr(theirs, field)), (name, field)
