"""PyTorch's checkpoint format (``torch.save``'s zip file), read and written without torch and without
unpickling code.

Holds ``is_torch_zip`` (does a file look like one?), ``load_torch`` (read one: ``gradlab.load`` calls it
for such files) and ``save_torch`` (write one: ``gradlab.save(obj, path, format="torch")``).

A ``torch.save`` file is a ZIP archive: ``<name>/data.pkl`` is a pickle describing the object, and each
tensor's storage is a raw little-endian record ``<name>/data/<key>``. Unpickling with Python's ``pickle``
would let the file call any function it names. This reader is instead an interpreter of the pickle
opcodes ``torch.save`` writes (protocol 2), as ``torch.load(weights_only=True)`` itself is: the only
functions a file may name are the reconstructors that loader allows (``OrderedDict``, PyTorch's
``_rebuild_tensor_v2`` / ``_rebuild_parameter``, storage and dtype names, ``torch.Size``,
``torch.device``, ``set``), and each is implemented here, building gradlab tensors; any other name is
refused before anything is called. The same bounds as gradlab's own format apply: ``max_bytes`` on
everything decompressed (checked against declared sizes before reading), at most ``io.MAX_DEPTH`` nested
containers, only numeric and bool dtypes, views checked to lie inside their storage, no cycles.

Shared storage survives both ways: tensors that are views of one storage come back as views of one
array, and a tensor saved twice is one tensor.
"""
from __future__ import annotations

import io as _io
import math
import os
import pickle
import struct
import zipfile
from collections import Counter, OrderedDict

import numpy as np

from ._tensor import Tensor
from .backend import dtypes as _dt
from .io import MAX_BYTES, MAX_DEPTH, CheckpointError, _root

#: PyTorch's legacy storage class names (what ``torch.save`` writes) -> the element dtype
_STORAGES = {"FloatStorage": "<f4", "DoubleStorage": "<f8", "HalfStorage": "<f2", "BFloat16Storage": "bfloat16",
             "LongStorage": "<i8", "IntStorage": "<i4", "ShortStorage": "<i2", "CharStorage": "|i1",
             "ByteStorage": "|u1", "BoolStorage": "|b1"}
_STORAGE_OF = {v: k for k, v in _STORAGES.items()}
#: ``torch.<dtype>`` names a checkpoint may mention (optimizer states and configs hold them)
_DTYPE_NAMES = {"float32": "float32", "float": "float32", "float64": "float64", "double": "float64",
                "float16": "float16", "half": "float16", "bfloat16": "bfloat16", "int64": "int64", "long": "int64",
                "int32": "int32", "int": "int32", "int16": "int16", "short": "int16", "int8": "int8",
                "uint8": "uint8", "bool": "bool"}


def _storage_dtype(descr):
    return _dt.bfloat16 if descr == "bfloat16" else np.dtype(descr)


def _descr(dtype):
    """The little-endian descriptor of ``dtype`` as ``_STORAGES`` spells it (``"<f4"``, ``"|b1"``, ``"bfloat16"``)."""
    if dtype == _dt.bfloat16:
        return "bfloat16"
    return f"{'|' if dtype.itemsize == 1 else '<'}{dtype.kind}{dtype.itemsize}"


# ------------------------------------------------------------------ reading
class _Storage:
    """A storage record, read once (a 1-D array of its elements)."""

    def __init__(self, array):
        self.array = array


class _Type:
    """A class the file may name (``torch.Tensor``, ``torch.nn.Parameter``): only compared, never called."""

    def __init__(self, name):
        self.name = name


_TENSOR, _PARAMETER = _Type("torch.Tensor"), _Type("torch.nn.parameter.Parameter")


