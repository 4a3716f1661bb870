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

Hostile files are refused with :class:`CheckpointError` *before* memory is spent on them:

* a budget on the total bytes a load may decompress (``max_bytes=``, default :data:`MAX_BYTES`,
  512 MiB: raise it for a bigger model with ``gradlab.load(path, max_bytes=4 << 30)`` or by setting
  ``gradlab.io.MAX_BYTES``), checked against each member's declared size and each ``.npy`` header's
  shape before anything is read (a zip bomb or a header declaring 10**12 elements is refused at once;
  a member whose data does not match its header is damaged);
* the manifest is validated against the schema up front (every node one of the forms ``save``
  writes; nesting at most :data:`MAX_DEPTH` deep), so a malformed one is a clear error;
* only numeric and bool dtypes (``bool``, ``int8..int64``, ``uint8..uint64``, ``float16/32/64``,
  ``bfloat16``): strings, objects, datetimes, complex, void, structured and ``float128`` are refused.

Shared storage survives the round trip, as with ``torch.save``: a tensor saved twice comes back as one
tensor, and views of one array (``w[0]``, ``w.T``) come back as views of one array. A container that
contains itself cannot be saved (a clear error names where).
"""
from __future__ import annotations

import io as _io
import json
import math
import os
import zipfile
from collections import OrderedDict

import numpy as np

from ._tensor import Tensor
from .backend import dtypes as _dt
from .errors import GradlabError

#: The most bytes one ``load`` decompresses unless told otherwise (``load(..., max_bytes=)``).
MAX_BYTES = 512 << 20
#: The deepest nesting of containers a manifest may hold.
MAX_DEPTH = 200
#: dtypes a checkpoint may hold (``.npy`` descriptors, little- or big-endian), bfloat16 stored as uint16 bits.
_DTYPES = {"|b1", "|i1", "|u1", "<i2", "<i4", "<i8", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8",
           ">i2", ">i4", ">i8", ">u2", ">u4", ">u8", ">f2", ">f4", ">f8", "bfloat16"}

FORMAT = "gradlab-checkpoint"
VERSION = 1
_MANIFEST = "gradlab.json"


class CheckpointError(GradlabError, ValueError):
    """A file that is not a readable gradlab checkpoint, or an object that cannot be saved safely."""


# ----------------------------------------------------------------- encoding
class _Saver:
    """What one ``save`` has written so far: the arrays (one per distinct storage), tensors already seen
    (saved twice -> one tensor on load), and the containers on the current path (a cycle is refused)."""

    def __init__(self):
        self.arrays, self.roots, self.tensors, self.path_ids = [], {}, {}, set()


def _encode(obj, saver, path):
    if isinstance(obj, Tensor):
        if id(obj) in saver.tensors:
            return {"__ref__": saver.tensors[id(obj)]}
        data = obj._data
        if hasattr(data, "get"):
            data = data.get()
        ref = _add_array(np.asarray(data), saver)
        saver.tensors[id(obj)] = len(saver.tensors)
        saver.keep = getattr(saver, "keep", []) + [obj]  # ids stay unique while saving
        return {"__tensor__": ref, "requires_grad": bool(obj.requires_grad), "param": bool(obj._is_param),
                "id": saver.tensors[id(obj)]}
    if isinstance(obj, np.ndarray):
        return {"__ndarray__": _add_array(obj, saver)}
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if np.isfinite(f) else {"__float__": repr(f)}
    if isinstance(obj, (dict, list, tuple)):
        if id(obj) in saver.path_ids:
            raise CheckpointError(f"save: {path} contains itself (a reference cycle); a checkpoint holds a tree of "
                                  "containers. Break the cycle (store the shared part once) before saving")
        saver.path_ids.add(id(obj))
        try:
            return _encode_container(obj, saver, path)
        finally:
            saver.path_ids.discard(id(obj))
    raise _refusal(obj, path)


def _refusal(obj, path, fmt="gradlab"):
    """The error for an object a checkpoint cannot hold; for a model or an optimizer, the lines to write instead."""
    kind = "a torch-format" if fmt == "torch" else "a gradlab"
    if callable(getattr(obj, "state_dict", None)):
        name = "model" if hasattr(obj, "parameters") else "optimizer"
        return CheckpointError(
            f"save: cannot store the {type(obj).__name__} object itself at {path}: that needs pickle, and loading a "
            f"pickle can run code. Save its state instead: gradlab.save({name}.state_dict(), path), and to restore, "
            f"build the {type(obj).__name__} as before and call {name}.load_state_dict(gradlab.load(path))")
    return CheckpointError(
        f"save: cannot store {type(obj).__name__} at {path}; {kind} checkpoint holds only tensors, arrays, "
        "dicts, lists, tuples, numbers, strings and None (so that loading it can never run code). "
        "Save model.state_dict() / optimizer.state_dict() rather than the objects themselves"
    )


def _encode_container(obj, arrays, path):
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
    return [_encode(v, arrays, f"{path}[{i}]") for i, v in enumerate(obj)]


def _root(arr):
    """The array that owns ``arr``'s memory (up the chain of NumPy views), or None if it is not an array."""
    r = arr
    while isinstance(r.base, np.ndarray):
        r = r.base
    return r if r.base is None else None


