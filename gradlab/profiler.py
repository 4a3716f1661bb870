"""``with gradlab.profiler.profile() as prof:`` -- where does the time go, op by op?

Every op called inside the block is timed (an op observer,
``gradlab.autograd.function.op_observers``), and so is every backward node
(an engine observer, ``gradlab.autograd.engine.backward_observers``). A
backward node's time includes the ops its VJP calls (they show as its
children), so the table separates *self* time (the event alone) from *total*
time (with its children), as PyTorch's profiler does. ``bytes allocated``
counts the new arrays an op returns (a view, such as a transpose, allocates
nothing).

``prof.table(sort_by="cpu_time_total")`` prints the summary PyTorch users know
from ``prof.key_averages().table()``; ``prof.export_chrome_trace(path)``
writes the Chrome trace-event JSON that Perfetto (ui.perfetto.dev) and
``chrome://tracing`` open.
"""
from __future__ import annotations

import json
import os
import threading
import time

import numpy as np

from ._tensor import Tensor
from .autograd import engine as _engine, function as _fn
from .errors import ArgumentError, GradlabError

__all__ = ["profile", "record_function", "FunctionEvent", "FunctionEventAvg"]

_active: list = []  # the profilers now running (record_function labels go to them)


def _is_view(arr, inputs):
    """Does ``arr`` reuse an input's memory (a view such as a transpose), allocating nothing?"""
    if getattr(arr, "base", None) is None:
        return False
    try:
        return any(np.may_share_memory(arr, a) for a in inputs)
    except TypeError:  # arrays of another backend
        return True


class FunctionEvent:
    """One timed call: ``name``, ``kind`` ('forward' or 'backward'), ``start_us``, ``duration_us``,
    ``self_us``, ``bytes`` (allocated by the call itself), ``total_bytes`` (with children)."""

    __slots__ = ("name", "kind", "start_us", "duration_us", "child_us", "bytes", "child_bytes", "depth", "tid",
                 "input_shapes")

    def __init__(self, name, kind, start_us, depth, tid, input_shapes=None):
        self.name, self.kind, self.start_us, self.depth, self.tid = name, kind, start_us, depth, tid
        self.duration_us = self.child_us = 0.0
        self.bytes = self.child_bytes = 0
        self.input_shapes = input_shapes

    @property
    def self_us(self):
        return max(self.duration_us - self.child_us, 0.0)

    @property
    def total_bytes(self):
        return self.bytes + self.child_bytes

    def __repr__(self):
        return f"<{self.name} {self.kind} {self.duration_us:.1f}us>"


class FunctionEventAvg:
    """All calls of one name: ``key``, ``count``, ``cpu_time_total``, ``self_cpu_time_total``,
    ``cpu_time`` (average per call), ``cpu_memory_usage``, ``self_cpu_memory_usage`` (times in us, bytes)."""

    def __init__(self, key, kind):
        self.key, self.kind = key, kind
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0

    def add(self, e: FunctionEvent):
        self.count += 1
        self.cpu_time_total += e.duration_us
        self.self_cpu_time_total += e.self_us
        self.cpu_memory_usage += e.total_bytes
        self.self_cpu_memory_usage += e.bytes

    cuda_time_total = self_cuda_time_total = device_time_total = self_device_time_total = 0.0
    cuda_memory_usage = self_cuda_memory_usage = device_memory_usage = self_device_memory_usage = 0

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    self_cpu_time = property(lambda self: self.self_cpu_time_total / self.count if self.count else 0.0)

    def __repr__(self):
        return f"<FunctionEventAvg {self.key}: {self.count} calls, {self.cpu_time_total:.1f}us total>"


SORT_KEYS = ("cpu_time_total", "self_cpu_time_total", "cpu_time", "self_cpu_time", "count", "cpu_memory_usage",
             "self_cpu_memory_usage",
             # PyTorch's device columns: gradlab times the host only, so these are 0 (the order is kept)
             "cuda_time_total", "self_cuda_time_total", "device_time_total", "self_device_time_total",
             "cuda_memory_usage", "self_cuda_memory_usage", "device_memory_usage", "self_device_memory_usage")


def _fmt_time(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _fmt_mem(b):
    for unit, size in (("Gb", 1 << 30), ("Mb", 1 << 20), ("Kb", 1 << 10)):
        if abs(b) >= size:
            return f"{b / size:.2f} {unit}"
    return f"{int(b)} B"


class KeyAverages(list):
    """A list of :class:`FunctionEventAvg` with PyTorch's ``.table()``."""

    def table(self, sort_by=None, row_limit=100, top_level_events_only=False):
        if sort_by is not None and sort_by not in SORT_KEYS:
            raise ArgumentError(f"profile.table: sort_by={sort_by!r} is not a column; "
                                f"use one of {', '.join(SORT_KEYS)}")
        rows = list(self)
        if sort_by is not None:
            rows.sort(key=lambda r: getattr(r, sort_by), reverse=True)
        if row_limit is not None and row_limit >= 0:
            rows = rows[:row_limit]
        if not self:
            return "profile: no ops were recorded inside the profile block"
        self_total = sum(r.self_cpu_time_total for r in self) or 1.0
        headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "CPU Mem",
                   "Self CPU Mem", "# of Calls"]
        body = [[r.key, f"{100 * r.self_cpu_time_total / self_total:.2f}%", _fmt_time(r.self_cpu_time_total),
                 f"{100 * r.cpu_time_total / self_total:.2f}%", _fmt_time(r.cpu_time_total), _fmt_time(r.cpu_time),
                 _fmt_mem(r.cpu_memory_usage), _fmt_mem(r.self_cpu_memory_usage), str(r.count)] for r in rows]
        widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(headers)]
        widths = [max(w, 24 if i == 0 else 12) for i, w in enumerate(widths)]
        line = "  ".join("-" * w for w in widths) + "  "

        def fmt(cells):  # right-aligned columns, two spaces apart, as PyTorch prints them
            return "  ".join(c.rjust(w) for c, w in zip(cells, widths)) + "  "
        out = [line, fmt(headers), line] + [fmt(b) for b in body] + [line,
                                                                    f"Self CPU time total: {_fmt_time(self_total)}"]
        return "\n".join(out)

    def __str__(self):
        return self.table()


