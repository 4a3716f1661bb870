"""The representative call of each class the fuzz suite added later (``tests/fuzz_calls.py``: ndarray
and list operands, non-bool flags, dtype strings, empty inputs, aliasing), run in gradlab and PyTorch:
what PyTorch refuses gradlab refuses, with an error the same ``except`` clause catches, naming the
function called; what PyTorch shares, gradlab shares. ``tests/test_fuzz_errors.py`` counts the
generated cases of each class; these are the readable ones.
"""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
import gradlab.nn.functional  # noqa: F401 - gradlab.nn.functional.* below
from gradlab.errors import GradlabError


def _refused_like_torch(torch, call, name):
    """``call(lib)`` raises in both libraries; gradlab's error is its own, of PyTorch's built-in class,
    and names ``name``."""
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(GradlabError) as ours:
        call(gradlab)
    base = next(c for c in type(theirs.value).__mro__ if c.__module__ == "builtins")
    assert isinstance(ours.value, base), f"{type(ours.value).__name__} is not a {base.__name__}"
    assert name in str(ours.value), str(ours.value)
    return ours.value


# ---------------------------------------------------------------- NumPy arrays and lists as operands
UNARY_AND_BINARY = {
    "tanh": lambda lib, a: lib.tanh(a),
    "sum": lambda lib, a: lib.sum(a),
    "reshape": lambda lib, a: lib.reshape(a, (6,)),
    "add": lambda lib, a: lib.add(lib.ones(2, 3), a),
    "maximum": lambda lib, a: lib.maximum(lib.ones(2, 3), a),
    "eq": lambda lib, a: lib.eq(lib.ones(2, 3), a),
    "linear": lambda lib, a: lib.nn.functional.linear(a, lib.ones(4, 3)),
    "mse_loss": lambda lib, a: lib.nn.functional.mse_loss(lib.ones(2, 3), a),
    "huber_loss": lambda lib, a: lib.nn.functional.huber_loss(lib.ones(2, 3), a),
}


@pytest.mark.parametrize("name", sorted(UNARY_AND_BINARY))
def test_a_numpy_array_where_a_tensor_belongs_is_refused(torch, name):
    call = UNARY_AND_BINARY[name]
    err = _refused_like_torch(torch, lambda lib: call(lib, np.ones((2, 3), dtype=np.float32)), name)
    assert "from_numpy" in str(err) and isinstance(err, TypeError)


@pytest.mark.parametrize("name", ["add", "maximum", "eq"])
def test_a_list_where_a_tensor_belongs_is_refused(torch, name):
    _refused_like_torch(torch, lambda lib: UNARY_AND_BINARY[name](lib, [[1.0] * 3] * 2), name)


def test_the_operators_still_take_an_array_as_pytorch_computes_them(torch):
    """``x + array`` works in PyTorch (NumPy computes it) and is common in teaching code: the operators,
    and only they, take the array as a tensor; the values agree."""
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    for op in (lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x - y, lambda x, y: x == y):
        ours, theirs = op(gradlab.ones(2, 3), a), op(torch.ones(2, 3), a)
        assert isinstance(ours, gradlab.Tensor)
        np.testing.assert_array_equal(ours.numpy(), np.asarray(theirs))
    x = gradlab.ones(2, 3, requires_grad=True)
    (x * a).sum().backward()  # and the gradient flows to the tensor
    np.testing.assert_array_equal(x.grad.numpy(), a.astype(np.float32))


# ---------------------------------------------------------------- flags: True or False, not 1 or 'yes'
FLAGS = {
    "dropout": lambda lib, v: lib.nn.functional.dropout(lib.ones(3), 0.5, training=v),
    "max_pool2d": lambda lib, v: lib.nn.functional.max_pool2d(lib.ones(1, 1, 4, 4), 2, ceil_mode=v),
    "avg_pool1d": lambda lib, v: lib.nn.functional.avg_pool1d(lib.ones(1, 1, 4), 2, count_include_pad=v),
    "kthvalue": lambda lib, v: lib.kthvalue(lib.ones(3), 1, 0, v),
    "topk": lambda lib, v: lib.topk(lib.ones(3), 1, largest=v),
    "batch_norm": lambda lib, v: lib.nn.functional.batch_norm(lib.ones(2, 3), lib.zeros(3), lib.ones(3), training=v),
    "scaled_dot_product_attention": lambda lib, v: lib.nn.functional.scaled_dot_product_attention(
        lib.ones(1, 2, 3), lib.ones(1, 2, 3), lib.ones(1, 2, 3), is_causal=v),
}


