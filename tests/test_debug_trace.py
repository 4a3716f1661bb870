"""The training trace evidence pack: exact fields, load, replay equality, unwritable paths."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import gradlab
import gradlab.nn as nn
import gradlab.optim as optim
from gradlab.debug import TraceError, TracePack

EXPECTED = {
    "graph_run": {"graph_run_id", "framework_version", "compile_mode", "model_config_hash", "input_batch_id"},
    "tensor_trace": {"tensor_name", "shape", "dtype", "device", "layout", "requires_grad"},
    "backward_trace": {"loss_value", "grad_norm", "loss_scale", "activation_checkpointing", "anomaly_op"},
    "runtime_snapshot": {"kernel_trace_id", "compiler_version", "peak_memory", "memory_fragmentation", "sync_point"},
}


def _run(path, seed=0, steps=2, lr=0.1, poison=False):
    gradlab.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = optim.SGD(model.parameters(), lr=lr)
    losses, norms = [], []
    with gradlab.trace(path, run_id="demo", model_config={"hidden": 8, "lr": lr}, input_batch_id="batch-0",
                       model=model) as tr:
        for step in range(steps):
            tr.input_batch_id = f"batch-{step}"
            x, y = gradlab.randn(5, 4), gradlab.randn(5, 1)
            if poison and step == 1:
                x = x * 0.0
                out = model(x).log()  # log of negative / zero: NaN
            else:
                out = model(x)
            loss = ((out - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            norms.append(float(np.sqrt(sum(float((p.grad._data.astype(np.float64) ** 2).sum())
                                           for p in model.parameters()))))
            opt.step()
            losses.append(loss.item())
    return losses, norms


def test_records_have_exactly_the_fields(tmp_path):
    path = tmp_path / "run.jsonl"
    losses, norms = _run(path)
    lines = path.read_text().splitlines()
    kinds = []
    for line in lines:
        rec = json.loads(line)  # valid JSON on every line
        kinds.append(rec["kind"])
        assert set(rec) == EXPECTED[rec["kind"]] | {"kind"}
    assert set(kinds) == set(EXPECTED)
    pack = gradlab.trace.load(path)
    assert isinstance(pack, TracePack) and len(pack) == len(lines)
    g = pack.graph_runs
    assert [r["graph_run_id"] for r in g] == ["demo-1", "demo-2"]
    assert [r["input_batch_id"] for r in g] == ["batch-0", "batch-1"]
    assert g[0]["compile_mode"] == "eager" and g[0]["framework_version"] == f"gradlab {gradlab.__version__}"
    assert g[0]["model_config_hash"] and len(g[0]["model_config_hash"]) == 16
    b = pack.backward_traces
    np.testing.assert_allclose([r["loss_value"] for r in b], losses, rtol=1e-6)
    np.testing.assert_allclose([r["grad_norm"] for r in b], norms, rtol=1e-6)
    assert all(r["loss_scale"] is None and r["activation_checkpointing"] is False and r["anomaly_op"] is None
               for r in b)
    names = [r["tensor_name"] for r in pack.tensor_traces[:5]]
    assert names == ["loss", "0.weight", "0.bias", "2.weight", "2.bias"]
    w = pack.tensor_traces[1]
    assert (w["shape"], w["dtype"], w["device"], w["layout"], w["requires_grad"]) == ([8, 4], "float32", "cpu",
                                                                                        "strided", True)
    snap = pack.runtime_snapshots[0]
    assert snap["peak_memory"] > 0
    assert snap["kernel_trace_id"] is None and snap["memory_fragmentation"] is None and snap["sync_point"] is None


def test_same_seeded_run_compares_equal_and_a_change_shows(tmp_path):
    _run(tmp_path / "a.jsonl")
    _run(tmp_path / "b.jsonl")
    _run(tmp_path / "c.jsonl", lr=0.5)
    a, b, c = (gradlab.trace.load(tmp_path / f"{n}.jsonl") for n in "abc")
    assert a == b and not a.diff(b)
    assert a != c
    fields = {f for _, f, _, _ in a.diff(c)}
    assert "model_config_hash" in fields and "loss_value" in fields


def test_anomaly_op_and_nan_round_trip(tmp_path):
    path = tmp_path / "nan.jsonl"
    losses, _ = _run(path, poison=True)
    assert np.isnan(losses[1])
    pack = gradlab.trace.load(path)
    b = pack.backward_traces
    assert b[0]["anomaly_op"] is None
    assert b[1]["anomaly_op"] == "forward:log"
    assert np.isnan(b[1]["loss_value"])  # written as "nan" (JSON has no NaN), read back as a float
    assert '"nan"' in path.read_text()
    assert gradlab.trace.load(path) == pack  # NaN == NaN for replay comparison


def test_unwritable_path_fails_before_training(tmp_path):
    ran = []
    with pytest.raises(TraceError, match="does not exist"):
        with gradlab.trace(tmp_path / "missing" / "run.jsonl"):
            ran.append(1)
    assert not ran
    with pytest.raises(TraceError, match="folder"):
        gradlab.trace(tmp_path)
    with pytest.raises(FileNotFoundError):  # also the matching built-in OSError
        gradlab.trace(tmp_path / "missing" / "run.jsonl")
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    with pytest.raises(TraceError, match="is a file"):
        gradlab.trace(a_file / "run.jsonl")
    assert not (tmp_path / "probe.jsonl").exists()
    gradlab.trace(tmp_path / "probe.jsonl")  # probing a good path leaves no file behind
    assert not (tmp_path / "probe.jsonl").exists()
    if os.geteuid() != 0:  # root can write anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        with pytest.raises(TraceError, match="permission"):
            gradlab.trace(ro / "x.jsonl")
    assert isinstance(TraceError("x"), gradlab.GradlabError)


def test_load_rejects_bad_files(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "graph_run", "graph_run_id": "x"}\n')
    with pytest.raises(TraceError, match="missing fields"):
        gradlab.trace.load(bad)
    bad.write_text("not json\n")
    with pytest.raises(TraceError, match="not JSON"):
        gradlab.trace.load(bad)
    with pytest.raises(TraceError, match="cannot read"):
        gradlab.trace.load(tmp_path / "nope.jsonl")


def test_log_tensor_and_run_id_default(tmp_path):
    path = tmp_path / "t.jsonl"
    w = gradlab.randn(3, requires_grad=True)
    with gradlab.trace(path, input_batch_id=7) as tr:
        x = gradlab.randn(3)
        tr.log_tensor("batch", x)
        (w * x).sum().backward()
    pack = gradlab.trace.load(path)
    assert pack.tensor_traces[0]["tensor_name"] == "batch" and pack.tensor_traces[0]["requires_grad"] is False
    rid = pack.graph_runs[0]["graph_run_id"]
    assert rid.startswith("run-") and pack.graph_runs[0]["model_config_hash"] is None


def test_activation_checkpointing_flag(tmp_path):
    from gradlab.utils.checkpoint import checkpoint as ckpt
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    x = gradlab.randn(3, 4)
    path = tmp_path / "ck.jsonl"
    with gradlab.trace(path):
        model(x).sum().backward()
        ckpt(model, x).sum().backward()
    flags = [r["activation_checkpointing"] for r in gradlab.trace.load(path).backward_traces]
    assert flags == [False, True]


def test_loss_scale_from_a_grad_scaler(tmp_path):
    import gradlab.amp as amp
    model = nn.Linear(3, 1)
    opt = optim.SGD(model.parameters(), lr=0.1)
    scaler = amp.GradScaler(init_scale=1024.0)
    x = gradlab.randn(4, 3)
    path = tmp_path / "amp.jsonl"
    with gradlab.trace(path, model=model, scaler=scaler):
        loss = model(x).pow(2).mean()
        scaler.scale(loss).backward()
        scaled_norm = float(np.sqrt(sum(float((p.grad._data.astype(np.float64) ** 2).sum())
                                        for p in model.parameters())))
        scaler.step(opt)
        scaler.update()
    rec = gradlab.trace.load(path).backward_traces[0]
    assert rec["loss_scale"] == 1024.0
    assert rec["loss_value"] == pytest.approx(loss.item(), rel=1e-6)
    assert rec["grad_norm"] == pytest.approx(scaled_norm / 1024.0, rel=1e-6)


def test_compiled_step_is_recorded(tmp_path):
    gc = gradlab.compile
    w = gradlab.randn(3, 2, requires_grad=True)

    def step(x):
        return (x @ w).tanh().sum()

    fast = gc(step)
    x = gradlab.randn(4, 3)
    path = tmp_path / "c.jsonl"
    with gradlab.trace(path):
        step(x).backward()
        fast(x).backward()
    pack = gradlab.trace.load(path)
    assert [r["compile_mode"] for r in pack.graph_runs] == ["eager", "compiled"]
    snaps = pack.runtime_snapshots
    assert snaps[0]["kernel_trace_id"] is None and snaps[0]["compiler_version"] is None
    assert snaps[1]["kernel_trace_id"] == "compiled<step>"
    assert snaps[1]["compiler_version"].startswith("gradlab.compile")
