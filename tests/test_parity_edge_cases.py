"""PyTorch parity on edge values and bad input, each found by running student-style programs in both
libraries: empty dim lists, reductions of tensors with an empty non-reduced dim, integer powers with
negative exponents, ``~`` and ``logical_not`` on integers, NaN in sorts, factory size checks, sampling
statistics, the broadcast-target warning of regression losses, and errors that used to leak from NumPy.

Each parity case runs the same source with ``L = torch`` and ``L = gradlab`` and compares values,
dtypes, shapes and gradients (``_plain``/``_assert_same``, also used by test_parity_nn_optim.py).
"""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
from gradlab.errors import ArgumentTypeError, DTypeError, GradlabError, IndexOutOfRange, ShapeError

pytestmark = pytest.mark.oracle

A = np.random.default_rng(0).standard_normal((2, 3, 4))


def _plain(o, torch):
    if isinstance(o, gradlab.Tensor):
        return ("T", str(o.dtype).replace("gradlab.", ""), np.asarray(o._data))
    if isinstance(o, torch.Tensor):
        return ("T", str(o.dtype).replace("torch.", ""), o.detach().numpy())
    if isinstance(o, (tuple, list)):
        return tuple(_plain(x, torch) for x in o)
    return o


def _assert_same(a, b, where):
    if isinstance(a, tuple) and a and a[0] == "T":
        assert isinstance(b, tuple) and b and b[0] == "T", where
        assert a[1] == b[1], f"{where}: dtype {a[1]} (gradlab) vs {b[1]} (torch)"
        assert a[2].shape == b[2].shape, f"{where}: shape {a[2].shape} (gradlab) vs {b[2].shape} (torch)"
        np.testing.assert_allclose(a[2], b[2], rtol=1e-6, atol=1e-9, equal_nan=True, err_msg=where)
    elif isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), f"{where}: {a!r} vs {b!r}"
        for x, y in zip(a, b):
            _assert_same(x, y, where)
    else:
        assert a == b, f"{where}: {a!r} (gradlab) vs {b!r} (torch)"


def _with_grad(L, f):
    """f(L, x) on a float64 leaf; returns (output, x.grad) after a weighted-sum backward."""
    x = L.tensor(A, requires_grad=True)
    out = f(L, x)
    o = out[0] if isinstance(out, tuple) else out
    w = L.tensor(np.arange(o.numel(), dtype=np.float64).reshape(tuple(o.shape)) + 1)
    (o * w).sum().backward()
    return out, x.grad


def _layer_norm_1d(L):
    x, w, b = (L.tensor(A[0, 0] * k, requires_grad=True) for k in (1.0, 0.5, 2.0))
    y = L.nn.functional.layer_norm(x, (4,), w, b).mul(L.tensor([1.0, -2.0, 3.0, 0.5])).sum()
    grads = L.autograd.grad(y, (x, w, b), create_graph=True)
    sum(((g * g).sum() for g in grads), L.tensor(0.0, dtype=L.float64)).backward()
    return grads, x.grad, w.grad, b.grad


def _scatter_inplace(L):
    y = L.tensor([2, 0, 1])
    one_hot = L.zeros(3, 4).scatter_(1, y.unsqueeze(1), 1.0)
    twos = L.zeros(3, 4).scatter_(1, y.unsqueeze(1), value=2.0)
    x = L.tensor(A[0], requires_grad=True)
    h = x * 1
    h.scatter_(1, y.unsqueeze(1), x[:, :1] * 5)
    (h * h).sum().backward()
    z = L.zeros(2, 4, dtype=L.float64)
    z.scatter_add_(0, L.tensor([[0, 1, 0, 1]]), L.tensor(A[1, :1]))
    return one_hot, twos, h, x.grad, z


def _setitem_dual(L):
    fa = L.autograd.forward_ad
    with fa.dual_level():
        d = fa.make_dual(L.tensor(A[0, 0]), L.tensor(A[1, 1]))
        out = L.zeros(2, 5, dtype=L.float64)
        out[1, 1:] = d.sin()
        return fa.unpack_dual(out).tangent