class _Reader:
    """One ``load_torch``: the zip, the budget, the storages read so far."""

    def __init__(self, z, prefix, name, max_bytes):
        self.z, self.prefix, self.name = z, prefix, name
        self.left = self.max_bytes = max_bytes
        self.storages = {}
        self.big_endian = False

    def damaged(self, what):
        return CheckpointError(f"load: {self.name} (a torch.save file) is damaged: {what}")

    def spend(self, n, what):
        if n > self.left:
            raise CheckpointError(
                f"load: {self.name} needs {n:,} more bytes for {what}, beyond the budget of {self.max_bytes:,} bytes "
                f"(max_bytes) for one load; a damaged or hostile file looks like this. If you trust the file and it "
                f"is a big model, raise the budget: gradlab.load(path, max_bytes={max(n * 2, 1 << 30)})")
        self.left -= n

    def record(self, rel, limit=None):
        try:
            info = self.z.getinfo(f"{self.prefix}{rel}")
        except KeyError:
            raise self.damaged(f"it has no record {rel!r}") from None
        self.spend(info.file_size, rel)
        with self.z.open(info) as fh:
            data = fh.read(info.file_size + 1)
        if len(data) != info.file_size:
            raise self.damaged(f"record {rel!r} holds {len(data)} bytes, not the {info.file_size} it declares")
        return data

    def storage(self, pid):
        """``persistent_load`` of ``('storage', storage_type, key, location, numel)``."""
        if type(pid) is not tuple or len(pid) != 5 or pid[0] != "storage":
            raise CheckpointError(f"load: {self.name} asks for a persistent object {pid!r:.80}; only tensor "
                                  "storages are allowed (as torch.load(weights_only=True))")
        _, stype, key, _location, numel = pid
        if not isinstance(stype, _StorageType) or type(key) is not str or type(numel) is not int or numel < 0:
            raise self.damaged(f"a storage reference {pid!r:.80} is malformed")
        if key in self.storages:
            st = self.storages[key]
            if st.array.dtype != stype.dtype:
                raise self.damaged(f"storage {key} is referred to with two dtypes")
            return st
        dt = stype.dtype
        itemsize = 2 if dt == _dt.bfloat16 else dt.itemsize
        try:
            info = self.z.getinfo(f"{self.prefix}data/{key}")
        except KeyError:
            raise self.damaged(f"storage record data/{key} is missing") from None
        if info.file_size != numel * itemsize:
            raise self.damaged(f"storage data/{key} declares {numel:,} elements ({numel * itemsize:,} bytes) but "
                               f"holds {info.file_size:,} bytes")
        self.spend(info.file_size, f"storage data/{key}")
        raw_dt = np.dtype("<u2") if dt == _dt.bfloat16 else dt.newbyteorder(">" if self.big_endian else "<")
        arr = np.empty(numel, dtype=raw_dt)
        try:
            with self.z.open(info) as fh:
                got = fh.readinto(memoryview(arr).cast("B")) if numel else 0
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
            raise self.damaged(f"storage data/{key} cannot be read ({e})") from None
        if got != info.file_size:
            raise self.damaged(f"storage data/{key} is truncated")
        if dt == _dt.bfloat16:
            arr = (arr.byteswap() if self.big_endian else arr).view(_dt.bfloat16)
        elif not arr.dtype.isnative:
            arr = arr.astype(arr.dtype.newbyteorder("="))
        st = self.storages[key] = _Storage(arr)
        return st


class _StorageType:
    def __init__(self, name):
        self.name, self.dtype = name, _storage_dtype(_STORAGES[name])


def _ints(v, what, rd):
    if type(v) is not tuple or not all(type(i) is int and i >= 0 for i in v):
        raise rd.damaged(f"{what} {v!r:.80} is not a tuple of non-negative ints")
    return v


def _empty_hooks(v, what, rd):
    if v is not None and not (isinstance(v, dict) and not v):
        raise CheckpointError(f"load: {rd.name} stores {what}; gradlab rebuilds plain tensors only (hooks, tensor "
                              "subclasses and extra tensor attributes are not loaded)")


