"""``.grad`` assignment and ``grad()``'s arguments are checked, with gradlab errors (as PyTorch checks them)."""
import numpy as np
import pytest

import gradlab
from gradlab.errors import ArgumentTypeError, DTypeError, ShapeError


def test_assigning_a_gradient_of_the_wrong_shape_dtype_or_kind_is_refused(torch):
    x = gradlab.randn(3, requires_grad=True)
    tx = torch.randn(3, requires_grad=True)
    for ours, theirs, err, words in [
        (gradlab.zeros(4), torch.zeros(4), ShapeError, ["(4,)", "(3,)"]),
        (gradlab.zeros(3, dtype=gradlab.float64), torch.zeros(3, dtype=torch.float64), DTypeError,
         ["float64", "float32"]),
        (3, 3, ArgumentTypeError, ["int"]),
    ]:
        with pytest.raises(Exception):
            tx.grad = theirs  # PyTorch refuses it too
        with pytest.raises(err) as info:
            x.grad = ours
        assert all(w in str(info.value) for w in words)
    assert x.grad is None  # nothing was stored


def test_a_good_gradient_is_stored_and_used_by_optimizers():
    p = gradlab.tensor([1.0, 2.0], requires_grad=True)
    p.grad = gradlab.tensor([0.5, -0.5])
    gradlab.optim.SGD([p], lr=1.0).step()
    assert p.tolist() == [0.5, 2.5]
    p.grad = None
    assert p.grad is None


def test_grad_and_backward_name_bad_argument_kinds():
    x = gradlab.randn(3, requires_grad=True)
    y = (x * 2).sum()
    with pytest.raises(ArgumentTypeError, match="inputs must be a Tensor or a sequence of Tensors, got int"):
        gradlab.autograd.grad(y, 3)
    with pytest.raises(ArgumentTypeError, match="outputs .* got str"):
        gradlab.autograd.grad(["y"], x)
    with pytest.raises(ArgumentTypeError, match="backward: inputs .* got float"):
        y.backward(inputs=[x, 1.5])


def test_assigning_a_tensor_to_data_replaces_the_values_as_in_pytorch():
    w = gradlab.randn(3, requires_grad=True)
    (w * w).sum().backward()
    before = w.detach().numpy().copy()
    w.data = w.data - 0.1 * w.grad  # torch-data: PyTorch style, .data is a Tensor: this stores the new values
    np.testing.assert_allclose(w.detach().numpy(), before - 0.1 * 2 * before, rtol=1e-6)
    assert w.requires_grad and (w * gradlab.ones(3)).requires_grad


def test_a_zero_dim_parameter_keeps_an_array_gradient_on_every_path():
    p = gradlab.nn.Parameter(gradlab.tensor(2.0))
    opt = gradlab.optim.SGD([p], lr=0.1)
    (p * 3).backward()
    opt.zero_grad(set_to_none=False)  # NumPy would turn 0-d * 0 into a scalar
    assert p.grad.item() == 0.0 and p.grad.shape == ()
    with gradlab.profiler.profile():  # the tensor path of backward (ops are watched)
        (p * 3).backward()
        (p * 3).backward()
    assert p.grad.item() == 6.0 and type(p.grad._data) is np.ndarray
