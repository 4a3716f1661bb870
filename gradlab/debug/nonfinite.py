"""``gradlab.debug.find_nonfinite``: which op made the first NaN or Inf, and why?

A NaN spreads: once one op makes it, every op after it (and all of backward)
carries it along, so the loss only tells you *that* something broke. The op
that broke is the first one whose inputs were all finite and whose output was
not. This tool runs the forward pass with an op observer
(``gradlab.autograd.function.op_observers``) and the backward pass with an
engine observer (``gradlab.autograd.engine.backward_observers``), stops
looking at the first such op, and names the user's line, the input ranges and
the usual suspect: log of 0, exp overflowing (float16 overflows at exp(11.1)),
division by zero, or a softmax written without subtracting the max.
"""
from __future__ import annotations

import numpy as np

from ..autograd import engine as _engine, function as _fn
from ..backend import dtypes as _dt
from ..errors import GradlabError, fmt_shape
from ._common import (
    DebugInputError,
    Tensor,
    current_module,
    graph_leaves,
    host,
    label,
    node_module,
    nonfinite_count,
    user_site,
    value_range,
    walk,
)
from .provenance import tensor_args


class NonfiniteReport:
    """The first non-finite value: ``phase`` ('forward'/'backward'), ``op``, ``site``, ``inputs``, ``likely_cause``."""

    def __init__(self, found, verdict, phase=None, op=None, site=None, inputs=(), output=None,
                 likely_cause=None, module=None, ops_checked=0, nodes_checked=0):
        self.found, self.verdict, self.phase, self.op, self.site = found, verdict, phase, op, site
        self.inputs, self.output, self.likely_cause, self.module = list(inputs), output, likely_cause, module
        self.ops_checked, self.nodes_checked = ops_checked, nodes_checked

    def __bool__(self):
        return self.found

    def lines(self):
        out = [f"find_nonfinite: {self.verdict}"]
        if self.found:
            if self.likely_cause:
                out.append(f"likely cause: {self.likely_cause}")
            if self.module:
                out.append(f"module: {self.module}")
            out.append("inputs:")
            out += [f"  {d}: {r}" for d, r in self.inputs]
            if self.output is not None:
                out.append(f"output: {self.output}")
        out.append(f"checked {self.ops_checked} forward op(s) and {self.nodes_checked} backward node(s)")
        return out

    def __str__(self):
        return "\n".join(self.lines())

    __repr__ = __str__

    def _repr_markdown_(self):
        head, *rest = self.lines()
        return f"**{head}**\n\n" + "\n".join(f"    {r}" for r in rest)


_EXP_LIMIT = {"float16": 11.09, "bfloat16": 88.72, "float32": 88.72, "float64": 709.78}


def _arr(x):
    return host(x._data if isinstance(x, Tensor) else x)


def _has_zero(a):
    return a.size > 0 and a.dtype.kind in "fiub" and bool(np.any(host(a, dtype=np.float64) == 0))


def forward_cause(name, args, out_arrays, later=()):
    """The usual reason ``name`` turns finite inputs into NaN/Inf (a guess, stated as one)."""
    ts = [a for a in args if isinstance(a, Tensor)]
    x = _arr(ts[0]).astype(np.float64) if ts else None
    dt = _dt.dtype_name(ts[0].dtype) if ts else "float32"
    if name == "log" and x is not None:
        if (x == 0).any():
            return "log of 0 (= -inf): clamp the input (x.clamp(min=1e-8)) or use log_softmax / a log-space formula"
        if (x < 0).any():
            return "log of a negative number (= nan): the input should be positive here"
    if name == "exp" and x is not None:
        lim = _EXP_LIMIT.get(dt, 88.72)
        if x.max(initial=-np.inf) > lim:
            if any(r == "div" for r in later):
                return (f"softmax without max-subtraction: exp overflowed in {dt} (exp(x) is inf for x > {lim}), "
                        "then inf / inf = nan in the division; compute exp(x - x.max(dim, keepdim=True)) instead")
            what = "in float16 (its largest value is 65504, so exp(x) overflows for x > 11.09)" if dt == "float16" \
                else f"in {dt} (exp(x) is inf for x > {lim})"
            return f"exp overflow {what}: subtract the max first, or compute this part in float32"
    if name == "div" and len(args) > 1:
        num, den = _arr(args[0]), _arr(args[1])
        if nonfinite_count(num):
            return ("inf / inf = nan: the numerator already overflowed (typically softmax without max-subtraction: "
                    "exp(x) / exp(x).sum(); subtract x.max(dim, keepdim=True) before exp)")
        if _has_zero(den):
            return "division by zero (x / 0 = inf, 0 / 0 = nan): add a small epsilon to the denominator or mask it"
    if name in ("sqrt", "pow") and x is not None and (x < 0).any():
        return f"{name} of a negative number (= nan)"
    if name == "pow" and x is not None and (x == 0).any():
        return "0 raised to a negative power (= inf)"
    if any(nonfinite_count(_arr(t)) for t in ts):
        return "the input data already contains NaN/Inf (it did not come from a gradlab op: check the data/labels)"
    finfo = np.finfo(np.float16 if dt == "float16" else np.float64 if dt == "float64" else np.float32)
    return (f"overflow: the result exceeds the largest {dt} value ({float(finfo.max):.4g}); scale the inputs down"
            + (" or compute in float32" if dt == "float16" else ""))