def _add_array(arr, saver):
    dtype_name = _dt.dtype_name(arr.dtype) if arr.dtype == _dt.bfloat16 else arr.dtype.str
    if dtype_name not in _DTYPES:
        raise CheckpointError(f"save: arrays of dtype {arr.dtype} cannot be saved (numbers and bools only: bool, "
                              "int8-64, uint8-64, float16/32/64, bfloat16)")
    root = _root(arr)
    if root is not None and root is not arr and root.dtype == arr.dtype and root.flags.c_contiguous:
        # a view: store the whole storage once and where the view sits in it, as torch.save keeps storages
        ref = dict(_add_array(root, saver))
        start = arr.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        ref["view"] = {"offset": int(start), "shape": list(arr.shape), "strides": list(arr.strides)}
        return ref
    key = id(root) if root is arr else None
    if key is not None and key in saver.roots:
        return dict(saver.roots[key])
    name = f"arrays/{len(saver.arrays)}.npy"
    data = arr.view(np.uint16) if arr.dtype == _dt.bfloat16 else arr  # .npy has no bfloat16; store the bits
    saver.arrays.append((name, data if data.flags.c_contiguous else data.copy(order="C"), arr))
    ref = {"file": name, "dtype": dtype_name}
    if key is not None:
        saver.roots[key] = ref
    return ref


def save(obj, f, format="gradlab") -> None:  # noqa: A002 - the option's natural name
    """Write ``obj`` (state dicts, nested containers of tensors and plain values) to ``f`` safely.

    ``f`` is a path or a binary file object. See the module docstring for what fits. ``format="torch"``
    writes PyTorch's format instead (``torch.load(path, weights_only=True)`` reads it; ``gradlab.load``
    reads both): see ``gradlab/torch_checkpoint.py``.
    """
    if format == "torch":
        from .torch_checkpoint import save_torch
        return save_torch(obj, f)
    if format != "gradlab":
        from .errors import ArgumentError
        raise ArgumentError(f"save: format must be 'gradlab' or 'torch', got {format!r}")
    saver = _Saver()
    manifest = {"format": FORMAT, "version": VERSION, "object": _encode(obj, saver, "obj")}
    own = isinstance(f, (str, os.PathLike))
    fh = open(f, "wb") if own else f
    try:
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as z:
            z.writestr(_MANIFEST, json.dumps(manifest, allow_nan=True))
            for key, arr, _ in saver.arrays:
                buf = _io.BytesIO()
                np.lib.format.write_array(buf, arr, allow_pickle=False)
                z.writestr(key, buf.getvalue())
    finally:
        if own:
            fh.close()


# ----------------------------------------------------------------- decoding
_SPECIAL = {"__tensor__": {"__tensor__", "requires_grad", "param", "id"}, "__ndarray__": {"__ndarray__"},
            "__ref__": {"__ref__"}, "__float__": {"__float__"}, "__tuple__": {"__tuple__"},
            "__dict__": {"__dict__"}, "__odict__": {"__odict__"}}


