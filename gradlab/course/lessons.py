"""The instructor's side of the lessons' your-turn cells: reference answers and what a check compares.

A write-it cell in ``notebooks/`` checks the student's function against a reference. Where gradlab
already has the function (``gradlab.sum_to``, ``F.softmax``, an optimizer's ``step``), the cell uses
that; the references here are the ones gradlab has no public function for. They live here, not in
the notebook, so the lesson does not print the answer next to the question (and the cells after a
write-it cell fall back on them through ``yourturn.written_or`` until the student's version runs).

* ``graph_nodes(root, inputs=None)``: every node reachable from ``root`` (explicit stack, no recursion limit)
* ``topological_order(root, inputs=None)``: the nodes, each before the nodes it feeds on (output first)
* ``order_report(order, root)``: the properties a valid order has, for ``write_it(report=...)``
* ``leaf_names(root)``: names of the tensors a backward from ``root`` gives a ``.grad``
* ``saved_bytes(root)``: bytes of the tensors the graph saved for backward
* ``causal_softmax(scores)``: softmax over the last axis with the future (above the diagonal) masked
* ``split_heads(x, n_head)``: ``(B, T, C)`` -> ``(B, n_head, T, C // n_head)``
* ``gradcheck_report(fn, x, eps, atol, rtol)``: ``"ok"`` or where the analytic and central-difference
  Jacobians of ``fn`` at ``x`` first disagree (notebook 07's ``my_gradcheck``, until the student's runs)
* ``matmul_intensity(m, n, k, itemsize=4)``: FLOPs per byte moved by an ``(m, k) @ (k, n)`` matmul
* ``where(obj)`` / ``where_table(pairs)``: the file and line that define a gradlab object, computed from
  the code (``inspect``), for the lessons' "Where this lives in gradlab" cells, so they stay true when
  files move (tests/test_notebook_where.py checks every path and line a notebook shows)

``inputs`` says how to find a node's inputs; the default reads autograd nodes (gradlab's and
PyTorch's alike: ``node.next_functions``), and any tensor given as ``root`` stands for its ``grad_fn``.
"""
from __future__ import annotations

import importlib
import inspect
import pathlib

import numpy as np

_REPO = pathlib.Path(__file__).resolve().parents[2]   # the folder holding gradlab/


def _autograd_inputs(node):
    return [e[0] for e in node.next_functions if e is not None and e[0] is not None]


def _start(root):
    return root.grad_fn if hasattr(root, "grad_fn") else root


def graph_nodes(root, inputs=None):
    """Every node reachable from ``root``, each once, in the order a depth-first walk meets them.

    ``gradlab.autograd.graph.walk`` does this for gradlab's own nodes (sorted by creation); this one
    is duck-typed, so the same lesson code reads PyTorch's graphs and the scalar ``Value`` graphs of
    notebook 05 (``inputs=lambda v: v.inputs``), whose nodes have no creation number.
    """
    inputs = inputs or _autograd_inputs
    start = _start(root)
    seen, order, stack = set(), [], [start] if start is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        stack.extend(reversed(list(inputs(node))))
    return order


def topological_order(root, inputs=None):
    """The nodes reachable from ``root``, each before every node it feeds on: ``root``'s node first.

    Depth-first post-order (a node is finished once all its inputs are), reversed. An explicit stack
    instead of recursion, so a graph deeper than Python's recursion limit is fine. Backward runs the
    nodes in this order: by the time a node runs, every node that used its output has sent its gradient.
    """
    inputs = inputs or _autograd_inputs
    start = _start(root)
    if start is None:
        return []
    finished, seen, stack = [], set(), [(start, False)]
    while stack:
        node, done = stack.pop()
        if done:
            finished.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((i, False) for i in inputs(node) if id(i) not in seen)
    return finished[::-1]


def order_report(order, root, inputs=None):
    """What makes ``order`` a valid backward order for ``root``'s graph, as plain data to compare.

    Many orders are valid, so a check compares these properties, not the list itself.
    """
    inputs = inputs or _autograd_inputs
    order = list(order) if order is not None else []
    where = {id(n): i for i, n in enumerate(order)}
    everything = {id(n) for n in graph_nodes(root, inputs)}
    return {
        "number of nodes": len(order),
        "no node twice": len(where) == len(order),
        "every node of the graph is there": set(where) == everything,
        "each node before the nodes it feeds on": all(where.get(id(i), -1) > where[id(n)]
                                                       for n in order for i in inputs(n)),
    }