CASES = {
    # an empty dim list reduces over every dim, as in PyTorch (dims computed as tuple(range(1, x.ndim)))
    "sum_empty_tuple": lambda L: _with_grad(L, lambda L, x: x.sum(())),
    "sum_empty_list_keepdim": lambda L: _with_grad(L, lambda L, x: x.sum([], keepdim=True)),
    "mean_empty_tuple": lambda L: _with_grad(L, lambda L, x: x.mean(dim=())),
    "amax_empty_tuple": lambda L: _with_grad(L, lambda L, x: x.amax(())),
    "per_sample_sum_1d": lambda L: _with_grad(L, lambda L, x: x[0, 0].sum(dim=tuple(range(1, 1)))),
    # layer_norm of one vector: no leading dims to sum the weight/bias gradients over (first and second order)
    "layer_norm_1d_affine_grads": lambda L: _layer_norm_1d(L),
    # reducing a non-empty dim of a tensor with an empty other dim gives an empty result
    "max_dim_of_empty": lambda L: tuple(L.zeros(0, 3).max(1)),
    "min_dim_keepdim_of_empty": lambda L: tuple(L.zeros(0, 3).min(-1, keepdim=True)),
    "amax_dim_of_empty": lambda L: L.zeros(3, 0, 2).amax(2),
    "argmax_dim_of_empty": lambda L: (L.zeros(0, 3).argmax(1), L.zeros(2, 0).argmin(0)),
    # integer ** negative integer tensor: 1, +-1 or 0 as in PyTorch (NumPy refuses)
    "int_pow_negative_tensor": lambda L: (L.tensor([2, 1, -1, 0, -2, 3]) ** L.tensor([-1, -3, -3, -2, -2, 2]),
                                          2 ** L.tensor([-1, 0, 3]), L.tensor([-1, -1]) ** L.tensor([-2, -3])),
    "int32_pow_negative": lambda L: L.tensor([1, 2], dtype=L.int32) ** L.tensor([-5, -1], dtype=L.int32),
    # ~ is bitwise on integers and logical on bools; logical_not is True where the value is zero
    "logical_not_int": lambda L: (L.logical_not(L.tensor([0, 2, -3])), L.tensor([0, 2]).logical_not(),
                                  L.logical_not(L.tensor([0.0, 1.5]))),
    "invert_int_and_bool": lambda L: (~L.tensor([0, 2, -3]), ~L.tensor([True, False]),
                                      ~L.tensor([1, 5], dtype=L.uint8)),
    # PyTorch counts NaN as the largest value: first in a descending sort and in topk
    "sort_descending_nan": lambda L: tuple(L.tensor([[1.0, float("nan"), 3.0, float("inf"), float("nan")],
                                                     [2.0, 1.0, 0.0, -1.0, 5.0]]).sort(1, descending=True)),
    "topk_nan": lambda L: tuple(L.tensor([1.0, float("nan"), 3.0]).topk(2)),
    "argsort_descending_nan": lambda L: L.tensor([float("nan"), 1.0, float("nan"), 2.0]).argsort(descending=True),
    # a NumPy scalar keeps its dtype (np.mean(...) is a float64)
    "tensor_of_numpy_scalar": lambda L: (L.tensor(np.float64(2.5)), L.tensor(np.int32(2)), L.tensor(np.float32(1.5)),
                                         L.as_tensor(np.float64(1.0))),
    # loss weights are buffers: in the state_dict, converted by .double() and moved by .to()
    "loss_weight_buffers": lambda L: (list(L.nn.CrossEntropyLoss(weight=L.tensor([1.0, 2.0])).state_dict()),
                                      L.nn.NLLLoss(weight=L.tensor([1.0, 2.0])).double().weight,
                                      list(L.nn.BCEWithLogitsLoss(pos_weight=L.tensor([3.0])).state_dict()),
                                      list(L.nn.BCEWithLogitsLoss().state_dict())),
    # x.where(condition, y) is where(condition, x, y)
    "tensor_where_method": lambda L: _with_grad(L, lambda L, x: x.where(x > 0, x * -2.0)),
    "tensor_where_method_scalar": lambda L: _with_grad(L, lambda L, x: x.where(x < 0.5, 5.0)),
    # sign of a bool tensor is itself; any/all take negative dims and dim tuples
    "sign_bool": lambda L: L.tensor([True, False]).sign(),
    "any_all_dims": lambda L: (L.tensor(A).gt(0).any(-1), L.tensor(A).gt(-1).all((0, 2)),
                               L.tensor(A).any(dim=(1,), keepdim=True)),
    # a +inf in a row makes the whole softmax row nan (inf - inf), as in PyTorch; an all -inf row too
    "softmax_with_inf": lambda L: (lambda x: (x.softmax(1), x.log_softmax(1)))(
        L.tensor([[1.0, float("inf"), 2.0], [float("-inf")] * 3, [float("-inf"), 0.0, 1.0]])),
    # in-place scatter: one-hot rows, value=, gradients to both self and src, scatter_add_
    "scatter_inplace": lambda L: _scatter_inplace(L),
    # a 0-d tensor in an f-string formats as its number (f"loss {loss}")
    "format_0d": lambda L: (f"{L.tensor(3)} {L.tensor(2.5)} {L.tensor(True)} {L.tensor(0.1)}",
                            f"{L.tensor(1 / 3, dtype=L.float64):.3f}", "{}".format(L.ones(2, 2).sum())),
    # composites: diagonal/trace/diag/masked_select/repeat_interleave (also in the registry), nelement
    "composite_ops": lambda L: _with_grad(L, lambda L, x: (x.diagonal(1, 0, 2) * 2, x[0].trace(), L.diag(x[0, 0], -1),
                                                          x.masked_select(x > 0), x.repeat_interleave(2, dim=1),
                                                          x.nelement())),
    # setitem of a dual tensor carries its tangent (forward mode)
    "setitem_forward_mode": lambda L: _setitem_dual(L),
    # NumPy's spellings, which PyTorch accepts too: axis= for dim=, keepdims= for keepdim=
    "numpy_spellings": lambda L: _with_grad(L, lambda L, x: (
        x.sum(1, keepdims=True) + x.mean(axis=0, keepdims=True) + x.max(axis=2, keepdims=True)[0]
        + x.amax(axis=(0, 2), keepdims=True) + x.logsumexp(axis=1, keepdims=True) + x.var(axis=1, keepdims=True)
        + x.std(1, keepdims=True) + x.prod(axis=1, keepdims=True) + x.min(axis=1, keepdims=True).values,
        L.cat([x, x], axis=1), L.stack([x, x], axis=0), x[:, :1].squeeze(axis=1), x.cumsum(axis=2),
        x.argmax(axis=1, keepdims=True), L.argmin(x, axis=0), (x > 0).any(axis=1, keepdims=True), (x > 0).all(axis=0))),
    # top-level spellings of methods, and elementwise functions built from other ops
    "top_level_spellings": lambda L: _with_grad(L, lambda L, x: (
        L.sort(x, 1, descending=True)[0] + L.topk(x, 3, dim=1)[0] + L.softmax(x, 1) + L.log_softmax(x, dim=0),
        L.argsort(x, dim=2), L.unbind(x, 1)[2], L.narrow(x, 2, 1, 2), L.movedim(x, 0, -1), L.nonzero(x > 1),
        L.unflatten(x, 2, (2, 2)), L.ravel(x))),
    "math_extras": lambda L: _with_grad(L, lambda L, x: (
        L.log2(x.abs() + 0.3) + L.log10(x.abs() + 0.3) + L.exp2(x) + L.rsqrt(x.abs() + 0.3) + L.sinh(x) + L.cosh(x)
        + L.tan(x * 0.5) + L.erfc(x) + L.logit(x.sigmoid(), eps=0.2) + L.frac(x * 3) + L.lerp(x, x.flip(0), 0.25)
        + L.logaddexp(x, x.flip(1)) + L.fmod(x * 3, 1.5), L.addmm(x[0, 0], x[0].t(), x[1], beta=0.5, alpha=2),
        L.mv(x[0], x[1, 0]), L.count_nonzero(x > 0, dim=1), L.isclose(x, x + 1e-9), L.fmod(L.tensor([-7, 7]), 3),
        L.log2(L.tensor([8, 2])))),
    # sizes given as NumPy integers or 0-d integer tensors
    "factory_sizes": lambda L: (L.zeros(np.int64(2), 3).shape == (2, 3), L.ones(L.tensor(3)).shape == (3,),
                                L.arange(L.tensor(4)), L.eye(np.int64(2), 3)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_program_matches_pytorch(torch, name):
    f = CASES[name]
    _assert_same(_plain(f(gradlab), torch), _plain(f(torch), torch), name)


# (program run with L = gradlab and L = torch: both must raise; gradlab's class, built-in kind, message words)
BAD = {
    "sub_bool_bool": (lambda L: L.tensor([True]) - L.tensor([False]), DTypeError, ["sub", "bool", "^"]),
    "neg_bool": (lambda L: -L.tensor([True, False]), DTypeError, ["neg", "bool", "~"]),
    "invert_float": (lambda L: ~L.ones(2), DTypeError, ["~", "float32", "logical_not"]),
    "setitem_mask_shape_in_graph": (
        lambda L: (lambda y: y.__setitem__(y[0] > 0, 1.0))(L.ones(4, 5, requires_grad=True) * 1),
        IndexOutOfRange, ["setitem", "(4, 5)"]),
    "setitem_value_shape_in_graph": (
        lambda L: (lambda y: y.__setitem__(0, L.ones(3, 3)))(L.ones(4, 5, requires_grad=True) * 1),
        ShapeError, ["setitem", "(3, 3)"]),
    "zeros_float_size": (lambda L: L.zeros(2.5), ArgumentTypeError, ["zeros", "2.5"]),
    "ones_str_size": (lambda L: L.ones("a"), ArgumentTypeError, ["ones", "'a'"]),
    "randn_float_size": (lambda L: L.randn(2, 3.0), ArgumentTypeError, ["randn", "3.0"]),
    "eye_float": (lambda L: L.eye(2.5), ArgumentTypeError, ["eye", "2.5"]),
    "arange_str": (lambda L: L.arange("a"), ArgumentTypeError, ["arange", "'a'"]),
    "randperm_negative": (lambda L: L.randperm(-1), GradlabError, ["randperm", "-1"]),
    "randn_like_int": (lambda L: L.randn_like(L.tensor([1, 2])), DTypeError, ["randn", "int64", "float"]),
    "any_dim_out_of_range": (lambda L: L.ones(2, 3).any(5), IndexOutOfRange, ["any", "dim 5"]),
    "batch_norm_running_shape": (lambda L: L.nn.functional.batch_norm(L.randn(4, 3), L.zeros(5), L.ones(5),
                                                                      training=True),
                                 ShapeError, ["batch_norm", "(5,)", "3 channels"]),
    "instance_norm_running_shape": (
        lambda L: L.nn.functional.instance_norm(L.randn(2, 3, 4), L.zeros(5), L.ones(5)), ShapeError,
        ["instance_norm", "(5,)"]),
    "allclose_shapes": (lambda L: L.allclose(L.ones(2, 3), L.ones(2)), ShapeError, ["allclose", "(2, 3)", "(2,)"]),
    "expand_as_list": (lambda L: L.ones(2, 3).expand_as([1, 2]), ArgumentTypeError, ["expand_as", "list"]),
    "type_as_none": (lambda L: L.ones(2).type_as(None), ArgumentTypeError, ["type_as", "NoneType"]),
    "getitem_mask_shape": (lambda L: (lambda x: x[x[0] > 0])(L.ones(4, 5)), IndexOutOfRange,
                           ["getitem", "(4, 5)", "mask.shape"]),
    # an integer that does not fit the integer dtype: PyTorch refuses (NumPy wraps 300 to 44 or overflows)
    "tensor_uint8_overflow": (lambda L: L.tensor([300, 1], dtype=L.uint8), GradlabError, ["tensor", "300", "uint8"]),
    "full_uint8_overflow": (lambda L: L.full((2,), 300, dtype=L.uint8), GradlabError, ["full", "300"]),
    "fill_uint8_overflow": (lambda L: L.zeros(2, dtype=L.uint8).fill_(256), GradlabError, ["fill_", "256"]),
    "setitem_uint8_overflow": (lambda L: L.zeros(2, dtype=L.uint8).__setitem__(0, 300), GradlabError,
                               ["setitem", "300", "uint8"]),
    "setitem_int64_overflow": (lambda L: L.zeros(2, dtype=L.int64).__setitem__(0, 2 ** 70), GradlabError,
                               ["setitem", "int64", "float64"]),
    "masked_fill_int8_overflow": (lambda L: L.zeros(2, dtype=L.int8).masked_fill(L.tensor([True, False]), 200),
                                  GradlabError, ["masked_fill", "200", "int8"]),
    "unbind_0d": (lambda L: L.tensor(1.0).unbind(), IndexOutOfRange, ["unbind", "0-d"]),
    "glu_0d": (lambda L: L.nn.functional.glu(L.tensor(1.0)), ShapeError, ["glu", "0-d"]),
    "rand_int_dtype": (lambda L: L.rand(2, dtype=L.int64), DTypeError, ["rand", "int64"]),
}

# the built-in each gradlab error must also be, where PyTorch raises a specific one
_BUILTIN = {"zeros_float_size": TypeError, "ones_str_size": TypeError, "randn_float_size": TypeError,
            "eye_float": TypeError, "arange_str": TypeError, "invert_float": TypeError,
            "setitem_mask_shape_in_graph": IndexError, "any_dim_out_of_range": IndexError,
            "expand_as_list": TypeError}



def test_sampling_functions_shapes_dtypes_and_statistics(torch):
    p = [[0.1, 0.0, 0.9], [0.5, 0.5, 0.0]]
    for L in (torch, gradlab):
        L.manual_seed(0)
        s = L.multinomial(L.tensor(p), 4000, replacement=True)
        assert tuple(s.shape) == (2, 4000) and str(s.dtype).endswith("int64")
        assert abs(float((s[0] == 2).float().mean()) - 0.9) < 0.03 and int((s[0] == 1).sum()) == 0
        assert sorted(L.tensor([1.0, 2.0, 3.0]).multinomial(3).tolist()) == [0, 1, 2]  # no replacement
        b = L.bernoulli(L.full((4000,), 0.3))
        assert str(b.dtype).endswith("float32") and abs(float(b.mean()) - 0.3) < 0.03
        n = L.normal(L.zeros(4000, dtype=L.float64), 2.0)
        assert str(n.dtype).endswith("float64") and abs(float(n.std()) - 2.0) < 0.1
        assert tuple(L.normal(1.0, 2.0, size=(2, 3)).shape) == (2, 3)
        for bad in (lambda: L.multinomial(L.tensor([-1.0, 1.0]), 1), lambda: L.bernoulli(L.tensor([1.5]))):
            with pytest.raises(Exception) as info:
                bad()
            assert L is torch or isinstance(info.value, GradlabError)
    # PyTorch's documented requirement (it does not check it on the CPU): fewer samples than non-zero weights
    with pytest.raises(GradlabError, match="without replacement"):
        gradlab.multinomial(gradlab.tensor(p), 3)



@pytest.mark.parametrize("loss", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
def test_regression_loss_warns_when_target_broadcasts(torch, loss):
    import warnings
    for L in (torch, gradlab):  # (N,) predictions against an (N, 1) target: an (N, N) loss matrix
        with pytest.warns(UserWarning):
            getattr(L.nn.functional, loss)(L.zeros(4), L.ones(4, 1))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            getattr(L.nn.functional, loss)(L.zeros(4, 1), L.ones(4, 1))
    with pytest.warns(UserWarning, match=r"\(4, 4\)"):
        gradlab.nn.MSELoss()(gradlab.zeros(4), gradlab.ones(4, 1))


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_raises_like_pytorch(torch, name):
    f, cls, words = BAD[name]
    with pytest.raises(Exception):
        f(torch)
    with pytest.raises(cls) as info:
        f(gradlab)
    assert isinstance(info.value, GradlabError), f"{name}: {type(info.value).__name__}, not a gradlab error"
    if name in _BUILTIN:
        assert isinstance(info.value, _BUILTIN[name])
    for w in words:
        assert w in str(info.value), f"{name}: {w!r} missing from {info.value}"
