"""``explain_grad`` and ``memory_report`` for PyTorch tensors and modules.

The same verdicts as for gradlab's own graphs where a PyTorch graph shows the
cause: ``requires_grad`` off, a non-leaf without ``retain_grad()``, a tensor the
loss's graph does not reach (a ``detach()`` copy found among its leaves or saved
tensors), not in the optimizer, dead ReLUs / saturated sigmoid or tanh measured
from the outputs the nodes saved, a gradient cleared before it was read. Where
a cause leaves no trace in PyTorch's graph (``torch.no_grad()`` records nothing;
there is no forward recording as ``gradlab.debug.watch`` keeps for gradlab), the
verdict says so. Nothing here imports torch until it is handed a torch object.
"""
from __future__ import annotations

import numpy as np

from ..backend.memory_limit import format_bytes
from ..viz import torch_graph as tg
from ._common import upstream


def _name(t, name=None):
    own = getattr(t, "name", None)
    n = name or (own if isinstance(own, str) and own else None)
    return f"'{n}'" if n else "t"


def _walk(loss):
    fn = loss.grad_fn
    if fn is None:
        return [], []
    return tg.collect(fn)


def _in_graph(t, ops, accs):
    if t.grad_fn is not None:
        return t.grad_fn in set(ops)
    return any(a.variable is t for a in accs)


def _path_ops(ops, accs, t):
    """The ops from which ``t``'s node can be reached (the paths loss -> t)."""
    target = t.grad_fn if t.grad_fn is not None else next((a for a in accs if a.variable is t), None)
    return upstream(ops, target, lambda n: [src for src, _ in n.next_functions if src is not None])


_ACT = {"ReluBackward0": ("dead_relu", "relu"), "SigmoidBackward0": ("saturated_sigmoid", "sigmoid"),
        "TanhBackward0": ("saturated_tanh", "tanh")}


def _measure(path):
    """``[(node, cause, zero fraction, dead fraction, units)]`` for relu/sigmoid/tanh on the path."""
    out = []
    for n in path:
        kind = _ACT.get(tg.node_name(n))
        if kind is None:
            continue
        saved, freed = tg.saved_or_freed(n)
        y = next((t for s, t in saved if s == "result"), None)
        if freed or y is None:
            out.append((n, kind[0], None, None, 0))
            continue
        a = tg.to_numpy(y).astype(np.float64)
        if kind[1] == "relu":
            zero = a <= 0
        elif kind[1] == "sigmoid":
            zero = (a * (1 - a)) == 0
        else:
            zero = (1 - a * a) == 0
        z = zero.reshape(zero.shape[0], -1) if zero.ndim >= 2 else zero.reshape(1, -1)
        dead = z.all(axis=0)
        out.append((n, kind[0], float(zero.mean()) if zero.size else 0.0,
                    float(dead.mean()) if dead.size else 0.0, int(dead.size)))
    return out


def _where(n):
    md = n.metadata
    mod = md.get("module") if isinstance(md, dict) else None
    return f"{tg.node_name(n)} #{n._sequence_nr()}" + (f" in {mod}" if mod else "")


def _grad_state(g):
    if g is None:
        return "none"
    a = tg.to_numpy(g)
    if a.size and not np.isfinite(a).all():
        return "nonfinite"
    return "zero" if not a.any() else "nonzero"


def _norm(g):
    return float(np.sqrt(np.sum(tg.to_numpy(g).astype(np.float64) ** 2)))


