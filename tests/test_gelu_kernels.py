"""GELU's array kernels (``gradlab/ops/activations.py``) and the normal CDF under exact GELU
(``backend.special.ncdf_block``): values and gradients against PyTorch and a float64 reference on
dense grids with tails, the tanh form's limits where PyTorch's own formula gives nan (``inf * 0``),
and the same bits at any thread count.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import gradlab
import gradlab.nn.functional as F
from gradlab.backend.special import ncdf_block


def _grid():
    return np.concatenate([np.linspace(-30, 30, 120001), -np.logspace(-30, 4, 400), np.logspace(-30, 4, 400),
                           [0.0, -0.0]])


def _ours(x, approximate):
    gx = gradlab.tensor(x, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NumPy overflow warning escapes (exp(-2u) overflows for x << 0)
        y = F.gelu(gx, approximate=approximate)
        y.backward(gradlab.ones_like(y))
    return y.detach().numpy().astype(np.float64), gx.grad.numpy().astype(np.float64)


def _torch(torch, x, approximate):
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.nn.functional.gelu(tx, approximate=approximate)
    ty.backward(torch.ones_like(ty))
    return ty.detach().double().numpy(), tx.grad.double().numpy()


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype, tol", [(np.float32, 4e-7), (np.float64, 1e-13)])
def test_values_and_grads_match_pytorch_and_float64(torch, approximate, dtype, tol):
    """Within a few ulps (relative to max(|ref|, 1)) of PyTorch's float64 answer, and of PyTorch in the dtype."""
    x = _grid().astype(dtype)
    y, g = _ours(x, approximate)
    ry, rg = _torch(torch, x.astype(np.float64), approximate)   # the reference: PyTorch in float64
    ty, tg = _torch(torch, x, approximate)
    scale = lambda r: np.maximum(np.abs(r), 1.0)  # noqa: E731
    assert np.isfinite(y).all() and np.isfinite(g).all()
    np.testing.assert_array_less(np.abs(y - ry) / scale(ry), tol)
    np.testing.assert_array_less(np.abs(g - rg) / scale(rg), tol)
    # and never further from PyTorch than PyTorch's own rounding (its float32 tanh-form slope cancels to 0
    # near x = -5, where the float64 one is -8e-7) plus tol
    for ours, theirs, ref in ((y, ty, ry), (g, tg, rg)):
        np.testing.assert_array_less(np.abs(ours - theirs), np.abs(theirs - ref) + tol * scale(ref))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tanh_form_slope_is_its_limit_where_pytorch_gives_nan(dtype):
    """Beyond |x| ~ 1e13 (float32) PyTorch's tanh-form gradient is 0.5 x * 0 * inf = nan; gradlab's clips x
    where the slope has reached its limit (1 above, 0 below, to the dtype's precision), so it stays finite."""
    big = 3e38 if dtype == np.float32 else 1e300
    x = np.array([1e14, -1e14, big, -big, 12.0, -12.0, 25.0, -25.0], dtype)
    y, g = _ours(x, "tanh")
    np.testing.assert_allclose(g, [1, 0, 1, 0, 1, 0, 1, 0], atol=1e-30)
    np.testing.assert_allclose(y, np.where(x > 0, x, 0.0), rtol=1e-7, atol=1e-30)
    yn, gn = _ours(np.array([np.nan], dtype), "tanh")
    assert np.isnan(yn).all() and np.isnan(gn).all()


def test_normal_cdf_float32_within_a_tenth_of_a_micro_of_math_erfc():
    """float32 Phi (exact GELU's weight): absolute error below 1e-7 (Phi is 0.5-1 where it matters; PyTorch's
    0.5 (1 + erf) has the same), on a dense grid with the branch edge's neighbours, odd pieces and tails."""
    edge = np.float32(0.921875 * math.sqrt(2))
    near = np.nextafter(edge, np.float32([0, 9]))
    a = np.concatenate([np.linspace(-14, 14, 400001), [edge], near, -near, [-edge], [0.0, -0.0, 1e-30, -1e-30]])
    a = a.astype(np.float32)
    ref = np.array([0.5 * math.erfc(-float(v) / math.sqrt(2)) for v in a])
    got = ncdf_block(a)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=0, atol=1e-7)
    assert np.all(np.diff(got[:400001]) >= 0)  # monotonic
    with np.errstate(over="ignore", invalid="ignore"):  # (ops run quiet; a^2 overflows for 3e38)
        ends = ncdf_block(np.array([np.nan, np.inf, -np.inf, 3e38, -3e38], np.float32))
    np.testing.assert_array_equal(ends[1:], [1, 0, 1, 0])
    assert np.isnan(ends[0])


def test_normal_cdf_float64_within_1e16_of_math_erfc():
    a = np.linspace(-8, 8, 40001)
    ref = np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in a])
    np.testing.assert_allclose(ncdf_block(a), ref, rtol=0, atol=2e-16)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_blocks_and_threads_give_the_same_bits(approximate):
    """A large array goes through gelu's blocked path (blocks of ``_GELU_GRAIN``, across threads): the same
    bits as one call on the whole array, at 1 and 4 threads, forward and slope."""
    from gradlab.ops import activations as A
    x = (np.random.default_rng(5).standard_normal(3 * A._GELU_GRAIN + 123) * 3).astype(np.float32)
    fwd = A._gelu_erf if approximate == "none" else A._gelu_tanh
    with np.errstate(all="ignore"):  # one call each, on pieces smaller than the blocked path's threshold
        whole = fwd(x), np.concatenate([A._gelu_slope(x[s:s + 50000], approximate) for s in range(0, x.size, 50000)])
    old = gradlab.get_num_threads()
    try:
        for n in (1, 4):
            gradlab.set_num_threads(n)
            with np.errstate(all="ignore"):
                blocked = A._blocked(fwd, x), A._gelu_slope(x, approximate)
            np.testing.assert_array_equal(blocked[0], whole[0])
            np.testing.assert_array_equal(blocked[1], whole[1])
    finally:
        gradlab.set_num_threads(old)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_a_block_larger_than_the_threshold_is_computed_not_reblocked(approximate, monkeypatch):
    """The slope's blocks run the one-call kernel: with a block size above ``threads.MIN_ELEMENTS`` (a block
    that is itself "big") the slope still finishes, with the same bits (it used to re-enter the blocking
    without end)."""
    from gradlab.backend import threads
    from gradlab.ops import activations as A
    x = (np.random.default_rng(6).standard_normal(3 * threads.MIN_ELEMENTS + 77) * 3).astype(np.float32)
    with np.errstate(all="ignore"):
        want = A._gelu_slope_block(x, approximate)
        monkeypatch.setattr(A, "_GELU_GRAIN", 2 * threads.MIN_ELEMENTS)
        got = A._gelu_slope(x, approximate)
    np.testing.assert_array_equal(got, want)
