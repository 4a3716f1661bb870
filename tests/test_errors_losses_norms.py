"""Issue #24 for losses, normalizations, activations and dropout: every number-like argument is checked
(a string is a TypeError, a value out of its domain a ValueError/RuntimeError), float-only tensors and
parameter dtypes are checked as PyTorch does, and each message names the function and the argument.

The checks are the shared ones of ``gradlab/checks.py`` (``number``, ``nonnegative``, ``positive``,
``probability``, ``param_dtype``, ``common_floating``, ``arguments``); these tests sweep several functions
with each kind of wrong value, and check gradlab against PyTorch where both compute.
"""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
import gradlab.nn.functional as F
from gradlab import checks
from gradlab.errors import ArgumentError, ArgumentTypeError, DTypeError, GradlabError


def _x(*shape, dtype="float64", seed=0):
    return gradlab.tensor(np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype))


def _idx(n, c):
    return gradlab.tensor(np.arange(n) % c)


def _raises(cls, fn, *names):
    with pytest.raises(cls) as info:
        fn()
    msg = str(info.value)
    assert isinstance(info.value, GradlabError)
    for n in names:
        assert n.lower() in msg.lower(), (n, msg)
    return msg


# ---------------------------------------------------------------- (function, call with one number argument)
NUMBER_ARGS = [
    ("huber_loss", "delta", lambda v: F.huber_loss(_x(3), _x(3, seed=1), delta=v)),
    ("smooth_l1_loss", "beta", lambda v: F.smooth_l1_loss(_x(3), _x(3, seed=1), beta=v)),
    ("cross_entropy", "label_smoothing", lambda v: F.cross_entropy(_x(4, 3), _idx(4, 3), label_smoothing=v)),
    ("margin_ranking_loss", "margin", lambda v: F.margin_ranking_loss(_x(3), _x(3, seed=1), _x(3, seed=2), margin=v)),
    ("hinge_embedding_loss", "margin", lambda v: F.hinge_embedding_loss(_x(3), _x(3, seed=1), margin=v)),
    ("triplet_margin_loss", "margin", lambda v: F.triplet_margin_loss(_x(2, 3), _x(2, 3, seed=1), _x(2, 3, seed=2),
                                                                     margin=v)),
    ("triplet_margin_with_distance_loss", "margin",
     lambda v: F.triplet_margin_with_distance_loss(_x(2, 3), _x(2, 3, seed=1), _x(2, 3, seed=2), margin=v)),
    ("poisson_nll_loss", "eps", lambda v: F.poisson_nll_loss(_x(3), _x(3, seed=1), eps=v)),
    ("gaussian_nll_loss", "eps", lambda v: F.gaussian_nll_loss(_x(3), _x(3, seed=1), _x(3, seed=2).abs(), eps=v)),
    ("multi_margin_loss", "margin", lambda v: F.multi_margin_loss(_x(4, 3), _idx(4, 3), margin=v)),
    ("layer_norm", "eps", lambda v: F.layer_norm(_x(2, 3), (3,), eps=v)),
    ("group_norm", "eps", lambda v: F.group_norm(_x(2, 4, 3), 2, eps=v)),
    ("instance_norm", "eps", lambda v: F.instance_norm(_x(2, 4, 3), eps=v)),
    ("batch_norm", "momentum", lambda v: F.batch_norm(_x(4, 3), None, None, training=True, momentum=v)),
    ("rms_norm", "eps", lambda v: F.rms_norm(_x(2, 3), (3,), eps=v)),
    ("local_response_norm", "alpha", lambda v: F.local_response_norm(_x(1, 4, 3), 2, alpha=v)),
    ("local_response_norm", "k", lambda v: F.local_response_norm(_x(1, 4, 3), 2, k=v)),
    ("celu", "alpha", lambda v: F.celu(_x(3), v)),
    ("hardshrink", "lambd", lambda v: F.hardshrink(_x(3), v)),
    ("threshold", "value", lambda v: F.threshold(_x(3), 0.1, v)),
    ("threshold", "threshold", lambda v: F.threshold(_x(3), v, 0.0)),
    ("rrelu", "lower", lambda v: F.rrelu(_x(3), v, 0.3)),
    ("cosine_similarity", "eps", lambda v: F.cosine_similarity(_x(2, 3), _x(2, 3, seed=1), eps=v)),
    ("dropout", "p", lambda v: F.dropout(_x(3), v)),
    ("dropout2d", "p", lambda v: F.dropout2d(_x(1, 2, 2, 2), v)),
    ("alpha_dropout", "p", lambda v: F.alpha_dropout(_x(3), v, training=True)),
    ("feature_alpha_dropout", "p", lambda v: F.feature_alpha_dropout(_x(1, 2, 2), v, training=True)),
]


