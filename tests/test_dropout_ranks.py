"""``dropout1d/2d/3d`` (and the ``nn.Dropout*d`` modules) on inputs of every rank, as PyTorch 2.13: which
ranks are refused, which warn (the same warning text and class), and which dims share one mask value."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradlab

pytestmark = pytest.mark.oracle


def _run(lib, name, ndim):
    """(outcome, warnings): outcome is the set of dims the mask varies over, or the exception class."""
    x = lib.ones((6,) * ndim) if ndim else lib.ones(())
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            lib.manual_seed(0)
            y = np.asarray(getattr(lib.nn.functional, name)(x, 0.5).numpy())
            outcome = frozenset(d for d in range(ndim) if not (y == np.take(y, [0], axis=d)).all())
        except Exception as e:  # noqa: BLE001 - the class is what is compared
            outcome = RuntimeError if isinstance(e, RuntimeError) else type(e)
    return outcome, [(c.category, str(c.message)) for c in w]


@pytest.mark.parametrize("ndim", range(7))
@pytest.mark.parametrize("name", ["dropout1d", "dropout2d", "dropout3d"])
def test_channel_dropout_on_every_rank_matches_pytorch(name, ndim, torch):
    g, gw = _run(gradlab, name, ndim)
    t, tw = _run(torch, name, ndim)
    assert g == t, f"{name} on a {ndim}-D input: gradlab {g}, PyTorch {t}"
    assert gw == tw


def test_dropout2d_on_2d_input_drops_elementwise_and_keeps_the_expected_value():
    x = gradlab.ones(200, 50)
    with pytest.warns(UserWarning, match="use dropout instead"):
        y = gradlab.nn.functional.dropout2d(x, 0.5).numpy()
    assert set(np.unique(y)) == {0.0, 2.0}
    assert abs(y.mean() - 1.0) < 0.05
    assert (y.std(0) > 0).all() and (y.std(1) > 0).all()  # not constant along either dim


def test_dropout2d_module_on_3d_input_warns_and_reads_n_c_l(torch):
    m = gradlab.nn.Dropout2d(0.5)
    with pytest.warns(UserWarning, match=r"interpreted as shape \(N, C, L\)"):
        y = m(gradlab.ones(4, 5, 7)).numpy()
    assert (y == y[:, :, :1]).all()  # one value per (n, c), shared along L
    m.eval()
    x = gradlab.ones(4, 5, 7)
    with pytest.warns(UserWarning):
        assert m(x) is x


def test_dropout_gradient_is_the_mask():
    x = gradlab.ones(3, 4, 2, 2, requires_grad=True)
    y = gradlab.nn.functional.dropout2d(x, 0.5)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())
