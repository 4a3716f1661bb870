"""The Tensor class and the factories: attributes, conversions, repr, promotion."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
from gradlab import DTypeError, GradError


def test_attributes_of_a_new_tensor():
    x = gradlab.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert x.shape == (2, 3) and x.ndim == 2 and x.numel() == 6
    assert x.dtype == gradlab.float32  # Python floats become the default dtype
    assert x.device == "cpu" and str(x.device) == "cpu"
    assert x.strides == (3, 1)  # in elements, as PyTorch's stride()
    assert x.is_contiguous()
    assert x.requires_grad is False and x.grad is None and x.grad_fn is None and x.is_leaf
    assert x.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def test_dtypes_inferred_like_pytorch():
    assert gradlab.tensor([1, 2]).dtype == gradlab.int64
    assert gradlab.tensor([True, False]).dtype == gradlab.bool
    assert gradlab.tensor(3.5).dtype == gradlab.float32
    assert gradlab.tensor(np.zeros(2, dtype=np.float64)).dtype == gradlab.float64  # arrays keep theirs
    assert gradlab.tensor([1, 2], dtype=gradlab.float64).dtype == gradlab.float64


def test_tensor_copies_but_from_numpy_shares():
    a = np.arange(3.0)
    t = gradlab.tensor(a)
    s = gradlab.from_numpy(a)
    a[0] = 100
    assert t[0].item() == 0.0 and s[0].item() == 100.0


def test_transpose_is_a_non_contiguous_view_and_contiguous_copies():
    x = gradlab.arange(6.0).reshape(2, 3)
    t = x.T
    assert t.shape == (3, 2) and t.strides == (1, 3) and not t.is_contiguous()
    c = t.contiguous()
    assert c.is_contiguous() and c.strides == (2, 1)
    np.testing.assert_array_equal(c.numpy(), x.numpy().T)


def test_item_and_its_error():
    assert gradlab.tensor([[2.5]]).item() == 2.5
    with pytest.raises(ValueError, match=r"item\(\).*6 elements.*\(2, 3\)"):
        gradlab.zeros(2, 3).item()


def test_numpy_refuses_tensors_that_require_grad():
    x = gradlab.ones(2, requires_grad=True)
    with pytest.raises(GradError, match=r"detach\(\)\.numpy\(\)"):
        x.numpy()
    assert x.detach().numpy().tolist() == [1.0, 1.0]


def test_requires_grad_on_integer_tensor_is_refused():
    with pytest.raises(DTypeError, match="only floating"):
        gradlab.tensor([1, 2, 3], requires_grad=True)
    with pytest.raises(TypeError):  # DTypeError subclasses TypeError
        gradlab.arange(3).requires_grad_()


def test_detach_shares_data_and_cuts_the_graph():
    x = gradlab.ones(3, requires_grad=True)
    y = x * 2
    d = y.detach()
    assert d.grad_fn is None and not d.requires_grad and d.is_leaf
    assert np.shares_memory(d._data, y._data)


def test_repr_shows_values_shape_dtype_and_grad_fn():
    x = gradlab.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=gradlab.float64, requires_grad=True)
    y = (x * 2).sum()
    r = repr(x)
    assert "tensor([[1., 2.]" in r and "shape=(2, 2)" in r and "dtype=float64" in r and "requires_grad=True" in r
    assert "grad_fn=<sum>" in repr(y)
    x.name = "weights"
    assert "name='weights'" in repr(x)
    assert "shape=(1000,)" in repr(gradlab.zeros(1000))  # long tensors are summarised


@pytest.mark.parametrize("factory,args", [
    (gradlab.zeros, (2, 3)), (gradlab.ones, ((2, 3),)), (gradlab.rand, (2, 3)), (gradlab.randn, (2, 3)),
])
def test_factories_shape_and_default_dtype(factory, args):
    t = factory(*args)
    assert t.shape == (2, 3) and t.dtype == gradlab.float32


def test_other_factories():
    assert gradlab.full((2, 2), 7).tolist() == [[7, 7], [7, 7]]
    assert gradlab.full((2,), 1.5).dtype == gradlab.float32
    assert gradlab.arange(5).dtype == gradlab.int64 and gradlab.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert gradlab.arange(0, 1, 0.25).dtype == gradlab.float32
    np.testing.assert_array_equal(gradlab.eye(3).numpy(), np.eye(3, dtype=np.float32))
    x = gradlab.randn(4, 2, dtype=gradlab.float64)
    assert gradlab.zeros_like(x).dtype == gradlab.float64 and gradlab.ones_like(x).shape == (4, 2)


def test_manual_seed_makes_random_factories_reproducible():
    gradlab.manual_seed(123)
    a, b = gradlab.randn(5), gradlab.rand(3)
    gradlab.manual_seed(123)
    c, d = gradlab.randn(5), gradlab.rand(3)
    assert a.tolist() == c.tolist() and b.tolist() == d.tolist()
    gradlab.manual_seed(124)
    assert gradlab.randn(5).tolist() != a.tolist()


@pytest.mark.parametrize("make,scalar,expected", [
    (lambda: gradlab.ones(2), 2.5, "float32"),            # float32 * Python float stays float32
    (lambda: gradlab.ones(2, dtype=gradlab.float16), 2.5, "float16"),
    (lambda: gradlab.arange(3), 2.5, "float32"),          # int tensor * float -> default float (not float64)
    (lambda: gradlab.arange(3), 2, "int64"),
    (lambda: gradlab.tensor([True, False]), 3, "int64"),
])
def test_python_scalars_follow_pytorch_promotion(make, scalar, expected, torch):
    x = make()
    got = (x * scalar).dtype
    tx = torch.from_numpy(x.numpy().copy())
    assert str(got) == expected == str((tx * scalar).dtype).replace("torch.", "")


def test_tensor_tensor_promotion_matches_pytorch(torch):
    dts = ["bool", "uint8", "int8", "int32", "int64", "float16", "float32", "float64"]
    for a in dts:
        for b in dts:
            for shape_b in [(2,), ()]:  # a 0-d tensor only wins by category, as in PyTorch
                x = gradlab.zeros(2, dtype=getattr(gradlab, a))
                y = gradlab.zeros(shape_b, dtype=getattr(gradlab, b))
                tx = torch.zeros(2, dtype=getattr(torch, a))
                ty = torch.zeros(shape_b, dtype=getattr(torch, b))
                assert str((x + y).dtype) == str((tx + ty).dtype).replace("torch.", ""), (a, b, shape_b)


def test_int_division_gives_float():
    assert (gradlab.arange(4) / 2).dtype == gradlab.float32
    assert (gradlab.arange(4) / 2).tolist() == [0.0, 0.5, 1.0, 1.5]


def test_comparisons_give_bool_tensors_without_grad():
    x = gradlab.tensor([1.0, 2.0, 3.0], requires_grad=True)
    m = x > 1.5
    assert m.dtype == gradlab.bool and not m.requires_grad and m.tolist() == [False, True, True]
    assert (x == 2).tolist() == [False, True, False]


def test_tensor_is_hashable_by_identity():
    a, b = gradlab.ones(2), gradlab.ones(2)
    assert len({a, b}) == 2


def test_len_iter_and_bool():
    x = gradlab.arange(3)
    assert len(x) == 3 and [int(v) for v in x] == [0, 1, 2]
    assert bool(gradlab.tensor([1]))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(gradlab.ones(2))


def test_numpy_interop_and_reflected_ops():
    x = gradlab.tensor([1.0, 2.0])
    assert np.asarray(x).tolist() == [1.0, 2.0]
    y = 3 - x
    assert isinstance(y, gradlab.Tensor) and y.tolist() == [2.0, 1.0]
    assert (2 ** x).tolist() == [2.0, 4.0]
