"""Clear errors for wrong calls to pooling, convolution, resampling, fold/unfold, embedding_bag and
broadcast_to (issue #24), beyond the fuzzed ones: each case is written once as ``f(lib)`` and run in
gradlab (the error's class, and a message naming the function and the argument) and, where PyTorch
is installed, in PyTorch too (it must refuse the call, and ``except <its class>`` must catch ours).
"""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
import gradlab.nn.functional  # noqa: F401 - registers the functional ops
from gradlab import checks
from gradlab.errors import ArgumentError, ArgumentTypeError, DTypeError

from .fuzz_calls import builtin_base


def _x(lib, *shape, dtype=None):
    t = lib.arange(float(np.prod(shape))).reshape(*shape) / 10
    return t if dtype is None else t.to(dtype)


def _int(lib, *shape):
    return lib.arange(int(np.prod(shape))).reshape(*shape)


def _dbl(lib, *shape):
    return _x(lib, *shape, dtype=lib.float64)


def F(lib):
    return lib.nn.functional


#: (function named in the message, argument named, call): an integer tensor where a float one belongs
INT_INPUT = [
    ("adaptive_avg_pool1d", "input", lambda lib: F(lib).adaptive_avg_pool1d(_int(lib, 1, 2, 6), 3)),
    ("adaptive_avg_pool2d", "input", lambda lib: F(lib).adaptive_avg_pool2d(_int(lib, 1, 1, 4, 4), (None, 2))),
    ("adaptive_avg_pool3d", "input", lambda lib: F(lib).adaptive_avg_pool3d(_int(lib, 1, 2, 2, 2), 1)),
    ("adaptive_max_pool1d", "input", lambda lib: F(lib).adaptive_max_pool1d(_int(lib, 2, 5), 2)),
    ("adaptive_max_pool2d", "input", lambda lib: F(lib).adaptive_max_pool2d(_int(lib, 1, 1, 4, 4), 2, True)),
    ("adaptive_max_pool3d", "input", lambda lib: F(lib).adaptive_max_pool3d(_int(lib, 1, 1, 2, 2, 2), 1)),
    ("interpolate", "input", lambda lib: F(lib).interpolate(_int(lib, 1, 1, 3), size=5, mode="linear")),
    ("interpolate", "input", lambda lib: F(lib).interpolate(_int(lib, 1, 1, 2, 2), size=(3, 3), mode="area")),
    ("interpolate", "input", lambda lib: F(lib).interpolate(_int(lib, 1, 1, 2, 2), scale_factor=2.0,
                                                            mode="nearest-exact")),
    ("upsample_bilinear", "input", lambda lib: F(lib).upsample_bilinear(_int(lib, 1, 1, 2, 2), size=3)),
    ("Upsample", "input", lambda lib: lib.nn.Upsample(size=4, mode="bilinear")(_int(lib, 1, 1, 2, 2))),
    ("AdaptiveMaxPool1d", "input", lambda lib: lib.nn.AdaptiveMaxPool1d(2)(_int(lib, 1, 1, 4))),
    ("fold", "input", lambda lib: F(lib).fold(_int(lib, 1, 4, 4), (3, 3), 2)),
    ("unfold", "input", lambda lib: F(lib).unfold(_int(lib, 1, 1, 3, 3), 2, padding=1)),
    ("Unfold", "input", lambda lib: lib.nn.Unfold(2)(_int(lib, 1, 1, 3, 3))),
    ("max_unpool1d", "input", lambda lib: F(lib).max_unpool1d(_int(lib, 1, 1, 2), lib.tensor([[[0, 3]]]), 2)),
    ("max_unpool2d", "indices", lambda lib: F(lib).max_unpool2d(_x(lib, 1, 1, 2, 2),
                                                                lib.tensor([[[[0, 3], [8, 15]]]]).float(), 2)),
    ("embedding_bag", "weight", lambda lib: F(lib).embedding_bag(lib.tensor([0, 1, 2]), _int(lib, 3, 2),
                                                                 lib.tensor([0, 1]))),
    ("embedding_bag", "offsets", lambda lib: F(lib).embedding_bag(lib.tensor([0, 1, 2]), _x(lib, 3, 2),
                                                                  lib.tensor([0.0, 1.0]))),
]

