"""``gradlab.debug.watch()``: record every op call, to follow where a tensor's values went.

The backward graph only remembers the edges gradients can flow through. When a
student writes ``h = w.detach() * 2``, or computes ``h`` under ``no_grad()``, or
casts to an integer, the graph simply has no edge back to ``w``: afterwards
nothing in it says that ``w`` was ever involved. To *see* the cut, the ops have
to be watched while they run. ``watch()`` installs an op observer
(``gradlab.autograd.function.op_observers``) that notes, for each op, its input
and output tensors, whether grad mode was on, and the user's line. It keeps
those tensors alive until the recording is dropped, so use it on small
reproducers, not on a whole training run.
"""
from __future__ import annotations

import numpy as np

from ..autograd import function as _fn
from ..autograd.grad_mode import state as _grad_state
from ..backend import dtypes as _dt
from ._common import Tensor, host, user_site

_last = [None]  # the most recent finished recording (explain_grad looks here)


class OpRecord:
    """One op call: name, tensor inputs and outputs, grad mode, user line, node."""

    __slots__ = ("name", "cls", "inputs", "outputs", "grad_enabled", "site", "node")

    def __init__(self, name, cls, inputs, outputs, grad_enabled, site, node):
        self.name, self.cls, self.inputs, self.outputs = name, cls, inputs, outputs
        self.grad_enabled, self.site, self.node = grad_enabled, site, node

    def __repr__(self):
        return f"<{self.name} at {self.site}>"


def tensor_args(args):
    """The tensors among an op's arguments (one level into lists, for cat/stack)."""
    out = []
    for a in args:
        if isinstance(a, Tensor):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out.extend(x for x in a if isinstance(x, Tensor))
    return out


class watch:
    """``with gradlab.debug.watch() as rec:`` records every op run inside.

    ``rec.records`` lists :class:`OpRecord` s in call order; ``explain_grad``
    uses the latest recording to find where a path from a tensor to the loss was
    cut (detach, no_grad, an integer cast, a NumPy round trip).
    """

    def __init__(self, publish=True):
        self.records = []
        self._publish = publish

    def before(self, cls, args):
        return (_grad_state.enabled, user_site(2))

    def after(self, token, cls, args, outputs, node):
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        self.records.append(OpRecord(cls.name, cls, tensor_args(args), tuple(o for o in outs if isinstance(o, Tensor)),
                                     token[0], token[1], node))

    def __enter__(self):
        _fn.op_observers.append(self)
        return self

    def __exit__(self, *exc):
        if self in _fn.op_observers:
            _fn.op_observers.remove(self)
        if self._publish:
            _last[0] = self
        return False

    def produced(self, t) -> bool:
        return any(o is t for r in self.records for o in r.outputs)


def last_recording_for(t):
    """The latest recording in which ``t`` was produced, or None."""
    rec = _last[0]
    return rec if rec is not None and rec.produced(t) else None


def _same_values(a, b) -> bool:
    """Equal, non-trivial values (a constant array matches too much to be evidence)."""
    if a.shape != b.shape or a.size < 2:
        return False
    try:
        fa, fb = host(a, dtype=np.float64), host(b, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    if np.all(fa == fa.flat[0]):
        return False
    return bool(np.array_equal(fa, fb))


def _shares(a, b) -> bool:
    try:
        return bool(np.may_share_memory(a, b))
    except TypeError:  # arrays of another backend
        return False


class Cut:
    """Where and how a path from ``t`` lost its gradient."""

    def __init__(self, kind, record, detail):
        self.kind, self.record, self.detail = kind, record, detail

    def __repr__(self):
        return f"Cut({self.kind!r} at {self.record.site})"


def follow(t, records):
    """Follow ``t``'s values forward through ``records``.

    Returns ``{id(tensor): Cut or None}`` for every tensor derived from ``t``
    (``None``: the gradient still flows), plus the tensors (kept alive so ids
    stay unique).
    """
    derived = {id(t): None}
    alive = [t]
    versions = {id(t._version)}
    arrays = [t._data]
    for rec in records:
        touched, flowing, cut = False, False, None
        for a in rec.inputs:
            if id(a) in derived:
                touched = True
                c = derived[id(a)]
                flowing = flowing or c is None
                cut = cut or c
                continue
            if a.grad_fn is not None:
                continue
            how = None
            if id(a._version) in versions:
                how = Cut("detached", rec, f"{rec.name} got a tensor that shares storage and version counter with "
                                           "a tensor computed from t but has no graph: a .detach()")
            elif any(_shares(a._data, arr) for arr in arrays):
                how = Cut("numpy_round_trip", rec, f"{rec.name} got a tensor that shares memory with a tensor "
                                                   "computed from t but has no graph: .numpy() then from_numpy()")
            elif any(_same_values(a._data, arr) for arr in arrays):
                how = Cut("numpy_round_trip", rec, f"{rec.name} got a tensor with exactly the values of a tensor "
                                                   "computed from t but no graph: a copy through NumPy "
                                                   "(.numpy()/.tolist() then gradlab.tensor) or detach().clone()")
            if how is not None:
                touched = True
                cut = cut or how
        if not touched:
            continue
        if flowing:
            cut = None
            if not rec.grad_enabled:
                cut = Cut("no_grad", rec, f"{rec.name} ran with grad mode off (inside no_grad() / "
                                          "inference_mode()), so it recorded no graph")
        for o in rec.outputs:
            c = cut
            if c is None and not _dt.is_floating(o.dtype):
                kind = "integer_cast" if rec.name == "to" else "non_differentiable"
                c = Cut(kind, rec, f"{rec.name} produced dtype {_dt.dtype_name(o.dtype)}, which cannot carry a "
                                   "gradient (only floating tensors can)")
            derived[id(o)] = c
            alive.append(o)
            versions.add(id(o._version))
            arrays.append(o._data)
    return derived, alive
