"""Safe checkpoints: ``gradlab.save(obj, path)`` and ``gradlab.load(path)``.

Why not pickle (what ``torch.save`` uses)? Unpickling a file *runs code* the
file chooses: loading a stranger's checkpoint can take over the machine. A
gradlab checkpoint holds only data:

* one ZIP file, with ``gradlab.json`` (a JSON manifest describing the object:
  dicts, lists, tuples, numbers, strings, ``None``) and one ``.npy`` file per
  tensor or array, written and read with ``allow_pickle=False``;
* so ``load`` can rebuild only tensors, arrays and plain Python values.

What fits: model and optimizer ``state_dict()``s, scheduler state, RNG state
(``gradlab.get_rng_state()``), step counters, configs. A file that is not a
gradlab checkpoint (truncated, corrupted, a pickle, a ``torch.save`` file) is
refused with an error saying what it is, and nothing in it is executed.
"""
from __future__ import annotations

import io as _io
import json
import os
import zipfile
from collections import OrderedDict

import numpy as np

from ._tensor import Tensor
from .backend import dtypes as _dt
from .errors import GradlabError

FORMAT = "gradlab-checkpoint"
VERSION = 1
_MANIFEST = "gradlab.json"


class CheckpointError(GradlabError, ValueError):
    """A file that is not a readable gradlab checkpoint, or an object that cannot be saved safely."""


# ----------------------------------------------------------------- encoding
def _encode(obj, arrays, path):
    if isinstance(obj, Tensor):
        data = obj.data
        if hasattr(data, "get"):
            data = data.get()
        return {"__tensor__": _add_array(np.asarray(data), arrays), "requires_grad": bool(obj.requires_grad),
                "param": bool(obj._is_param)}
    if isinstance(obj, np.ndarray):
        return {"__ndarray__": _add_array(obj, arrays)}
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if np.isfinite(f) else {"__float__": repr(f)}
    if isinstance(obj, dict):
        if all(isinstance(k, str) for k in obj) and not any(k.startswith("__") and k.endswith("__") for k in obj):
            out = {k: _encode(v, arrays, f"{path}[{k!r}]") for k, v in obj.items()}
            return out if type(obj) is dict else {"__odict__": [[k, v] for k, v in out.items()]}
        items = []
        for k, v in obj.items():
            if not isinstance(k, (str, int, float, bool, type(None), tuple)):
                raise CheckpointError(f"save: key {k!r} at {path} has type {type(k).__name__}; "
                                      "only str/int/float/bool/None/tuple keys can be saved")
            items.append([_encode(k, arrays, path), _encode(v, arrays, f"{path}[{k!r}]")])
        return {"__dict__": items}
    if isinstance(obj, tuple):
        return {"__tuple__": [_encode(v, arrays, f"{path}[{i}]") for i, v in enumerate(obj)]}
    if isinstance(obj, list):
        return [_encode(v, arrays, f"{path}[{i}]") for i, v in enumerate(obj)]
    raise CheckpointError(
        f"save: cannot store {type(obj).__name__} at {path}; a gradlab checkpoint holds only tensors, arrays, "
        "dicts, lists, tuples, numbers, strings and None (so that loading it can never run code). "
        "Save model.state_dict() / optimizer.state_dict() rather than the objects themselves"
    )


def _add_array(arr, arrays):
    key = f"arrays/{len(arrays)}.npy"
    dtype_name = _dt.dtype_name(arr.dtype) if arr.dtype == _dt.bfloat16 else arr.dtype.str
    if arr.dtype == _dt.bfloat16:
        arr = arr.view(np.uint16)  # .npy has no bfloat16; store the bits
    elif arr.dtype.kind not in "biuf":
        raise CheckpointError(f"save: arrays of dtype {arr.dtype} cannot be saved (numbers and bools only)")
    arrays.append((key, arr if arr.flags.c_contiguous else arr.copy(order="C")))  # (ascontiguousarray makes 0-d 1-d)
    return {"file": key, "dtype": dtype_name}


def save(obj, f) -> None:
    """Write ``obj`` (state dicts, nested containers of tensors and plain values) to ``f`` safely.

    ``f`` is a path or a binary file object. See the module docstring for what fits.
    """
    arrays: list = []
    manifest = {"format": FORMAT, "version": VERSION, "object": _encode(obj, arrays, "obj")}
    own = isinstance(f, (str, os.PathLike))
    fh = open(f, "wb") if own else f
    try:
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as z:
            z.writestr(_MANIFEST, json.dumps(manifest, allow_nan=True))
            for key, arr in arrays:
                buf = _io.BytesIO()
                np.lib.format.write_array(buf, arr, allow_pickle=False)
                z.writestr(key, buf.getvalue())
    finally:
        if own:
            fh.close()