def _bad(where, what):
    return CheckpointError(f"load: the manifest is malformed at {where}: {what}; the file was not written by "
                           "gradlab.save or was altered")


def _validate(obj, files):
    """Check the whole manifest against the forms ``save`` writes, iteratively (no recursion), before
    anything is read. Returns the set of array files it refers to."""
    stack = [(obj, "obj", 0)]
    refs = set()
    while stack:
        node, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _bad(where, f"containers nested more than {MAX_DEPTH} deep")
        if node is None or isinstance(node, (bool, int, float, str)):
            continue
        if isinstance(node, list):
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(node))
            continue
        if not isinstance(node, dict):
            raise _bad(where, f"a {type(node).__name__}")
        special = [k for k in node if k in _SPECIAL]
        if not special:
            if any(k.startswith("__") and k.endswith("__") for k in node):
                raise _bad(where, f"unknown marker {next(k for k in node if k.startswith('__'))!r}")
            stack.extend((v, f"{where}[{k!r}]", depth + 1) for k, v in node.items())
            continue
        kind = special[0]
        if len(special) > 1 or not set(node) <= _SPECIAL[kind]:
            raise _bad(where, f"unexpected keys {sorted(node)} for {kind}")
        val = node[kind]
        if kind in ("__tensor__", "__ndarray__"):
            if not isinstance(val, dict) or not isinstance(val.get("file"), str) or \
                    not isinstance(val.get("dtype"), str) or not set(val) <= {"file", "dtype", "view"}:
                raise _bad(where, "an array reference needs 'file' and 'dtype' strings")
            if val["dtype"] not in _DTYPES:
                raise _bad(where, f"dtype {val['dtype']!r} is not one a checkpoint may hold (numbers and bools only)")
            if val["file"] not in files:
                raise CheckpointError(f"load: the checkpoint lists {val['file']} but does not contain it; the file is "
                                      "damaged or incomplete")
            view = val.get("view")
            if view is not None and not (isinstance(view, dict) and set(view) == {"offset", "shape", "strides"}
                                         and type(view["offset"]) is int and isinstance(view["shape"], list)
                                         and isinstance(view["strides"], list)
                                         and len(view["shape"]) == len(view["strides"]) <= 64
                                         and all(type(v) is int for v in view["shape"] + view["strides"])
                                         and all(v >= 0 for v in view["shape"])):
                raise _bad(where, "a view needs an int offset and int lists shape and strides of one length")
            refs.add(val["file"])
            for k in ("requires_grad", "param"):
                if k in node and not isinstance(node[k], bool):
                    raise _bad(where, f"{k} must be true or false")
            if "id" in node and type(node["id"]) is not int:
                raise _bad(where, "a tensor id must be an int")
        elif kind == "__ref__":
            if type(val) is not int:
                raise _bad(where, "a tensor reference must be an int")
        elif kind == "__float__":
            if val not in ("inf", "-inf", "nan"):
                raise _bad(where, f"__float__ must be 'inf', '-inf' or 'nan', got {val!r}")
        elif kind == "__tuple__":
            if not isinstance(val, list):
                raise _bad(where, "__tuple__ must hold a list")
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(val))
        else:  # __dict__ / __odict__: [[key, value], ...]
            if not isinstance(val, list) or not all(isinstance(p, list) and len(p) == 2 for p in val):
                raise _bad(where, f"{kind} must hold [key, value] pairs")
            for i, (k, v) in enumerate(val):
                if kind == "__odict__" and not isinstance(k, str):
                    raise _bad(where, "__odict__ keys must be strings")
                if isinstance(k, list) or (isinstance(k, dict) and set(k) - {"__tuple__", "__float__"}):
                    raise _bad(where, "a dict key must be a number, string, None or tuple")
                stack.append((k, f"{where} key {i}", depth + 1))
                stack.append((v, f"{where}[{i}]", depth + 1))
    return refs