def _rebuilders(rd):
    """The reconstructors a file may call, by the name it gives (each builds gradlab objects)."""
    def rebuild_tensor(storage, offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None):
        if not isinstance(storage, _Storage):
            raise rd.damaged("a tensor is rebuilt from something that is not a storage")
        if type(offset) is not int or offset < 0 or type(requires_grad) is not bool:
            raise rd.damaged(f"a tensor's storage offset {offset!r:.40} or requires_grad is malformed")
        size, stride = _ints(size, "a tensor size", rd), _ints(stride, "a tensor stride", rd)
        if len(size) != len(stride):
            raise rd.damaged(f"a tensor has size {size} but stride {stride}")
        _empty_hooks(backward_hooks, "backward hooks", rd)
        _empty_hooks(metadata, "tensor metadata", rd)
        base = storage.array
        n = math.prod(size)
        if n:
            last = offset + sum((s - 1) * st for s, st in zip(size, stride))
            if last >= base.size:
                raise rd.damaged(f"a tensor of size {size}, stride {stride} at offset {offset} reaches outside its "
                                 f"{base.size}-element storage")
        item = base.itemsize
        if n * item > rd.max_bytes:
            raise CheckpointError(f"load: {rd.name} has a tensor of size {size} ({n * item:,} bytes), beyond the "
                                  f"budget of {rd.max_bytes:,} bytes (max_bytes); raise it if you trust the file")
        view = np.lib.stride_tricks.as_strided(base[offset:] if n else base[:0], shape=size,
                                               strides=tuple(s * item for s in stride))
        t = Tensor._make(view)
        if requires_grad:
            if not _dt.is_floating(view.dtype):
                raise rd.damaged("an integer tensor is marked requires_grad")
            t.requires_grad = True
        return t

    def rebuild_tensor_v1(storage, offset, size, stride):
        return rebuild_tensor(storage, offset, size, stride)

    def rebuild_parameter(data, requires_grad, backward_hooks, state=None):
        if not isinstance(data, Tensor) or type(requires_grad) is not bool:
            raise rd.damaged("a parameter is rebuilt from something that is not a tensor")
        _empty_hooks(backward_hooks, "backward hooks on a parameter", rd)
        _empty_hooks(state, "attributes on a parameter", rd)
        from .nn.parameter import Parameter
        return Parameter(data, requires_grad=requires_grad)

    def rebuild_from_type(func, new_type, args, state):
        if new_type not in (_TENSOR, _PARAMETER) or func not in calls.values():
            raise CheckpointError(f"load: {rd.name} stores a tensor subclass; gradlab rebuilds plain tensors only")
        _empty_hooks(state, "attributes on a tensor", rd)
        t = func(*args)
        return rebuild_parameter(t, t.requires_grad, None) if new_type is _PARAMETER else t

    def size(dims=()):
        return _ints(tuple(dims) if type(dims) in (tuple, list) else dims, "a torch.Size", rd)

    def device(*args):
        from .backend.device import Device
        try:
            return Device(*args)
        except Exception:  # noqa: BLE001 - a device this machine lacks stays a plain name
            return ":".join(str(a) for a in args)

    def encode(s, encoding="latin1"):
        if type(s) is not str or encoding not in ("latin1", "latin-1"):
            raise rd.damaged("bytes are stored in an unexpected form")
        return s.encode("latin1")

    def refuse_complex(*_):
        raise CheckpointError(f"load: {rd.name} holds a complex number; gradlab has no complex dtype")

    calls = {
        "collections.OrderedDict": OrderedDict, "collections.Counter": Counter, "builtins.set": set,
        "builtins.bytearray": bytearray, "_codecs.encode": encode, "builtins.complex": refuse_complex,
        "torch._utils._rebuild_tensor_v2": rebuild_tensor, "torch._utils._rebuild_tensor": rebuild_tensor_v1,
        "torch._utils._rebuild_parameter": rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": rebuild_parameter,
        "torch._tensor._rebuild_from_type_v2": rebuild_from_type, "torch.Size": size, "torch.device": device,
    }
    return calls


