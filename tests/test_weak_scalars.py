"""Python floats beside float tensors: the cached 0-d arrays give NumPy's (and PyTorch's) exact numbers."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gradlab
from gradlab.ops import _util

floats = st.floats(allow_nan=True, allow_infinity=True, width=64)


@settings(max_examples=200, deadline=None)
@given(v=floats, dtype=st.sampled_from(["float32", "float64"]))
def test_every_binary_op_with_a_python_float_matches_numpy_bit_for_bit(v, dtype):
    x = np.array([[-2.5, -0.0, 0.0, 1e-30], [3.0, 1e30, np.inf, np.nan]], dtype=dtype)
    t = gradlab.tensor(x)
    with np.errstate(all="ignore"):
        for got, want in [(t + v, x + v), (t - v, x - v), (t * v, x * v), (t / v, x / v),
                          (v + t, v + x), (v - t, v - x), (v * t, v * x), (v / t, v / x)]:
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.numpy(), want)  # NaNs equal, and the sign of zero:
            assert (np.signbit(got.numpy()) == np.signbit(want)).all()


def test_signed_zero_is_never_shared_with_plus_zero():
    t = gradlab.tensor([1.0, -1.0])
    assert np.signbit((t * 0.0).numpy()).tolist() == [False, True]
    assert np.signbit((t * -0.0).numpy()).tolist() == [True, False]
    assert np.signbit((t * 0.0).numpy()).tolist() == [False, True]


def test_the_cache_is_read_only_bounded_and_skips_what_it_cannot_hold():
    _util.WEAK_FLOAT32.clear()
    t = gradlab.tensor([1.0, 2.0])
    t * 1.25
    cached = _util.WEAK_FLOAT32[1.25]
    assert cached.shape == () and cached.dtype == np.float32 and not cached.flags.writeable
    with pytest.raises(ValueError):
        cached[...] = 3.0
    for v in (0.0, -0.0, math.nan):
        assert _util.weak_float(v, t.dtype) is v  # stays a Python float: not cached
    h = gradlab.tensor([1.0], dtype=gradlab.float16)
    assert (h * 70000.0).numpy()[0] == np.inf  # float16 keeps NumPy's quiet overflow, uncached
    assert _util.weak_cache(h.dtype) is None and _util.weak_float(70000.0, h.dtype) == 70000.0
    for i in range(3000):  # a learning-rate schedule makes new floats forever: the cache stays small
        t * (1.0 + i * 1e-6)
    assert len(_util.WEAK_FLOAT32) <= 1024


def test_gradients_through_python_floats_are_unchanged():
    x = gradlab.tensor([0.5, -1.5, 2.0], dtype=gradlab.float64, requires_grad=True)
    ((x * 1.7 + 0.3) / 2.5 - 0.1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 1.7 / 2.5), rtol=1e-15)
