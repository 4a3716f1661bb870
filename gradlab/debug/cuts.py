"""How ``explain_grad`` tells *where* the path from a tensor to the loss was cut.

Two sources of evidence: a recording of the forward (``gradlab.debug.watch``,
or a loss passed as a function), which names the exact op and line; or, with
only the finished graph, heuristics on its leaves and saved tensors (a tensor
that shares ``t``'s storage and version counter is a ``detach()``; one with
``t``'s exact values is a NumPy round trip; one with ``t``'s values truncated
is an integer cast). A cut by ``no_grad()`` leaves nothing in the graph, and
the verdict says so.
"""
from __future__ import annotations

import numpy as np

from ..backend import dtypes as _dt
from ._common import Tensor, graph_leaves, host
from .provenance import follow


def explain_missing(t, name, loss, nodes, rec, ev, checked, done):
    if rec is not None:
        derived, _alive = follow(t, rec.records)
        checked.append(f"every op of the recorded forward ({len(rec.records)} ops) for a path from t to the loss")
        cut = derived.get(id(loss), "absent") if id(loss) in derived else "absent"
        if cut == "absent":
            return done("not_used", f"{name} is not used to compute the loss: none of the {len(rec.records)} "
                                    f"recorded ops that lead to it read {name} or any tensor computed from it.")
        if cut is None:  # pragma: no cover - in_graph would have been True
            return done("unknown", f"{name} reaches the loss, yet is not on its graph.")
        ev.append(f"{cut.detail}, at {cut.record.site}")
        return done(cut.kind, _cut_verdict(name, cut.kind, str(cut.record.site)))
    # static heuristics: the graph no longer knows t, but its leaves or saved tensors may look like it
    saved = [(n, s) for n in nodes for s in getattr(n, "saved", ())]
    if any(getattr(n, "_released", False) for n in nodes):
        ev.append("backward() already freed this graph's saved tensors, so only its leaves could be compared "
                  "with t (call explain_grad before backward, or pass loss as a function)")
    checked.append(f"the graph's {len(graph_leaves(nodes))} leaves and {len(saved)} saved tensors for ones that "
                   "share t's storage or values")
    candidates = [(None, v._data, v._version, "leaf") for v in graph_leaves(nodes)]
    candidates += [(n, s._data, s.version_obj, f"saved by {n.name}") for n, s in saved if s._data is not None]
    for n, arr, ver, where in candidates:
        if ver is t._version:
            ev.append(f"a tensor {where} shares the storage and version counter of {name} but is not {name}: "
                      "a .detach() of it")
            return done("detached", _cut_verdict(name, "detached", None))
    for n, arr, ver, where in candidates:
        if _may_share(arr, t._data) or _same(arr, t._data):
            ev.append(f"a tensor {where} has exactly the values (or memory) of {name} but no graph back to it: a copy "
                      "through NumPy (.numpy()/from_numpy/gradlab.tensor) or detach()")
            return done("numpy_round_trip", _cut_verdict(name, "numpy_round_trip", None))
    if _dt.is_floating(t.dtype):
        trunc = np.trunc(host(t._data, dtype=np.float64))
        for n, arr, ver, where in candidates:
            if not np.array_equal(trunc, host(t._data, dtype=np.float64)) and _same(arr, trunc):
                ev.append(f"a tensor {where} holds the values of {name} truncated to integers: an integer cast")
                return done("integer_cast", _cut_verdict(name, "integer_cast", None))
    copies = _detached_copies(t)
    if copies:
        c = copies[0]
        what = f"'{c.name}'" if c.name else f"a tensor of shape {tuple(c.shape)}"
        ev.append(f"{what} is alive and shares the storage and version counter of {name} but has no graph: a "
                  f".detach() copy of {name} (found among live objects); the loss has no trace of {name}, so it "
                  "was most likely computed from this copy")
        checked.append("live tensors sharing t's version counter (detached copies)")
        return done("detached", "most likely " + _cut_verdict(name, "detached", None))
    how = ("To see which and where, pass loss as a function (explain_grad(t, loss=lambda: <forward>)) or build "
           "the loss inside gradlab.debug.watch().")
    if not loss.requires_grad:
        return done("path_cut",
                    f"the loss has no graph at all (no grad_fn), although {name} requires grad: it was computed "
                    f"without any tensor that requires grad, so the path from {name} was cut by detach(), no_grad(), "
                    f"an integer cast or a round trip through NumPy (.item(), .numpy(), .tolist()), or {name} was "
                    f"not used. {how}")
    return done("not_used",
                f"{name} is not on the loss's graph, and no leaf or saved tensor of that graph shares its storage or "
                "values: either the loss does not use it, or the path was cut by detach(), no_grad(), an integer "
                f"cast or a round trip through NumPy that left no trace in the graph. {how}")


def _detached_copies(t):
    """Live tensors made by ``t.detach()``: same version counter object, no graph.

    ``detach()`` shares the storage *and* the version counter, so the copy can be
    found from the counter (``gc.get_referrers``); a counter that was never
    created means nothing ever detached ``t``.
    """
    counter = getattr(t, "_vcounter", None)
    if counter is None:
        return []
    import gc
    owners = []
    for r in gc.get_referrers(counter):
        if isinstance(r, dict):  # a tensor whose attributes live in a real dict: find the tensor
            owners += [o for o in gc.get_referrers(r) if isinstance(o, Tensor) and o.__dict__ is r]
        else:
            owners.append(r)
    return [r for r in owners
            if isinstance(r, Tensor) and r is not t and r.grad_fn is None and not r.requires_grad]


def _may_share(a, b):
    try:
        return a.shape == b.shape and bool(np.may_share_memory(a, b))
    except TypeError:
        return False


def _same(a, b):
    a, b = host(a), host(b)
    return a.shape == b.shape and a.size > 1 and not np.all(a == a.flat[0]) and bool(
        np.array_equal(a.astype(np.float64), b.astype(np.float64)))


_FIX = {
    "detached": "detach() makes a new tensor with no history: gradients stop there. Use the tensor itself",
    "no_grad": "ops inside no_grad() record no graph. Compute the loss outside no_grad()",
    "integer_cast": "an integer tensor cannot carry a gradient. Keep the values floating (round in the loss "
                    "only if you mean to cut the gradient)",
    "non_differentiable": "a comparison / argmax / integer result has no gradient. Use a smooth surrogate "
                          "(e.g. softmax instead of argmax) on the path to the loss",
    "numpy_round_trip": "NumPy cannot record the graph, so values that went through .numpy() come back as "
                        "a new leaf. Do the computation with gradlab ops",
}


def _cut_verdict(name, kind, site):
    what = {"detached": "detach()", "no_grad": "no_grad()", "integer_cast": "an integer cast",
            "non_differentiable": "a non-differentiable op", "numpy_round_trip": "a round trip through NumPy"}[kind]
    at = f" at {site}" if site else ""
    return f"the path from {name} to the loss is cut by {what}{at}; {_FIX[kind]}."
