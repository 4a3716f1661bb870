"""``LossMonitor``: a progress bar with the live loss for training loops.

In JupyterLab it draws an ipywidgets progress bar, the latest loss and a small
live loss curve. Everywhere else -- terminals, scripts, and notebook runs under
nbval (``GRADLAB_FAST`` or ``GRADLAB_PLAIN_PROGRESS`` set) -- it prints a plain
line every ``every`` steps, so checked outputs stay deterministic.

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


class LossMonitor:
    """Show training progress: ``update(loss)`` each step, ``close()`` at the end."""

    def __init__(self, total: int, every: int | None = None, label: str = "loss", plot: bool = True):
        self.total, self.label = int(total), label
        self.every = every or max(1, self.total // 10)
        self.history: list[float] = []
        self.plain = bool(os.environ.get("GRADLAB_FAST") or os.environ.get("GRADLAB_PLAIN_PROGRESS")) or not _in_kernel()
        self._widgets = None
        if not self.plain:
            try:
                self._start_widgets(plot)
            except ImportError:  # no ipywidgets: fall back to text
                self.plain = True

    def _start_widgets(self, plot):
        import ipywidgets as w
        from IPython.display import display
        self._bar = w.IntProgress(min=0, max=self.total, description="step")
        self._text = w.Label(value="")
        self._out = w.Output() if plot else None
        box = w.VBox([w.HBox([self._bar, self._text])] + ([self._out] if plot else []))
        display(box)
        self._widgets = box

    def update(self, loss) -> None:
        value = float(loss.item() if hasattr(loss, "item") else loss)
        self.history.append(value)
        step = len(self.history)
        if self.plain:
            if step % self.every == 0 or step == self.total:
                print(f"step {step:>5d}/{self.total}  {self.label} {value:.4f}")
            return
        self._bar.value = step
        self._text.value = f"{self.label} {value:.4f}"
        if self._out is not None and (step % self.every == 0 or step == self.total):
            self._redraw()

    def _redraw(self):
        import matplotlib.pyplot as plt
        from IPython.display import display
        with self._out:
            self._out.clear_output(wait=True)
            fig, ax = plt.subplots(figsize=(5, 2.2))
            ax.plot(range(1, len(self.history) + 1), self.history)
            ax.set_xlabel("step")
            ax.set_ylabel(self.label)
            display(fig)
            plt.close(fig)

    def close(self) -> None:
        if self._widgets is not None:
            self._bar.bar_style = "success"

    def __repr__(self):
        last = f"{self.history[-1]:.4f}" if self.history else "-"
        return f"LossMonitor(step {len(self.history)}/{self.total}, {self.label} {last})"