#: a float, a string or a bool where an int size belongs
BAD_SIZE = [
    ("adaptive_avg_pool1d", "output_size", lambda lib: F(lib).adaptive_avg_pool1d(_x(lib, 1, 2, 6), 2.0)),
    ("adaptive_avg_pool2d", "output_size", lambda lib: F(lib).adaptive_avg_pool2d(_x(lib, 1, 1, 4, 4), "2")),
    ("adaptive_avg_pool3d", "output_size", lambda lib: F(lib).adaptive_avg_pool3d(_x(lib, 1, 2, 2, 2),
                                                                                  (1, 1, 1.5))),
    ("adaptive_max_pool1d", "output_size", lambda lib: F(lib).adaptive_max_pool1d(_x(lib, 1, 1, 4), None)),
    ("adaptive_max_pool2d", "output_size", lambda lib: F(lib).adaptive_max_pool2d(_x(lib, 1, 1, 4, 4), True)),
    ("adaptive_max_pool3d", "output_size", lambda lib: F(lib).adaptive_max_pool3d(_x(lib, 1, 1, 2, 2, 2), "1")),
    ("AdaptiveAvgPool1d", "output_size", lambda lib: lib.nn.AdaptiveAvgPool1d(2.5)(_x(lib, 1, 1, 5))),
    ("lp_pool1d", "kernel_size", lambda lib: F(lib).lp_pool1d(_x(lib, 1, 1, 4), 2.0, "2")),
    ("lp_pool2d", "stride", lambda lib: F(lib).lp_pool2d(_x(lib, 1, 1, 4, 4), 2.0, 2, stride=1.5)),
    ("lp_pool3d", "kernel_size", lambda lib: F(lib).lp_pool3d(_x(lib, 1, 1, 2, 2, 2), 2.0, (2, 2, 1.5))),
    ("lp_pool2d", "norm_type", lambda lib: F(lib).lp_pool2d(_x(lib, 1, 1, 4, 4), "2", 2)),
    ("pixel_shuffle", "upscale_factor", lambda lib: F(lib).pixel_shuffle(_x(lib, 1, 4, 2, 2), 2.0)),
    ("pixel_unshuffle", "downscale_factor", lambda lib: F(lib).pixel_unshuffle(_x(lib, 1, 1, 4, 4), "2")),
    ("PixelShuffle", "upscale_factor", lambda lib: lib.nn.PixelShuffle(1.5)(_x(lib, 1, 4, 2, 2))),
    ("channel_shuffle", "groups", lambda lib: F(lib).channel_shuffle(_x(lib, 1, 4, 2, 2), 2.0)),
    ("conv1d", "groups", lambda lib: F(lib).conv1d(_x(lib, 1, 2, 5), _x(lib, 2, 1, 3), groups="2")),
    ("conv2d", "groups", lambda lib: F(lib).conv2d(_x(lib, 1, 2, 3, 3), _x(lib, 2, 1, 2, 2), groups=2.0)),
    ("conv3d", "groups", lambda lib: F(lib).conv3d(_x(lib, 1, 2, 2, 2, 2), _x(lib, 2, 1, 1, 1, 1), groups="2")),
    ("conv_transpose1d", "groups", lambda lib: F(lib).conv_transpose1d(_x(lib, 1, 2, 3), _x(lib, 2, 1, 2),
                                                                       groups=2.0)),
    ("conv_transpose2d", "groups", lambda lib: F(lib).conv_transpose2d(_x(lib, 1, 2, 2, 2), _x(lib, 2, 1, 2, 2),
                                                                       groups="2")),
    ("conv_transpose3d", "groups", lambda lib: F(lib).conv_transpose3d(_x(lib, 1, 2, 1, 2, 2),
                                                                       _x(lib, 2, 1, 1, 2, 2), groups=1.5)),
    ("fold", "output_size", lambda lib: F(lib).fold(_x(lib, 1, 4, 4), (3, 3.0), 2)),
    ("max_unpool2d", "output_size", lambda lib: F(lib).max_unpool2d(_x(lib, 1, 1, 2, 2),
                                                                    lib.tensor([[[[0, 3], [8, 15]]]]), 2,
                                                                    output_size=(4.0, 4))),
    ("avg_pool3d", "divisor_override", lambda lib: F(lib).avg_pool3d(_x(lib, 1, 1, 2, 2, 2), 2,
                                                                     divisor_override=1.5)),
    ("embedding_bag", "padding_idx", lambda lib: F(lib).embedding_bag(lib.tensor([[0, 1]]), _x(lib, 3, 2),
                                                                      padding_idx=1.5)),
    ("EmbeddingBag", "num_embeddings", lambda lib: lib.nn.EmbeddingBag(2.5, 3)),
    ("broadcast_to", "size", lambda lib: lib.broadcast_to(_x(lib, 3, 1), (2, 3, 4.0))),
    ("broadcast_to", "size", lambda lib: lib.broadcast_to(_x(lib, 3, 1), ("2", 3, 4))),
]

