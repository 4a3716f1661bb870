"""``with gradlab.trace(path, ...) as tr:`` -- the training trace evidence pack.

Around one or more training steps, every ``backward()`` writes a group of
JSON Lines records to ``path``, so a run can be replayed and diffed: two packs
of the same seeded run are equal, and the first record that differs points at
where a NaN or a wrong loss came from. Each record has a ``kind`` and exactly
these fields (what ``load`` checks):

``graph_run``: ``graph_run_id`` (``<run_id>-<n>``, n counting backward calls;
without ``run_id`` a deterministic id from the config hash and batch id),
``framework_version`` ("gradlab <version>"), ``compile_mode`` ("compiled" when
the graph ran a ``gradlab.compile``-d function, else "eager"), ``model_config_hash`` (sha256 of the canonical JSON
of ``model_config``, first 16 hex digits; null without one), ``input_batch_id``.

``tensor_trace`` (the loss, then each leaf that received a gradient, then
tensors passed to ``tr.log_tensor``): ``tensor_name``, ``shape``, ``dtype``,
``device``, ``layout`` (always "strided": gradlab tensors are dense arrays),
``requires_grad``.

``backward_trace``: ``loss_value`` (null for a non-scalar root),
``grad_norm`` (L2 norm over all gradients this backward accumulated into
leaves), ``loss_scale`` (``tr.loss_scale``, or the ``scaler``'s
``get_scale()``; null without mixed precision; when set, ``loss_value`` and
``grad_norm`` are divided by it, so they are the unscaled values), ``activation_checkpointing``
(whether the graph held a checkpoint node), ``anomaly_op`` (the first op that
made a NaN/Inf in this step, as ``"forward:<op>"`` or ``"backward:<op>"``;
null if none).

``runtime_snapshot``: ``kernel_trace_id`` (the compiled graphs that ran,
e.g. "compiled<step>"; null in eager mode, which launches no kernels),
``compiler_version`` ("gradlab.compile <version>" when compiled, else null),
``peak_memory`` (bytes gradlab can account for at this backward: saved
activations of the graph + the leaves + their gradients; not the process's
RSS), ``memory_fragmentation`` (null: NumPy's allocator reports none),
``sync_point`` (null: on cpu every op is synchronous).

Non-finite floats are written as the strings ``"nan"``, ``"inf"``, ``"-inf"``
(JSON has no NaN) and read back as floats. No field holds a timing, so packs of
the same seeded run compare equal.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import sys

import numpy as np

from ..autograd import engine as _engine, function as _fn
from ..backend import dtypes as _dt
from ..errors import GradlabError
from ._common import Tensor, graph_leaves, host, nonfinite_count, require_tensor, walk

FIELDS = {
    "graph_run": ("graph_run_id", "framework_version", "compile_mode", "model_config_hash", "input_batch_id"),
    "tensor_trace": ("tensor_name", "shape", "dtype", "device", "layout", "requires_grad"),
    "backward_trace": ("loss_value", "grad_norm", "loss_scale", "activation_checkpointing", "anomaly_op"),
    "runtime_snapshot": ("kernel_trace_id", "compiler_version", "peak_memory", "memory_fragmentation", "sync_point"),
}
#: Fields that hold wall-clock timings (none today); ``TracePack`` equality ignores them.
TIMING_FIELDS = frozenset()
_FLOAT_FIELDS = ("loss_value", "grad_norm", "loss_scale")


class TraceError(GradlabError, OSError):
    """The trace pack cannot be written or read."""


def _encode_float(x):
    if x is None:
        return None
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _decode_float(x):
    return float(x) if isinstance(x, str) else x


def config_hash(model_config):
    if model_config is None:
        return None
    text = json.dumps(model_config, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class TraceNotFoundError(TraceError, FileNotFoundError):
    """The trace pack's folder does not exist (or the pack to load does not)."""


class TracePermissionError(TraceError, PermissionError):
    """The trace pack's location cannot be written."""


class TraceIsADirectoryError(TraceError, IsADirectoryError):
    """The path given for the trace pack is a folder."""


class TraceNotADirectoryError(TraceError, NotADirectoryError):
    """A part of the path that should be a folder is a file."""