@pytest.mark.parametrize("fn,arg,call", NUMBER_ARGS, ids=[f"{f}-{a}" for f, a, _ in NUMBER_ARGS])
def test_a_string_for_a_number_is_a_type_error(fn, arg, call):
    msg = _raises(TypeError, lambda: call("abc"), fn, arg)
    assert "'abc'" in msg


@pytest.mark.parametrize("fn,arg,call", NUMBER_ARGS, ids=[f"{f}-{a}" for f, a, _ in NUMBER_ARGS])
def test_none_for_a_number_is_refused(fn, arg, call):
    if fn == "rms_norm":  # eps=None is rms_norm's default (the dtype's machine epsilon)
        call(None)
        return
    _raises((TypeError, RuntimeError), lambda: call(None), fn, arg)


OUT_OF_DOMAIN = [
    ("huber_loss", "delta", lambda: F.huber_loss(_x(3), _x(3, seed=1), delta=0.0)),
    ("smooth_l1_loss", "beta", lambda: F.smooth_l1_loss(_x(3), _x(3, seed=1), beta=-1.0)),
    ("cross_entropy", "label_smoothing", lambda: F.cross_entropy(_x(4, 3), _idx(4, 3), label_smoothing=1.5)),
    ("triplet_margin_loss", "margin", lambda: F.triplet_margin_loss(_x(2, 3), _x(2, 3), _x(2, 3), margin=-1.0)),
    ("batch_norm", "eps", lambda: F.batch_norm(_x(4, 3), None, None, training=True, eps=-1.0)),
    ("batch_norm", "eps", lambda: F.batch_norm(_x(4, 3), None, None, training=True, eps=0.0)),
    ("rrelu", "lower", lambda: F.rrelu(_x(3), 0.5, 0.1)),
    ("celu", "alpha", lambda: F.celu(_x(3), 0.0)),
    ("cosine_similarity", "eps", lambda: F.cosine_similarity(_x(2, 3), _x(2, 3), eps=-1.0)),
    ("local_response_norm", "size", lambda: F.local_response_norm(_x(1, 4, 3), 0)),
    ("dropout1d", "p", lambda: F.dropout1d(_x(2, 3), 1.5)),
    ("alpha_dropout", "p", lambda: F.alpha_dropout(_x(3), -0.1)),
]


@pytest.mark.parametrize("fn,arg,call", OUT_OF_DOMAIN, ids=[f"{f}-{a}-{i}" for i, (f, a, _) in enumerate(OUT_OF_DOMAIN)])
def test_a_number_out_of_its_domain_is_a_value_error(fn, arg, call):
    _raises(ValueError, call, fn, arg)
    _raises(RuntimeError, call, fn, arg)  # PyTorch raises either; both except clauses catch gradlab's