class _Unpickler:
    """An interpreter of the pickle opcodes ``torch.save`` writes; every callable comes from ``_rebuilders``."""

    def __init__(self, data, rd):
        self.buf, self.pos, self.rd = memoryview(data), 0, rd
        self.calls = _rebuilders(rd)
        self.ours = set(map(id, self.calls.values()))

    def read(self, n):
        if self.pos + n > len(self.buf):
            raise self.rd.damaged("data.pkl ends in the middle of an instruction (truncated)")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def readline(self):
        end = bytes(self.buf[self.pos:self.pos + 256]).find(b"\n")
        if end < 0:
            raise self.rd.damaged("a GLOBAL name in data.pkl is unterminated or too long")
        line = bytes(self.read(end + 1))[:-1]
        return line.decode("utf-8", "strict")

    def global_(self, module, name):
        module = "builtins" if module == "__builtin__" else module
        full = f"{module}.{name}"
        if full in self.calls:
            return self.calls[full]
        if module == "torch" and name in _STORAGES:
            return _StorageType(name)
        if module == "torch" and name in _DTYPE_NAMES:
            return _dt.as_dtype(_DTYPE_NAMES[name])
        if full in ("torch.Tensor", "torch._tensor.Tensor"):
            return _TENSOR
        if full in ("torch.nn.parameter.Parameter", "torch.nn.Parameter"):
            return _PARAMETER
        raise CheckpointError(
            f"load: {self.rd.name} asks to call {full}, which is not one of the reconstructors "
            "torch.load(weights_only=True) allows for tensors and plain containers; nothing in the file was run. "
            "Save only state_dict()s, tensors, numbers, strings and containers (see gradlab.io's docstring)")

    def run(self):
        stack, metastack, memo = [], [], {}
        rd = self.rd

        def pop_mark():
            nonlocal stack
            items = stack
            if not metastack:
                raise rd.damaged("data.pkl pops a MARK it never set")
            stack = metastack.pop()
            return items

        def top(kinds, what):
            if not stack or type(stack[-1]) not in kinds:
                raise rd.damaged(f"data.pkl {what} something that is not a {'/'.join(k.__name__ for k in kinds)}")
            return stack[-1]

        try:
            while True:
                op = self.read(1)[0]
                if op == 0x80:      # PROTO
                    if self.read(1)[0] > 5:
                        raise rd.damaged("data.pkl uses an unknown pickle protocol")
                elif op == 0x2e:    # STOP
                    if len(stack) != 1 or metastack:
                        raise rd.damaged("data.pkl stops with a malformed stack")
                    return stack[0]
                elif op == 0x63:    # GLOBAL
                    module = self.readline()
                    stack.append(self.global_(module, self.readline()))
                elif op == 0x52:    # REDUCE
                    args = stack.pop()
                    func = stack[-1]
                    if id(func) not in self.ours or type(args) is not tuple:
                        raise CheckpointError(f"load: {rd.name} asks to call {func!r:.60}, which is not an "
                                              "allowed reconstructor; nothing in the file was run")
                    stack[-1] = func(*args)
                elif op == 0x62:    # BUILD
                    state = stack.pop()
                    inst = top((OrderedDict, dict, Tensor) + _param_types(), "BUILDs")
                    if type(inst) is OrderedDict and isinstance(state, dict) and all(type(k) is str for k in state):
                        if set(state) - {"_metadata"}:
                            raise rd.damaged("an OrderedDict carries attributes other than a state_dict's _metadata")
                        inst.__dict__.update(state)
                    elif state:
                        raise CheckpointError(f"load: {rd.name} sets attributes on a {type(inst).__name__}; gradlab "
                                              "rebuilds plain tensors and containers only")
                elif op == 0x61:    # APPEND
                    item = stack.pop()
                    top((list,), "APPENDs to").append(item)
                elif op == 0x65:    # APPENDS
                    items = pop_mark()
                    top((list,), "APPENDs to").extend(items)
                elif op == 0x73:    # SETITEM
                    v, k = stack.pop(), stack.pop()
                    top((dict, OrderedDict, Counter), "SETITEMs on")[k] = v
                elif op == 0x75:    # SETITEMS
                    items = pop_mark()
                    target = top((dict, OrderedDict, Counter), "SETITEMs on")
                    if len(items) % 2:
                        raise rd.damaged("SETITEMS with an odd number of items")
                    for i in range(0, len(items), 2):
                        target[items[i]] = items[i + 1]
                elif op == 0x28:    # MARK
                    if len(metastack) >= MAX_DEPTH:
                        raise CheckpointError(f"load: {rd.name} nests more than {MAX_DEPTH} levels deep")
                    metastack.append(stack)
                    stack = []
                elif op == 0x74:    # TUPLE
                    items = tuple(pop_mark())  # (first: pop_mark rebinds stack)
                    stack.append(items)
                elif op == 0x85:    # TUPLE1
                    stack[-1] = (stack[-1],)
                elif op == 0x86:    # TUPLE2
                    stack[-2:] = [tuple(stack[-2:])] if len(stack) >= 2 else self._short()
                elif op == 0x87:    # TUPLE3
                    stack[-3:] = [tuple(stack[-3:])] if len(stack) >= 3 else self._short()
                elif op == 0x4e:    # NONE
                    stack.append(None)
                elif op == 0x89:    # NEWFALSE
                    stack.append(False)
                elif op == 0x88:    # NEWTRUE
                    stack.append(True)
                elif op == 0x29:    # EMPTY_TUPLE
                    stack.append(())
                elif op == 0x5d:    # EMPTY_LIST
                    stack.append([])
                elif op == 0x7d:    # EMPTY_DICT
                    stack.append({})
                elif op == 0x8f:    # EMPTY_SET
                    stack.append(set())
                elif op == 0x4a:    # BININT
                    stack.append(struct.unpack("<i", self.read(4))[0])
                elif op == 0x4b:    # BININT1
                    stack.append(self.read(1)[0])
                elif op == 0x4d:    # BININT2
                    stack.append(struct.unpack("<H", self.read(2))[0])
                elif op == 0x8a:    # LONG1
                    stack.append(pickle.decode_long(bytes(self.read(self.read(1)[0]))))
                elif op == 0x47:    # BINFLOAT
                    stack.append(struct.unpack(">d", self.read(8))[0])
                elif op == 0x58:    # BINUNICODE
                    n = struct.unpack("<I", self.read(4))[0]
                    stack.append(str(self.read(n), "utf-8", "surrogatepass"))
                elif op == 0x8c:    # SHORT_BINUNICODE
                    stack.append(str(self.read(self.read(1)[0]), "utf-8", "surrogatepass"))
                elif op == 0x55:    # SHORT_BINSTRING
                    stack.append(str(self.read(self.read(1)[0]), "latin1"))
                elif op == 0x51:    # BINPERSID
                    stack.append(rd.storage(stack.pop()))
                elif op in (0x68, 0x6a):  # BINGET, LONG_BINGET
                    i = self.read(1)[0] if op == 0x68 else struct.unpack("<I", self.read(4))[0]
                    if i not in memo:
                        raise rd.damaged(f"data.pkl refers to memo entry {i} before storing it")
                    stack.append(memo[i])
                elif op in (0x71, 0x72):  # BINPUT, LONG_BINPUT
                    i = self.read(1)[0] if op == 0x71 else struct.unpack("<I", self.read(4))[0]
                    if not stack:
                        raise rd.damaged("data.pkl memoizes from an empty stack")
                    memo[i] = stack[-1]
                elif op == 0x94:    # MEMOIZE (protocol 4)
                    memo[len(memo)] = stack[-1]
                elif op == 0x95:    # FRAME (protocol 4): a length hint
                    self.read(8)
                else:
                    raise CheckpointError(f"load: {rd.name} uses the pickle instruction {bytes([op])!r}, which "
                                          "torch.save does not write and gradlab does not run")
        except IndexError:
            raise rd.damaged("data.pkl takes from an empty stack") from None
        except TypeError as e:
            raise rd.damaged(f"data.pkl calls a reconstructor with the wrong arguments ({e})") from None
        except (UnicodeDecodeError, struct.error, ValueError) as e:
            if isinstance(e, CheckpointError):
                raise
            raise rd.damaged(f"data.pkl is malformed ({e})") from None

    def _short(self):
        raise IndexError


