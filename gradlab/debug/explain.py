"""``gradlab.explain_grad(t, loss=None, optimizer=None)``: why is ``t.grad`` None or zero?

A gradient goes missing for a handful of reasons, and each leaves a trace that
can be checked: ``requires_grad`` is off; ``t`` is an intermediate (only
leaves keep ``.grad`` unless ``retain_grad()``); the path from ``t`` to the loss
is cut (``detach()``, ``no_grad()``, an integer cast, a round trip through
NumPy); ``t`` is not used at all; ReLUs are dead or sigmoid/tanh saturated, so
the gradient is exactly zero; or backward did put a gradient there and
``zero_grad()`` cleared it before anyone read it. The answer is a short verdict
first, then the evidence and what was checked.

Pass ``loss`` as a tensor, or as a function of no arguments that computes it:
then the forward is run once more under :class:`gradlab.debug.watch` (so it
draws random numbers again, as any extra forward does) and the exact line
where the path was cut is found. ``.grad`` is never changed: gradients are
recomputed with ``gradlab.grad``.
"""
from __future__ import annotations

import numpy as np

from ..autograd import engine as _engine
from ..backend import dtypes as _dt
from ..errors import GradlabError, fmt_shape
from ._common import (
    DebugInputError,
    Tensor,
    graph_leaves,
    host,
    is_accumulate,
    label,
    node_module,
    require_tensor,
    walk,
)
from .cuts import explain_missing
from .provenance import last_recording_for, watch
from .saturation import measure, path_nodes

_grad_log = {}  # id(tensor) -> [weakref, times accumulated, last norm]


class Explanation:
    """What ``explain_grad`` found: ``cause`` (a short code), ``verdict``, ``evidence``, ``checked``."""

    def __init__(self, name, cause, verdict, evidence, checked, causes=None):
        self.name, self.cause, self.verdict = name, cause, verdict
        self.evidence, self.checked = list(evidence), list(checked)
        self.causes = list(causes or [cause])

    def __str__(self):
        lines = [f"explain_grad({self.name}): {self.verdict}", f"cause: {self.cause}", "evidence:"]
        lines += [f"  - {e}" for e in self.evidence]
        if self.checked:
            lines.append("checked:")
            lines += [f"  - {c}" for c in self.checked]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_markdown_(self):
        md = [f"**{self.verdict}**", "", f"cause: `{self.cause}`", "", "evidence:", ""]
        md += [f"- {e}" for e in self.evidence]
        if self.checked:
            md += ["", "checked:", ""] + [f"- {c}" for c in self.checked]
        return "\n".join(md)


def track_grads(tensors):
    """Remember every gradient backward accumulates into these leaves (a post-accumulate hook).

    With it, ``explain_grad`` can tell for certain that a gradient arrived and
    was cleared later (``zero_grad()`` before the gradient was read).
    """
    import weakref
    items = tensors.parameters() if hasattr(tensors, "parameters") else (
        [tensors] if isinstance(tensors, Tensor) else tensors)
    count = 0
    for t in items:
        require_tensor(t, "track_grads", "each tensor")
        if t.grad_fn is not None or id(t) in _grad_log and _grad_log[id(t)][0]() is t:
            continue
        _grad_log[id(t)] = [weakref.ref(t), 0, 0.0]
        t.register_post_accumulate_grad_hook(_log_grad)
        count += 1
    return count


def _log_grad(t):
    entry = _grad_log.get(id(t))
    if entry is not None and entry[0]() is t and t.grad is not None:
        entry[1] += 1
        entry[2] = float(np.sqrt(np.sum(host(t.grad._data, dtype=np.float64) ** 2)))


def _grad_state(g):
    if g is None:
        return "none"
    a = host(g._data, dtype=np.float64)
    if a.size and not np.isfinite(a).all():
        return "nonfinite"
    return "zero" if not a.any() else "nonzero"


def _norm(arr):
    return float(np.sqrt(np.sum(host(arr, dtype=np.float64) ** 2)))


def _in_optimizer(t, optimizer):
    groups = getattr(optimizer, "param_groups", None)
    if groups is None:
        raise DebugInputError(f"explain_grad: optimizer must be a gradlab.optim optimizer (with param_groups), "
                              f"got {type(optimizer).__name__}")
    return any(p is t for g in groups for p in g["params"])