class _Loader:
    """One ``load``: reads each array file once (a file referenced 40 times is one array), within a budget."""

    def __init__(self, z, name, max_bytes):
        self.z, self.name, self.left, self.max_bytes = z, name, max_bytes, max_bytes
        self.files, self.tensors = {}, {}

    def spend(self, n, what):
        if n > self.left:
            raise CheckpointError(
                f"load: {self.name} needs {n:,} more bytes for {what}, beyond the budget of {self.max_bytes:,} bytes "
                f"(max_bytes) for one load; a damaged or hostile file (a zip bomb) looks like this. If you trust the "
                f"file and it is a big model, raise the budget: gradlab.load(path, max_bytes={max(n * 2, 1 << 30)}) "
                f"or gradlab.io.MAX_BYTES = ...")
        self.left -= n

    def array(self, ref):
        file, dtype_name = ref["file"], ref["dtype"]
        arr = self.files.get(file)
        if arr is None:
            arr = self.files[file] = self.read(file, dtype_name)
        elif (arr.dtype == _dt.bfloat16) != (dtype_name == "bfloat16"):
            raise CheckpointError(f"load: array {file} is referred to with two different dtypes; the file is damaged")
        view = ref.get("view")
        if view is not None:
            arr = self._view(arr, view, file)
        return arr

    def _view(self, base, view, file):
        shape, strides, offset = tuple(view["shape"]), tuple(view["strides"]), view["offset"]
        item = base.itemsize
        lo = hi = offset
        for n, st in zip(shape, strides):
            if n == 0:
                lo = hi = offset
                break
            if st >= 0:
                hi += (n - 1) * st
            else:
                lo += (n - 1) * st
        if (offset % item or any(st % item for st in strides) or lo < 0 or hi + item > base.nbytes) and \
                math.prod(shape) != 0:
            raise CheckpointError(f"load: a view of {file} (offset {offset}, shape {shape}, strides {strides}) "
                                  f"reaches outside its {base.nbytes}-byte storage; the file is damaged")
        if math.prod(shape) * item > self.max_bytes:
            raise CheckpointError(f"load: a view of {file} has shape {shape}, {math.prod(shape) * item:,} bytes, beyond "
                                  f"the budget of {self.max_bytes:,} bytes (max_bytes); raise it if you trust the file")
        flat = base.reshape(-1)
        start = offset // item if math.prod(shape) else 0
        v = np.lib.stride_tricks.as_strided(flat[start:], shape=shape, strides=strides)
        return v

    def read(self, file, dtype_name):
        info = self.z.getinfo(file)
        self.spend(info.file_size, file)  # the declared size, before reading a byte
        try:
            with self.z.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh, max_header_size=10000)
                elif version in ((2, 0), (3, 0)):
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh, max_header_size=10000)
                else:
                    raise ValueError(f"unknown .npy version {version}")
                want = "<u2" if dtype_name == "bfloat16" else dtype_name
                if dtype.str != np.dtype(want).str or dtype.names is not None or dtype.hasobject:
                    raise CheckpointError(f"load: array {file} holds dtype {dtype} but the manifest says {dtype_name}; "
                                          "only numeric and bool arrays are read")
                n = math.prod(shape)
                nbytes = n * dtype.itemsize
                header = fh.tell()
                if header + nbytes != info.file_size:
                    raise CheckpointError(f"load: array {file} declares shape {tuple(shape)} ({nbytes:,} bytes) but "
                                          f"holds {info.file_size - header:,}; the file is damaged")
                arr = np.empty(shape, dtype=dtype, order="F" if fortran else "C")
                if nbytes:
                    got = fh.readinto(memoryview(arr.reshape(-1, order="A")).cast("B"))
                    if got != nbytes:
                        raise EOFError(f"read {got} of {nbytes} bytes")
        except CheckpointError:
            raise
        except (ValueError, OSError, EOFError, zipfile.BadZipFile, NotImplementedError, RuntimeError) as e:
            raise CheckpointError(f"load: array {file} in the checkpoint is damaged ({e})") from None
        if dtype_name == "bfloat16":
            arr = arr.view(_dt.bfloat16)
        elif not arr.dtype.isnative:
            arr = arr.astype(arr.dtype.newbyteorder("="))
        return arr


