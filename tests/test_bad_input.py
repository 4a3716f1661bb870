"""Bad input gets gradlab's own error classes (each a subclass of the matching built-in) with a
message naming the op/argument and what to do -- never a bare NumPy traceback -- and ordinary
edge values (division by zero on floats) give PyTorch's inf/nan without NumPy warnings."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradlab as g
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.errors import (
    ArgumentError,
    ArgumentTypeError,
    DTypeError,
    GradError,
    GradlabError,
    IndexOutOfRange,
    ShapeError,
)

x = g.randn(2, 3, 4)

# (program, expected gradlab class, words the message must contain)
BAD = {
    "broadcast": (lambda: x + g.ones(3, 3), ShapeError, ["add", "(2, 3, 4)", "(3, 3)"]),
    "matmul": (lambda: x @ g.ones(3, 2), ShapeError, ["matmul", "(2, 3, 4)", "(3, 2)"]),
    "reshape": (lambda: x.reshape(5, 5), ShapeError, ["reshape", "(5, 5)"]),
    "view_noncontig": (lambda: x.transpose(0, 1).view(-1), ShapeError, ["view", "reshape"]),
    "sum_dim": (lambda: x.sum(3), IndexOutOfRange, ["sum", "dim 3"]),
    "float_dim": (lambda: x.max(1.0), ArgumentTypeError, ["dim", "1.0"]),
    "str_dim": (lambda: x.sum(dim="a"), ArgumentTypeError, ["sum", "dim"]),
    "split_float": (lambda: x.split(2.5, 2), ArgumentTypeError, ["split", "2.5"]),
    "index": (lambda: x[2], IndexOutOfRange, ["index 2", "(2, 3, 4)"]),
    "index_tensor": (lambda: x[g.tensor([0, 5])], IndexOutOfRange, ["5"]),
    "index_float_tensor": (lambda: x[g.tensor([0.0, 1.0])], DTypeError, ["long"]),
    "index_float": (lambda: x[1.0], ArgumentTypeError, ["float"]),
    "cat_shape": (lambda: g.cat([x, g.ones(2, 4, 4)], 2), ShapeError, ["cat", "(2, 4, 4)"]),
    "cat_not_list": (lambda: g.cat(x, x), ArgumentTypeError, ["cat", "list"]),
    "item": (lambda: x.item(), ValueError, ["item", "24 elements"]),
    "add_str": (lambda: x + "a", ArgumentTypeError, ["add", "str"]),
    "compare_none": (lambda: x < None, ArgumentTypeError, ["lt", "NoneType"]),
    "linear_call_str": (lambda: nn.Linear(2, 3)("abc"), ArgumentTypeError, ["linear", "str"]),
    "clamp_no_bounds": (lambda: x.clamp(), ArgumentTypeError, ["clamp", "min"]),
    "mean_int": (lambda: g.tensor([1, 2]).mean(), DTypeError, ["mean", "int64", "float"]),
    "softmax_int": (lambda: F.softmax(g.tensor([1, 2]), 0), DTypeError, ["softmax", "int64"]),
    "int_neg_pow": (lambda: g.tensor([2]) ** -1, ArgumentError, ["pow", "negative", "float"]),
    "int_floordiv_zero": (lambda: g.tensor([1, 2]) // 0, ArgumentError, ["floor_divide", "zero"]),
    "int_mod_zero": (lambda: g.tensor([1, 2]) % g.tensor([1, 0]), ArgumentError, ["remainder", "zero"]),
    "div_mode": (lambda: g.div(x, 2, rounding_mode="round"), ArgumentError, ["rounding_mode", "trunc"]),
    "randint_range": (lambda: g.randint(5, 5, (2,)), ArgumentError, ["randint", "low"]),
    "linspace_steps": (lambda: g.linspace(0, 1, -1), ArgumentError, ["linspace", "steps"]),
    "eye_negative": (lambda: g.eye(-1), ArgumentError, ["eye", "-1"]),
    "arange_sign": (lambda: g.arange(0, 5, -1), ArgumentError, ["arange", "step"]),
    "arange_zero_step": (lambda: g.arange(0, 5, 0), ArgumentError, ["arange", "step"]),
    "arange_inf": (lambda: g.arange(float("inf")), ArgumentError, ["arange", "finite"]),
    "full_str": (lambda: g.full((2,), "a"), ArgumentTypeError, ["full", "fill_value"]),
    "clamp_str": (lambda: x.clamp("a"), ArgumentTypeError, ["clamp", "min"]),
    "narrow": (lambda: x.narrow(2, 3, 2), ArgumentError, ["narrow", "length"]),
    "topk": (lambda: x.topk(5), ArgumentError, ["topk", "k=5"]),
    "gather_float": (lambda: x.gather(0, g.zeros(2, 3, 4)), DTypeError, ["gather", "index"]),
    "gather_negative": (lambda: x.gather(2, g.full((2, 3, 1), -1)), IndexOutOfRange, ["gather", "[0, 4)", "-1"]),
    "index_select_negative": (lambda: x.index_select(0, g.tensor([-1])), IndexOutOfRange, ["index_select"]),
    "scatter_negative": (lambda: g.zeros(3).scatter(0, g.tensor([-1]), g.ones(1)), IndexOutOfRange, ["scatter"]),
    "cross_entropy_class": (lambda: F.cross_entropy(g.randn(3, 4), g.tensor([0, 4, 1])), IndexOutOfRange,
                            ["cross_entropy", "4"]),
    "layer_norm": (lambda: F.layer_norm(x, (3,)), ShapeError, ["layer_norm", "(3,)"]),
    "conv_channels": (lambda: F.conv2d(g.randn(1, 2, 5, 5), g.randn(4, 3, 3, 3)), ShapeError, ["conv2d", "channels"]),
    "embedding_id": (lambda: nn.Embedding(3, 2)(g.tensor([0, 3])), IndexOutOfRange, ["embedding", "3"]),
    "einsum_rank": (lambda: g.einsum("ij,jk->ik", x, x), ShapeError, ["einsum", "(2, 3, 4)"]),
    "backward_nonscalar": (lambda: (g.ones(3, requires_grad=True) * 2).backward(), GradError, ["backward"]),
    "int_requires_grad": (lambda: g.tensor([1, 2], requires_grad=True), DTypeError, ["int64"]),
    "optimizer_tensor": (lambda: g.optim.SGD(g.ones(1, requires_grad=True), lr=0.1), ArgumentTypeError,
                         ["SGD", "params"]),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_raises_gradlab_error(name):
    assert_refused(name, *BAD[name])


def assert_refused(name, fn, cls, words):
    """``fn()`` raises a gradlab error that is a ``cls`` (what PyTorch-style code catches) and whose
    message holds each of ``words``."""
    with pytest.raises(cls) as info:
        fn()
    assert isinstance(info.value, GradlabError), f"{name}: {type(info.value).__name__} is not a gradlab error"
    msg = str(info.value)
    for w in words:
        assert w in msg, f"{name}: {w!r} missing from {msg!r}"


def test_error_classes_subclass_builtins():
    assert issubclass(ArgumentTypeError, TypeError) and issubclass(ArgumentTypeError, GradlabError)
    assert issubclass(DTypeError, TypeError) and issubclass(ShapeError, ValueError)
    assert issubclass(IndexOutOfRange, IndexError) and issubclass(GradError, RuntimeError)
    assert g.ArgumentTypeError is ArgumentTypeError


def test_float_division_edge_values_match_pytorch_quietly(torch):
    progs = [
        lambda L: L.tensor([1.0, -2, 0]) // 0,
        lambda L: L.tensor([1.0, 2]) % 0,
        lambda L: L.tensor([1.0, -1, 0]) / 0,
        lambda L: L.tensor([0.0, -1]).log(),
        lambda L: L.tensor([-1.0]).sqrt(),
        lambda L: L.tensor([1, 0]) / 0,
    ]
    for p in progs:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = p(g)
        np.testing.assert_array_equal(got.numpy(), p(torch).numpy())
