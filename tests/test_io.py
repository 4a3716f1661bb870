"""Safe checkpoints: round trips, refusal of pickles and damaged files, exact resume."""
from __future__ import annotations

import io
import os
import pickle
import zipfile

import numpy as np
import pytest

import gradlab
from gradlab import nn, optim
from gradlab.io import CheckpointError


def test_round_trip_of_nested_state(tmp_path):
    m = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    opt = optim.Adam(m.parameters(), lr=0.1)
    m(gradlab.randn(2, 3)).sum().backward()
    opt.step()
    sched = optim.lr_scheduler.StepLR(opt, 2)
    obj = {
        "model": m.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
        "rng": gradlab.get_rng_state(), "step": 7, "name": "run-1", "nums": [1.5, float("inf"), None, True],
        "tup": (1, "a"), "arr": np.arange(6).reshape(2, 3), "half": gradlab.ones(2, dtype=gradlab.float16),
        "bf16": gradlab.tensor([1.5, -2.0], dtype=gradlab.bfloat16),
    }
    path = tmp_path / "ckpt.gl"
    gradlab.save(obj, path)
    back = gradlab.load(path)
    assert back["step"] == 7 and back["name"] == "run-1" and back["tup"] == (1, "a")
    assert back["nums"][:1] == [1.5] and back["nums"][1] == float("inf") and back["nums"][2:] == [None, True]
    assert list(back["model"]) == list(obj["model"])
    for k, v in obj["model"].items():
        np.testing.assert_array_equal(back["model"][k].numpy(), v.numpy())
        assert back["model"][k].dtype == v.dtype
    assert set(back["opt"]["state"]) == {0, 1, 2, 3}  # int keys survive
    np.testing.assert_array_equal(back["opt"]["state"][0]["exp_avg"].numpy(), obj["opt"]["state"][0]["exp_avg"].numpy())
    assert back["opt"]["param_groups"][0]["betas"] == (0.9, 0.999)
    assert back["sched"] == obj["sched"]
    assert back["rng"] == obj["rng"]
    np.testing.assert_array_equal(back["arr"], obj["arr"])
    assert back["half"].dtype == gradlab.float16 and back["bf16"].dtype == gradlab.bfloat16
    np.testing.assert_array_equal(back["bf16"].numpy().astype(np.float32), [1.5, -2.0])
    # a file object works too
    buf = io.BytesIO()
    gradlab.save({"w": gradlab.ones(2)}, buf)
    buf.seek(0)
    np.testing.assert_array_equal(gradlab.load(buf)["w"].numpy(), [1, 1])


def test_unsafe_objects_are_refused_at_save(tmp_path):
    with pytest.raises(CheckpointError, match="cannot store"):
        gradlab.save({"f": lambda x: x}, tmp_path / "x")
    with pytest.raises(CheckpointError, match="cannot store"):
        gradlab.save(nn.Linear(2, 2), tmp_path / "x")


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_pickle_is_refused_without_unpickling(tmp_path, monkeypatch):
    path = tmp_path / "evil.pt"
    with open(path, "wb") as f:
        pickle.dump({"x": _Boom()}, f)
    called = []
    monkeypatch.setattr(pickle, "loads", lambda *a, **k: called.append(1))
    monkeypatch.setattr(pickle, "load", lambda *a, **k: called.append(1))
    monkeypatch.setattr(os, "system", lambda *a: called.append("system"))
    with pytest.raises(CheckpointError, match="pickle"):
        gradlab.load(path)
    assert called == []


@pytest.mark.oracle
def test_torch_save_file_is_read_without_unpickling(tmp_path, torch, monkeypatch):
    """A torch.save file is read by gradlab's own interpreter of its pickle (tests/test_torch_checkpoint.py)."""
    path = tmp_path / "model.pt"
    torch.save({"w": torch.ones(2)}, path)
    monkeypatch.setattr(pickle, "loads", lambda *a, **k: pytest.fail("pickle.loads was called"))
    monkeypatch.setattr(pickle, "Unpickler", lambda *a, **k: pytest.fail("pickle.Unpickler was called"))
    np.testing.assert_array_equal(gradlab.load(path)["w"].numpy(), [1.0, 1.0])


def test_truncated_corrupted_and_wrong_kind_files(tmp_path):
    good = tmp_path / "good.gl"
    gradlab.save({"w": gradlab.randn(50, 50)}, good)
    data = good.read_bytes()
    trunc = tmp_path / "trunc.gl"
    trunc.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="damaged|truncated"):
        gradlab.load(trunc)
    corrupt = tmp_path / "corrupt.gl"
    b = bytearray(data)
    mid = len(b) // 2
    b[mid:mid + 16] = b"\x00" * 16
    corrupt.write_bytes(bytes(b))
    with pytest.raises(CheckpointError, match="damaged"):
        gradlab.load(corrupt)
    empty = tmp_path / "empty.gl"
    empty.write_bytes(b"")
    with pytest.raises(CheckpointError, match="empty"):
        gradlab.load(empty)
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(CheckpointError, match="not a gradlab checkpoint"):
        gradlab.load(text)
    other_zip = tmp_path / "other.zip"
    with zipfile.ZipFile(other_zip, "w") as z:
        z.writestr("readme.txt", "hi")
    with pytest.raises(CheckpointError, match="not a gradlab checkpoint"):
        gradlab.load(other_zip)
    npy = tmp_path / "a.npy"
    np.save(npy, np.ones(3))
    with pytest.raises(CheckpointError, match="npy"):
        gradlab.load(npy)
    with pytest.raises(FileNotFoundError):
        gradlab.load(tmp_path / "missing.gl")


def _train(steps, model, opt, sched, data, losses):
    for _ in range(steps):
        x, y = data.batch()
        out = model(x)  # dropout draws from the global generator: RNG state matters
        loss = nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())


class _Batches:
    def __init__(self):
        self.X, self.y = gradlab.data.spirals(200, seed=1)

    def batch(self):
        idx = gradlab.randint(0, len(self.y), (32,))
        return self.X[idx], self.y[idx]


def _fresh():
    model = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 3))
    opt = optim.AdamW(model.parameters(), lr=0.01)
    sched = optim.lr_scheduler.WarmupCosineLR(opt, warmup_steps=3, total_steps=20)
    return model, opt, sched


def test_resume_gives_identical_loss_trajectory(tmp_path):
    gradlab.manual_seed(0)
    data = _Batches()
    model, opt, sched = _fresh()
    straight = []
    _train(20, model, opt, sched, data, straight)

    gradlab.manual_seed(0)
    data = _Batches()
    model, opt, sched = _fresh()
    resumed = []
    _train(8, model, opt, sched, data, resumed)
    gradlab.save({"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                  "rng": gradlab.get_rng_state()}, tmp_path / "ckpt.gl")
    gradlab.manual_seed(123)  # a different process would start from elsewhere
    model, opt, sched = _fresh()
    ck = gradlab.load(tmp_path / "ckpt.gl")
    model.load_state_dict(ck["model"])
    opt.load_state_dict(ck["opt"])
    sched.load_state_dict(ck["sched"])
    gradlab.set_rng_state(ck["rng"])
    _train(12, model, opt, sched, data, resumed)
    assert resumed == straight  # exactly, not approximately
