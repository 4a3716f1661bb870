"""``LossMonitor``: a progress bar with the live loss for training loops.

In JupyterLab it shows a progress bar, the latest loss and a small live loss
curve. Everywhere else -- terminals, scripts, and notebook runs under nbval
(``GRADLAB_FAST`` or ``GRADLAB_PLAIN_PROGRESS`` set) -- it prints a plain
line every ``every`` steps, so checked outputs stay deterministic.

The bar is plain HTML (an HTML ``<progress>`` element) in a display that is
updated in place (``display(..., display_id=True)`` then ``handle.update``),
not an ipywidgets model: what the notebook saves is the last picture itself,
so a reopened notebook shows the finished bar and curve, never a widget that
needs its kernel ("model not found") or a "disconnected" icon.

    mon = gradlab.viz.LossMonitor(total=200)
    for step in range(200):
        ...
        mon.update(loss)          # a tensor or a float
    mon.close()
"""
from __future__ import annotations

import os
import sys


def _in_kernel() -> bool:
    ip = sys.modules.get("IPython")
    if ip is None:
        return False
    shell = ip.get_ipython() if hasattr(ip, "get_ipython") else None
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class _Bar:
    """One picture of the bar: HTML for JupyterLab, the same line as text for everything else."""

    def __init__(self, step, total, label, value, done):
        self.step, self.total, self.label, self.value, self.done = step, total, label, value, done

    def __repr__(self):
        loss = "" if self.value is None else f"  {self.label} {self.value:.4f}"
        return f"step {self.step}/{self.total}{loss}{'  (done)' if self.done else ''}"

    def _repr_html_(self):
        from html import escape
        colour = "var(--jp-success-color1, #2e7d32)" if self.done else "var(--jp-brand-color1, #1976d2)"
        return (f'<div class="gradlab-progress" style="font-family: var(--jp-code-font-family, monospace)">'
                f'<progress value="{self.step}" max="{self.total}" style="width: 16em; accent-color: {colour}">'
                f'</progress> {escape(repr(self))}</div>')


class LossMonitor:
    """Show training progress: ``update(loss)`` each step, ``close()`` at the end."""

    def __init__(self, total: int, every: int | None = None, label: str = "loss", plot: bool = True):
        self.total, self.label = int(total), label
        self.every = every or max(1, self.total // 10)
        self.history: list[float] = []
        self.plain = bool(os.environ.get("GRADLAB_FAST") or os.environ.get("GRADLAB_PLAIN_PROGRESS")) or not _in_kernel()
        self._bar = self._curve = None
        # the bar is redrawn at most ~100 times a run: each redraw is a message to the browser
        self._redraw_every = max(1, self.total // 100)
        if not self.plain:
            from IPython.display import display
            self._bar = display(self._picture(), display_id=True)
            if plot:
                self._curve = display(_Blank(), display_id=True)

    def _picture(self, done=False):
        return _Bar(len(self.history), self.total, self.label, self.history[-1] if self.history else None, done)

    def update(self, loss) -> None:
        value = float(loss.item() if hasattr(loss, "item") else loss)
        self.history.append(value)
        step = len(self.history)
        if self.plain:
            if step % self.every == 0 or step == self.total:
                print(f"step {step:>5d}/{self.total}  {self.label} {value:.4f}")
            return
        if step % self._redraw_every == 0 or step == self.total:
            self._bar.update(self._picture())
        if self._curve is not None and (step % self.every == 0 or step == self.total):
            self._redraw()

    def _redraw(self):
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(5, 2.2))
        ax.plot(range(1, len(self.history) + 1), self.history)
        ax.set_xlabel("step")
        ax.set_ylabel(self.label)
        self._curve.update(fig)
        plt.close(fig)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.update(self._picture(done=True))

    def __repr__(self):
        last = f"{self.history[-1]:.4f}" if self.history else "-"
        return f"LossMonitor(step {len(self.history)}/{self.total}, {self.label} {last})"


class _Blank:
    """An empty output, where the loss curve appears after the first ``every`` steps."""

    def __repr__(self):
        return ""

    def _repr_html_(self):
        return ""