_ERRNO_CLASS = {2: TraceNotFoundError, 13: TracePermissionError, 1: TracePermissionError, 30: TracePermissionError,
                21: TraceIsADirectoryError, 20: TraceNotADirectoryError}


def _check_writable(path):
    """Fail now, with a clear message, if ``path`` cannot be written (probed by opening it)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TraceError(f"trace: path must be a file path (str or os.PathLike), got {type(path).__name__}")
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path)) or "."
    if os.path.isdir(path):
        raise TraceIsADirectoryError(f"trace: cannot write the trace pack to '{path}': it is a folder; give a file "
                                     "path such as 'run.jsonl'")
    if not os.path.exists(folder):
        raise TraceNotFoundError(f"trace: cannot write the trace pack to '{path}': the folder '{folder}' does not "
                                 "exist; create it first (os.makedirs) or choose another path")
    if not os.path.isdir(folder):
        raise TraceNotADirectoryError(f"trace: cannot write the trace pack to '{path}': '{folder}' is a file, not "
                                      "a folder; choose another path")
    existed = os.path.exists(path)
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as e:
        cls = _ERRNO_CLASS.get(e.errno, TraceError)
        raise cls(f"trace: cannot write the trace pack to '{path}': {e.strerror or e}; choose a path in a "
                  "writable folder") from None
    if not existed:
        os.remove(path)
    return path


class trace:
    """Write the training trace evidence pack (JSON Lines) for every backward inside the block.

    ``trace(path, run_id=None, model_config=None, input_batch_id=None, *, model=None, scaler=None)``:
    ``model`` names the parameters in ``tensor_trace`` records; ``scaler`` (a GradScaler)
    supplies ``loss_scale``. Set ``tr.input_batch_id`` / ``tr.loss_scale`` between steps.
    An unwritable path raises :class:`TraceError` here, before any training runs.
    """

    def __init__(self, path, run_id=None, model_config=None, input_batch_id=None, *, model=None, scaler=None):
        self.path = _check_writable(path)
        self.run_id = run_id
        self.model_config_hash = config_hash(model_config)
        self.input_batch_id = input_batch_id
        # deterministic, so two packs of the same seeded run compare equal
        self._run = run_id or "run-" + hashlib.sha256(
            f"{self.model_config_hash}|{input_batch_id}".encode()).hexdigest()[:8]
        self.loss_scale = None
        self.scaler = scaler
        self.records = []
        self._names = {}
        if model is not None:
            if not hasattr(model, "named_parameters"):
                raise TraceError(f"trace: model must be a gradlab.nn.Module, got {type(model).__name__}")
            self._names = {id(p): n for n, p in model.named_parameters()}
        self._file = None
        self._runs = 0
        self._forward_anomaly = None
        self._bws = []  # one entry per backward now running (innermost last; None: not recorded)

    # ------------------------------------------------------------ the block
    def __enter__(self):
        try:
            self._file = open(self.path, "w", encoding="utf-8")
        except OSError as e:
            raise TraceError(f"trace: cannot write the trace pack to '{self.path}': {e.strerror or e}; "
                             "choose a path in a writable folder") from None
        _fn.op_observers.append(self)
        _engine.backward_observers.insert(0, self)  # before detect_anomaly's watch, which may raise
        return self

    def __exit__(self, *exc):
        for lst in (_fn.op_observers, _engine.backward_observers):
            if self in lst:
                lst.remove(self)
        if self._file is not None:
            self._file.close()
            self._file = None
        return False

    def _write(self, kind, **fields):
        rec = {"kind": kind}
        for f in FIELDS[kind]:
            rec[f] = fields[f]
        self.records.append(rec)
        if self._file is not None:
            self._file.write(json.dumps(rec, allow_nan=False, separators=(", ", ": "), default=_plain) + "\n")
            self._file.flush()

    def log_tensor(self, name, t):
        """Add a ``tensor_trace`` record for ``t`` (e.g. the input batch) now."""
        t = require_tensor(t, "trace.log_tensor")
        self._tensor_record(name, t)

    def _tensor_record(self, name, t):
        self._write("tensor_trace", tensor_name=name, shape=list(t.shape), dtype=_dt.dtype_name(t.dtype),
                    device=str(t.device), layout="strided", requires_grad=bool(t.requires_grad))

    # ------------------------------------------------ op observer (forward)
    def before(self, cls, args):
        return None

    def after(self, token, cls, args, outputs, node):
        if self._forward_anomaly is None:
            outs = outputs if isinstance(outputs, tuple) else (outputs,)
            if any(isinstance(o, Tensor) and _dt.is_floating(o.dtype) and nonfinite_count(o._data) for o in outs):
                ins_ok = not any(isinstance(a, Tensor) and _dt.is_floating(a.dtype) and nonfinite_count(a._data)
                                 for a in args)
                if ins_ok:
                    self._forward_anomaly = f"forward:{cls.name}"

    # --------------------------------------------- engine observer (backward)
    def begin(self, roots):
        tracer = sys.modules.get("gradlab.compile.trace")
        if tracer is not None and getattr(tracer, "is_tracing", lambda: False)():
            self._bws.append(None)  # gradlab.compile tracing its backward: not a training step
            return
        roots = list(roots)
        nodes = walk(roots)
        leaves = graph_leaves(nodes)
        self._bws.append({"roots": roots, "leaves": leaves, "sq": 0.0, "got": False, "anomaly": None,
                    "saved": sum(n.saved_bytes for n in nodes if hasattr(n, "saved_bytes")),
                    "ckpt": any(_checkpointed(n) for n in nodes),
                    "compiled": sorted({str(n.name) for n in nodes if _compiled(n)})})

    def node_start(self, node, grads):
        bw = self._bws[-1] if self._bws else None
        if bw is not None and type(node).__name__ == "AccumulateGrad" and grads and grads[0] is not None:
            g = host(grads[0]._data, dtype=np.float64)
            bw["sq"] += float(np.sum(g * g))
            bw["got"] = True

    def node_end(self, node, grads_in, grads_out):
        bw = self._bws[-1] if self._bws else None
        if bw is None or bw["anomaly"] is not None or not grads_out:
            return
        if any(isinstance(g, Tensor) and nonfinite_count(g._data) for g in grads_out) and not any(
                isinstance(g, Tensor) and nonfinite_count(g._data) for g in grads_in or ()):
            bw["anomaly"] = f"backward:{node.name}"

    def end(self):
        bw = self._bws.pop() if self._bws else None
        if bw is None:
            return
        self._runs += 1
        self._write("graph_run", graph_run_id=f"{self._run}-{self._runs}", framework_version=_version(),
                    compile_mode="compiled" if bw["compiled"] else "eager", model_config_hash=self.model_config_hash,
                    input_batch_id=self.input_batch_id)
        for i, r in enumerate(bw["roots"]):
            self._tensor_record(r.name or ("loss" if i == 0 else f"loss{i}"), r)
        order = {k: i for i, k in enumerate(self._names)}
        leaves = sorted(bw["leaves"], key=lambda v: order.get(id(v), len(order)))
        for i, leaf in enumerate(leaves):
            self._tensor_record(self._names.get(id(leaf)) or leaf.name or f"leaf{i}", leaf)
        root = bw["roots"][0] if bw["roots"] else None
        loss_value = float(host(root._data, dtype=np.float64).reshape(-1)[0]) \
            if root is not None and root.numel() == 1 else None
        scale = self.loss_scale
        if scale is None and self.scaler is not None and hasattr(self.scaler, "get_scale"):
            scale = self.scaler.get_scale()
        anomaly = self._forward_anomaly or bw["anomaly"]
        self._forward_anomaly = None
        grad_norm = math.sqrt(bw["sq"]) if bw["got"] else None
        if scale:  # the root was loss * scale: record the loss and gradients the model really has
            loss_value = None if loss_value is None else loss_value / scale
            grad_norm = None if grad_norm is None else grad_norm / scale
        self._write("backward_trace", loss_value=_encode_float(loss_value), grad_norm=_encode_float(grad_norm),
                    loss_scale=_encode_float(scale), activation_checkpointing=bw["ckpt"], anomaly_op=anomaly)
        leaf_bytes = sum(v.nbytes + (v.grad.nbytes if v.grad is not None else 0) for v in bw["leaves"])
        compiled = bw["compiled"]
        self._write("runtime_snapshot", kernel_trace_id=",".join(compiled) if compiled else None,
                    compiler_version=f"gradlab.compile {_version().split()[-1]}" if compiled else None,
                    peak_memory=int(bw["saved"] + leaf_bytes), memory_fragmentation=None, sync_point=None)


def _plain(value):
    """JSON for ids given as tensors or NumPy scalars (e.g. ``input_batch_id=batch_idx``)."""
    if isinstance(value, Tensor) and value.numel() == 1:
        return value.item()
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def _compiled(node):
    """A node recorded by a ``gradlab.compile``-d function (one node runs the whole compiled graph)."""
    return any(c.__name__ == "_CompiledNode" for c in type(node).__mro__)


def _checkpointed(node):
    """A checkpoint node, or a saved tensor held by gradlab.utils.checkpoint's pack hook."""
    if "checkpoint" in (type(node).__name__ + str(node.name)).lower():
        return True
    for s in getattr(node, "saved", ()):
        owner = getattr(s.unpack, "__self__", None)
        if owner is not None and "checkpoint" in type(owner).__module__:
            return True
    return False