def explain_grad_torch(t, loss=None, optimizer=None, name=None):
    """``explain_grad`` for a ``torch.Tensor`` (see the module docstring)."""
    from .explain import DebugInputError, Explanation, finisher, no_requires_grad, non_leaf
    torch = tg._torch()
    nm = _name(t, name)
    g = tg.safe_grad(t)
    state = _grad_state(g)
    kind = "a leaf" if t.grad_fn is None else f"an intermediate result of {tg.node_name(t.grad_fn)}"
    desc = {"none": "None", "zero": "all zeros", "nonfinite": "contains NaN/Inf"}.get(state) or \
        f"nonzero (norm {_norm(g):.4g})"
    ev = [f"{nm}: a torch tensor of shape {tuple(t.shape)}, dtype {tg.dtype_name(t.dtype)}, {kind}, "
          f"requires_grad={t.requires_grad}; .grad is {desc}"]
    checked = ["requires_grad", "leaf / retain_grad()"]
    opt_missing = False
    if optimizer is not None:
        groups = getattr(optimizer, "param_groups", None)
        if groups is None:
            raise DebugInputError(f"explain_grad: optimizer must be an optimizer with param_groups, got "
                                  f"{type(optimizer).__name__}")
        opt_missing = not any(p is t for grp in groups for p in grp["params"])
        checked.append("the optimizer's param groups")
        ev.append(f"the optimizer holds {sum(len(grp['params']) for grp in groups)} tensors; {nm} is "
                  + ("NOT one of them" if opt_missing else "one of them"))

    done = finisher(nm, opt_missing, ev, checked)

    if not t.requires_grad:
        return no_requires_grad(done, nm, tg.dtype_name(t.dtype), t.is_floating_point() or t.is_complex(),
                                type(t).__name__ == "Parameter", no_grad="torch.no_grad()")
    if t.grad_fn is not None and not t.retains_grad:
        return non_leaf(done, ev, nm, tg.node_name(t.grad_fn), grad_call="torch.autograd.grad(loss, t)")
    if loss is None:
        if state in ("nonzero", "nonfinite"):
            return _ok(nm, state, opt_missing, ev, checked, Explanation)
        return done("need_loss",
                    f"{nm} requires grad and is a leaf, but its .grad is {desc}. Either backward() has not reached "
                    "it yet, or the path to the loss is cut; pass loss= so explain_grad can check the path.")
    if callable(loss) and not tg.is_torch_tensor(loss):
        loss = loss()
    if not tg.is_torch_tensor(loss):
        raise DebugInputError(f"explain_grad: loss must be a torch tensor (t is one), got {type(loss).__name__}")
    ops, accs = _walk(loss)
    on = _in_graph(t, ops, accs)
    ev.append(f"the loss (shape {tuple(loss.shape)}) has a PyTorch graph of {len(ops) + len(accs)} node(s) with "
              f"{len(accs)} leaf tensor(s); {nm} is {'in' if on else 'NOT in'} it")
    checked.append("whether t is in the loss's graph")
    if not on:
        return _missing(t, nm, loss, ops, accs, ev, checked, done)
    released = any(tg.is_released(n) for n in ops)
    path = _path_ops(ops, accs, t)
    found = _measure(path)
    checked.append("relu / sigmoid / tanh outputs saved on the path from the loss to t")
    for n, cause, zf, df, units in found:
        if df is None:
            ev.append(f"{_where(n)}: saved output freed by backward, cannot measure")
        else:
            what = "zero output" if cause == "dead_relu" else "saturated (derivative exactly 0)"
            ev.append(f"{_where(n)}: {zf:.0%} of entries have {what}; {df:.0%} of its {units} units are dead for "
                      "every example")
    if state in ("nonzero", "nonfinite"):
        return _ok(nm, state, opt_missing, ev, checked, Explanation)
    fresh = None
    if not released and loss.requires_grad:
        checked.append("the gradient the graph gives t now (torch.autograd.grad, .grad untouched)")
        gl = None if loss.numel() == 1 else torch.ones_like(loss)
        (fresh,) = torch.autograd.grad(loss, [t], grad_outputs=gl, retain_graph=True, allow_unused=True)
        if fresh is not None:
            ev.append(f"recomputing from the graph gives {nm} a gradient of norm {_norm(fresh):.4g}")
    else:
        ev.append("PyTorch freed this graph's saved tensors: backward() has already run through it")
    fresh_nonzero = fresh is not None and bool(tg.to_numpy(fresh).any())
    if fresh_nonzero and state == "none":
        return done("backward_not_run",
                    f"{nm} is on the loss's graph and would get a nonzero gradient, but its .grad is None: "
                    "backward() has not been called on this loss yet (or zero_grad() cleared it). Call "
                    "loss.backward() and read .grad before optimizer.zero_grad().")
    if fresh_nonzero and state == "zero":
        return done("cleared_by_zero_grad",
                    f"the graph gives {nm} a nonzero gradient, but its .grad is all zeros: it was zero-filled "
                    "(zero_grad(set_to_none=False)) before being read.")
    if state == "none" and released:
        return done("cleared_by_zero_grad",
                    f"{nm} is on the loss's graph and backward() has run through it (PyTorch freed the saved "
                    f"tensors), yet {nm}.grad is None: most likely optimizer.zero_grad() set it to None before it "
                    "was read. Read gradients between backward() and zero_grad().")
    dead = [f for f in found if f[3]]
    if dead:
        n, cause, zf, df, units = max(dead, key=lambda f: f[3])
        if cause == "dead_relu":
            v = (f"the gradient of {nm} is zero because of dead ReLUs: {df:.0%} of the units of {_where(n)} are "
                 "zero for every example, so no gradient passes them. Lower the learning rate, check the "
                 "initialisation and biases, or use leaky_relu / GELU.")
        else:
            v = (f"the gradient of {nm} is zero because {_where(n)} is saturated: {df:.0%} of its units have a "
                 "derivative of exactly 0 for every example. Normalise its inputs or use a smaller initialisation.")
        return done(cause, v, [f[1] for f in dead])
    names = sorted({tg.node_name(n) for n in path if tg.node_name(n) in _ACT})
    if released and names:
        return done(_ACT[names[0]][0],
                    f"{nm}.grad is zero and the path from the loss passes through {', '.join(names)}; most likely "
                    "dead ReLUs or saturated units, but PyTorch already freed their saved outputs so the fraction "
                    "cannot be measured. Call explain_grad before backward() to measure it.")
    return done("zero_other",
                f"{nm} is on the loss's graph, but the gradient is exactly zero and no dead ReLU or saturated "
                "sigmoid/tanh explains it (a multiplication by zero, a clamp/max that picked other values, or a loss "
                "that is constant in t).")