def backward_cause(node, grads_in):
    name = node.name
    saved = [s for s in getattr(node, "saved", ()) if s._data is not None]
    vals = [host(s._data, dtype=np.float64) for s in saved]
    if name == "log" and vals and (vals[0] == 0).any():
        return "log's gradient dY / X is infinite where X == 0: keep log's input away from 0 (clamp(min=1e-8))"
    if name == "sqrt" and vals and (vals[0] == 0).any():
        return "sqrt's gradient dY / (2 sqrt(X)) is infinite at X == 0: use sqrt(x + eps)"
    if name == "div" and len(vals) > 1 and (vals[1] == 0).any():
        return "division by zero in div's gradient (dY / B and A / B^2 with B == 0)"
    if name == "pow" and vals and (vals[0] == 0).any():
        return "pow's gradient B * A^(B-1) is infinite at A == 0 when B < 1 (e.g. x ** 0.5 at 0)"
    return "the gradient overflowed: its values exceed the dtype's range (very large activations or loss scale)"


class _Forward:
    """Op observer: note each node's site; stop at the first op with non-finite output."""

    def __init__(self):
        self.first = None
        self.count = 0
        self.sites = {}
        self.later = []

    def before(self, cls, args):
        return (user_site(2), current_module())

    def after(self, token, cls, args, outputs, node):
        self.count += 1
        if node is not None:
            self.sites[node] = token[0]
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        if self.first is not None:
            self.later.append(cls.name)
            return
        bad = [o for o in outs if isinstance(o, Tensor) and nonfinite_count(o._data)]
        if bad:
            ins = [(f"input {i}{_nm(t)} {fmt_shape(t.shape)} {_dt.dtype_name(t.dtype)}", value_range(t._data))
                   for i, t in enumerate(tensor_args(args))]
            module = (node_module(node) if node is not None else None) or token[1]
            self.first = (cls.name, args, [o._data for o in outs if isinstance(o, Tensor)], token[0], ins,
                          value_range(bad[0]._data), module)


class _Backward:
    def __init__(self, sites):
        self.sites, self.first, self.count = sites, None, 0

    def node_start(self, node, grads):
        pass

    def node_end(self, node, grads_in, grads_out):
        self.count += 1
        if self.first is not None or not grads_out:
            return
        bad = [g for g in grads_out if isinstance(g, Tensor) and nonfinite_count(g._data)]
        if not bad or any(isinstance(g, Tensor) and nonfinite_count(g._data) for g in grads_in or ()):
            return
        ins = [(f"incoming gradient {i} {fmt_shape(g.shape)}", value_range(g._data))
               for i, g in enumerate(grads_in or ()) if isinstance(g, Tensor)]
        ins += [(f"saved {s.name or ('output' if s.output_nr is not None else 'input')} {fmt_shape(s.shape)}",
                 value_range(s._data)) for s in getattr(node, "saved", ()) if s._data is not None]
        site = self.sites.get(node) or _meta_site(node)
        self.first = (node, site, ins, value_range(bad[0]._data), backward_cause(node, grads_in))


def _nm(t):
    return f" '{t.name}'" if t.name else ""


def _meta_site(node):
    meta = getattr(node, "meta", None)
    if isinstance(meta, dict):
        info = meta.get("creation")  # written by gradlab.autograd.detect_anomaly()
        if isinstance(info, dict) and info.get("file"):
            from ._common import Site
            return Site(info["file"], info["line"], info.get("function", "?"))
        for k in ("site", "creation_site"):
            if meta.get(k):
                v = meta[k]
                return v[-1] if isinstance(v, (list, tuple)) else v
    return None


def _static_cause(node):
    """A known culprit visible in a node's saved inputs (log of 0, x / 0...), or None."""
    ins = [host(s._data) for s in node.saved if s._data is not None and s.output_nr is None]
    if not ins:
        return None
    args = [Tensor._make(a) for a in ins]
    x = ins[0].astype("float64") if ins[0].dtype.kind in "fiu" else None
    if node.name == "log" and x is not None and (x <= 0).any():
        return forward_cause("log", args, ())
    if node.name == "div" and len(ins) > 1 and _has_zero(ins[1]):
        return forward_cause("div", args, ())
    if node.name in ("sqrt", "pow") and x is not None and (x < 0).any():
        return forward_cause(node.name, args, ())
    return None