INT_COUNTS = [
    ("group_norm", "num_groups", lambda v: F.group_norm(_x(2, 4, 3), v)),
    ("local_response_norm", "size", lambda v: F.local_response_norm(_x(1, 4, 3), v)),
    ("layer_norm", "normalized_shape", lambda v: F.layer_norm(_x(2, 3), (v,))),
    ("rms_norm", "normalized_shape", lambda v: F.rms_norm(_x(2, 3), (v,))),
    ("multi_margin_loss", "p", lambda v: F.multi_margin_loss(_x(4, 3), _idx(4, 3), p=v)),
    ("nll_loss", "ignore_index", lambda v: F.nll_loss(_x(4, 3), _idx(4, 3), ignore_index=v)),
    ("ctc_loss", "blank", lambda v: F.ctc_loss(F.log_softmax(gradlab.ones(5, 1, 3), 2), gradlab.tensor([[1, 2]]),
                                                [5], [2], blank=v)),
]


@pytest.mark.parametrize("fn,arg,call", INT_COUNTS, ids=[f"{f}-{a}" for f, a, _ in INT_COUNTS])
@pytest.mark.parametrize("bad", [1.5, "2"])
def test_a_float_or_string_for_an_int_is_a_type_error(fn, arg, call, bad):
    _raises(TypeError, lambda: call(bad), fn, arg)


# ---------------------------------------------------------------- dtypes
FLOAT_ONLY = ["celu", "glu", "hardshrink", "hardsigmoid", "hardswish", "logsigmoid", "mish", "rrelu", "elu",
              "softmin", "rms_norm", "local_response_norm", "multi_margin_loss", "multilabel_margin_loss"]


def _call_int(name):
    i = gradlab.tensor([[1, -2, 3, 0], [0, 1, -2, 2]])
    if name == "softmin":
        return F.softmin(i, 1)
    if name == "rms_norm":
        return F.rms_norm(i, (4,))
    if name == "local_response_norm":
        return F.local_response_norm(i[None], 2)
    if name == "multi_margin_loss":
        return F.multi_margin_loss(i, _idx(2, 4))
    if name == "multilabel_margin_loss":
        return F.multilabel_margin_loss(i, _idx(8, 4).reshape(2, 4))
    return getattr(F, name)(i)


@pytest.mark.parametrize("name", FLOAT_ONLY)
def test_an_integer_input_to_a_float_only_function(name):
    msg = _raises(DTypeError, lambda: _call_int(name), name, "int64")
    assert isinstance(DTypeError(msg), RuntimeError)  # PyTorch: NotImplementedError "... not implemented for 'Long'"


PARAMS = [
    ("batch_norm", "running_mean", lambda p: F.batch_norm(_x(4, 3), p, _x(3).abs(), training=False)),
    ("batch_norm", "weight", lambda p: F.batch_norm(_x(4, 3), None, None, p, training=True)),
    ("layer_norm", "weight", lambda p: F.layer_norm(_x(2, 3), (3,), p)),
    ("layer_norm", "bias", lambda p: F.layer_norm(_x(2, 3), (3,), None, p)),
    ("group_norm", "weight", lambda p: F.group_norm(_x(2, 3, 2), 1, p)),
    ("instance_norm", "bias", lambda p: F.instance_norm(_x(2, 3, 2), bias=p)),
    ("cross_entropy", "weight", lambda p: F.cross_entropy(_x(4, 3), _idx(4, 3), weight=p)),
    ("nll_loss", "weight", lambda p: F.nll_loss(_x(4, 3), _idx(4, 3), weight=p)),
    ("multi_margin_loss", "weight", lambda p: F.multi_margin_loss(_x(4, 3), _idx(4, 3), weight=p)),
    ("prelu", "weight", lambda p: F.prelu(_x(2, 3), p)),
]


@pytest.mark.parametrize("fn,arg,call", PARAMS, ids=[f"{f}-{a}" for f, a, _ in PARAMS])
@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_a_parameter_of_another_dtype_is_refused(fn, arg, call, dtype):
    p = gradlab.ones(3, dtype=getattr(gradlab, dtype))
    if fn == "prelu":
        p = gradlab.ones(1, dtype=getattr(gradlab, dtype))
    _raises(DTypeError, lambda: call(p), fn, arg)
    call(p.double() if fn != "prelu" else gradlab.ones(1, dtype=gradlab.float64))  # the matching dtype runs