def _ok(nm, state, opt_missing, ev, checked, Explanation):
    if opt_missing:
        from .explain import not_in_optimizer
        return not_in_optimizer(nm, ev, checked)
    if state == "nonzero":
        return Explanation(nm, "ok", f"{nm}.grad is set and nonzero; nothing is wrong with it.", ev, checked)
    return Explanation(nm, "nonfinite", f"{nm}.grad is set but contains NaN/Inf; torch.autograd.detect_anomaly() "
                       "names the op that made it.", ev, checked)


def _missing(t, nm, loss, ops, accs, ev, checked, done):
    """``t`` is not on the loss's graph: look for a detach()ed copy among its leaves and saved tensors."""
    saved = []
    for n in ops:
        s, _freed = tg.saved_or_freed(n)
        saved += [(n, x) for _sn, x in s]
    checked.append(f"the graph's {len(accs)} leaves and {len(saved)} saved tensors for ones that share t's storage")
    try:
        ptr = t.untyped_storage().data_ptr()
    except Exception:  # noqa: BLE001
        ptr = None
    cands = [(a.variable, "a leaf") for a in accs] + [(x, f"a tensor saved by {tg.node_name(n)}") for n, x in saved]
    for x, where in cands:
        try:
            same = ptr is not None and x.untyped_storage().data_ptr() == ptr and x is not t
        except Exception:  # noqa: BLE001
            same = False
        if same:
            ev.append(f"{where} shares the storage of {nm} but has no graph back to it: a .detach() (or .data) of it")
            return done("detached", f"the path from {nm} to the loss is cut by detach(): detach() makes a new tensor "
                                    "with no history, so gradients stop there. Use the tensor itself.")
    if not loss.requires_grad:
        return done("path_cut",
                    f"the loss has no graph at all (no grad_fn), although {nm} requires grad: it was computed under "
                    f"torch.no_grad(), or from detached tensors, or {nm} was not used. PyTorch's graph keeps no "
                    "trace of a no_grad() block, so which one cannot be seen from it.")
    return done("not_used",
                f"{nm} is not on the loss's graph, and no leaf or saved tensor of that graph shares its storage: the "
                f"loss does not use it, or the path was cut by torch.no_grad(), an integer cast or .item()/.numpy(), "
                "none of which leaves a trace in a PyTorch graph (gradlab.debug.watch can only watch gradlab's own "
                "ops).")