def _resolve_loss(loss):
    """``(loss tensor, recording)``; a callable is re-run under ``watch()``."""
    if loss is None:
        return None, None
    if isinstance(loss, Tensor):
        return loss, last_recording_for(loss)
    if callable(loss):
        with watch(publish=False) as rec:
            out = loss()
        if not isinstance(out, Tensor):
            raise DebugInputError(f"explain_grad: the loss function returned {type(out).__name__}, not a Tensor")
        return out, rec
    raise DebugInputError(f"explain_grad: loss must be a Tensor or a function returning one, got {type(loss).__name__}")


def _fresh_grad(loss, t):
    """The gradient the current graph gives ``t`` (without touching ``.grad``), or None if unknowable."""
    if not loss.requires_grad:
        return None
    try:
        g = None if loss.numel() == 1 else Tensor._make(np.ones_like(loss._data))
        (res,) = _engine.grad(loss, [t], grad_outputs=g, retain_graph=True, allow_unused=True)
    except GradlabError:
        return None
    return res


def finisher(name, opt_missing, ev, checked):
    """``done(cause, verdict, causes=None)``: the :class:`Explanation` for a verdict, with the optimizer note
    (and the ``not_in_optimizer`` cause) added where ``name`` is missing from the optimizer."""
    def done(cause, verdict, causes=None):
        cs = list(causes or [cause])
        if opt_missing and "not_in_optimizer" not in cs:
            cs.append("not_in_optimizer")
            verdict += f" Also, {name} is not in the optimizer's param groups, so step() would never update it."
        return Explanation(name, cause, verdict, ev, checked, cs)
    return done


def not_in_optimizer(name, ev, checked):
    """The verdict for a tensor that has a gradient but is not in the optimizer's param groups."""
    return Explanation(name, "not_in_optimizer",
                       f"{name} has a gradient, but it is not in the optimizer's param groups, so optimizer.step() "
                       "never updates it. Build the optimizer after the model is complete, or add it: "
                       "optimizer.add_param_group({'params': [t]}).", ev, checked)


def no_requires_grad(done, name, dtype, floating, frozen, no_grad="no_grad()"):
    """The ``requires_grad_false`` verdict: a dtype that is not floating, a frozen parameter, or neither."""
    if not floating:
        why = f"its dtype {dtype} is not floating, and only floating tensors carry gradients"
    elif frozen:
        why = "it is a frozen parameter (requires_grad_(False) was called on it)"
    else:
        why = (f"it was created without requires_grad=True (or computed under {no_grad} / from tensors that "
               "do not require grad)")
    return done("requires_grad_false",
                f"{name} does not require grad: {why}. Backward never computes a gradient for it; "
                "call t.requires_grad_() on the leaf (before computing the loss).")


def non_leaf(done, ev, name, made_by, grad_call="gradlab.grad(loss, t)"):
    """The ``non_leaf_no_retain_grad`` verdict for a tensor ``made_by`` an op, without ``retain_grad()``."""
    ev.append(f"{name} was made by {made_by}, so it is not a leaf; backward fills .grad only on leaves")
    return done("non_leaf_no_retain_grad",
                f"{name} is not a leaf (it is the output of {made_by}) and retain_grad() was not called, "
                "so backward passed its gradient on without storing it. Call t.retain_grad() before backward(), "
                f"or read it with t.register_hook(...) or {grad_call}.")


