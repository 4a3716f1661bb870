"""Numerics at the extremes of each float dtype (issue #24): float16/bfloat16/float32/float64 inputs near
the dtype's limits, compared with PyTorch and with a float64 reference, with no NumPy RuntimeWarning
escaping (warnings are errors here).

16-bit floats compute norms and squares in float32 as PyTorch does (vector_norm, std, normalize,
rms_norm, cosine_similarity); gelu's tanh form does not overflow at 3e38; layer_norm of float32 rows near
1e30, whose squares overflow, is rescaled and gives the float64 reference (PyTorch gives nan there: the
one deliberate difference, checked against the float64 reference instead).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradlab as g
import gradlab.nn.functional as F

from .oracle import to_torch

DTYPES = {"float16": g.float16, "bfloat16": g.bfloat16, "float32": g.float32, "float64": g.float64}
TOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-6, "float64": 1e-12}
MAX = {"float16": 6.0e4, "bfloat16": 3.0e38, "float32": 3.0e38, "float64": 1.0e300}


def _big(dt, frac):
    """Values at ``frac`` of the dtype's largest finite value, with a spread, as rows."""
    m = MAX[dt] * frac
    return np.array([[0.5 * m, 0.75 * m, m], [-m, 0.25 * m, 0.5 * m]])


#: the largest values whose squares still fit the dtype the op computes in: float16's squares overflow at
#: 256, but 16-bit floats compute in float32, so float16 goes to its own limit; float32's overflow at 1.8e19
SQUARABLE = {"float16": 2.0e4, "bfloat16": 1.0e18, "float32": 1.0e18, "float64": 1.0e150}


def _squarable(dt):
    m = SQUARABLE[dt]
    return np.array([[0.5 * m, 0.75 * m, m], [-m, 0.25 * m, 0.5 * m]])


#: name -> (gradlab fn, torch fn, input maker(dtype name))
CASES = {
    "vector_norm": (lambda x: g.linalg.vector_norm(x, dim=-1), lambda t, x: t.linalg.vector_norm(x, dim=-1),
                    _squarable),
    "std": (lambda x: x.std(-1), lambda t, x: x.std(-1), _squarable),
    "normalize": (lambda x: F.normalize(x, dim=-1), lambda t, x: t.nn.functional.normalize(x, dim=-1),
                  _squarable),
    "rms_norm": (lambda x: F.rms_norm(x, (3,)), lambda t, x: t.nn.functional.rms_norm(x, (3,)),
                 _squarable),
    "cosine_similarity": (lambda x: F.cosine_similarity(x, x * 0.5), lambda t, x: t.nn.functional.cosine_similarity(
        x, x * 0.5), _squarable),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), lambda t, x: t.nn.functional.gelu(x, approximate="tanh"),
                  lambda dt: _big(dt, 1.0)),
    "gelu": (lambda x: F.gelu(x), lambda t, x: t.nn.functional.gelu(x), lambda dt: _big(dt, 1.0)),
    "softmax_inf": (lambda x: F.softmax(x, -1), lambda t, x: t.softmax(x, -1),
                    lambda dt: np.array([[-np.inf, -np.inf, 0.0], [np.inf, 1.0, 0.0]])),
    "log_softmax_big": (lambda x: F.log_softmax(x, -1), lambda t, x: t.log_softmax(x, -1), lambda dt: _big(dt, 1.0)),
    "silu": (lambda x: F.silu(x), lambda t, x: t.nn.functional.silu(x),
             lambda dt: np.array([[-np.inf, np.inf, 0.0], [-MAX[dt], MAX[dt], 1.0]])),
    "softplus": (lambda x: F.softplus(x), lambda t, x: t.nn.functional.softplus(x), lambda dt: _big(dt, 1.0)),
    "sigmoid": (lambda x: g.sigmoid(x), lambda t, x: t.sigmoid(x), lambda dt: _big(dt, 1.0)),
    "tanh": (lambda x: g.tanh(x), lambda t, x: t.tanh(x), lambda dt: _big(dt, 1.0)),
    "elu": (lambda x: F.elu(x), lambda t, x: t.nn.functional.elu(x), lambda dt: _big(dt, 1.0)),
    "logsumexp": (lambda x: g.logsumexp(x, -1), lambda t, x: t.logsumexp(x, -1), lambda dt: _big(dt, 1.0)),
    "layer_norm_moderate": (lambda x: F.layer_norm(x, (3,)), lambda t, x: t.nn.functional.layer_norm(x, (3,)),
                            lambda dt: _big(dt, 1e-3) if dt == "float16" else _big(dt, 1e-20 if dt != "float64" else 1e-160)),
}