def _from_graph(out, note):
    """The loss is already non-finite: find the first node (in creation order) that shows why."""
    nodes = sorted((n for n in walk(out) if n.saved), key=lambda n: n.seq)
    for n in nodes:
        bad = [s for s in n.saved if s._data is not None and nonfinite_count(s._data)]
        cause = _static_cause(n) if not bad else None
        if bad or cause:
            s = bad[0] if bad else n.saved[0]
            if bad and s.output_nr is None:
                cause = f"{n.name} received a non-finite input: the op before it made it (not saved, so not shown)"
            elif bad and n.name == "exp":  # its input is not saved; an inf output means it was above the limit
                big = np.array([_EXP_LIMIT.get(_dt.dtype_name(s.dtype), 88.72) + 1], dtype=s.dtype)
                cause = forward_cause("exp", [Tensor._make(big)], ())
            elif bad:
                cause = forward_cause(n.name, [], ())
            return NonfiniteReport(True, f"{label(out)} is non-finite; in its graph the first op that shows why is "
                                         f"{n.name} (#{n.seq}); {note}", "forward", n.name, _meta_site(n),
                                   [(f"saved {'output' if x.output_nr is not None else 'input'} "
                                     f"{fmt_shape(x.shape)}", value_range(x._data)) for x in n.saved
                                    if x._data is not None], None, cause, node_module(n), 0, len(nodes))
    return NonfiniteReport(True, f"{label(out)} is non-finite, but no saved tensor in its graph shows where; "
                                 f"{note}", "forward", ops_checked=0)


def find_nonfinite(target, *args, backward=True, loss_fn=None, **kwargs) -> NonfiniteReport:
    """Find the first op (forward, then backward) that turned finite values into NaN/Inf.

    ``target`` is a function or model called as ``target(*args, **kwargs)`` (its
    forward is watched op by op), or an already computed loss tensor (then only
    backward can be watched). ``backward=False`` skips the backward check. The
    backward check uses ``gradlab.grad``, so no ``.grad`` is changed. ``loss_fn(output)``
    turns a model's output into the loss (otherwise backward starts from the output's sum).
    """
    fwd = _Forward()
    if isinstance(target, Tensor):
        if args or kwargs:
            raise DebugInputError("find_nonfinite: extra arguments only make sense with a function or model")
        out = target
        note = "forward not replayed (a loss tensor was given; pass the model or a function to watch forward too)"
    elif callable(target):
        _fn.op_observers.append(fwd)
        try:
            out = target(*args, **kwargs)
            if loss_fn is not None and fwd.first is None:
                out = loss_fn(out)
        finally:
            _fn.op_observers.remove(fwd)
        note = None
    else:
        raise DebugInputError(
            f"find_nonfinite: expected a model, a function computing the loss, or a loss Tensor; "
            f"got {type(target).__name__}")
    if fwd.first is not None:
        name, a, outs, site, ins, orange, module = fwd.first
        cause = forward_cause(name, a, outs, fwd.later)
        where = f" at {site}" if site else ""
        return NonfiniteReport(True, f"the first non-finite value was made in the forward pass by {name}{where}",
                               "forward", name, site, ins, orange, cause, module, fwd.count, 0)
    if not isinstance(out, Tensor):
        raise DebugInputError(f"find_nonfinite: the function returned {type(out).__name__}; return the loss Tensor")
    if isinstance(target, Tensor) and nonfinite_count(out._data):
        return _from_graph(out, note)
    if not backward:
        return NonfiniteReport(False, f"no NaN/Inf in the forward pass ({fwd.count} ops)", ops_checked=fwd.count)
    if not out.requires_grad:
        extra = f"; {note}" if note else ""
        return NonfiniteReport(False, f"no NaN/Inf in the forward pass ({fwd.count} ops); the result has no graph "
                                      f"(nothing requires grad), so there is no backward to check{extra}",
                               ops_checked=fwd.count)
    root = out if out.numel() == 1 else out.sum()
    leaves = graph_leaves(walk(root))
    bwd = _Backward(fwd.sites)
    _engine.backward_observers.insert(0, bwd)  # before detect_anomaly's watch, which raises at the NaN
    try:
        if leaves:
            _engine.grad(root, leaves, retain_graph=isinstance(target, Tensor), allow_unused=True)
    except GradlabError:
        if bwd.first is None:
            raise
    finally:
        _engine.backward_observers.remove(bwd)
    if bwd.first is not None:
        node, site, ins, orange, cause = bwd.first
        where = f" (the op created at {site})" if site else ""
        return NonfiniteReport(True, f"the first non-finite gradient was made in the backward pass by "
                                     f"{node.name}'s backward{where}", "backward", node.name, site, ins, orange,
                               cause, node_module(node), fwd.count, bwd.count)
    summed = "" if out.numel() == 1 else " (of the output's sum)"
    return NonfiniteReport(False, f"no NaN/Inf in the forward pass ({fwd.count} ops) or the backward "
                                  f"pass{summed} ({bwd.count} nodes)", ops_checked=fwd.count, nodes_checked=bwd.count)