def test_a_float32_parameter_serves_a_16_bit_input():
    x = _x(2, 3).to(gradlab.bfloat16)
    F.layer_norm(x, (3,), gradlab.ones(3), gradlab.zeros(3))  # accepted (its dtype: tests/test_layer_norm_op.py)


def test_a_string_for_a_tensor_names_the_argument():
    _raises(TypeError, lambda: F.soft_margin_loss(_x(3), "abc"), "soft_margin_loss", "target")
    _raises(TypeError, lambda: F.multi_margin_loss(_x(4, 3), "abc"), "multi_margin_loss", "target")
    _raises(TypeError, lambda: F.binary_cross_entropy_with_logits(_x(3), _x(3).abs(), pos_weight="abc"),
            "binary_cross_entropy_with_logits", "pos_weight")
    _raises(TypeError, lambda: F.gaussian_nll_loss(_x(3), _x(3), "abc"), "gaussian_nll_loss", "var")
    _raises(TypeError, lambda: F.kl_div(_x(3), "abc"), "kl_div", "target")


# ---------------------------------------------------------------- promotion and values, against PyTorch
def test_integer_input_with_float_target_is_promoted_as_pytorch(torch):
    i = gradlab.tensor([[1, 2, 3], [0, 1, 2]])
    f = _x(2, 3)
    ti, tf = torch.tensor(i.numpy()), torch.tensor(f.numpy())
    for name in ("l1_loss", "mse_loss", "smooth_l1_loss", "poisson_nll_loss"):
        got = getattr(F, name)(i, f)
        want = getattr(torch.nn.functional, name)(ti, tf)
        assert got.dtype == gradlab.float64
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-6)
    np.testing.assert_allclose(F.cosine_similarity(i, f).numpy(),
                               torch.nn.functional.cosine_similarity(ti, tf).numpy(), rtol=1e-10)
    for name in ("l1_loss", "mse_loss"):  # two integer tensors: refused, as PyTorch
        _raises(DTypeError, lambda: getattr(F, name)(i, i), name, "int64")


def test_kl_div_negative_target_is_nan_as_pytorch(torch):
    got = F.kl_div(gradlab.zeros(3), gradlab.full((3,), -0.5), reduction="sum")
    want = torch.nn.functional.kl_div(torch.zeros(3), torch.full((3,), -0.5), reduction="sum")
    assert np.isnan(got.item()) and np.isnan(want.item())
    t = gradlab.tensor([0.0, 0.5, 0.5])  # zero targets still count for nothing
    x = gradlab.tensor([-1.0, -0.7, -0.7])
    want = torch.nn.functional.kl_div(torch.tensor(x.numpy()), torch.tensor(t.numpy()), reduction="sum")
    np.testing.assert_allclose(F.kl_div(x, t, reduction="sum").item(), want.item(), rtol=1e-6)


def test_ctc_target_lengths_longer_than_the_targets():
    lp = F.log_softmax(gradlab.ones(5, 1, 3), 2)
    _raises(ValueError, lambda: F.ctc_loss(lp, gradlab.tensor([[1, 2]]), [5], [3]), "ctc_loss", "target_lengths")
    _raises(ValueError, lambda: F.ctc_loss(lp, gradlab.tensor([[1, 2]]), [5], [-1]), "ctc_loss", "target_lengths")
    _raises(ValueError, lambda: F.ctc_loss(lp, gradlab.tensor([[1, 2]]), [5], [2], blank=3), "ctc_loss", "blank")


