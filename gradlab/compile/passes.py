"""Graph passes: each takes a graph, returns a new one, and says what it changed.

* :func:`fold_constants`: an op whose inputs are all constants is computed
  once, now, and replaced by its result;
* :func:`eliminate_common_subexpressions`: the same op on the same inputs
  twice is computed once;
* :func:`eliminate_dead_code`: ops whose results nobody uses are dropped;
* :func:`partition`: cuts a joint forward+backward trace into a forward graph
  (which also returns what the backward needs) and a backward graph.
  Cheap elementwise values are *recomputed* in the backward instead of saved:
  the backward's fused kernel re-derives them from the inputs, so the forward
  keeps far less memory alive between the two passes (what PyTorch's
  min-cut partitioner does for pointwise ops). Results of expensive ops
  (``tanh``, ``exp``...: the caller's ``is_recomputable`` decides) are saved.

Fusion lives in ``fuse.py``. Every pass appends plain sentences to a report
list, shown by ``compiled.explain()``.
"""
from __future__ import annotations

from ..backend.memory_limit import format_bytes
from .ir import Graph, Node, Value, rename_arg, resolve_raw, show_arg
from .runtime import run_node

#: ops that must run every time (random numbers): never folded or merged
IMPURE_WORDS = ("dropout", "rand", "normal", "uniform", "bernoulli", "multinomial")


def is_impure(n: Node) -> bool:
    return any(w in n.op.lower() for w in IMPURE_WORDS)


def substitute(graph: Graph, mapping: dict):
    """Replace values by others in every node argument and graph output."""
    if not mapping:
        return
    for n in graph.nodes:
        n.args = [rename_arg(a, mapping) for a in n.args]
    graph.outputs = [mapping.get(v, v) if v is not None else None for v in graph.outputs]


def fold_constants(graph: Graph, report: list, max_elements=1 << 20) -> Graph:
    """Compute now every op whose tensor inputs are all constants."""
    g = graph.copy()
    keep, mapping, folded = [], {}, 0
    for n in g.nodes:
        n.args = [rename_arg(a, mapping) for a in n.args]
        ins = n.inputs
        if (ins and all(a.kind == "const" for a in ins) and not n.hidden and not is_impure(n)
                and n.group is None and all(v is not None and v.size <= max_elements for v in n.outputs)):
            consts = {v: v._data for v in ins}
            outs, _ = run_node(n, [a._data if isinstance(a, Value) else resolve_raw(a, consts) for a in n.args])
            news = []
            for v, o in zip(n.outputs, outs):
                c = g.new_value(v.shape, v.dtype, "const", data=o, prefix="c")
                g.consts.append(c)
                mapping[v] = c
                news.append(c)
            report.append(f"constant folding: {_lhs(n)} = {_call(n)} -> computed once: "
                          + ", ".join(f"%{c.name} = {_const_value(c)}" for c in news))
            folded += 1
            continue
        keep.append(n)
    g.nodes = keep
    g.outputs = [mapping.get(v, v) if v is not None else None for v in g.outputs]
    if not folded:
        report.append("constant folding: nothing to fold (no op has only constant inputs)")
    return g


def _cse_key(n: Node):
    def k(a):
        if isinstance(a, Value):
            return ("v", id(a))
        try:
            hash(a)
            return ("l", type(a).__name__, a)
        except TypeError:
            return ("id", id(a))
    return (n.cls or n.fn, tuple(k(a) for a in n.args), tuple((key, k(v)) for key, v in sorted(n.kwargs.items())),
            tuple(h[1] for h in n.hidden))


def eliminate_common_subexpressions(graph: Graph, report: list) -> Graph:
    """Compute each (op, inputs) pair once; later copies reuse the first result."""
    g = graph.copy()
    seen, mapping, keep, removed = {}, {}, [], 0
    for n in g.nodes:
        n.args = [rename_arg(a, mapping) for a in n.args]
        if is_impure(n) or n.group is not None:
            keep.append(n)
            continue
        key = _cse_key(n)
        first = seen.get(key)
        if first is not None:
            for old, new in zip(n.all_outputs, first.all_outputs):
                mapping[old] = new
            report.append(f"common subexpressions: {_lhs(n)} = {_call(n)} is the same as {_lhs(first)}; "
                          "computed once")
            removed += 1
            continue
        seen[key] = n
        keep.append(n)
    g.nodes = keep
    g.outputs = [mapping.get(v, v) if v is not None else None for v in g.outputs]
    if not removed:
        report.append("common subexpressions: none found")
    return g


