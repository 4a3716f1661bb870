"""Hostile checkpoint files are refused with CheckpointError within bounded memory; shared storage and
views survive save/load; cycles are refused at save (issue #24, gradlab/io.py's module docstring)."""
from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import gradlab
from gradlab.io import CheckpointError

MANIFEST = "gradlab.json"


def _zip(path, manifest, members=(), compress=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression=compress) as z:
        z.writestr(MANIFEST, manifest if isinstance(manifest, (str, bytes)) else json.dumps(manifest))
        for name, data in members:
            z.writestr(name, data)
    return path


def _npy(arr):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _ckpt(obj):
    return {"format": "gradlab-checkpoint", "version": 1, "object": obj}


def _tensor(file="arrays/0.npy", dtype="<f4", **kw):
    return {"__tensor__": {"file": file, "dtype": dtype, **kw}, "requires_grad": False, "param": False}


def _bomb(path, gib=1):
    """A ``.npy`` of ``gib`` GiB of zeros, deflated to about a megabyte per GiB."""
    n = (gib << 30) // 4
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (n,)})
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        z.writestr(MANIFEST, json.dumps(_ckpt({"w": _tensor()})))
        with z.open("arrays/0.npy", "w", force_zip64=True) as f:
            f.write(header.getvalue())
            chunk = bytes(16 << 20)
            for _ in range((n * 4) // len(chunk)):
                f.write(chunk)
    return path


def test_zip_bomb_refused_before_reading_with_bounded_memory(tmp_path):
    path = _bomb(tmp_path / "bomb.gl", gib=1)
    assert path.stat().st_size < 8 << 20  # 1 GiB in a few MB
    code = textwrap.dedent(f"""
        import resource, gradlab
        from gradlab.io import CheckpointError
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            gradlab.load({str(path)!r})
            print("LOADED")
        except CheckpointError as e:
            print("REFUSED", str(e)[:200])
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print("PEAK_KB", before, after)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    assert "REFUSED" in out and "max_bytes" in out, out
    before, after = (int(v) for v in out.split("PEAK_KB")[1].split())
    grown_mb = (after - before) / 1024
    print(f"zip bomb (1 GiB in {path.stat().st_size / 1e6:.1f} MB): refused; peak RSS {after / 1024:.0f} MB, "
          f"grew {grown_mb:.1f} MB during load")
    assert grown_mb < 32, out


def test_budget_can_be_raised(tmp_path):
    arr = np.ones(1000, np.float32)
    path = _zip(tmp_path / "a.gl", _ckpt({"w": _tensor()}), [("arrays/0.npy", _npy(arr))])
    with pytest.raises(CheckpointError, match="max_bytes"):
        gradlab.load(path, max_bytes=1000)
    np.testing.assert_array_equal(gradlab.load(path, max_bytes=10_000)["w"].numpy(), arr)
    old = gradlab.io.MAX_BYTES
    try:
        gradlab.io.MAX_BYTES = 1000
        with pytest.raises(CheckpointError, match="budget"):
            gradlab.load(path)
    finally:
        gradlab.io.MAX_BYTES = old


def test_header_declaring_huge_array_is_refused_without_allocating(tmp_path):
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (10 ** 12,)})
    path = _zip(tmp_path / "h.gl", _ckpt({"w": _tensor()}), [("arrays/0.npy", header.getvalue() + bytes(64))])
    with pytest.raises(CheckpointError, match="declares shape"):
        gradlab.load(path)


def test_many_references_to_one_member_load_one_array(tmp_path):
    arr = np.arange(1000, dtype=np.float32)
    path = _zip(tmp_path / "r.gl", _ckpt([_tensor() for _ in range(40)]), [("arrays/0.npy", _npy(arr))])
    out = gradlab.load(path, max_bytes=10_000)  # 40 copies would need 160 kB
    assert len(out) == 40 and all(np.shares_memory(t._data, out[0]._data) for t in out)


@pytest.mark.parametrize("manifest", [
    _ckpt({"w": {"__tensor__": 3}}),
    _ckpt({"w": {"__tensor__": {"file": 1, "dtype": "<f4"}}}),
    _ckpt({"w": {"__tensor__": {"file": "arrays/0.npy"}}}),
    _ckpt({"w": {"__dict__": [[1]]}}),
    _ckpt({"w": {"__dict__": 5}}),
    _ckpt({"w": {"__dict__": [[[1, 2], 3]]}}),
    _ckpt({"w": {"__odict__": [[1, 2]]}}),
    _ckpt({"w": {"__tuple__": 7}}),
    _ckpt({"w": {"__float__": "1e400x"}}),
    _ckpt({"w": {"__evil__": 1}}),
    _ckpt({"w": {"__ref__": 0}}),
    _ckpt({"w": {"__tensor__": {"file": "arrays/0.npy", "dtype": "<f4"}, "__tuple__": []}}),
    _ckpt({"w": _tensor(view={"offset": 10 ** 9, "shape": [2], "strides": [4]})}),
    _ckpt({"w": _tensor(view={"offset": 0, "shape": [2, 2], "strides": [4]})}),
    _ckpt({"w": _tensor(view={"offset": 0, "shape": [10 ** 9], "strides": [0]})}),
    _ckpt({"w": _tensor(file="arrays/9.npy")}),
    {"format": "gradlab-checkpoint", "version": "1", "object": 1},
    {"format": "gradlab-checkpoint", "version": 1},
    "[" * 100_000 + "]" * 100_000,
    '{"format": "gradlab-checkpoint", "version": 1, "object": ' + "[" * 5000 + "]" * 5000 + "}",
], ids=lambda m: (str(m)[:40] if not isinstance(m, str) else "deep-json"))
def test_malformed_manifest_is_a_checkpoint_error(tmp_path, manifest):
    path = _zip(tmp_path / "m.gl", manifest, [("arrays/0.npy", _npy(np.zeros(4, np.float32)))])
    with pytest.raises(CheckpointError):
        gradlab.load(path)


@pytest.mark.parametrize("arr", [
    np.array(["a", "b"]), np.array([1, 2], dtype="datetime64[s]"), np.array([1 + 2j]), np.zeros(2, "V4"),
    np.zeros(2, [("a", "<i4"), ("b", "<f4")]), np.zeros(2, np.longdouble), np.zeros(2, "m8[s]"),
], ids=lambda a: str(a.dtype))
def test_only_numeric_and_bool_members_load(tmp_path, arr):
    path = _zip(tmp_path / "d.gl", _ckpt({"w": _tensor(dtype=arr.dtype.str)}), [("arrays/0.npy", _npy(arr))])
    with pytest.raises(CheckpointError):
        gradlab.load(path)
    # a member whose dtype disagrees with a manifest that claims float32 is refused too
    path = _zip(tmp_path / "e.gl", _ckpt({"w": _tensor()}), [("arrays/0.npy", _npy(arr))])
    with pytest.raises(CheckpointError):
        gradlab.load(path)
    with pytest.raises(CheckpointError, match="dtype"):
        gradlab.save({"w": arr}, tmp_path / "s.gl")


def test_truncated_member_is_damaged(tmp_path):
    data = _npy(np.arange(100, dtype=np.float32))
    path = _zip(tmp_path / "t.gl", _ckpt({"w": _tensor()}), [("arrays/0.npy", data[:-40])])
    with pytest.raises(CheckpointError, match="damaged"):
        gradlab.load(path)


def test_shared_storage_and_views_round_trip(tmp_path):
    w = gradlab.arange(12.0).reshape(3, 4)
    row, col = w[1], w[:, 2]
    obj = {"a": w, "b": w, "row": row, "col": col, "T": w.T, "arr": np.arange(6).reshape(2, 3)[:, ::-1]}
    gradlab.save(obj, tmp_path / "s.gl")
    back = gradlab.load(tmp_path / "s.gl")
    assert back["a"] is back["b"]                               # one tensor saved twice: one tensor
    for k in ("row", "col", "T"):
        np.testing.assert_array_equal(back[k].numpy(), obj[k].numpy())
        assert np.shares_memory(back[k]._data, back["a"]._data), k  # views stay views of one storage
    np.testing.assert_array_equal(back["arr"], obj["arr"])
    with zipfile.ZipFile(tmp_path / "s.gl") as z:
        assert len([n for n in z.namelist() if n.endswith(".npy")]) == 2  # w's storage and arr's
    with gradlab.no_grad():
        back["a"][1, 2] = -1.0
    assert back["row"][2].item() == -1.0 and back["col"][1].item() == -1.0


def test_cycles_are_refused_at_save(tmp_path):
    a = [1, 2]
    a.append(a)
    with pytest.raises(CheckpointError, match="contains itself"):
        gradlab.save({"x": a}, tmp_path / "c.gl")
    d = {}
    d["self"] = d
    with pytest.raises(CheckpointError, match=r"obj\['self'\]"):
        gradlab.save(d, tmp_path / "c.gl")
    shared = [1]
    gradlab.save({"p": shared, "q": shared}, tmp_path / "ok.gl")  # shared, not cyclic: fine
    assert gradlab.load(tmp_path / "ok.gl") == {"p": [1], "q": [1]}
