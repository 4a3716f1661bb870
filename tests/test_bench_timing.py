"""The benchmarks' one timing harness (``benchmarks/_timing.py``) does what its figures rely on.

Every side-by-side benchmark (gradlab against PyTorch) times through it, so: :func:`settle` must wait
while a thread of the process still burns CPU (the spinning BLAS workers it exists for) and not
otherwise; :func:`interleaved` must time each library on every input, one after the other, keeping
the untimed call's result; :func:`report` must print both ratios and the load average. Runs in
well under a second (no PyTorch needed).
"""
from __future__ import annotations

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import _timing  # noqa: E402


class _Clock:
    """A stand-in for the ``time`` module: wall time moves only when :func:`settle` sleeps, and the
    process's CPU time grows at ``busy`` seconds per second until ``until`` (a spinning worker
    thread), then stops. Simulated, so the test does not depend on how a loaded machine schedules a
    real spinning thread (on a busy CI machine a real one can be starved for a whole slice, and
    settle then rightly sees an idle slice early)."""

    def __init__(self, until, busy=1.0):
        self.now, self.cpu, self.until, self.busy = 0.0, 0.0, until, busy

    def perf_counter(self):
        return self.now

    def process_time(self):
        return self.cpu

    def sleep(self, s):
        spinning = max(0.0, min(self.now + s, self.until) - self.now)
        self.cpu += spinning * self.busy
        self.now += s


def test_settle_waits_while_a_thread_spins_and_not_longer(monkeypatch):
    for until in (0.0, 0.08, 0.3):
        clock = _Clock(until)
        monkeypatch.setattr(_timing, "time", clock)
        waited = _timing.settle()
        # it waits until the spinning stops, then for one idle slice, and not longer
        assert until <= waited <= until + 2 * _timing.SLICE + 1e-9, (until, waited)
    # a thread that never stops: settle gives up after LIMIT rather than wait for ever
    monkeypatch.setattr(_timing, "time", _Clock(until=1e9))
    assert _timing.LIMIT <= _timing.settle() <= _timing.LIMIT + 2 * _timing.SLICE
    # a little CPU in a slice (under a tenth of it: the process's own bookkeeping) counts as idle
    monkeypatch.setattr(_timing, "time", _Clock(until=1e9, busy=_timing.IDLE / 2))
    assert _timing.settle() <= 2 * _timing.SLICE


def test_settle_returns_soon_on_a_real_idle_process():
    assert _timing.settle() < 0.5                   # idle: about one slice (generous for a busy machine)


def test_interleaved_times_each_library_on_each_input_in_turn():
    calls = []

    def lib(name):
        def step(x):
            calls.append((name, x))
            return x * 10
        return step
    times, results = _timing.interleaved({"gradlab": lib("g"), "PyTorch": lib("t")}, [(1,), (2,), (3,)], warmup=1)
    # each input: an untimed call, then the timed one, for one library and then the other
    assert calls == [(n, x) for x in (1, 2, 3) for n in ("g", "g", "t", "t")]
    assert results == {"gradlab": [10, 20, 30], "PyTorch": [10, 20, 30]}
    assert [len(v) for v in times.values()] == [2, 2]  # the warm-up input is not timed
    assert all(w >= 0 and c >= 0 for v in times.values() for w, c in v)


def test_report_prints_both_ratios_and_the_load(capsys):
    times = {"gradlab": [(0.3, 0.2), (0.2, 0.1), (0.4, 0.3)], "PyTorch": [(0.1, 0.1), (0.2, 0.1), (0.1, 0.2)]}
    out = _timing.report(times)
    text = capsys.readouterr().out
    assert "median 3.00x wall, 2.00x CPU; best 2.00x wall, 1.00x CPU" in text, text
    assert "load average" in text
    assert out["gradlab"]["best_wall"] == 0.2 and out["PyTorch"]["wall"] == 0.1