# ----------------------------------------------------------------- decoding
def _decode(obj, z, cache):
    if isinstance(obj, list):
        return [_decode(v, z, cache) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if "__tensor__" in obj:
        arr = _read_array(obj["__tensor__"], z)
        t = Tensor._make(arr)
        if obj.get("param"):
            from .nn.parameter import Parameter
            return Parameter(t, requires_grad=bool(obj.get("requires_grad")))
        if obj.get("requires_grad") and _dt.is_floating(arr.dtype):
            t.requires_grad = True
        return t
    if "__ndarray__" in obj:
        return _read_array(obj["__ndarray__"], z)
    if "__float__" in obj:
        return float(obj["__float__"])
    if "__tuple__" in obj:
        return tuple(_decode(v, z, cache) for v in obj["__tuple__"])
    if "__dict__" in obj:
        return {_hashable(_decode(k, z, cache)): _decode(v, z, cache) for k, v in obj["__dict__"]}
    if "__odict__" in obj:
        return OrderedDict((k, _decode(v, z, cache)) for k, v in obj["__odict__"])
    return {k: _decode(v, z, cache) for k, v in obj.items()}


def _hashable(k):
    return tuple(_hashable(x) for x in k) if isinstance(k, list) else k


def _read_array(ref, z):
    try:
        raw = z.read(ref["file"])
        arr = np.lib.format.read_array(_io.BytesIO(raw), allow_pickle=False)
    except KeyError:
        raise CheckpointError(f"load: the checkpoint lists {ref['file']} but does not contain it; the file is "
                              "damaged or incomplete") from None
    except (ValueError, OSError, EOFError) as e:
        raise CheckpointError(f"load: array {ref['file']} in the checkpoint is damaged ({e})") from None
    if ref.get("dtype") == "bfloat16":
        arr = arr.view(_dt.bfloat16)
    return arr


def _sniff(head: bytes, name: str):
    """Refuse files that are not gradlab checkpoints, saying what they look like."""
    if head[:1] == b"\x80" or head[:2] in (b"(d", b"(l", b"}q", b"]q", b"cc", b"c_"):
        raise CheckpointError(
            f"load: {name} is a Python pickle file. gradlab refuses to unpickle: unpickling runs code chosen by "
            "the file, so a checkpoint from anyone else could take over this machine. It was not read. "
            "Re-save it with gradlab.save(...) from a trusted session"
        )
    if head[:6] == b"\x93NUMPY":
        raise CheckpointError(f"load: {name} is a single NumPy .npy array, not a gradlab checkpoint; "
                              "read it with numpy.load(path, allow_pickle=False)")
    if head[:4] != b"PK\x03\x04":
        if not head:
            raise CheckpointError(f"load: {name} is empty (0 bytes); the save was interrupted or the file was truncated")
        raise CheckpointError(f"load: {name} is not a gradlab checkpoint (it does not start like one: first bytes "
                              f"{head[:8]!r}); gradlab.load reads only files written by gradlab.save")


def load(f, map_location=None, weights_only=True):
    """Read a checkpoint written by :func:`save` and return the object it holds.

    Only data comes back (tensors, arrays, containers, numbers, strings);
    ``map_location`` moves tensors to a device (e.g. ``"cpu"``).
    """
    own = isinstance(f, (str, os.PathLike))
    name = repr(os.fspath(f)) if own else "the file object"
    if own and not os.path.exists(f):
        raise FileNotFoundError(f"load: no such file {os.fspath(f)!r}")
    fh = open(f, "rb") if own else f
    try:
        start = fh.tell() if hasattr(fh, "tell") else 0
        head = fh.read(8)
        fh.seek(start)
        _sniff(head, name)
        try:
            z = zipfile.ZipFile(fh, "r")
        except zipfile.BadZipFile:
            raise CheckpointError(f"load: {name} is a damaged or truncated ZIP file, not a readable gradlab "
                                  "checkpoint (was the save interrupted?)") from None
        with z:
            names = set(z.namelist())
            if _MANIFEST not in names:
                if "data.pkl" in names or any(n.endswith("/data.pkl") for n in names):
                    raise CheckpointError(
                        f"load: {name} is a torch.save file: it holds a pickle, which gradlab refuses to load "
                        "because unpickling can run code. It was not unpickled. In PyTorch, save the state_dict's "
                        "tensors as NumPy arrays, or use a format such as safetensors")
                raise CheckpointError(f"load: {name} is a ZIP file but not a gradlab checkpoint (no {_MANIFEST} in it)")
            try:
                manifest = json.loads(z.read(_MANIFEST).decode("utf-8"))
            except (zipfile.BadZipFile, ValueError, UnicodeDecodeError, OSError) as e:
                raise CheckpointError(f"load: the manifest of {name} is damaged ({e})") from None
            if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
                raise CheckpointError(f"load: {name} has a manifest but not gradlab's checkpoint format")
            if manifest.get("version", 0) > VERSION:
                raise CheckpointError(f"load: {name} was written by a newer gradlab (format version "
                                      f"{manifest.get('version')}); upgrade gradlab to read it")
            try:
                obj = _decode(manifest["object"], z, {})
            except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as e:
                raise CheckpointError(f"load: {name} is damaged ({e})") from None
    finally:
        if own:
            fh.close()
    if map_location is not None:
        obj = _move(obj, map_location)
    return obj


def _move(obj, device):
    if isinstance(obj, Tensor):
        from .ops import to
        moved = to(obj.detach(), device)
        moved.requires_grad = obj.requires_grad
        moved._is_param = obj._is_param
        return moved
    if isinstance(obj, dict):
        return type(obj)((k, _move(v, device)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(_move(v, device) for v in obj)
    return obj