def _decode(obj, ld):
    if isinstance(obj, list):
        return [_decode(v, ld) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if "__ref__" in obj:
        t = ld.tensors.get(obj["__ref__"])
        if t is None:
            raise CheckpointError(f"load: the manifest refers to tensor {obj['__ref__']} before defining it; the "
                                  "file is damaged")
        return t
    if "__tensor__" in obj:
        arr = ld.array(obj["__tensor__"])
        t = Tensor._make(arr)
        if obj.get("param"):
            from .nn.parameter import Parameter
            t = Parameter(t, requires_grad=bool(obj.get("requires_grad")))
        elif obj.get("requires_grad") and _dt.is_floating(arr.dtype):
            t.requires_grad = True
        if "id" in obj:
            ld.tensors[obj["id"]] = t
        return t
    if "__ndarray__" in obj:
        return ld.array(obj["__ndarray__"])
    if "__float__" in obj:
        return float(obj["__float__"])
    if "__tuple__" in obj:
        return tuple(_decode(v, ld) for v in obj["__tuple__"])
    if "__dict__" in obj:
        out = {}
        for k, v in obj["__dict__"]:
            k = _hashable(_decode(k, ld))
            try:
                out[k] = _decode(v, ld)
            except TypeError:
                raise CheckpointError(f"load: the manifest has an unhashable dict key {k!r}; the file is damaged") \
                    from None
        return out
    if "__odict__" in obj:
        return OrderedDict((k, _decode(v, ld)) for k, v in obj["__odict__"])
    return {k: _decode(v, ld) for k, v in obj.items()}


def _hashable(k):
    return tuple(_hashable(x) for x in k) if isinstance(k, list) else k


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


def load(f, map_location=None, weights_only=True, *, max_bytes=None):
    """Read a checkpoint written by :func:`save` and return the object it holds.

    Only data comes back (tensors, arrays, containers, numbers, strings);
    ``map_location`` moves tensors to a device (e.g. ``"cpu"``). ``max_bytes`` bounds the bytes the
    load may decompress (default :data:`MAX_BYTES`); see the module docstring.
    """
    budget = MAX_BYTES if max_bytes is None else max_bytes
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        from .errors import ArgumentTypeError
        raise ArgumentTypeError(f"load: max_bytes must be an int >= 0, got {max_bytes!r}")
    own = isinstance(f, (str, os.PathLike))
    name = repr(os.fspath(f)) if own else "the file object"
    if own and not os.path.exists(f):
        raise FileNotFoundError(f"load: no such file {os.fspath(f)!r}")
    from .torch_checkpoint import is_torch_zip, load_torch
    if is_torch_zip(f):  # torch.save's format: read without unpickling (gradlab/torch_checkpoint.py)
        obj = load_torch(f, max_bytes=budget, name=name)
        return obj if map_location is None else _move(obj, map_location)
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
            ld = _Loader(z, name, budget)
            try:
                ld.spend(z.getinfo(_MANIFEST).file_size, _MANIFEST)
                with z.open(_MANIFEST) as mf:
                    raw = mf.read(z.getinfo(_MANIFEST).file_size + 1)
                manifest = json.loads(raw.decode("utf-8"))
            except RecursionError:
                raise CheckpointError(f"load: the manifest of {name} is nested too deeply to be a checkpoint") from None
            except (zipfile.BadZipFile, ValueError, UnicodeDecodeError, OSError, NotImplementedError,
                    RuntimeError, EOFError) as e:
                raise CheckpointError(f"load: the manifest of {name} is damaged ({e})") from None
            if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
                raise CheckpointError(f"load: {name} has a manifest but not gradlab's checkpoint format")
            if type(manifest.get("version", 0)) is not int or "object" not in manifest:
                raise CheckpointError(f"load: {name} has a manifest without an int version and an object")
            if manifest.get("version", 0) > VERSION:
                raise CheckpointError(f"load: {name} was written by a newer gradlab (format version "
                                      f"{manifest.get('version')}); upgrade gradlab to read it")
            _validate(manifest["object"], names)
            try:
                obj = _decode(manifest["object"], ld)
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