def _run(dt, fn, arr):
    x = g.tensor(arr, dtype=DTYPES[dt])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a NumPy RuntimeWarning escaping is a failure
        y = fn(x)
    assert y.dtype == x.dtype, f"result dtype {y.dtype} for a {dt} input"
    return x, np.asarray(y.to(g.float64).numpy())


def _close(a, b, dt, what):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert np.array_equal(np.isnan(a), np.isnan(b)), f"{what}: nan pattern {a} vs {b}"
    assert np.array_equal(np.isinf(a), np.isinf(b)), f"{what}: inf pattern {a} vs {b}"
    fin = np.isfinite(a)
    scale = np.maximum(np.abs(b[fin]), 1.0)
    np.testing.assert_array_less(np.abs(a[fin] - b[fin]) / scale, TOL[dt] * 4 + 1e-300, err_msg=what)


@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("name", sorted(CASES))
def test_extremes_match_pytorch_and_float64(name, dt, torch):
    fn, tfn, make = CASES[name]
    arr = make(dt)
    x, y = _run(dt, fn, arr)
    tx = to_torch(torch, x)
    ty = tfn(torch, tx)
    # the float64 reference: the same inputs (as rounded to dt), computed in float64 by PyTorch, rounded to dt
    ref = tfn(torch, tx.double()).detach()
    rounded = ref.to(tx.dtype).double().numpy()
    try:
        _close(y, ty.double().detach().numpy(), dt, f"{name} {dt} vs PyTorch")
    except AssertionError:
        # where PyTorch's own kernel overflows (gelu at 2e38 -> inf, layer_norm of 1e280 rows -> nan), gradlab
        # must give the float64 answer instead
        _close(y, rounded, dt, f"{name} {dt} vs float64 (PyTorch differs)")
    else:
        if np.all(np.isfinite(rounded)) and np.all(np.isfinite(y)):
            _close(y, rounded, dt, f"{name} {dt} vs float64")


@pytest.mark.parametrize("dt", ["bfloat16", "float32"])
def test_layer_norm_of_rows_near_1e30_is_the_float64_answer(dt, torch):
    arr = np.array([[1e30, 2e30, 3e30, -1e30], [5e29, -2e30, 1e30, 0.0]])
    x, y = _run(dt, lambda t: F.layer_norm(t, (4,)), arr)
    tx = to_torch(torch, x)
    ref = torch.nn.functional.layer_norm(tx.double(), (4,)).numpy()
    _close(y, ref, dt, "layer_norm near 1e30 vs float64")
    assert np.abs(y).max() > 1.0  # not the zeros it used to give
    # PyTorch's float32/bfloat16 kernel overflows here (nan): gradlab rescales instead (module docstring)
    assert np.isnan(torch.nn.functional.layer_norm(tx, (4,)).float().numpy()).all()
    # and its gradient is finite
    xg = g.tensor(arr, dtype=DTYPES[dt], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.layer_norm(xg, (4,)).pow(2).sum().backward()
    assert np.isfinite(xg.grad.to(g.float64).numpy()).all()


def test_gelu_tanh_at_3e38_is_finite():
    x = g.tensor([3e38, -3e38, 1e20], dtype=g.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = F.gelu(x, approximate="tanh").numpy()
    np.testing.assert_allclose(y, [3e38, 0.0, 1e20], rtol=1e-6)
