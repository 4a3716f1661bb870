"""Gradient statistics plots: each returns a Figure with the right axes, labels and data."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
import gradlab.nn as nn
import gradlab.optim as optim
from gradlab.debug import (
    DebugInputError,
    UpdateRatioTracker,
    activation_stats,
    grad_histograms,
    grad_norm_bars,
    loss_curve,
    update_ratio_plot,
)

from .optional import require

require("matplotlib", "the plots need matplotlib (pip install 'gradlab[lab]')")


@pytest.fixture(autouse=True, scope="module")
def _agg():
    """matplotlib's non-interactive backend, set when this file runs (not at import: see tests/optional.py)."""
    import matplotlib
    matplotlib.use("Agg")


def _trained(steps=3):
    gradlab.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = optim.SGD(model.parameters(), lr=0.1)
    tracker = UpdateRatioTracker(model)
    losses = []
    x, y = gradlab.randn(16, 4), gradlab.randn(16, 1)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        tracker.record()
        losses.append(loss.item())
    return model, tracker, losses, x


def test_grad_norm_bars():
    from matplotlib.figure import Figure
    model, *_ = _trained()
    fig = grad_norm_bars(model)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert ax.get_ylabel() == "gradient L2 norm" and ax.get_xlabel() == "parameter"
    heights = [p.get_height() for p in ax.patches]
    names = [t.get_text() for t in ax.get_xticklabels()]
    expected = {n: float(np.linalg.norm(p.grad._data.astype(np.float64))) for n, p in model.named_parameters()}
    assert names == list(expected)
    np.testing.assert_allclose(heights, list(expected.values()), rtol=1e-6)


def test_grad_norm_bars_by_module():
    model, *_ = _trained()
    ax = grad_norm_bars(model, by="module", log=False).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "2"] and ax.get_xlabel() == "module"
    first = np.sqrt(sum(float((p.grad._data.astype(np.float64) ** 2).sum()) for p in model[0].parameters()))
    assert ax.patches[0].get_height() == pytest.approx(first)


def test_grad_histograms():
    model, *_ = _trained()
    fig = grad_histograms(model, bins=20)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == [n for n, _ in model.named_parameters()]
    for ax, (_, p) in zip(visible, model.named_parameters()):
        assert len(ax.patches) == 20
        assert sum(b.get_height() for b in ax.patches) == p.grad.numel()
        assert ax.get_xlabel() == "gradient value"


def test_activation_stats_model_and_dict():
    model, _, _, x = _trained()
    fig = activation_stats(model, x)
    top, bottom = fig.axes[0], fig.axes[1]
    assert [t.get_text() for t in top.get_xticklabels()] == ["0", "1", "2"]
    with gradlab.no_grad():
        relu_out = model[1](model[0](x))._data
    zero_bars = bottom.patches[:3]
    assert zero_bars[1].get_height() == pytest.approx(float((relu_out == 0).mean()))
    means = top.lines[0].get_ydata()
    assert means[1] == pytest.approx(float(relu_out.mean()), rel=1e-5)
    fig2 = activation_stats({"h": gradlab.tensor([0.0, 1.0, 0.0, 3.0])})
    assert fig2.axes[1].patches[0].get_height() == pytest.approx(0.5)


def test_update_ratio_plot():
    model, tracker, _, _ = _trained(steps=4)
    fig = update_ratio_plot(tracker)
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and ax.get_xlabel() == "step"
    lines = {ln.get_label(): ln for ln in ax.lines}
    assert set(tracker.history) <= set(lines)
    assert list(lines["0.weight"].get_xdata()) == [1, 2, 3, 4]
    np.testing.assert_allclose(lines["0.weight"].get_ydata(), tracker.history["0.weight"])
    assert all(r > 0 for r in tracker.history["0.weight"])


def test_loss_curve():
    _, _, losses, _ = _trained(steps=5)
    fig = loss_curve(losses, val_losses=[losses[0], losses[-1]], smooth=2)
    ax = fig.axes[0]
    assert ax.get_ylabel() == "loss" and ax.get_title() == "Loss curve"
    np.testing.assert_allclose(ax.lines[0].get_ydata(), losses)
    np.testing.assert_allclose(ax.lines[1].get_ydata(), np.convolve(losses, [0.5, 0.5], mode="valid"))
    assert [ln.get_label() for ln in ax.lines] == ["train", "train (2-step mean)", "validation"]


def test_bad_input():
    model = nn.Linear(2, 2)
    with pytest.raises(gradlab.GradError, match="backward"):
        grad_norm_bars(model)
    with pytest.raises(DebugInputError):
        loss_curve([])
    with pytest.raises(DebugInputError):
        activation_stats(42)
    with pytest.raises(DebugInputError):
        update_ratio_plot({})
