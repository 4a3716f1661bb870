"""LossMonitor prints plain, deterministic lines outside JupyterLab (and under nbval)."""
from __future__ import annotations

import gradlab
from gradlab.viz import LossMonitor


def test_plain_progress_lines(capsys, monkeypatch):
    monkeypatch.setenv("GRADLAB_PLAIN_PROGRESS", "1")
    mon = LossMonitor(total=20, every=5)
    assert mon.plain
    for i in range(20):
        mon.update(gradlab.tensor(1.0 / (i + 1)))
    mon.close()
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines == [f"step {s:>5d}/20  loss {1.0 / s:.4f}" for s in (5, 10, 15, 20)]
    assert mon.history[0] == 1.0 and len(mon.history) == 20
    assert "step 20/20" in repr(mon)


def test_default_every_is_a_tenth(capsys, monkeypatch):
    monkeypatch.setenv("GRADLAB_PLAIN_PROGRESS", "1")
    mon = LossMonitor(total=100)
    for _ in range(100):
        mon.update(0.5)
    assert len(capsys.readouterr().out.strip().splitlines()) == 10


def test_in_jupyterlab_the_bar_is_plain_html_not_a_widget(monkeypatch):
    """A widget's model lives in the kernel: saved and reopened it shows "disconnected" (or "model not
    found"). The bar is an HTML display updated in place, so the notebook saves the finished picture."""
    import IPython.display

    from gradlab.viz import monitor
    monkeypatch.delenv("GRADLAB_FAST", raising=False)
    monkeypatch.delenv("GRADLAB_PLAIN_PROGRESS", raising=False)
    monkeypatch.setattr(monitor, "_in_kernel", lambda: True)

    class Handle:
        def __init__(self, obj):
            self.obj, self.updates = obj, 0

        def update(self, obj):
            self.obj, self.updates = obj, self.updates + 1

    monkeypatch.setattr(IPython.display, "display", lambda obj, display_id=None: Handle(obj))
    mon = LossMonitor(total=500, every=250, plot=False)
    for i in range(500):
        mon.update(1.0 / (i + 1))
    mon.close()
    bar = mon._bar.obj
    assert '<progress value="500" max="500"' in bar._repr_html_() and "(done)" in repr(bar)
    assert f"loss {1 / 500:.4f}" in repr(bar)
    assert not hasattr(bar, "comm") and not hasattr(bar, "model_id")
    assert mon._bar.updates <= 101, "the bar is redrawn at most about 100 times a run"
