"""Checkpoints that cross between PyTorch and gradlab (gradlab/torch_checkpoint.py): ``torch.save`` files read
by ``gradlab.load`` without torch and without unpickling, files written by ``gradlab.save(..., format="torch")``
read by ``torch.load(weights_only=True)``, and hostile torch-format files refused as gradlab's own are."""
from __future__ import annotations

import io
import os
import pickle
import struct
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import gradlab
from gradlab import nn
from gradlab.io import CheckpointError

oracle = pytest.mark.oracle


def _models(lib):
    """The same small network (Linear, Conv2d, BatchNorm, an LSTM) in either library."""
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = lib.nn.Conv2d(1, 3, 3, bias=False)  # (a bias before BatchNorm has gradient 0: Adam would amplify rounding)
            self.bn = lib.nn.BatchNorm2d(3)
            self.rnn = lib.nn.LSTM(4, 5, batch_first=True)
            self.fc = lib.nn.Linear(3 * 4 * 4 + 5, 2)

        def forward(self, img, seq):
            h = self.bn(self.conv(img)).relu().flatten(1)
            out, _ = self.rnn(seq)
            return self.fc(lib.cat([h, out[:, -1]], 1))
    return Net()


def _inputs(lib, seed=0):
    rng = np.random.default_rng(seed)
    return (lib.tensor(rng.normal(size=(4, 1, 6, 6)).astype(np.float32)),
            lib.tensor(rng.normal(size=(4, 3, 4)).astype(np.float32)))


def _train(lib, model, steps=3):
    opt = lib.optim.Adam(model.parameters(), lr=0.05)
    img, seq = _inputs(lib, 1)
    for _ in range(steps):
        opt.zero_grad()
        model(img, seq).pow(2).mean().backward()
        opt.step()
    return opt


@oracle
def test_a_model_trained_in_pytorch_loads_into_gradlab_with_the_same_outputs(tmp_path, torch):
    torch.manual_seed(0)
    tm = _models(torch)
    opt = _train(torch, tm)
    path = tmp_path / "model.pt"
    torch.save({"model": tm.state_dict(), "optimizer": opt.state_dict(), "epoch": 7}, path)
    ck = gradlab.load(path)
    assert ck["epoch"] == 7
    gm = _models(gradlab)
    gm.load_state_dict(ck["model"])
    tm.eval()
    gm.eval()
    with torch.no_grad():
        want = tm(*_inputs(torch)).numpy()
    np.testing.assert_allclose(gm(*_inputs(gradlab)).detach().numpy(), want, rtol=1e-5, atol=1e-6)
    # the optimizer's state crosses too: two more steps in each library stay together
    tm.train()
    gm.train()
    gopt = gradlab.optim.Adam(gm.parameters(), lr=0.05)
    gopt.load_state_dict(ck["optimizer"])
    _continue = [(torch, tm, opt), (gradlab, gm, gopt)]
    for lib, m, o in _continue:
        img, seq = _inputs(lib, 2)
        for _ in range(2):
            o.zero_grad()
            m(img, seq).pow(2).mean().backward()
            o.step()
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(gm.state_dict()[k].detach().numpy(), v.numpy(), rtol=1e-4, atol=1e-5, err_msg=k)


@oracle
def test_a_model_trained_in_gradlab_loads_into_pytorch_with_the_same_outputs(tmp_path, torch):
    gradlab.manual_seed(0)
    gm = _models(gradlab)
    gopt = _train(gradlab, gm)
    path = tmp_path / "model.pt"
    gradlab.save({"model": gm.state_dict(), "optimizer": gopt.state_dict(), "epoch": 3}, path, format="torch")
    ck = torch.load(path, weights_only=True)
    assert ck["epoch"] == 3
    tm = _models(torch)
    tm.load_state_dict(ck["model"])
    opt = torch.optim.Adam(tm.parameters(), lr=0.05)
    opt.load_state_dict(ck["optimizer"])
    tm.eval()
    gm.eval()
    with torch.no_grad():
        got = tm(*_inputs(torch)).numpy()
    np.testing.assert_allclose(got, gm(*_inputs(gradlab)).detach().numpy(), rtol=1e-5, atol=1e-6)
    # and back again: gradlab reads its own torch-format file
    again = gradlab.load(path)
    for k, v in gm.state_dict().items():
        np.testing.assert_array_equal(again["model"][k].numpy(), v.detach().numpy())