#: tensors that must share one dtype (PyTorch: "Input type (double) and bias type (long int) should be the same")
MIXED = [
    ("conv1d", "bias", lambda lib: F(lib).conv1d(_dbl(lib, 1, 2, 5), _dbl(lib, 3, 2, 2), _int(lib, 3))),
    ("conv2d", "bias", lambda lib: F(lib).conv2d(_dbl(lib, 1, 2, 3, 3), _dbl(lib, 3, 2, 2, 2), _x(lib, 3))),
    ("conv2d", "weight", lambda lib: F(lib).conv2d(_dbl(lib, 1, 2, 3, 3), _x(lib, 3, 2, 2, 2))),
    ("conv3d", "bias", lambda lib: F(lib).conv3d(_dbl(lib, 1, 1, 2, 2, 2), _dbl(lib, 2, 1, 1, 1, 1), _int(lib, 2))),
    ("conv_transpose1d", "weight", lambda lib: F(lib).conv_transpose1d(_dbl(lib, 1, 2, 3), _x(lib, 2, 1, 2))),
    ("conv_transpose3d", "bias", lambda lib: F(lib).conv_transpose3d(_dbl(lib, 1, 2, 1, 2, 2),
                                                                      _dbl(lib, 2, 1, 1, 2, 2), _x(lib, 1))),
    ("Conv2d", "input", lambda lib: lib.nn.Conv2d(2, 3, 2)(_dbl(lib, 1, 2, 3, 3))),
    ("embedding_bag", "per_sample_weights", lambda lib: F(lib).embedding_bag(
        lib.tensor([0, 1, 2]), _x(lib, 3, 2), lib.tensor([0, 1]), mode="sum", per_sample_weights=_dbl(lib, 3))),
]

#: values of the right kind out of their domain
OUT_OF_DOMAIN = [
    ("adaptive_avg_pool2d", "output_size", lambda lib: F(lib).adaptive_avg_pool2d(_x(lib, 1, 1, 4, 4), (2, 2, 2))),
    ("adaptive_max_pool2d", "output_size", lambda lib: F(lib).adaptive_max_pool2d(_x(lib, 1, 1, 4, 4), -1)),
    ("pixel_shuffle", "upscale_factor", lambda lib: F(lib).pixel_shuffle(_x(lib, 1, 4, 2, 2), 0)),
    ("channel_shuffle", "groups", lambda lib: F(lib).channel_shuffle(_x(lib, 1, 4, 2, 2), -2)),
    ("conv2d", "groups", lambda lib: F(lib).conv2d(_x(lib, 1, 2, 3, 3), _x(lib, 2, 1, 2, 2), groups=0)),
    ("conv_transpose2d", "groups", lambda lib: F(lib).conv_transpose2d(_x(lib, 1, 2, 2, 2), _x(lib, 2, 1, 2, 2),
                                                                       groups=0)),
    ("avg_pool3d", "divisor_override", lambda lib: F(lib).avg_pool3d(_x(lib, 1, 1, 2, 2, 2), 2,
                                                                     divisor_override=0)),
    ("max_unpool2d", "output_size", lambda lib: F(lib).max_unpool2d(_x(lib, 1, 1, 2, 2),
                                                                    lib.tensor([[[[0, 3], [8, 15]]]]), 2,
                                                                    output_size=(7, 4))),
    ("embedding_bag", "padding_idx", lambda lib: F(lib).embedding_bag(lib.tensor([[0, 1]]), _x(lib, 3, 2),
                                                                      padding_idx=3)),
]


def _ids(cases):
    return [f"{fn}-{arg}-{i}" for i, (fn, arg, _) in enumerate(cases)]


def _torch_or_none():
    try:
        import torch
    except ImportError:  # pragma: no cover - PyTorch is a test dependency here
        return None
    return torch


def _check(fn, arg, call, cls):
    with pytest.raises(cls) as info:
        call(gradlab)
    msg = str(info.value)
    assert fn.lower() in msg.lower(), f"the message does not name {fn}: {msg}"
    assert arg in msg, f"the message does not name the argument {arg}: {msg}"
    torch = _torch_or_none()
    if torch is not None:
        try:
            call(torch)
        except Exception as e:  # noqa: BLE001 - PyTorch's class is what is compared
            assert isinstance(info.value, builtin_base(type(e))), (
                f"except {builtin_base(type(e)).__name__} (PyTorch's {type(e).__name__}) would not catch {msg}")
        else:
            pytest.fail(f"PyTorch accepts this call; gradlab refuses it: {msg}")
    return msg


@pytest.mark.parametrize("fn,arg,call", INT_INPUT, ids=_ids(INT_INPUT))
def test_integer_tensor_where_a_float_one_belongs(fn, arg, call):
    msg = _check(fn, arg, call, DTypeError)
    assert "int64" in msg or "float32" in msg, msg
    assert ".float()" in msg or ".long()" in msg, f"the message does not say what to do: {msg}"


@pytest.mark.parametrize("fn,arg,call", BAD_SIZE, ids=_ids(BAD_SIZE))
def test_float_or_str_where_an_int_belongs(fn, arg, call):
    _check(fn, arg, call, ArgumentTypeError)