@pytest.mark.parametrize("value", [1, "yes"])
@pytest.mark.parametrize("name", sorted(FLAGS))
def test_a_flag_takes_only_a_bool(torch, name, value):
    err = _refused_like_torch(torch, lambda lib: FLAGS[name](lib, value), name)
    assert "must be a bool" in str(err)
    FLAGS[name](gradlab, True), FLAGS[name](gradlab, False)  # and both bools still work


# ---------------------------------------------------------------- factories: a dtype, not its name; a bool
FACTORIES = {
    "zeros": lambda lib, **k: lib.zeros(3, **k),
    "ones": lambda lib, **k: lib.ones(2, 3, **k),
    "full": lambda lib, **k: lib.full((2,), 1.5, **k),
    "tensor": lambda lib, **k: lib.tensor([1.0, 2.0], **k),
    "arange": lambda lib, **k: lib.arange(0.0, 3.0, **k),
    "linspace": lambda lib, **k: lib.linspace(0.0, 1.0, 3, **k),
    "randn": lambda lib, **k: lib.randn(2, **k),
    "zeros_like": lambda lib, **k: lib.zeros_like(lib.ones(2), **k),
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_a_factory_refuses_a_dtype_string_and_a_non_bool_requires_grad(torch, name):
    make = FACTORIES[name]
    err = _refused_like_torch(torch, lambda lib: make(lib, dtype="float32"), name)
    assert "gradlab.float32" in str(err)  # the message says how to write it
    _refused_like_torch(torch, lambda lib: make(lib, requires_grad=1), name)
    assert make(gradlab, dtype=gradlab.float64, requires_grad=True).requires_grad


def test_to_reads_a_string_as_a_device_as_pytorch(torch):
    _refused_like_torch(torch, lambda lib: lib.ones(2).to("float32"), "to")


# ---------------------------------------------------------------- aliasing: diagonal() is a view
def test_diagonal_is_a_view_as_in_pytorch(torch):
    """``x.diagonal()`` shares ``x``'s memory and version counter: an in-place change through it is seen
    in ``x`` (the same values as PyTorch's), and a change to ``x`` is seen in it."""
    for offset, d1, d2 in [(0, 0, 1), (1, 0, 1), (-1, 1, 0), (1, 2, 0)]:
        x, tx = gradlab.arange(24.0).reshape(2, 3, 4), torch.arange(24.0).reshape(2, 3, 4)
        if d1 == 2 or d2 == 2:
            x, tx = x.reshape(3, 2, 4), tx.reshape(3, 2, 4)
        d, td = x.diagonal(offset, d1, d2), tx.diagonal(offset, d1, d2)
        assert np.shares_memory(d.numpy(), x.numpy())
        before = x._version.value
        d.mul_(-1.0)
        td.mul_(-1.0)
        assert x._version is d._version and d._version.value == before + 1  # one shared counter
        np.testing.assert_array_equal(x.numpy(), tx.numpy())
        x.add_(1.0)
        tx.add_(1.0)
        np.testing.assert_array_equal(d.numpy(), td.numpy())


def test_diagonal_gradient_and_its_refusals_match_pytorch(torch):
    x = gradlab.randn(3, 4, 5, dtype=gradlab.float64, requires_grad=True)
    assert gradlab.autograd.gradcheck(lambda t: gradlab.diagonal(t, 1, 2, 0), (x,))
    assert gradlab.autograd.gradgradcheck(lambda t: gradlab.diagonal(t, -1, 0, 1) ** 2, (x,))
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    ((x * 2).diagonal(0, 1, 2) ** 2).sum().backward()
    ((tx * 2).diagonal(0, 1, 2) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    # a view of a leaf that requires grad cannot be changed in place, in either library
    _refused_like_torch(torch, lambda lib: lib.ones(2, 3, requires_grad=True).diagonal().zero_(), "zero_")


# ---------------------------------------------------------------- empty (size 0) inputs
EMPTY_REFUSED = {
    "conv2d": lambda lib: lib.nn.functional.conv2d(lib.ones(1, 2, 3, 3), lib.ones(0, 2, 1, 1)),
    "conv3d": lambda lib: lib.nn.functional.conv3d(lib.ones(1, 2, 3, 3, 3), lib.ones(0, 1, 1, 1, 1), groups=2),
    "solve": lambda lib: lib.linalg.solve(lib.eye(2).expand(0, 2, 2), lib.ones(2, 2, 1)),
    "scaled_dot_product_attention": lambda lib: lib.nn.functional.scaled_dot_product_attention(
        lib.ones(0, 2, 2, 3), lib.ones(2, 2, 2, 3), lib.ones(2, 2, 2, 3)),
    "bilinear": lambda lib: lib.nn.functional.bilinear(lib.ones(2, 2), lib.ones(2, 3), lib.ones(1, 2, 3),
                                                       lib.ones(0)),
    "instance_norm": lambda lib: lib.nn.functional.instance_norm(lib.ones(0, 2, 3), weight=lib.ones(2)),
    "InstanceNorm1d": lambda lib: lib.nn.InstanceNorm1d(2, affine=True)(lib.ones(0, 2, 3)),
    "LSTM": lambda lib: lib.nn.LSTM(3, 2)(lib.ones(0, 1, 3)),
}


def test_fused_lstm_refuses_an_empty_sequence_as_nn_lstm_does():
    from gradlab.errors import ShapeError
    with pytest.raises(ShapeError, match="fused_lstm: the sequence is empty"):
        gradlab.fused_lstm(gradlab.ones(0, 2, 8), gradlab.zeros(2, 2), gradlab.zeros(2, 2), gradlab.ones(8, 2))
    assert isinstance(ShapeError("x"), RuntimeError)  # (PyTorch: "Expected sequence length to be larger than 0")


def test_pixel_unshuffle_of_an_empty_batch_has_the_documented_shape(torch):
    """PyTorch's meta backend gives (0, 8, 2, 3); its CPU kernel returns the input's shape (pytorch#192816)."""
    y = gradlab.nn.functional.pixel_unshuffle(gradlab.ones(0, 2, 4, 6), 2)
    assert y.shape == tuple(torch.nn.functional.pixel_unshuffle(torch.ones(0, 2, 4, 6, device="meta"), 2).shape)
    assert y.shape == (0, 8, 2, 3)
    assert gradlab.nn.functional.pixel_shuffle(y, 2).shape == (0, 2, 4, 6)


def test_empty_inputs_gradlab_refuses_on_purpose_are_listed():
    """An out-of-range index into an empty input, and a value whose batch does not match the query's."""
    from gradlab.checks import stricter_reason
    with pytest.raises(IndexError, match="index_add"):
        gradlab.index_add(gradlab.ones(0, 3), 0, gradlab.tensor([2]), gradlab.ones(1, 3))
    with pytest.raises(ValueError, match="scaled_dot_product_attention: the batch dims .* value \\(0, 2, 1, 1\\)"):
        q = gradlab.ones(2, 2, 1, 1)
        gradlab.nn.functional.scaled_dot_product_attention(q, q, gradlab.ones(0, 2, 1, 1))
    assert stricter_reason("index_add", "arg 0 -> empty") and stricter_reason("scaled_dot_product_attention",
                                                                              "arg 2 -> empty")


@pytest.mark.parametrize("name", sorted(EMPTY_REFUSED))
def test_an_empty_argument_pytorch_refuses_is_refused(torch, name):
    _refused_like_torch(torch, EMPTY_REFUSED[name], name)


def test_empty_inputs_pytorch_accepts_give_its_results_quietly(torch, recwarn):
    for lib_call in (lambda lib: lib.var(lib.ones(0, 3, dtype=lib.float64), dim=0),
                     lambda lib: lib.std(lib.ones(0, 3, dtype=lib.float64)),
                     lambda lib: lib.linalg.svdvals(lib.ones(0, 3, dtype=lib.float64))):
        ours, theirs = lib_call(gradlab), lib_call(torch)
        assert ours.shape == tuple(theirs.shape)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())  # nan where nothing is reduced
    rm, rv = gradlab.zeros(2), gradlab.ones(2)
    y = gradlab.nn.functional.batch_norm(gradlab.ones(0, 2, 1), rm, rv, training=True)
    assert y.shape == (0, 2, 1) and rm.tolist() == [0.0, 0.0] and rv.tolist() == [1.0, 1.0]  # stats untouched
    y, ty = gradlab.nn.functional.group_norm(gradlab.ones(0, 4, 1), 2), torch.nn.functional.group_norm(
        torch.ones(0, 4, 1), 2)
    assert y.shape == tuple(ty.shape)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_index_copy_with_a_source_of_the_wrong_length_is_an_index_error_as_in_pytorch(torch):
    err = _refused_like_torch(torch, lambda lib: lib.ones(3, 2).index_copy(0, lib.tensor([0, 1]), lib.ones(0, 2)),
                              "index_copy")
    assert isinstance(err, IndexError)