class profile:
    """Time every op (forward) and backward node inside the block.

    ``profile(record_shapes=False)``; afterwards ``prof.events()``,
    ``prof.key_averages()``, ``prof.table(sort_by=..., row_limit=...)`` and
    ``prof.export_chrome_trace(path)``.
    """

    def __init__(self, activities=None, record_shapes: bool = False, profile_memory: bool = True,
                 with_stack: bool = False, enabled: bool = True):
        # activities / profile_memory / with_stack are accepted for PyTorch compatibility: gradlab
        # profiles the CPU (NumPy) and always counts allocated bytes.
        self.record_shapes = record_shapes
        self.enabled = enabled
        self._events = []
        self._stack = []
        self._t0 = None
        self._running = False

    def _now(self):
        return (time.perf_counter_ns() - self._t0) / 1000.0

    def _open(self, name, kind, shapes=None):
        e = FunctionEvent(name, kind, self._now(), len(self._stack), threading.get_ident(), shapes)
        self._stack.append(e)
        return e

    def _close(self, e, nbytes=0):
        if e not in self._stack:
            return
        while self._stack and self._stack[-1] is not e:  # events left open by an error inside them
            self._stack.pop()
        self._stack.pop()
        e.duration_us = self._now() - e.start_us
        e.bytes = nbytes
        if self._stack:
            parent = self._stack[-1]
            parent.child_us += e.duration_us
            parent.child_bytes += e.total_bytes
        self._events.append(e)

    # op observer
    def before(self, cls, args):
        shapes = [tuple(a.shape) for a in args if isinstance(a, Tensor)] if self.record_shapes else None
        return self._open(cls.name, "forward" if not self._in_backward() else "backward-op", shapes)

    def after(self, e, cls, args, outputs, node):
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        ins = [a._data for a in args if isinstance(a, Tensor)]
        nbytes = sum(o._data.nbytes for o in outs if isinstance(o, Tensor) and not _is_view(o._data, ins))
        self._close(e, int(nbytes))

    def _in_backward(self):
        return any(e.kind == "backward" for e in self._stack)

    # engine observer
    def node_start(self, node, grads):
        name = "AccumulateGrad" if type(node).__name__ == "AccumulateGrad" else f"{node.name}.backward"
        self._open(name, "backward")

    def node_end(self, node, grads_in, grads_out):
        for e in reversed(self._stack):
            if e.kind == "backward":
                self._close(e)
                break

    def __enter__(self):
        if self._running:
            raise GradlabError("profile: this profiler is already running; use one `with` block per profile()")
        self._t0 = time.perf_counter_ns()
        if self.enabled:
            _fn.op_observers.append(self)
            _engine.backward_observers.append(self)
        self._running = True
        _active.append(self)
        return self

    def __exit__(self, *exc):
        for lst in (_fn.op_observers, _engine.backward_observers):
            if self in lst:
                lst.remove(self)
        self._stack.clear()
        self._running = False
        if self in _active:
            _active.remove(self)
        return False

    # results
    def events(self):
        """Every timed call, in the order they finished."""
        return list(self._events)

    def key_averages(self) -> KeyAverages:
        groups = {}
        for e in self._events:
            kind = "backward" if e.kind in ("backward", "backward-op") else e.kind
            g = groups.get(e.name)
            if g is None:
                g = groups[e.name] = FunctionEventAvg(e.name, kind)
            g.add(e)
        return KeyAverages(groups.values())

    def table(self, sort_by="cpu_time_total", row_limit=100) -> str:
        """The summary table (PyTorch's ``key_averages().table()``), sorted by ``sort_by``."""
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit)

    def export_chrome_trace(self, path):
        """Write the Chrome trace-event JSON ("X" complete events, times in microseconds)."""
        pid = os.getpid()
        tids = {}
        events = [{"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0, "args": {"name": "gradlab"}}]
        for e in sorted(self._events, key=lambda e: (e.start_us, -e.duration_us)):
            tid = tids.setdefault(e.tid, len(tids))
            cat = "backward" if e.kind in ("backward", "backward-op") else e.kind
            ev = {"name": e.name, "cat": cat, "ph": "X",
                  "ts": round(e.start_us, 3), "dur": round(e.duration_us, 3), "pid": pid, "tid": tid,
                  "args": {"bytes allocated": e.bytes}}
            if e.input_shapes is not None:
                ev["args"]["input shapes"] = [list(s) for s in e.input_shapes]
            events.append(ev)
        try:
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)
        except OSError as err:
            raise GradlabError(f"export_chrome_trace: cannot write '{path}': {err.strerror or err}") from None
        return path

    def __repr__(self):
        return self.table()


class record_function:
    """``with record_function("data loading"):`` -- a labelled range of your own in the profile.

    Its time includes the ops run inside it (shown as its children), as in PyTorch.
    Outside a running profiler it does nothing.
    """

    def __init__(self, name: str):
        self.name = str(name)
        self._events = []

    def __enter__(self):
        self._events = [(p, p._open(self.name, "user")) for p in _active]
        return self

    def __exit__(self, *exc):
        for p, e in self._events:
            p._close(e)
        self._events = []
        return False
