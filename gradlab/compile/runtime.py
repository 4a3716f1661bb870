"""Replaying a graph: an interpreter over the flat op list.

Each node is run with its op's own ``forward`` on arrays (the same code the
eager op runs, so the numbers agree), or with its fused kernel. The
interpreter drops every array right after its last use, as an eager program
does when Python's reference counts reach zero, so peak memory is what the
graph really needs.
"""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from ..autograd import function as _fn
from ..autograd.grad_mode import no_grad
from ..backend.fperr import quiet
from .ir import Graph, Node, Value


def run_node(node: Node, arrays: list):
    """Run one (unfused) node on arrays. ``arrays`` is aligned with ``node.args``; returns (outputs, hidden)."""
    args = [Tensor._make(a) if isinstance(spec, Value) else a for spec, a in zip(node.args, arrays)]
    if node.fn is not None:
        with no_grad():
            out = node.fn(*args, **node.kwargs)
        outs = out if isinstance(out, tuple) else (out,)
        return [o._data if isinstance(o, Tensor) else o for o in outs], []
    cls = node.cls
    ctx = object.__new__(cls)
    ctx._recording = bool(node.hidden)
    if cls.tensor_forward:
        with no_grad():
            out = _fn._run_tensor_forward(ctx, args, {})
    else:
        with quiet():  # inf/nan quietly, as Op.apply runs the eager op (also for a compiler pass, a kernel's thread)
            out = cls.forward(ctx, *args)
    outs = list(out) if type(out) is tuple else [out]
    outs = [np.asarray(o) if isinstance(o, np.generic) else o for o in outs]
    hidden = []
    for _, (kind, key) in node.hidden:
        h = ctx._to_save[key] if kind == "saved" else getattr(ctx, key)
        hidden.append(h._data if isinstance(h, Tensor) else h)
    return outs, hidden


def _plan(graph: Graph):
    """For each node, the values whose last use it is (they are freed right after it)."""
    keep = set(v for v in graph.outputs if v is not None) | set(graph.inputs) | set(graph.consts)
    last = {}
    for i, n in enumerate(graph.nodes):
        for a in n.inputs:
            last[a] = i
        for v in n.all_outputs:
            last.setdefault(v, i)  # produced and never used: free at once
    free = [[] for _ in graph.nodes]
    for v, i in last.items():
        if v not in keep:
            free[i].append(v)
    return free


def execute(graph: Graph, inputs: list) -> list:
    """Run ``graph`` on input arrays (one per ``graph.inputs``); return the output arrays."""
    free = getattr(graph, "_free", None)
    if free is None:
        free = _plan(graph)
        graph._free = free
    env = dict(zip(graph.inputs, inputs))
    for c in graph.consts:
        env[c] = c._data
    # (each step is quiet about inf/nan, as the eager ops: run_node silences NumPy, and a fused kernel's
    # generated code does so itself, in every thread it runs on)
    for n, dead in zip(graph.nodes, free):
        if n.kernel is not None:
            outs = n.kernel(*[env[v] for v in n.inputs])
            for v, o in zip(n.outputs, outs):
                env[v] = o
        else:
            outs, hidden = run_node(n, [env[a] if isinstance(a, Value) else a for a in n.args])
            for v, o in zip(n.outputs, outs):
                if v is not None:
                    env[v] = o
            for (v, _), h in zip(n.hidden, hidden):
                env[v] = h
        for v in dead:
            env.pop(v, None)
    return [None if v is None else env[v] for v in graph.outputs]
