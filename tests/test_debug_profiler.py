"""The profiler: per-op forward/backward times, counts, bytes; the table; the Chrome trace format."""
from __future__ import annotations

import json

import pytest

import gradlab
import gradlab.nn as nn


def _profiled():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    x = gradlab.randn(4, 8)
    with gradlab.profiler.profile(record_shapes=True) as prof:
        for _ in range(3):
            loss = (model(x) ** 2).mean()
            loss.backward()
    return prof


def test_counts_times_and_bytes():
    prof = _profiled()
    avg = {a.key: a for a in prof.key_averages()}
    assert avg["relu"].count == 3 and avg["relu"].kind == "forward"
    assert avg["relu.backward"].count == 3 and avg["relu.backward"].kind == "backward"
    assert avg["AccumulateGrad"].count == 4 * 3  # four parameters, three backward passes
    assert avg["relu"].self_cpu_memory_usage == 3 * 4 * 16 * 4  # a new (4, 16) float32 array per call
    for a in avg.values():
        assert a.cpu_time_total >= a.self_cpu_time_total >= 0
        assert a.cpu_time == pytest.approx(a.cpu_time_total / a.count)
    # a backward node's total includes the ops its VJP ran
    mb = avg["matmul.backward"]
    assert mb.cpu_time_total > mb.self_cpu_time_total


def test_table_sorting_and_format():
    prof = _profiled()
    text = prof.table(sort_by="count", row_limit=5)
    lines = text.splitlines()
    assert "Name" in lines[1] and "Self CPU %" in lines[1] and "# of Calls" in lines[1]
    assert lines[-1].startswith("Self CPU time total:")
    body = lines[3:-2]
    assert len(body) == 5
    counts = [int(row.split()[-1]) for row in body]
    assert counts == sorted(counts, reverse=True)
    assert prof.key_averages().table(sort_by="cpu_time_total").count("\n") > 5
    with pytest.raises(gradlab.ArgumentError, match="sort_by"):
        prof.table(sort_by="speed")


def test_chrome_trace_format(tmp_path):
    prof = _profiled()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    data = json.loads(path.read_text())
    events = data["traceEvents"]
    assert isinstance(events, list) and events
    xs = [e for e in events if e["ph"] == "X"]
    assert len(xs) == len(prof.events())
    for e in events:
        for field in ("name", "ph", "ts", "pid", "tid"):
            assert field in e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
    for e in xs:
        assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float)) and e["dur"] >= 0
    # children lie inside their backward node on the timeline
    nodes = [e for e in xs if e["name"] == "matmul.backward"]
    inner = [e for e in xs if e["name"] == "matmul" and any(
        n["ts"] <= e["ts"] and e["ts"] + e["dur"] <= n["ts"] + n["dur"] + 1e-3 for n in nodes)]
    assert inner


def test_empty_profile():
    with gradlab.profiler.profile() as prof:
        pass
    assert "no ops were recorded" in prof.table()


def test_record_function_groups_its_ops():
    x = gradlab.randn(16, 16)
    with gradlab.profiler.profile(activities=None, profile_memory=True) as prof:
        with gradlab.profiler.record_function("my block"):
            y = (x @ x).relu()
        y.sum()
    avg = {a.key: a for a in prof.key_averages()}
    block = avg["my block"]
    assert block.count == 1 and block.kind == "user"
    assert block.cpu_time_total >= avg["matmul"].cpu_time_total + avg["relu"].cpu_time_total
    assert block.cpu_memory_usage == avg["matmul"].cpu_memory_usage + avg["relu"].cpu_memory_usage
    with gradlab.profiler.record_function("outside any profiler"):
        pass  # does nothing, raises nothing


def test_table_columns_match_pytorch(torch):
    from torch.profiler import ProfilerActivity, profile as tprofile
    x = torch.randn(4, 4, requires_grad=True)
    with tprofile(activities=[ProfilerActivity.CPU], profile_memory=True) as tp:
        (x @ x).relu().sum().backward()
    theirs = tp.key_averages().table(row_limit=3).splitlines()[1].split("  ")
    ours = _profiled().table(row_limit=3).splitlines()[1].split("  ")
    clean = lambda cols: [c.strip() for c in cols if c.strip()]  # noqa: E731
    assert clean(ours) == clean(theirs)


def test_views_allocate_nothing():
    x = gradlab.randn(8, 8)
    with gradlab.profiler.profile() as prof:
        x.t()
        x.reshape(64)
        x * 2
    avg = {a.key: a for a in prof.key_averages()}
    view_ops = [k for k in avg if k not in ("mul",)]
    assert view_ops and all(avg[k].self_cpu_memory_usage == 0 for k in view_ops)
    assert avg["mul"].self_cpu_memory_usage == 8 * 8 * 4