@oracle
def test_values_dtypes_views_and_shared_tensors_round_trip_both_ways(tmp_path, torch):
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    values = {
        "f32": base, "f64": base.astype(np.float64), "f16": base.astype(np.float16), "i64": np.arange(5),
        "i32": np.arange(5, dtype=np.int32), "i16": np.arange(3, dtype=np.int16), "i8": np.arange(3, dtype=np.int8),
        "u8": np.arange(3, dtype=np.uint8), "b": np.array([True, False]), "scalar": np.array(2.5, np.float32),
        "empty": np.zeros((0, 3), np.float32),
    }
    plain = {"epoch": 12, "big": 2 ** 70, "neg": -(2 ** 40), "lr": 1e-3, "inf": float("inf"), "name": "run-1 ✓",
             "none": None, "flags": [True, False], "betas": (0.9, 0.999), "nested": {"a": [1, {"b": (2, 3)}]}}
    # torch -> gradlab
    tobj = {k: torch.from_numpy(v.copy()) for k, v in values.items()}
    tobj.update(plain, bf16=torch.ones(3, dtype=torch.bfloat16) * 1.5, view=tobj["f32"][:, 1], same=[tobj["f32"]] * 2,
                param=torch.nn.Parameter(torch.ones(2)))
    torch.save(tobj, tmp_path / "t.pt")
    g = gradlab.load(tmp_path / "t.pt")
    for k, v in values.items():
        assert g[k].dtype == v.dtype and g[k].shape == v.shape, k
        np.testing.assert_array_equal(g[k].numpy(), v, err_msg=k)
    for k, v in plain.items():
        assert g[k] == v or (k == "inf" and g[k] == float("inf")), k
    assert g["bf16"].dtype == gradlab.bfloat16 and (g["bf16"].float().numpy() == 1.5).all()
    np.testing.assert_array_equal(g["view"].numpy(), base[:, 1])
    assert np.shares_memory(g["view"].numpy(), g["f32"].numpy())  # one storage, as in PyTorch
    assert g["same"][0] is g["same"][1] is g["f32"]
    assert isinstance(g["param"], nn.Parameter) and g["param"].requires_grad
    # gradlab -> torch
    gobj = {k: gradlab.tensor(v) for k, v in values.items()}
    gobj.update(plain, bf16=gradlab.ones(3, dtype=gradlab.bfloat16), view=gobj["f32"][:, 1], same=[gobj["f32"]] * 2,
                param=nn.Parameter(gradlab.ones(2)))
    gradlab.save(gobj, tmp_path / "g.pt", format="torch")
    t = torch.load(tmp_path / "g.pt", weights_only=True)
    for k, v in values.items():
        assert t[k].numpy().dtype == v.dtype and tuple(t[k].shape) == v.shape, k
        np.testing.assert_array_equal(t[k].numpy(), v, err_msg=k)
    for k, v in plain.items():
        assert t[k] == v, k
    assert t["bf16"].dtype == torch.bfloat16
    np.testing.assert_array_equal(t["view"].numpy(), base[:, 1])
    assert t["view"].untyped_storage().data_ptr() == t["f32"].untyped_storage().data_ptr()
    assert t["same"][0] is t["same"][1]
    assert isinstance(t["param"], torch.nn.Parameter)


@pytest.mark.parametrize("fmt", ["gradlab", "torch"])
def test_whole_module_and_optimizer_saves_are_refused_with_the_state_dict_line(tmp_path, fmt):
    model = nn.Linear(2, 2)
    with pytest.raises(CheckpointError, match=r"gradlab\.save\(model\.state_dict\(\), path\)") as e:
        gradlab.save(model, tmp_path / "m.pt", format=fmt)
    assert "model.load_state_dict(gradlab.load(path))" in str(e.value)
    opt = gradlab.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(CheckpointError, match=r"optimizer\.state_dict\(\)"):
        gradlab.save({"opt": opt}, tmp_path / "o.pt", format=fmt)
    with pytest.raises(CheckpointError, match="cannot store"):
        gradlab.save({"f": lambda x: x}, tmp_path / "f.pt", format=fmt)
    with pytest.raises(ValueError, match="format"):
        gradlab.save({}, tmp_path / "x.pt", format="pickle")


# ------------------------------------------------------------------ hostile torch-format files
def _torch_zip(path, pkl, records=(), prefix="archive/", compress=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression=compress) as z:
        z.writestr(prefix + "data.pkl", pkl)
        z.writestr(prefix + "byteorder", "little")
        for name, data in records:
            z.writestr(prefix + name, data)
    return path


def _tensor_pkl(key="0", numel=4, size=(4,), stride=(1,), offset=0, storage="FloatStorage"):
    """The pickle torch.save writes for ``{'w': tensor}`` (protocol 2), with the given storage reference."""
    def i(v):
        return b"J" + struct.pack("<i", v)

    def s(v):
        b = v.encode()
        return b"X" + struct.pack("<I", len(b)) + b

    def tup(vs):
        return b"(" + b"".join(i(v) for v in vs) + b"t"
    return (b"\x80\x02}(" + s("w") + b"ctorch._utils\n_rebuild_tensor_v2\n((" + s("storage")
            + f"ctorch\n{storage}\n".encode() + s(key) + s("cpu") + i(numel) + b"tQ" + i(offset) + tup(size)
            + tup(stride) + b"\x89ccollections\nOrderedDict\n)RtRu.")


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_a_torch_zip_whose_pickle_calls_code_is_refused_without_running_it(tmp_path, monkeypatch):
    called = []
    evil = {proto: pickle.dumps({"x": _Boom()}, protocol=proto) for proto in (2, 4)}  # (before os.system is patched)
    monkeypatch.setattr(os, "system", lambda *a: called.append("system"))
    for proto in (2, 4):
        path = _torch_zip(tmp_path / f"evil{proto}.pt", evil[proto])
        monkeypatch.setattr(pickle, "loads", lambda *a, **k: called.append("loads"))
        monkeypatch.setattr(pickle, "Unpickler", lambda *a, **k: called.append("Unpickler"))
        with pytest.raises(CheckpointError, match="posix.system|os.system|nt.system|instruction"):
            gradlab.load(path)
    assert called == []