def leaf_names(root):
    """Sorted names of the leaf tensors a backward from ``root`` fills ``.grad`` of (their AccumulateGrad nodes)."""
    return sorted(str(n.variable.name) for n in graph_nodes(root) if hasattr(n, "variable"))


def saved_bytes(root):
    """Bytes of every tensor the graph's nodes saved for backward (each saved array counted once)."""
    arrays = {}
    for node in graph_nodes(root):
        for t in getattr(node, "saved", ()) or ():
            arrays[id(t)] = int(np.asarray(t.numpy()).nbytes) if hasattr(t, "numpy") else int(np.asarray(t).nbytes)
    return sum(arrays.values())


def causal_softmax(scores):
    """Softmax over the last axis of ``scores`` (``..., T, T``), with every position above the diagonal masked out."""
    import gradlab
    import gradlab.nn.functional as F
    T = scores.shape[-1]
    future = gradlab.ones(T, T, dtype=gradlab.bool).triu(diagonal=1)
    return F.softmax(scores.masked_fill(future, float("-inf")), dim=-1)


def split_heads(x, n_head):
    """``(B, T, C)`` -> ``(B, n_head, T, C // n_head)``: each head gets its own slice of the width."""
    B, T, C = x.shape
    return x.reshape(B, T, n_head, C // n_head).transpose(1, 2)


def gradcheck_report(fn, x, eps=1e-6, atol=1e-5, rtol=1e-3):
    """``"ok"``, or the first (input, output) pair where backward and central differences disagree.

    One backward per output element gives a row of the analytic Jacobian; two more forward passes
    per input element give the numerical one. ``x`` is a float64 tensor that requires a gradient;
    it is not changed.
    """
    import gradlab
    y = fn(x)
    x0 = x.detach().numpy().copy()
    for j in range(y.numel()):
        cot = np.zeros(y.shape)
        cot.flat[j] = 1.0
        (row,) = gradlab.grad(y, [x], gradlab.tensor(cot), retain_graph=True)
        for i in range(x0.size):
            plus, minus = x0.copy(), x0.copy()
            plus.flat[i] += eps
            minus.flat[i] -= eps
            f_plus = fn(gradlab.tensor(plus, dtype=x.dtype)).detach().numpy().reshape(-1)[j]
            f_minus = fn(gradlab.tensor(minus, dtype=x.dtype)).detach().numpy().reshape(-1)[j]
            numeric = (f_plus - f_minus) / (2 * eps)
            analytic = row.numpy().reshape(-1)[i]
            if abs(analytic - numeric) > atol + rtol * abs(numeric):
                return f"mismatch at input {i}, output {j}: analytic {analytic:.6f} vs numeric {numeric:.6f}"
    return "ok"


def matmul_intensity(m, n, k, itemsize=4):
    """FLOPs per byte of an ``(m, k) @ (k, n)`` matmul that reads both inputs and writes the output once."""
    return 2 * m * n * k / (itemsize * (m * k + k * n + m * n))


def _resolve(name):
    """The object a dotted name such as ``"gradlab.autograd.engine.backward"`` names."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(f"where: no module in {name!r}")


def where(obj):
    """``"gradlab/pkg/file.py:LINE"``: where ``obj`` is defined (a module: its file alone).

    ``obj`` may be the object, a dotted name, or a registry entry (``REGISTRY["matmul"]``: its op
    class or function).
    """
    if isinstance(obj, str):
        obj = _resolve(obj)
    if hasattr(obj, "formula") and hasattr(obj, "fn"):   # a registry entry
        obj = obj.op or obj.fn
    obj = getattr(obj, "__wrapped__", obj)
    if isinstance(obj, property):
        obj = obj.fget
    try:
        path = pathlib.Path(inspect.getsourcefile(obj)).resolve().relative_to(_REPO)
        if inspect.ismodule(obj):
            return str(path)
        return f"{path}:{inspect.getsourcelines(obj)[1]}"
    except (OSError, TypeError):   # no source of its own (a builtin): gradlab.source says where
        import gradlab
        return gradlab.source(obj).where


def where_table(pairs):
    """One line per ``(label, obj)`` (or dotted name): the label and ``where(obj)``, aligned."""
    rows = [(p, p) if isinstance(p, str) else p for p in pairs]
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"{label:{width}s}  {where(obj)}" for label, obj in rows)