def _version():
    from .. import __version__
    return f"gradlab {__version__}"


class TracePack:
    """A trace pack read back by ``gradlab.trace.load``: ``records`` (dicts), grouped by kind."""

    def __init__(self, records, path=None):
        self.records, self.path = records, path

    def of_kind(self, kind):
        return [r for r in self.records if r["kind"] == kind]

    graph_runs = property(lambda self: self.of_kind("graph_run"))
    tensor_traces = property(lambda self: self.of_kind("tensor_trace"))
    backward_traces = property(lambda self: self.of_kind("backward_trace"))
    runtime_snapshots = property(lambda self: self.of_kind("runtime_snapshot"))

    def __len__(self):
        return len(self.records)

    def diff(self, other, ignore=TIMING_FIELDS):
        """``[(record index, field, mine, theirs)]`` for every difference (timings ignored)."""
        out = []
        for i in range(max(len(self.records), len(other.records))):
            a = self.records[i] if i < len(self.records) else None
            b = other.records[i] if i < len(other.records) else None
            if a is None or b is None:
                out.append((i, "record", a, b))
                continue
            for k in sorted(set(a) | set(b)):
                if k in ignore:
                    continue
                va, vb = a.get(k), b.get(k)
                both_nan = isinstance(va, float) and isinstance(vb, float) and math.isnan(va) and math.isnan(vb)
                same = va == vb or both_nan
                if not same:
                    out.append((i, k, va, vb))
        return out

    def __eq__(self, other):
        if not isinstance(other, TracePack):
            return NotImplemented
        return not self.diff(other)

    __hash__ = None

    def __repr__(self):
        counts = {k: len(self.of_kind(k)) for k in FIELDS}
        return f"<TracePack {self.path or ''} " + ", ".join(f"{v} {k}" for k, v in counts.items()) + ">"


def load(path) -> TracePack:
    """Read a trace pack written by ``gradlab.trace``, checking every record's kind and fields."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise TraceError(f"trace.load: cannot read '{path}': {e.strerror or e}") from None
    records = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise TraceError(f"trace.load: line {n} of '{path}' is not JSON ({e.msg}); is this a trace pack?") from None
        kind = rec.get("kind") if isinstance(rec, dict) else None
        if kind not in FIELDS:
            raise TraceError(f"trace.load: line {n} of '{path}' has kind {kind!r}; expected one of {sorted(FIELDS)}")
        want = set(FIELDS[kind]) | {"kind"}
        if set(rec) != want:
            missing, extra = sorted(want - set(rec)), sorted(set(rec) - want)
            raise TraceError(f"trace.load: line {n} ({kind}) has missing fields {missing} / unexpected fields {extra}")
        for k in _FLOAT_FIELDS:
            if k in rec:
                rec[k] = _decode_float(rec[k])
        records.append(rec)
    return TracePack(records, os.fspath(path))


trace.load = staticmethod(load)
trace.FIELDS = FIELDS