@pytest.mark.parametrize("fn,arg,call", MIXED, ids=_ids(MIXED))
def test_tensors_of_different_dtypes(fn, arg, call):
    msg = _check(fn, arg, call, DTypeError)
    assert "same dtype" in msg and ".to(" in msg, msg


@pytest.mark.parametrize("fn,arg,call", OUT_OF_DOMAIN, ids=_ids(OUT_OF_DOMAIN))
def test_sizes_out_of_their_domain(fn, arg, call):
    _check(fn, arg, call, ArgumentError)


#: what PyTorch accepts stays accepted: the checks only refuse
ACCEPTED = [
    lambda lib: F(lib).adaptive_avg_pool2d(_x(lib, 1, 1, 4, 5), (None, 2)),
    lambda lib: F(lib).adaptive_max_pool3d(_x(lib, 1, 1, 2, 3, 2), [1, None, 2]),
    lambda lib: F(lib).adaptive_avg_pool1d(_x(lib, 1, 1, 5), (3,)),
    lambda lib: F(lib).adaptive_max_pool2d(_x(lib, 1, 1, 4, 5), [2, 3]),
    lambda lib: F(lib).conv2d(_x(lib, 1, 2, 3, 3), _x(lib, 2, 1, 2, 2), groups=np.int64(2)),
    lambda lib: F(lib).conv_transpose2d(_dbl(lib, 1, 2, 2, 2), _dbl(lib, 2, 1, 2, 2), _int(lib, 1)),
    lambda lib: F(lib).conv_transpose1d(_dbl(lib, 1, 2, 3), _dbl(lib, 2, 1, 2), _x(lib, 1)),
    lambda lib: lib.broadcast_to(_x(lib, 3, 1), (2, -1, 4)),
    lambda lib: F(lib).max_unpool2d(_x(lib, 1, 1, 2, 2), lib.tensor([[[[0, 3], [8, 15]]]]), 2,
                                    output_size=(1, 1, 5, 5)),
    lambda lib: F(lib).embedding_bag(lib.tensor([0, 1, 2], dtype=lib.int32), _x(lib, 3, 2), lib.tensor([0, 1])),
    lambda lib: F(lib).unfold(lib.ones(1, 1, 3, 3, dtype=lib.bool), 2),
    lambda lib: F(lib).pixel_shuffle(_int(lib, 1, 4, 2, 2), 2),
]


@pytest.mark.parametrize("i", range(len(ACCEPTED)))
def test_what_pytorch_accepts_is_accepted(i):
    out = ACCEPTED[i](gradlab)
    torch = _torch_or_none()
    if torch is not None:
        ref = ACCEPTED[i](torch)
        assert tuple(out.shape) == tuple(ref.shape)
        np.testing.assert_allclose(np.asarray(out.detach().numpy(), dtype=np.float64),
                                   ref.detach().double().numpy(), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- the checks themselves
def test_output_sizes():
    assert checks.output_sizes(3, 2, "f") == (3, 3)
    assert checks.output_sizes((None, 4), 2, "f") == (None, 4)
    assert checks.output_sizes([np.int64(2)], 1, "f", none_ok=False) == (2,)
    for bad in ("2", 1.5, (2, 1.5), (None, "3"), True):
        with pytest.raises(ArgumentTypeError, match="output_size"):
            checks.output_sizes(bad, 2, "f")
    with pytest.raises(ArgumentTypeError, match="got None"):
        checks.output_sizes(None, 1, "f", none_ok=False)
    with pytest.raises(ArgumentError, match=r"3 entries"):
        checks.output_sizes((1, 2, 3), 2, "f")
    with pytest.raises(ArgumentError, match=">= 1"):
        checks.output_sizes((0, 2), 2, "f")


def test_same_dtype_and_integer_tensor():
    a, b = gradlab.ones(2, dtype=gradlab.float64), gradlab.ones(2, dtype=gradlab.int64)
    checks.same_dtype("f", input=a, bias=None, weight=a)
    with pytest.raises(DTypeError, match=r"input \(2,\) has dtype float64 but bias \(2,\) has dtype int64; they must have the same dtype"):
        checks.same_dtype("f", input=a, bias=b)
    assert checks.integer_tensor(b, "f", "indices", int64_only=True) is b
    checks.integer_tensor(gradlab.ones(2, dtype=gradlab.int32), "f", "offsets")
    for bad, only in ((a, False), (gradlab.ones(2, dtype=gradlab.int32), True),
                      (gradlab.ones(2, dtype=gradlab.bool), False)):
        with pytest.raises(DTypeError, match="indices must have"):
            checks.integer_tensor(bad, "f", "indices", int64_only=only)