def explain_grad(t, loss=None, optimizer=None) -> Explanation:
    """Say why ``t.grad`` is None or all zero: a verdict first, then the evidence.

    ``t`` (and ``loss``, ``optimizer``) may be PyTorch's: see ``gradlab.debug.torch_debug``.
    """
    from ..viz import torch_graph as _tg
    if _tg.is_torch_tensor(t):
        import sys

        from .torch_debug import explain_grad_torch
        names = _tg.TorchCallerNames(sys._getframe(1))
        nm = (names.param.get(id(t)) or [None])[0] or names.tensor.get(id(t))
        return explain_grad_torch(t, loss=loss, optimizer=optimizer, name=nm)
    t = require_tensor(t, "explain_grad")
    name = f"'{t.name}'" if t.name else "t"
    state = _grad_state(t.grad)
    kind = "a leaf" if t.grad_fn is None else f"an intermediate result of {t.grad_fn.name}"
    grad_desc = {"none": "None", "zero": "all zeros", "nonfinite": "contains NaN/Inf"}.get(state)
    if state == "nonzero":
        grad_desc = f"nonzero (norm {_norm(t.grad._data):.4g})"
    ev = [f"{name}: shape {fmt_shape(t.shape)}, dtype {_dt.dtype_name(t.dtype)}, {kind}, "
          f"requires_grad={t.requires_grad}; .grad is {grad_desc}"]
    checked = ["requires_grad", "leaf / retain_grad()"]
    opt_missing = False
    if optimizer is not None:
        opt_missing = not _in_optimizer(t, optimizer)
        checked.append("the optimizer's param groups")
        n = sum(len(g["params"]) for g in optimizer.param_groups)
        ev.append(f"the optimizer holds {n} tensors in {len(optimizer.param_groups)} param group(s); {name} is "
                  + ("NOT one of them" if opt_missing else "one of them"))

    done = finisher(name, opt_missing, ev, checked)

    if not t.requires_grad:
        return no_requires_grad(done, name, _dt.dtype_name(t.dtype), _dt.is_floating(t.dtype),
                                t.grad_fn is None and getattr(t, "_is_param", False))
    if t.grad_fn is not None and not t.retains_grad:
        return non_leaf(done, ev, name, t.grad_fn.name)
    note = ""
    if (state == "nonzero" or state == "nonfinite") and loss is not None:
        loss_t, rec = _resolve_loss(loss)
        nodes = walk(loss_t)
        if not _on_graph(t, nodes):
            ev.append(f"{name}.grad holds a gradient from an earlier backward, but this loss does not reach {name}")
            checked.append("whether t is in the loss's graph")
            return explain_missing(t, name, loss_t, nodes, rec, ev, checked, done)
        partly = [f for f in measure(path_nodes(nodes, t)) if f.dead_fraction]
        checked.append("relu / sigmoid / tanh outputs saved on the path from the loss to t")
        for f in partly:
            ev.append(f.describe())
        if partly:
            worst = max(partly, key=lambda f: f.dead_fraction)
            note = (f" Note: {worst.dead_fraction:.0%} of the units of {worst.where()} are dead for every example, "
                    "so the parts of the gradient behind them are zero.")
    if state == "nonzero" or state == "nonfinite":
        if opt_missing:
            return not_in_optimizer(name, ev, checked)
        verdict = (f"{name}.grad is set and nonzero; nothing is wrong with it.{note}" if state == "nonzero" else
                   f"{name}.grad is set but contains NaN/Inf; use gradlab.debug.find_nonfinite to find the op.")
        return Explanation(name, "ok" if state == "nonzero" else "nonfinite", verdict, ev, checked)

    loss_t, rec = _resolve_loss(loss)
    log = _grad_log.get(id(t))
    logged = log is not None and log[0]() is t and log[1] > 0
    if logged:
        ev.append(f"track_grads saw backward accumulate into {name} {log[1]} time(s), last gradient norm {log[2]:.4g}")
    if optimizer is not None and not opt_missing and state == "none":
        st = getattr(optimizer, "state", {}).get(t) if isinstance(getattr(optimizer, "state", None), dict) else None
        if st:
            ev.append(f"the optimizer keeps state for {name} ({', '.join(sorted(map(str, st)))}): earlier steps "
                      "did get a gradient for it")
            logged = logged or loss is None
            if log is None or log[0]() is not t:
                log = [None, 1, 1.0]
    if loss_t is None:
        checked.append("gradient history (track_grads)")
        if logged and log[2] > 0:
            return done("cleared_by_zero_grad", _cleared_verdict(name, state))
        return done("need_loss",
                    f"{name} requires grad and is a leaf, but its .grad is {grad_desc}. Either backward() has not "
                    "reached it yet, or the path to the loss is cut; pass loss= (the tensor, or a function computing "
                    "it) so explain_grad can check the path.")
    return _explain_with_loss(t, name, state, loss_t, rec, logged and log[2] > 0, ev, checked, done)


def _users(t, nodes):
    """``op (module)`` for each node that takes ``t`` as an input."""
    target = t.grad_fn if t.grad_fn is not None else next(
        (n for n in nodes if is_accumulate(n) and n.variable is t), None)
    out = []
    for n in nodes:
        if any(e is not None and e[0] is target for e in getattr(n, "next_functions", ()) or ()):
            mod = node_module(n)
            out.append(f"{n.name}" + (f" in module {mod}" if mod else ""))
    return sorted(set(out))


def _on_graph(t, nodes):
    if t.grad_fn is not None:
        return t.grad_fn in set(nodes)
    return any(v is t for v in graph_leaves(nodes))