def _param_types():
    from .nn.parameter import Parameter
    return (Parameter,)


def _check_tree(obj, name):
    """Refuse a cycle or nesting deeper than ``MAX_DEPTH`` in the loaded object (walked without recursion)."""
    stack = [(obj, 0, False)]
    on_path = set()
    while stack:
        o, depth, leaving = stack.pop()
        if leaving:
            on_path.discard(id(o))
            continue
        if not isinstance(o, (dict, list, tuple, set)):
            continue
        if id(o) in on_path:
            raise CheckpointError(f"load: {name} holds a container that contains itself; a checkpoint is a tree")
        if depth > MAX_DEPTH:
            raise CheckpointError(f"load: {name} nests containers more than {MAX_DEPTH} levels deep")
        on_path.add(id(o))
        stack.append((o, depth, True))
        items = list(o.keys()) + list(o.values()) if isinstance(o, dict) else list(o)
        stack.extend((v, depth + 1, False) for v in items)


def _prefix(names):
    pkl = [n for n in names if n == "data.pkl" or n.endswith("/data.pkl")]
    if len(pkl) != 1:
        return None
    return pkl[0][:-len("data.pkl")]


def is_torch_zip(f):
    """Whether ``f`` (a path or a seekable binary file) is a ZIP archive holding one ``data.pkl`` and no
    gradlab manifest: ``torch.save``'s format. Leaves a file object's position where it was."""
    own = isinstance(f, (str, os.PathLike))
    if own and not os.path.isfile(f):
        return False
    fh = open(f, "rb") if own else f
    try:
        start = fh.tell()
        head = fh.read(4)
        fh.seek(start)
        if head != b"PK\x03\x04":
            return False
        try:
            with zipfile.ZipFile(fh) as z:
                names = z.namelist()
        except (zipfile.BadZipFile, OSError, ValueError):
            return False
        finally:
            fh.seek(start)
        return "gradlab.json" not in names and _prefix(names) is not None
    finally:
        if own:
            fh.close()


