"""Gradient and training statistics as matplotlib Figures (one function per plot).

What to look at when a network does not learn:

* :func:`grad_norm_bars` -- the gradient norm of every parameter: vanishing
  (early layers near 0) or exploding (orders of magnitude above the rest)?
* :func:`grad_histograms` -- ``plt.hist(p.grad.flatten(), bins=50)`` per layer:
  a spike at exactly 0 means dead units; very wide tails mean exploding.
* :func:`activation_stats` -- mean, std and the fraction of zero / saturated
  outputs of every layer for one batch.
* :class:`UpdateRatioTracker` + :func:`update_ratio_plot` -- ``|dW| / |W|`` per
  step; around 1e-3 is the usual healthy range, far below means the layer is
  not learning, far above means the learning rate is too high.
* :func:`loss_curve` -- training (and validation) loss per step.

Each returns a ``matplotlib.figure.Figure`` (no pyplot state, so they work in
notebooks, scripts and tests alike); Jupyter shows it when it is the cell's value.
"""
from __future__ import annotations

import numpy as np

from ..errors import GradError
from ._common import DebugInputError, Tensor, host, named_parameters, require_tensor


def _figure(nrows=1, ncols=1, size=None):
    try:
        from matplotlib.figure import Figure
    except ImportError:  # pragma: no cover - matplotlib is in the lab and dev extras
        raise ImportError("gradlab's plots need matplotlib: pip install 'gradlab[lab]'") from None
    fig = Figure(figsize=size or (6.4, 4.0), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def _f64(t):
    return host(t._data if isinstance(t, Tensor) else t, dtype=np.float64)


def _grads(model, tool):
    items = [(n, p) for n, p in named_parameters(model, tool) if p.grad is not None]
    if not items:
        raise GradError(f"{tool}: no parameter has a gradient; call loss.backward() first (and plot before "
                        "optimizer.zero_grad())")
    return items


def grad_norm_bars(model, log=True, by="parameter"):
    """A bar per parameter (or per module with ``by="module"``): the L2 norm of its gradient.

    Log scale by default, since healthy and vanishing layers differ by orders of magnitude.
    """
    if by not in ("parameter", "module"):
        raise DebugInputError(f"grad_norm_bars: by must be 'parameter' or 'module', got {by!r}")
    items = _grads(model, "grad_norm_bars")
    sq = {}
    for n, p in items:
        key = (n.rsplit(".", 1)[0] if "." in n else "(model)") if by == "module" else n
        sq[key] = sq.get(key, 0.0) + float(np.nansum(_f64(p.grad) ** 2))
    names = list(sq)
    norms = [float(np.sqrt(v)) for v in sq.values()]
    fig, axes = _figure(size=(max(6.4, 0.5 * len(names)), 4.0))
    ax = axes[0, 0]
    ax.bar(range(len(names)), norms, color="#4c72b0")
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=8)
    ax.set_xlabel(by)
    ax.set_ylabel("gradient L2 norm")
    ax.set_title("Gradient norm per layer")
    if log and any(v > 0 for v in norms):
        ax.set_yscale("log")
    return fig


