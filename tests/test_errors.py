"""Bad input gets a gradlab error naming the op, the shapes and what to do."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
from gradlab import GradcheckError, GradlabError, IndexOutOfRange, ShapeError
from gradlab.autograd import Function, gradcheck


def test_broadcast_mismatch_names_both_shapes_and_the_dim():
    with pytest.raises(ShapeError) as e:
        gradlab.ones(3, 4) + gradlab.ones(5)
    msg = str(e.value)
    assert "add" in msg and "(3, 4)" in msg and "(5,)" in msg and "dim -1" in msg and "size 4" in msg
    assert isinstance(e.value, ValueError) and isinstance(e.value, GradlabError)


def test_broadcast_mismatch_uses_tensor_names():
    h = gradlab.ones(8, 16)
    h.name = "h"
    with pytest.raises(ShapeError, match=r"'h' \(8, 16\)"):
        h * gradlab.ones(8)


def test_matmul_mismatch():
    with pytest.raises(ShapeError, match=r"matmul: cannot multiply \(3, 4\) by \(5, 2\): inner dimensions 4 and 5 differ"):
        gradlab.ones(3, 4) @ gradlab.ones(5, 2)
    with pytest.raises(ShapeError, match="at least 1 dimension"):
        gradlab.matmul(gradlab.tensor(2.0), gradlab.ones(2))
    with pytest.raises(ShapeError, match="batch dims"):
        gradlab.ones(2, 3, 4) @ gradlab.ones(5, 4, 2)


def test_index_out_of_range():
    x = gradlab.ones(3, 4)
    with pytest.raises(IndexOutOfRange, match=r"shape \(3, 4\)"):
        x[5]
    with pytest.raises(IndexError):  # a subclass of the built-in
        x[:, gradlab.tensor([0, 9])]
    with pytest.raises(TypeError, match="integers"):
        x[gradlab.tensor([0.5])]


def test_reduction_dim_out_of_range():
    with pytest.raises(IndexOutOfRange, match=r"sum: dim 2 is out of range for a tensor with 2 dimension\(s\) \(valid: -2 to 1\)"):
        gradlab.ones(2, 3).sum(dim=2)


def test_reshape_and_view_errors():
    with pytest.raises(ShapeError, match=r"cannot reshape \(2, 3\) \(6 elements\) into \(4,\)"):
        gradlab.ones(2, 3).reshape(4)
    with pytest.raises(ShapeError, match=r"not contiguous.*\.reshape\(\)"):
        gradlab.ones(2, 3).T.view(6)
    assert gradlab.ones(2, 3).T.reshape(6).shape == (6,)


def test_cat_and_stack_errors():
    with pytest.raises(ShapeError, match=r"tensors\[1\] has shape \(2, 4\)"):
        gradlab.cat([gradlab.ones(2, 3), gradlab.ones(2, 4)], dim=0)
    with pytest.raises(ShapeError, match="stack needs equal shapes"):
        gradlab.stack([gradlab.ones(2), gradlab.ones(3)])


def test_non_tensor_argument_is_a_type_error():
    with pytest.raises(TypeError, match=r"exp: input must be a Tensor, got str"):
        gradlab.exp("x")
    with pytest.raises(TypeError, match="must be a Tensor or a number"):
        gradlab.ones(2) + "a"


def test_ragged_data_is_explained():
    with pytest.raises(GradlabError, match="rectangular"):
        gradlab.tensor([[1, 2], [3]])


def test_gradcheck_reports_input_element_and_values():
    class BadSquare(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x  # wrong: should be 2 * g * x

    x = gradlab.tensor([1.0, 2.0], dtype=gradlab.float64, requires_grad=True)
    x.name = "x"
    with pytest.raises(GradcheckError, match=r"input 0 \('x'\).*element \(0,\).*analytic 1 vs numeric 2"):
        gradcheck(BadSquare.apply, (x,))
    assert gradcheck(BadSquare.apply, (x,), raise_exception=False) is False
    assert gradcheck(lambda t: t * t, (x,))


def test_gradcheck_insists_on_float64():
    x = gradlab.ones(2, requires_grad=True)
    with pytest.raises(GradlabError, match="float64"):
        gradcheck(lambda t: t * 2, (x,))


def test_custom_function_returning_wrong_shape_is_caught():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return gradlab.ones(5)

    x = gradlab.ones(3, requires_grad=True)
    with pytest.raises(ShapeError, match=r"gradient of shape \(5,\) for input 0, whose shape is \(3,\)"):
        Bad.apply(x).backward()


def test_in_place_numpy_errors_never_leak():
    """A selection of misuse: every error is a GradlabError, never a raw NumPy one."""
    cases = [
        lambda: gradlab.ones(2, 3).permute(0, 0),
        lambda: gradlab.ones(2, 3).transpose(0, 5),
        lambda: gradlab.ones(2).expand(3, 3),
        lambda: gradlab.ones(2, 3).sum(dim=(0, 0)),
        lambda: gradlab.ones(0).max(),
        lambda: gradlab.ones(2, 2).gather(0, gradlab.tensor([[0.5]])),
    ]
    for case in cases:
        with pytest.raises((GradlabError, TypeError)) as e:
            case()
        assert not type(e.value).__module__.startswith("numpy")
    assert np.isfinite(1.0)