def eliminate_dead_code(graph: Graph, report: list) -> Graph:
    """Drop ops whose results reach no output (and constants nothing reads)."""
    g = graph.copy()
    live = set(v for v in g.outputs if v is not None)
    keep = []
    dropped = []
    for n in reversed(g.nodes):
        if any(v in live for v in n.all_outputs) or is_impure(n):
            keep.append(n)
            live.update(n.inputs)
        else:
            dropped.append(n)
    g.nodes = keep[::-1]
    for n in reversed(dropped):
        report.append(f"dead code: {_lhs(n)} = {_call(n)} is never used; removed"
                      + (f" (traced at {n.where})" if n.where else ""))
    unused = [c for c in g.consts if c not in live]
    g.consts = [c for c in g.consts if c in live]
    if unused:
        report.append(f"dead code: {len(unused)} constant(s) no longer used: "
                      + ", ".join(f"%{c.name}" for c in unused))
    if not dropped and not unused:
        report.append("dead code: nothing to remove")
    return g


# ------------------------------------------------------------- partition
def partition(joint: Graph, n_out: int, grad_inputs: list, is_recomputable, report: list):
    """Cut the joint graph: returns ``(forward, backward, saved)``.

    ``forward`` returns the primal outputs, then the ``saved`` values;
    ``backward`` takes ``saved + grad_inputs`` and returns the gradients
    (``joint.outputs[n_out:]``).
    """
    tangent = set(grad_inputs)
    bwd = set()
    producer = {}
    for n in joint.nodes:
        for v in n.all_outputs:
            producer[v] = n
        if any(a in tangent for a in n.inputs):
            tangent.update(n.all_outputs)
            bwd.add(n)
    grads_out = joint.outputs[n_out:]
    need = [a for n in joint.nodes if n in bwd for a in n.inputs if a not in tangent]
    need += [v for v in grads_out if v is not None and v not in tangent]
    saved, seen, recompute = [], set(), set()
    while need:
        v = need.pop()
        if v in seen:
            continue
        seen.add(v)
        p = producer.get(v)
        if p is None:
            if v.kind != "const":
                saved.append(v)
        elif p.phase == "backward" or is_recomputable(p):
            recompute.add(p)
            need.extend(p.inputs)
        else:
            saved.append(v)
    order = {v: i for i, v in enumerate(joint.inputs)}
    pos = {v: i for i, n in enumerate(joint.nodes) for v in n.all_outputs}
    saved.sort(key=lambda v: (0, order[v]) if v in order else (1, pos.get(v, 0)))

    fwd = joint.copy(joint.name + "_forward")
    fwd.nodes = [n for n in fwd.nodes if not any(a in tangent for a in n.inputs)]
    fwd.inputs = [v for v in joint.inputs if v not in grad_inputs]
    fwd.outputs = list(joint.outputs[:n_out]) + saved

    bw = joint.copy(joint.name + "_backward")
    keep_ids = {id(n) for n in joint.nodes if n in bwd or n in recompute}
    bw.nodes = [m for n, m in zip(joint.nodes, bw.nodes) if id(n) in keep_ids]
    bw.inputs = list(saved) + list(grad_inputs)
    bw.outputs = list(grads_out)
    n_re = sum(1 for n in recompute if n.phase == "forward")
    report.append(
        f"partition: the forward keeps {len(saved)} value(s) for the backward "
        f"({format_bytes(sum(v.size * v.dtype.itemsize for v in saved))}: "
        + (", ".join(f"%{v.name} {v.type}" for v in saved) or "nothing") + ")"
        + (f"; {n_re} cheap elementwise forward op(s) are recomputed in the backward instead of saved"
           if n_re else ""))
    return fwd, bw, saved


# ---------------------------------------------------------------- text
def _lhs(n: Node) -> str:
    return ", ".join(f"%{v.name}" for v in n.all_outputs)


def _call(n: Node) -> str:
    return f"{n.op}({', '.join(show_arg(a) for a in n.args)})"


def _const_value(c: Value) -> str:
    if c.size == 1:
        return f"{c._data.reshape(()).item():.6g}" if c.dtype.kind == "f" else repr(c._data.reshape(()).item())
    return f"<array {c.type}>"
