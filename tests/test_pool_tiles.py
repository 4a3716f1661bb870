"""max_pool2d's tiled fast path (stride = kernel, no padding) against the general path and PyTorch.

The fast path finds each window's max with whole-array steps instead of an argmax per window;
it must give the same values (bit for bit, including which zero of a +0/-0 tie), the same
indices (the first max in the window, as PyTorch), the same gradients, and the same second
derivatives, for every float dtype and for inputs the windows do not divide evenly.
"""
import numpy as np
import pytest

import gradlab
import gradlab.nn.functional as F
from gradlab.ops import pool


def _input(rng, shape, dtype):
    x = np.maximum(rng.standard_normal(shape), 0).astype(dtype)  # ReLU-like: many all-zero windows
    x.reshape(-1)[rng.integers(0, x.size, 8)] = -0.0  # some negative zeros among the ties
    x.reshape(-1)[rng.integers(0, x.size, 8)] = 1.5   # repeated maxima
    return x


def _run(x, k, general):
    t = gradlab.tensor(x, requires_grad=True)
    real = pool._tiles
    if general:
        pool._tiles = lambda *a: None
    try:
        out, idx = F.max_pool2d(t, k, return_indices=True)
        g, = gradlab.autograd.grad((out * out).sum(), t, create_graph=True)
        gg, = gradlab.autograd.grad(g.sum(), t)
    finally:
        pool._tiles = real
    return out.detach().numpy(), idx.numpy(), g.detach().numpy(), gg.numpy()


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("k", [1, 2, 3, (2, 3), (3, 1)])
@pytest.mark.parametrize("shape", [(2, 3, 8, 8), (3, 2, 7, 11), (1, 1, 3, 3)])
def test_the_tiled_path_is_the_general_path_bit_for_bit(dtype, k, shape):
    rng = np.random.default_rng(sum(shape))
    x = _input(rng, shape, dtype)
    fast, slow = _run(x, k, general=False), _run(x, k, general=True)
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_the_tiled_path_runs_where_it_should():
    x = gradlab.randn(2, 3, 8, 8)
    assert pool._tiles(x._data, (2, 2), (2, 2), (1, 1), (4, 4), (0, 0, 0, 0)) is not None
    assert pool._tiles(x._data, (2, 2), (1, 1), (1, 1), (7, 7), (0, 0, 0, 0)) is None  # overlapping windows
    x._data[0, 0, 3, 3] = np.nan
    assert pool._tiles(x._data, (2, 2), (2, 2), (1, 1), (4, 4), (0, 0, 0, 0)) is None  # NaN: the general path


def test_the_tiled_path_matches_pytorch_on_ties_and_signed_zeros(torch):
    rng = np.random.default_rng(7)
    for dtype in (np.float32, np.float64):
        x = _input(rng, (4, 3, 13, 12), dtype)
        gw = rng.standard_normal((4, 3, 6, 6)).astype(dtype)
        xg, xt = gradlab.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        og, ig = F.max_pool2d(xg, 2, return_indices=True)
        ot, it = torch.nn.functional.max_pool2d(xt, 2, return_indices=True)
        (og * gradlab.tensor(gw)).sum().backward()
        (ot * torch.tensor(gw)).sum().backward()
        assert og.detach().numpy().tobytes() == ot.detach().numpy().tobytes()
        np.testing.assert_array_equal(ig.numpy(), it.numpy())
        np.testing.assert_array_equal(xg.grad.numpy(), xt.grad.numpy())