def grad_histograms(model, bins=50, max_layers=16):
    """One histogram of gradient values per parameter (the ``plt.hist(p.grad.flatten())`` idea)."""
    items = _grads(model, "grad_histograms")[:max_layers]
    n = len(items)
    cols = min(4, n)
    rows = (n + cols - 1) // cols
    fig, axes = _figure(rows, cols, size=(3.2 * cols, 2.6 * rows))
    for i, (name, p) in enumerate(items):
        ax = axes[i // cols, i % cols]
        g = _f64(p.grad).ravel()
        fin = g[np.isfinite(g)]
        ax.hist(fin, bins=bins, color="#55a868")
        bad = g.size - fin.size
        ax.set_title(name + (f" ({bad} non-finite)" if bad else ""), fontsize=9)
        ax.set_xlabel("gradient value")
        ax.set_ylabel("count")
    for j in range(n, rows * cols):
        axes[j // cols, j % cols].set_visible(False)
    fig.suptitle("Gradient histograms per layer")
    return fig


def _collect_activations(model, inputs):
    """Run ``model(*inputs)`` with a forward hook on every leaf module; {path: output tensor}."""
    if not (hasattr(model, "named_modules") and callable(model)):
        raise DebugInputError(f"activation_stats: expected a gradlab.nn.Module to run (or a dict of name -> "
                              f"activation Tensor), got {type(model).__name__}")
    acts, handles = {}, []
    for name, mod in model.named_modules():
        if name and not any(True for _ in mod.children()):
            def hook(m, args, out, name=name):
                if isinstance(out, Tensor):
                    acts[name] = out
            handles.append(mod.register_forward_hook(hook))
    try:
        from ..autograd.grad_mode import no_grad
        with no_grad():
            model(*inputs)
    finally:
        for h in handles:
            h.remove()
    return acts


def activation_stats(model_or_activations, *inputs):
    """Mean +- std and the fraction of zero / saturated outputs of each layer.

    Pass a model and its inputs (each leaf module's output is captured with a
    forward hook, under no_grad), or a dict ``{name: activation tensor}``.
    """
    if isinstance(model_or_activations, dict):
        acts = {k: require_tensor(v, "activation_stats", f"activation '{k}'") for k, v in model_or_activations.items()}
    else:
        acts = _collect_activations(model_or_activations, inputs)
    if not acts:
        raise DebugInputError("activation_stats: no activations to show (the model has no submodules that "
                              "returned a tensor)")
    names = list(acts)
    vals = [_f64(a) for a in acts.values()]
    means = [float(v.mean()) if v.size else 0.0 for v in vals]
    stds = [float(v.std()) if v.size else 0.0 for v in vals]
    zero = [float((v == 0).mean()) if v.size else 0.0 for v in vals]
    sat = [float((np.abs(v) >= 0.99).mean()) if v.size and np.abs(v).max() <= 1 else 0.0 for v in vals]
    fig, axes = _figure(2, 1, size=(max(6.4, 0.6 * len(names)), 6.0))
    ax = axes[0, 0]
    x = np.arange(len(names))
    ax.errorbar(x, means, yerr=stds, fmt="o", capsize=3, color="#4c72b0", label="mean +- std")
    ax.set_xticks(x, names, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("activation")
    ax.set_title("Activation statistics per layer")
    ax.legend(fontsize=8)
    ax2 = axes[1, 0]
    w = 0.4
    ax2.bar(x - w / 2, zero, w, label="fraction exactly 0", color="#c44e52")
    ax2.bar(x + w / 2, sat, w, label="fraction saturated (|a| >= 0.99)", color="#dd8452")
    ax2.set_xticks(x, names, rotation=45, ha="right", fontsize=8)
    ax2.set_ylim(0, 1)
    ax2.set_xlabel("layer")
    ax2.set_ylabel("fraction of outputs")
    ax2.legend(fontsize=8)
    return fig


class UpdateRatioTracker:
    """Record ``|W_after - W_before| / |W_before|`` per parameter at every ``record()``.

    Create it before training, call ``tracker.record()`` after each
    ``optimizer.step()``; ``tracker.history`` maps name -> list of ratios.
    """

    def __init__(self, model):
        self.params = [(n, p) for n, p in named_parameters(model, "UpdateRatioTracker") if p.requires_grad]
        if not self.params:
            raise DebugInputError("UpdateRatioTracker: the model has no trainable parameters")
        self._last = {n: _f64(p).copy() for n, p in self.params}
        self.history = {n: [] for n, _ in self.params}

    def record(self):
        for n, p in self.params:
            now = _f64(p)
            before = self._last[n]
            denom = float(np.sqrt(np.sum(before ** 2)))
            ratio = float(np.sqrt(np.sum((now - before) ** 2))) / denom if denom > 0 else float("nan")
            self.history[n].append(ratio)
            self._last[n] = now.copy()


def update_ratio_plot(tracker_or_history, healthy=1e-3):
    """One line per parameter: update-to-weight ratio per step (log scale), with a reference line."""
    hist = tracker_or_history.history if isinstance(tracker_or_history, UpdateRatioTracker) else tracker_or_history
    if not isinstance(hist, dict) or not hist or not any(len(v) for v in hist.values()):
        raise DebugInputError("update_ratio_plot: no ratios recorded; call tracker.record() after each "
                              "optimizer.step()")
    fig, axes = _figure(size=(7.0, 4.0))
    ax = axes[0, 0]
    for name, vals in hist.items():
        ax.plot(np.arange(1, len(vals) + 1), vals, label=name)
    if healthy:
        ax.axhline(healthy, color="gray", linestyle="--", label=f"~{healthy:g} (typical)")
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("|update| / |weight|")
    ax.set_title("Update-to-weight ratio per layer")
    ax.legend(fontsize=7)
    return fig


def loss_curve(losses, val_losses=None, smooth=None, log=False):
    """Training loss per step (plus a moving average of ``smooth`` steps, and validation losses)."""
    vals = [float(v.item()) if isinstance(v, Tensor) else float(v) for v in losses]
    if not vals:
        raise DebugInputError("loss_curve: the list of losses is empty")
    fig, axes = _figure()
    ax = axes[0, 0]
    ax.plot(np.arange(len(vals)), vals, label="train", color="#4c72b0", alpha=0.5 if smooth else 1.0)
    if smooth and smooth > 1 and len(vals) >= smooth:
        k = np.ones(smooth) / smooth
        ax.plot(np.arange(smooth - 1, len(vals)), np.convolve(vals, k, mode="valid"), color="#4c72b0",
                label=f"train ({smooth}-step mean)")
    if val_losses is not None:
        v = [float(x.item()) if isinstance(x, Tensor) else float(x) for x in val_losses]
        xs = np.linspace(0, len(vals) - 1, len(v)) if len(v) != len(vals) else np.arange(len(v))
        ax.plot(xs, v, "o-", color="#c44e52", label="validation")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title("Loss curve")
    if log:
        ax.set_yscale("log")
    ax.legend()
    return fig