# ------------------------------------------------------------------ memory_report
def memory_report_torch(model, loss=None, optimizer=None, top=10):
    """``memory_report`` for a ``torch.nn.Module`` (or dict / list of torch tensors)."""
    from ._common import DebugInputError
    from .memory import MemoryReport
    if tg.is_torch_module(model):
        params = list(model.named_parameters())
    elif isinstance(model, dict):
        params = list(model.items())
    elif tg.is_torch_tensor(model):
        params = [("tensor", model)]
    else:
        params = [(f"param{i}", p) for i, p in enumerate(model)]
    rep = MemoryReport()
    owner, param_keys = rep._parameters(params, tg.nbytes, lambda p: p.untyped_storage().data_ptr())
    if optimizer is not None:
        rep._optimizer(optimizer, owner, _state_bytes, "an optimizer")
    if loss is not None:
        if not tg.is_torch_tensor(loss):
            raise DebugInputError(f"memory_report: loss must be a torch tensor here, got {type(loss).__name__}")
        _activations(rep, loss, param_keys, top)
    return rep


def _state_bytes(st):
    return sum(tg.nbytes(v) for v in (st.values() if isinstance(st, dict) else [st]) if tg.is_torch_tensor(v))


def _activations(rep, loss, param_keys, top):
    ops, _accs = _walk(loss)
    if not rep._start_activations(ops, no_grad="torch.no_grad()"):
        return
    counted, entries = set(), []
    shared = freed = 0
    for n in ops:
        saved, was_freed = tg.saved_or_freed(n)
        freed += was_freed
        for sn, t in saved:
            ptr = t.untyped_storage().data_ptr()
            if ptr in param_keys:
                shared += 1
                continue
            key = tg.storage_key(t)
            if key in counted:
                continue
            counted.add(key)
            nb = tg.nbytes(t)
            md = n.metadata
            mod = md.get("module") if isinstance(md, dict) else None
            where = mod or "(outside modules)"
            rep.activations += nb
            rep.counts["saved"] += 1
            rep.per_module[where] = rep.per_module.get(where, 0) + nb
            rep._add(where, "activations", nb)
            entries.append({"op": tg.node_name(n), "module": mod, "shape": tuple(t.shape),
                            "dtype": tg.dtype_name(t.dtype), "bytes": nb, "name": sn})
    entries.sort(key=lambda e: -e["bytes"])
    rep.top_saved = entries[:top]
    if freed:
        rep.notes.append("backward() already freed the saved tensors of this graph; call memory_report between the "
                         "forward pass and backward() to see them")
    if shared:
        rep.notes.append(f"{shared} saved tensor(s) are parameters themselves: counted under parameters, not again "
                         "as activations")
    if not any(e["module"] for e in entries) and entries:
        rep.notes.append("activations are not split by module: run the forward inside "
                         "gradlab.viz.track_modules(model) to tag PyTorch's nodes with their module")
    rep.notes.append(f"read from PyTorch's graph ({len(ops)} nodes, their _saved_* tensors); "
                     f"{format_bytes(rep.activations)} saved for backward")
