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
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import _timing  # noqa: E402


def test_settle_waits_while_a_thread_spins_and_not_longer():
    stop = time.perf_counter() + 0.08

    def spin():
        while time.perf_counter() < stop:
            pass
    th = threading.Thread(target=spin)
    th.start()
    waited = _timing.settle()
    th.join()
    assert waited >= 0.06, waited                   # it waited for the spinning thread to stop
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