# ---------------------------------------------------------------- modules check their arguments when built
MODULES = [
    ("ELU", "alpha", lambda v: gradlab.nn.ELU(v)),
    ("LeakyReLU", "negative_slope", lambda v: gradlab.nn.LeakyReLU(v)),
    ("Softplus", "beta", lambda v: gradlab.nn.Softplus(v)),
    ("Hardshrink", "lambd", lambda v: gradlab.nn.Hardshrink(v)),
    ("Threshold", "value", lambda v: gradlab.nn.Threshold(0.1, v)),
    ("RReLU", "upper", lambda v: gradlab.nn.RReLU(0.1, v)),
    ("PReLU", "init", lambda v: gradlab.nn.PReLU(1, v)),
    ("Dropout", "p", lambda v: gradlab.nn.Dropout(v)),
    ("LayerNorm", "eps", lambda v: gradlab.nn.LayerNorm(3, eps=v)),
    ("BatchNorm1d", "momentum", lambda v: gradlab.nn.BatchNorm1d(3, momentum=v)),
    ("GroupNorm", "eps", lambda v: gradlab.nn.GroupNorm(1, 3, eps=v)),
    ("LocalResponseNorm", "alpha", lambda v: gradlab.nn.LocalResponseNorm(2, alpha=v)),
    ("HuberLoss", "delta", lambda v: gradlab.nn.HuberLoss(delta=v)),
    ("SmoothL1Loss", "beta", lambda v: gradlab.nn.SmoothL1Loss(beta=v)),
    ("TripletMarginLoss", "margin", lambda v: gradlab.nn.TripletMarginLoss(margin=v)),
    ("CrossEntropyLoss", "label_smoothing", lambda v: gradlab.nn.CrossEntropyLoss(label_smoothing=v)),
    ("MarginRankingLoss", "margin", lambda v: gradlab.nn.MarginRankingLoss(margin=v)),
]


@pytest.mark.parametrize("cls,arg,build", MODULES, ids=[c for c, _, _ in MODULES])
def test_a_module_refuses_a_string_number_when_built(cls, arg, build):
    _raises(TypeError, lambda: build("abc"), cls, arg)


def test_module_int_arguments():
    _raises(TypeError, lambda: gradlab.nn.PReLU(1.5), "PReLU", "num_parameters")
    _raises(TypeError, lambda: gradlab.nn.GroupNorm(1.5, 3), "GroupNorm", "num_groups")
    _raises(ValueError, lambda: gradlab.nn.RReLU(0.5, 0.1), "RReLU", "lower")
    assert gradlab.nn.PReLU(3).num_parameters == 3


# ---------------------------------------------------------------- the declarative helper itself
def test_arguments_helper():
    assert checks.arguments("f", a=(0.5, "probability")) == 0.5
    assert checks.arguments("f", a=(None, "number?"), b=(3, "count")) == (None, 3)
    with pytest.raises(ArgumentTypeError, match=r"b must be an int"):
        checks.arguments("f", a=(1.0, "number"), b=(1.5, "int"))
    with pytest.raises(ArgumentError, match=r"a must be > 0, got -1"):
        checks.arguments("f", a=(-1, "positive"))
    with pytest.raises(ArgumentTypeError, match=r"t must be a Tensor, got str"):
        checks.arguments("f", t=("abc", "floating"))
    with pytest.raises(DTypeError, match=r"t must have a floating dtype, got int64"):
        checks.arguments("f", t=(gradlab.tensor([1]), "floating"))


def test_every_stricter_entry_of_this_area_has_a_reason():
    for fn, what in [("cross_entropy", "label_smoothing -> -1.0"), ("local_response_norm", "arg 0 -> int tensor"),
                     ("hinge_embedding_loss", "arg 0 -> int tensor"), ("ELU", "arg 0 -> str"),
                     ("HuberLoss", "delta -> -1.0")]:
        reason = checks.stricter_reason(fn, what)
        assert reason and len(reason) > 30, (fn, what)
    assert checks.stricter_reason("elu", "arg 0 -> str") is None  # the functions are never listed
