"""Anomaly detection: which op made the NaN, and where did *I* call it?

A NaN in a gradient is usually born in one backward formula (``log`` at 0,
``sqrt`` at 0, ``x / 0``...) and then spreads everywhere, so by the time a
student sees it, every gradient is NaN. With anomaly detection on:

* forward: each recorded node remembers where it was created -- the first
  stack frame outside gradlab, i.e. the student's own line -- in
  ``node.meta["creation"]`` (a ``node_observers`` hook);
* backward: after each node runs, its gradients are checked; the first NaN or
  Inf raises an error naming that op and the line that created it (a
  ``backward_observers`` hook).

Both hooks use the engine's extension points, so with anomaly detection off
nothing is paid. It is slow when on (a stack walk per op, a scan per gradient):
a debugging tool, as in PyTorch.
"""
from __future__ import annotations

import functools
import linecache
import os
import sys

from ..backend import dtypes as _dt
from ..errors import GradError, fmt_shape
from . import engine as _engine, function as _fn

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_state = {"enabled": False, "check_nan": True}


def is_anomaly_enabled() -> bool:
    return _state["enabled"]


def is_anomaly_check_nan_enabled() -> bool:
    return _state["enabled"] and _state["check_nan"]


def user_frames(limit=5, skip=1):
    """The innermost stack frames outside gradlab: ``[(file, line, function), ...]``."""
    out = []
    f = sys._getframe(skip)
    while f is not None and len(out) < limit:
        fn = f.f_code.co_filename
        if not os.path.abspath(fn).startswith(_PKG):
            out.append((fn, f.f_lineno, f.f_code.co_name))
        f = f.f_back
    return out


def _record_creation(node):
    """node_observers hook: remember the user's line that created ``node``."""
    frames = user_frames(limit=5, skip=2)
    if not frames:
        return
    file, line, func = frames[0]
    info = {"file": file, "line": line, "function": func, "op": node.name,
            "code": linecache.getline(file, line).strip(), "stack": frames}
    meta = node.meta
    if meta is None:
        node.meta = {"creation": info}
    else:
        meta["creation"] = info


def where_created(node) -> str:
    """``file:line (code)`` where ``node`` was created, or a hint when unknown."""
    info = (node.meta or {}).get("creation") if node is not None else None
    if not info:
        return "an unknown place (it was created before detect_anomaly() was switched on)"
    code = f": {info['code']}" if info.get("code") else ""
    return f"{info['file']}:{info['line']} in {info['function']}{code}"


class _NanWatch:
    """backward_observers hook: raise at the first non-finite gradient."""

    def node_start(self, node, grads):
        pass

    def node_end(self, node, grads_in, grads_out):
        if not grads_out or not _state["check_nan"]:
            return
        for i, g in enumerate(grads_out):
            if g is None or not _dt.is_floating(g._data.dtype):
                continue
            d = g._data
            bad = ~_finite(d)
            if bad.any():
                what = "NaN" if _isnan(d).any() else "Inf"
                raise AnomalyError(
                    f"anomaly: the backward of {node.name} produced {what} in the gradient for its input {i} "
                    f"(shape {fmt_shape(d.shape)}, {int(bad.sum())} of {d.size} elements); that {node.name} was "
                    f"created at {where_created(node)}. Look at its inputs there: e.g. log or division at 0, "
                    "sqrt at 0, or an overflow earlier in the forward")


def _finite(d):
    from ..backend import xp_of
    return xp_of(d).isfinite(d)


def _isnan(d):
    from ..backend import xp_of
    return xp_of(d).isnan(d)


class AnomalyError(GradError):
    """A NaN or Inf appeared in backward while anomaly detection was on."""


_watch = _NanWatch()


def _set(enabled: bool, check_nan: bool):
    _state["enabled"], _state["check_nan"] = bool(enabled), bool(check_nan)
    if enabled:
        if _record_creation not in _fn.node_observers:
            _fn.node_observers.append(_record_creation)
        if _watch not in _engine.backward_observers:
            _engine.backward_observers.append(_watch)
    else:
        if _record_creation in _fn.node_observers:
            _fn.node_observers.remove(_record_creation)
        if _watch in _engine.backward_observers:
            _engine.backward_observers.remove(_watch)


class detect_anomaly:
    """Context manager / decorator: record where ops are created and stop at the first NaN/Inf gradient."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        self._prev = (_state["enabled"], _state["check_nan"])
        _set(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        _set(*self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """``set_detect_anomaly(True)`` switches anomaly detection on at once; also a context manager."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self._prev = (_state["enabled"], _state["check_nan"])
        _set(mode, check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set(*self._prev)
        return False