def _cleared_verdict(name, state):
    how = ("set to None (zero_grad(set_to_none=True), the default)" if state == "none"
           else "zero-filled (zero_grad(set_to_none=False))")
    return (f"backward did compute a nonzero gradient for {name}, but it was {how} before being read. Read or "
            "plot gradients between loss.backward() and optimizer.zero_grad(); zero_grad belongs at the start "
            "of the next step.")


def _explain_with_loss(t, name, state, loss, rec, logged_nonzero, ev, checked, done):
    nodes = walk(loss)
    in_graph = _on_graph(t, nodes)
    ev.append(f"the loss ({label(loss)}) has a graph of {len(nodes)} node(s) with {len(graph_leaves(nodes))} leaf "
              f"tensor(s); {name} is {'in' if in_graph else 'NOT in'} it")
    checked.append("whether t is in the loss's graph")
    if not loss.requires_grad:
        ev.append("the loss itself does not require grad (no grad_fn): it was computed with no graph at all")
    if not in_graph:
        return explain_missing(t, name, loss, nodes, rec, ev, checked, done)
    users = _users(t, nodes)
    if users:
        ev.append(f"{name} is used by " + ", ".join(users))

    # t is on the graph: did a gradient arrive, and is it zero?
    released = any(getattr(n, "_released", False) for n in nodes)
    fresh = None if released else _fresh_grad(loss, t)
    checked.append("the gradient the graph gives t now (gradlab.grad, .grad untouched)")
    if released:
        ev.append("the graph's saved tensors were freed: backward() has already run through it")
    if fresh is not None:
        ev.append(f"recomputing from the graph gives {name} a gradient of norm {_norm(fresh._data):.4g}")
    fresh_nonzero = fresh is not None and bool(host(fresh._data).any())
    if logged_nonzero or (fresh_nonzero and (released or state == "zero")):
        return done("cleared_by_zero_grad", _cleared_verdict(name, state))
    if fresh_nonzero and state == "none":
        return done("backward_not_run",
                    f"{name} is on the loss's graph and would get a nonzero gradient, but its .grad is None: "
                    "backward() has not been called on this loss yet (or the gradient was cleared by zero_grad). "
                    "Call loss.backward() and read .grad before zero_grad().")
    if state == "none" and released and fresh is None:
        return done("cleared_by_zero_grad",
                    f"{name} is on the loss's graph and backward() has run through that graph (its saved tensors "
                    f"are freed), yet {name}.grad is None: it was most likely cleared by zero_grad() (or set to "
                    "None) before being read. Read gradients between backward() and zero_grad().")
    if state == "none" and fresh is None:
        return done("backward_not_run",
                    f"{name} is on the loss's graph but its .grad is None: call loss.backward() first.")
    # the gradient is (or would be) exactly zero: look for dead ReLUs and saturated sigmoid/tanh on the path
    return _explain_zero(t, name, loss, nodes, released, ev, checked, done)


def _explain_zero(t, name, loss, nodes, released, ev, checked, done):
    checked.append("relu / sigmoid / tanh outputs saved on the path from the loss to t")
    path = path_nodes(nodes, t)
    found = measure(path)
    for f in found:
        ev.append(f.describe())
    worst = max(found, key=lambda f: -1.0 if f.dead_fraction is None else f.dead_fraction, default=None)
    if worst is not None and worst.dead_fraction is not None and worst.dead_fraction > 0:
        return done(worst.cause, worst.verdict(name), [f.cause for f in found if f.dead_fraction])
    names = sorted({n.name for n in path if n.name in ("relu", "sigmoid", "tanh")})
    if released and names:
        cause = {"relu": "dead_relu", "sigmoid": "saturated_sigmoid", "tanh": "saturated_tanh"}[names[0]]
        return done(cause,
                    f"{name}.grad is zero and the path from the loss passes through {', '.join(names)}; most likely "
                    "dead ReLUs or saturated units, but backward already freed their saved outputs so the fraction "
                    "cannot be measured. Run explain_grad(t, loss=lambda: <forward>) to measure it.")
    return done("zero_other",
                f"{name} is on the loss's graph, but the loss does not change with it here: the gradient is exactly "
                "zero and no dead ReLU or saturated sigmoid/tanh explains it (a multiplication by zero, a "
                "clamp/max that picked other values, or a loss that is constant in t).")
