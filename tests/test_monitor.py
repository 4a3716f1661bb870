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