@pytest.mark.parametrize("pkl, match", [
    (b"\x80\x02cbuiltins\neval\n(X\x04\x00\x00\x001+1tR.", "builtins.eval"),
    (b"\x80\x02ctorch\nload\n.", "torch.load"),
    (b"\x80\x02}(X\x01\x00\x00\x00w", "truncated"),
    (b"\x80\x02(" * 300 + b".", "levels deep"),
    (b"\x80\x02]q\x00h\x00a.", "contains itself"),               # a list that contains itself
    (b"\x80\x02h\x05.", "memo entry 5"),
    (b"\x80\x02ccollections\nOrderedDict\n)R}X\x01\x00\x00\x00xK\x01sb.", "_metadata"),
    (b"\x80\x02K\x01K\x02s.", "SETITEM"),
    (b"\x80\x02X\x03\x00\x00\x00abcQ.", "persistent"),
    (b"\x80\x02\x8d" + b"\x00" * 8 + b".", "instruction"),
    (_tensor_pkl(key="9"), "data/9 is missing"),
    (_tensor_pkl(numel=5), "declares 5 elements"),
    (_tensor_pkl(size=(8,)), "reaches outside"),
    (_tensor_pkl(size=(2, 2), stride=(2,)), "size"),
    (_tensor_pkl(offset=3, size=(2,)), "reaches outside"),
    (_tensor_pkl(storage="ComplexFloatStorage"), "ComplexFloatStorage"),
    (_tensor_pkl(size=(10 ** 9, 10 ** 9), stride=(0, 0)), "max_bytes"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_malformed_torch_pickles_are_checkpoint_errors(tmp_path, pkl, match):
    path = _torch_zip(tmp_path / "m.pt", pkl, [("data/0", np.arange(4, dtype="<f4").tobytes())])
    with pytest.raises(CheckpointError, match=match):
        gradlab.load(path)


def test_a_good_hand_made_torch_file_loads_and_its_budget_can_be_raised(tmp_path):
    path = _torch_zip(tmp_path / "ok.pt", _tensor_pkl(numel=1000, size=(1000,)),
                      [("data/0", np.arange(1000, dtype="<f4").tobytes())])
    np.testing.assert_array_equal(gradlab.load(path)["w"].numpy(), np.arange(1000, dtype=np.float32))
    with pytest.raises(CheckpointError, match="max_bytes"):
        gradlab.load(path, max_bytes=1000)
    assert gradlab.load(path, max_bytes=10_000)["w"].shape == (1000,)


def test_torch_format_zip_bomb_is_refused_before_reading_with_bounded_memory(tmp_path):
    n = (1 << 30) // 4
    path = tmp_path / "bomb.pt"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        z.writestr("archive/data.pkl", _tensor_pkl(numel=n, size=(n,)))
        with z.open("archive/data/0", "w", force_zip64=True) as f:
            chunk = bytes(16 << 20)
            for _ in range((n * 4) // len(chunk)):
                f.write(chunk)
    assert path.stat().st_size < 8 << 20
    code = textwrap.dedent(f"""
        import resource, gradlab
        from gradlab.io import CheckpointError
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            gradlab.load({str(path)!r})
            print("LOADED")
        except CheckpointError as e:
            print("REFUSED", str(e)[:200])
        print("PEAK_KB", before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    assert "REFUSED" in out and "max_bytes" in out, out
    before, after = (int(v) for v in out.split("PEAK_KB")[1].split())
    assert (after - before) / 1024 < 32, out


def test_truncated_and_damaged_torch_files(tmp_path):
    good = tmp_path / "good.pt"
    gradlab.save({"w": gradlab.randn(50, 50)}, good, format="torch")
    data = good.read_bytes()
    (tmp_path / "trunc.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="damaged|truncated|not a gradlab"):
        gradlab.load(tmp_path / "trunc.pt")
    b = bytearray(data)
    start = data.find(b"archive/data/0") + 200  # inside the storage record's bytes: the CRC no longer matches
    b[start:start + 16] = b"\xff" * 16
    (tmp_path / "corrupt.pt").write_bytes(bytes(b))
    with pytest.raises(CheckpointError, match="damaged"):
        gradlab.load(tmp_path / "corrupt.pt")
    # a file object works as a path does
    np.testing.assert_array_equal(gradlab.load(io.BytesIO(data))["w"].numpy(), gradlab.load(good)["w"].numpy())