def load_torch(f, *, max_bytes=None, name=None):
    """Read a ``torch.save`` file (see the module docstring); gradlab tensors come back, on the CPU."""
    budget = MAX_BYTES if max_bytes is None else max_bytes
    own = isinstance(f, (str, os.PathLike))
    name = name or (repr(os.fspath(f)) if own else "the file object")
    fh = open(f, "rb") if own else f
    try:
        try:
            z = zipfile.ZipFile(fh)
        except zipfile.BadZipFile:
            raise CheckpointError(f"load: {name} is a damaged or truncated ZIP file") from None
        with z:
            prefix = _prefix(z.namelist())
            rd = _Reader(z, prefix, name, budget)
            if f"{prefix}byteorder" in z.namelist():
                order = bytes(rd.record("byteorder")).strip()
                if order not in (b"little", b"big"):
                    raise rd.damaged(f"its byteorder record says {order[:20]!r}")
                rd.big_endian = order == b"big"
            try:
                obj = _Unpickler(rd.record("data.pkl"), rd).run()
            except (zipfile.BadZipFile, OSError, EOFError) as e:
                raise rd.damaged(str(e)) from None
    finally:
        if own:
            fh.close()
    _check_tree(obj, name)
    return obj


# ------------------------------------------------------------------ writing
class _Pickler:
    """Writes the protocol-2 pickle ``torch.save`` writes, for tensors and plain containers only."""

    def __init__(self):
        self.out = _io.BytesIO()
        self.storages = []        # (key, little-endian bytes)
        self.roots = {}           # id(root array) -> key
        self.memo = {}            # id(tensor) -> memo index
        self.keep = []            # objects whose ids are in the tables, kept alive

    def w(self, b):
        self.out.write(b)

    def global_(self, module, name):
        self.w(b"c" + module.encode() + b"\n" + name.encode() + b"\n")

    def dump(self, obj, path):
        w = self.w
        if obj is None:
            w(b"N")
        elif obj is True or obj is False or isinstance(obj, np.bool_):
            w(b"\x88" if obj else b"\x89")
        elif isinstance(obj, (int, np.integer)):
            self.int(int(obj))
        elif isinstance(obj, (float, np.floating)):
            w(b"G" + struct.pack(">d", float(obj)))
        elif isinstance(obj, str):
            b = obj.encode("utf-8", "surrogatepass")
            w(b"X" + struct.pack("<I", len(b)) + b)
        elif isinstance(obj, Tensor):
            self.tensor(obj, path)
        elif isinstance(obj, np.ndarray):
            self.tensor(Tensor._make(obj), path)
        elif isinstance(obj, OrderedDict):
            self.global_("collections", "OrderedDict")
            w(b")R")
            self.items(obj, path)
        elif isinstance(obj, dict):
            w(b"}")
            self.items(obj, path)
        elif isinstance(obj, list):
            w(b"]")
            if obj:
                w(b"(")
                for i, v in enumerate(obj):
                    self.dump(v, f"{path}[{i}]")
                w(b"e")
        elif isinstance(obj, tuple):
            if not obj:
                w(b")")
                return
            w(b"(")
            for i, v in enumerate(obj):
                self.dump(v, f"{path}[{i}]")
            w(b"t")
        else:
            from .io import _refusal
            raise _refusal(obj, path, "torch")

    def items(self, d, path):
        if d:
            self.w(b"(")
            for k, v in d.items():
                self.dump(k, f"{path} key {k!r}")
                self.dump(v, f"{path}[{k!r}]")
            self.w(b"u")

    def int(self, v):
        if 0 <= v < 256:
            self.w(b"K" + bytes([v]))
        elif 0 <= v < 65536:
            self.w(b"M" + struct.pack("<H", v))
        elif -2 ** 31 <= v < 2 ** 31:
            self.w(b"J" + struct.pack("<i", v))
        else:
            b = pickle.encode_long(v)
            if len(b) > 255:
                raise CheckpointError(f"save: the integer {v} is too large for a torch checkpoint")
            self.w(b"\x8a" + bytes([len(b)]) + b)

    def tensor(self, t, path):
        if id(t) in self.memo:  # saved twice: one tensor on load
            i = self.memo[id(t)]
            self.w(b"h" + bytes([i]) if i < 256 else b"j" + struct.pack("<I", i))
            return
        param = bool(getattr(t, "_is_param", False))
        if param:
            self.global_("torch._utils", "_rebuild_parameter")
            self.w(b"(")
        arr = np.asarray(t.detach().cpu().numpy())
        key, offset, stride = self.storage(arr, path)
        self.global_("torch._utils", "_rebuild_tensor_v2")
        self.w(b"((")
        self.dump("storage", path)
        self.global_("torch", _STORAGE_OF[_descr(arr.dtype)])
        self.dump(key, path)
        self.dump("cpu", path)
        self.int(self.storage_numel[key])
        self.w(b"tQ")
        self.int(offset)
        self.dump(tuple(int(s) for s in arr.shape), path)
        self.dump(stride, path)
        self.w(b"\x88" if t.requires_grad and not param else b"\x89")
        self.global_("collections", "OrderedDict")
        self.w(b")Rt")
        self.w(b"R")
        if param:
            self.w(b"\x88" if t.requires_grad else b"\x89")
            self.global_("collections", "OrderedDict")
            self.w(b")RtR")
        i = len(self.memo)
        self.memo[id(t)] = i
        self.keep.append(t)
        self.w(b"q" + bytes([i]) if i < 256 else b"r" + struct.pack("<I", i))

    storage_numel: dict = None

    def storage(self, arr, path):
        """(storage key, element offset, element strides) for ``arr``: views of one array share a storage."""
        if self.storage_numel is None:
            self.storage_numel = {}
        if _descr(arr.dtype) not in _STORAGE_OF:
            raise CheckpointError(f"save: {path} has dtype {arr.dtype}, which a torch checkpoint cannot hold (bool, "
                                  "int8-64, uint8, float16/32/64, bfloat16)")
        root = _root(arr)
        item = arr.itemsize
        if root is not None and root.dtype == arr.dtype and root.flags.c_contiguous and arr.size:
            start = arr.__array_interface__["data"][0] - root.__array_interface__["data"][0]
            if start % item == 0 and all(s >= 0 and s % item == 0 for s in arr.strides):
                return self._root_key(root), start // item, tuple(s // item for s in arr.strides)
        own = arr.copy(order="C")  # (not ascontiguousarray: it makes a 0-d array 1-d)
        return self._root_key(own), 0, tuple(s // item for s in own.strides)

    def _root_key(self, root):
        if id(root) in self.roots:
            return self.roots[id(root)]
        key = str(len(self.storages))
        data = root.view(np.uint16) if root.dtype == _dt.bfloat16 else root
        data = data.astype(data.dtype.newbyteorder("<"), copy=False).reshape(-1)
        self.storages.append((key, data.tobytes()))
        self.storage_numel[key] = root.size
        self.roots[id(root)] = key
        self.keep.append(root)
        return key


def save_torch(obj, f):
    """Write ``obj`` (tensors and plain containers) as a ``torch.save`` file that ``torch.load(path,
    weights_only=True)`` reads."""
    p = _Pickler()
    p.w(b"\x80\x02")
    p.dump(obj, "obj")
    p.w(b".")
    own = isinstance(f, (str, os.PathLike))
    prefix = "archive/"
    fh = open(f, "wb") if own else f
    try:
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as z:
            z.writestr(prefix + "data.pkl", p.out.getvalue())
            z.writestr(prefix + ".format_version", "1")
            z.writestr(prefix + ".storage_alignment", "64")
            z.writestr(prefix + "byteorder", "little")
            for key, data in p.storages:
                z.writestr(prefix + f"data/{key}", data)
            z.writestr(prefix + "version", "3\n")
    finally:
        if own:
            fh.close()
