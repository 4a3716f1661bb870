"""The gradient diff view: where a student's engine first gets a gradient wrong.

``gradlab.viz.grad_diff(v)`` (and ``show_graph(v, compare=True)``, ``animate_backward(v, compare=True)``)
takes the output of a foreign engine (``foreign_graph.py``) after its backward, and finds, in backward
order (the output first, each value after every value computed from it), the first value whose
gradient differs from gradlab's on the same computation. Both values are shown. Since every value
before it is right, the mistake is in what its users sent back: the VJP of one of the ops that read it
(or the way the engine added their gradients up). That is what the mark says.

gradlab's gradients come from one of two places:

* ``compare=True``: gradlab recomputes the student's graph node for node (its leaves' data as
  float64 leaves, each op by its name: ``'+'``, ``'*'``, ``'**2'``, ``'ReLU'``, ``'tanh'``, ``'matmul'``,
  ``'sum'``... and any op of gradlab's registry), keeps every intermediate's grad
  (``retain_grad``) and runs gradlab's backward. Its forward values are checked too: a value that
  differs is reported first (the forward is wrong there, so no gradient after it means anything).
  ``ops={"myop": fn}`` adds an op (``fn`` takes gradlab tensors and returns one).
* ``compare={value: expected_grad}`` (or pairs): gradlab's gradients, given; values not listed are
  not checked.

Holds: :class:`DiffNode`, :class:`GradDiff`, :func:`grad_diff`, :func:`reference_grads` (the replay)
and :func:`mark_diff` (the mark on a drawn model).
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from .._tensor import Tensor
from ..errors import ArgumentError
from ..ops.registry import REGISTRY
from .foreign_graph import ForeignGraph, Protocol, registry_name


@dataclasses.dataclass
class DiffNode:
    """One value where the student's engine and gradlab disagree."""
    id: str                 # the model id (``op3``, ``leaf1``): the drawn node
    name: str               # its op name, or its label for a leaf
    kind: str               # "grad" or "value" (a forward value that differs)
    student: Optional[np.ndarray]
    gradlab: np.ndarray
    users: list             # (id, op) of the ops that read this value: one of their VJPs sent the wrong part
    text: str = ""


@dataclasses.dataclass
class GradDiff:
    """What :func:`grad_diff` found: ``first`` (None when every gradient agrees), how many values it checked."""
    first: Optional[DiffNode]
    checked: int

    @property
    def ok(self) -> bool:
        return self.first is None

    def __repr__(self):
        if self.first is None:
            return f"GradDiff: all {self.checked} gradients agree with gradlab's"
        f = self.first
        return f"GradDiff: first wrong {f.kind} at {f.id} ({f.name}):\n  " + f.text.replace("\n", "\n  ")


def _fmt(a) -> str:
    if a is None:
        return "None"
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 0:
        return f"{float(a):.6g}"
    return f"{np.array2string(a, precision=4, threshold=8, separator=', ')} (shape {tuple(a.shape)})"


def _leaf(data):
    t = Tensor._make(np.array(data, dtype=np.float64, copy=True))
    t.requires_grad_(True)
    return t


def _reduce_to(x, shape, fn_name):
    """``sum``/``mean`` of a student's op, from the shapes: over every axis the output does not keep."""
    if tuple(shape) == ():
        return getattr(x, fn_name)()
    if len(shape) == x.ndim:
        dims = tuple(i for i, (a, b) in enumerate(zip(x.shape, shape)) if a != b)
        return getattr(x, fn_name)(dim=dims, keepdim=True) if dims else x
    for d in range(x.ndim):   # one dim dropped
        if tuple(x.shape[:d] + x.shape[d + 1:]) == tuple(shape):
            return getattr(x, fn_name)(dim=d)
    return None


def _replay_op(name, ins, out_shape, ops):
    """gradlab's result for one of the student's ops (None when the name is not known)."""
    if ops and name in ops:
        return ops[name](*ins)
    n = len(ins)
    if name in ("+", "add") and n >= 1:
        out = ins[0]
        for t in ins[1:]:
            out = out + t
        return out
    if name in ("*", "mul") and n >= 1:
        out = ins[0]
        for t in ins[1:]:
            out = out * t
        return out
    if name in ("-", "sub"):
        return -ins[0] if n == 1 else ins[0] - ins[1]
    if name in ("/", "div") and n == 2:
        return ins[0] / ins[1]
    if name in ("@", "matmul", "dot", "mm") and n == 2:
        return ins[0] @ ins[1]
    if name.startswith("**") and n == 1:
        try:
            return ins[0] ** float(name[2:])
        except ValueError:
            return None
    if name in ("pow", "**") and n == 2:
        return ins[0] ** ins[1]
    if name in ("sum", "mean") and n == 1:
        return _reduce_to(ins[0], out_shape, name)
    if name in ("T", "transpose") and n == 1:
        return ins[0].transpose(-2, -1) if ins[0].ndim >= 2 else ins[0]
    if name in ("reshape", "view") and n == 1:
        return ins[0].reshape(tuple(out_shape))
    reg = registry_name(name)
    if reg in REGISTRY and REGISTRY[reg].namespace == "gradlab" and reg not in ("pow", "sum", "mean"):
        return REGISTRY[reg].fn(*ins)
    return None


_BINARY = {"+", "*", "-", "/", "@", "add", "mul", "sub", "div", "matmul", "pow", "**"}


def _input_orders(name, ins):
    """The orders to try a student's op in (the first is kept when none gives the student's value): ``x``
    twice for a two-input op with one input (``x * x`` kept in a set); as given; swapped (an engine that
    keeps its inputs in a set, as micrograd does, keeps no order)."""
    if len(ins) == 1 and name in _BINARY:
        yield [ins[0], ins[0]]
    yield ins
    if len(ins) == 2:
        yield ins[::-1]


def reference_grads(graph: ForeignGraph, ops=None, fn="grad_diff"):
    """gradlab's recomputation of the student's graph: ``(values, grads)``, both ``id(value) -> array``.

    Each op is replayed by its name; a two-input op whose result differs is tried with its inputs
    swapped (an engine that keeps its inputs in a set, as micrograd does, does not keep their order).
    """
    proto = graph.proto
    t_of = {}
    for v in graph.order:
        kids = graph.inputs(v)
        if not kids:
            t_of[id(v)] = _leaf(proto.data(v))
            continue
        name = proto.op(v)
        want = proto.data(v)
        ins = [t_of[id(c)] for c in kids]
        out = None
        for cand in _input_orders(name, ins):
            got = _replay_op(name, cand, want.shape, ops)
            if got is not None and (out is None or _close(got.detach().numpy(), want)):
                out = got
                if _close(got.detach().numpy(), want):
                    break
        if out is None:
            raise ArgumentError(
                f"{fn}: cannot recompute the op {name!r} ({len(ins)} input(s), output shape {tuple(want.shape)}) in "
                f"gradlab; pass ops={{{name!r}: lambda *xs: ...}} (a function of gradlab tensors), or give gradlab's "
                "gradients with compare={value: grad}")
        if out.requires_grad:
            out.retain_grad()
        t_of[id(v)] = out
    root = t_of[id(graph.root)]
    root.backward(Tensor._make(np.ones(root.shape, dtype=np.float64)))
    values, grads = {}, {}
    for v in graph.order:
        t = t_of[id(v)]
        values[id(v)] = t.detach().numpy()
        grads[id(v)] = t.grad.numpy() if t.grad is not None else np.zeros(t.shape)
    return values, grads


def _close(a, b, rtol=1e-5, atol=1e-8) -> bool:
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))


def _given(graph, compare):
    items = compare.items() if isinstance(compare, dict) else compare
    by_id = {}
    for k, g in items:
        by_id[id(k)] = np.asarray(g.numpy() if isinstance(g, Tensor) else g, dtype=np.float64)
    return by_id


def grad_diff(root, compare=True, attrs=None, ops=None, rtol=1e-5, atol=1e-8, ids=None, names=None,
              fn="grad_diff") -> GradDiff:
    """The first value, in backward order, whose gradient in the engine behind ``root`` differs from gradlab's.

    ``root``: a foreign engine's output after its backward (or a :class:`ForeignGraph`);
    ``compare``: ``True`` (gradlab recomputes the graph) or ``{value: expected grad}``;
    ``ops``: extra op names for the recomputation; ``ids``/``names``: a drawn model's node ids and names
    (by default the model is read here, with the caller's variable names).
    """
    graph = root if isinstance(root, ForeignGraph) else ForeignGraph(root, Protocol.resolve(root, attrs, fn))
    proto = graph.proto
    if compare is True:
        values, grads = reference_grads(graph, ops, fn)
    elif isinstance(compare, (dict, list, tuple)):
        values, grads = None, _given(graph, compare)
    else:
        raise ArgumentError(f"{fn}: compare must be True (gradlab recomputes the graph) or a dict "
                            f"{{value: expected grad}}, got {type(compare).__name__}")
    if ids is None:
        from .foreign_graph import build_foreign_model
        model = build_foreign_model(graph.root, graph=graph, fn=fn)
        ids, names = model.node_ids, {k: getattr(n, "name", None) for k, n in model.nodes.items()}
    names = names or {}
    users = {}
    for u in graph.order:
        for c in graph.inputs(u):
            lst = users.setdefault(id(c), [])
            if u not in lst:
                lst.append(u)

    def node(v, kind, student, ref):
        us = [(ids.get(graph.node_of(u), "?"), proto.op(u) or "op") for u in users.get(id(v), [])]
        nid = ids.get(graph.node_of(v), "?")
        name = proto.op(v) if not graph.is_leaf(v) else (names.get(nid) or nid)
        if kind == "value":
            text = (f"value {_fmt(student)}\ngradlab {_fmt(ref)}\nthe forward of {name!r} is wrong here: "
                    "no gradient after it can be right")
        else:
            text = f"grad {_fmt(student)}\ngradlab {_fmt(ref)}"
            if v is graph.root:
                text += "\nthe output's grad is the seed: backward starts with grad 1"
            elif us:
                who = ", ".join(f"{op!r} ({i})" for i, op in us)
                text += (f"\nevery later grad agrees, so what {who} sent back is wrong: check "
                         f"{'its' if len(us) == 1 else 'their'} VJP (and that the parts are added up)")
        return DiffNode(ids.get(graph.node_of(v), "?"), name, kind, student, ref, us, text)

    if values is not None:
        for v in graph.order:          # forward order: the first value computed wrongly
            if not graph.is_leaf(v) and not _close(proto.data(v), values[id(v)], rtol, atol):
                return GradDiff(node(v, "value", proto.data(v), values[id(v)]), 0)
    checked = 0
    for v in graph.backward_order():
        ref = grads.get(id(v))
        if ref is None:
            continue
        checked += 1
        mine = proto.grad(v)
        if not _close(mine, ref, rtol, atol):
            return GradDiff(node(v, "grad", mine, ref), checked)
    return GradDiff(None, checked)


def mark_diff(model, compare, ops=None, fn="show_graph") -> GradDiff:
    """Run :func:`grad_diff` on a foreign engine's model and mark its first wrong node (``node.diff``)."""
    graph = getattr(model, "engine", None)
    if graph is None:
        raise ArgumentError(f"{fn}: compare= checks another engine's gradients against gradlab's; this graph is "
                            "gradlab's (or PyTorch's) own, so there is nothing to compare")
    d = grad_diff(graph, compare, ops=ops, ids=model.node_ids, fn=fn,
                  names={k: getattr(n, "name", None) for k, n in model.nodes.items()})
    if d.first is None:
        model.notes.append(f"gradient diff: all {d.checked} gradients agree with gradlab's")
    else:
        n = model.nodes.get(d.first.id)
        if n is not None:
            n.diff = d.first.text
        model.notes.append(f"gradient diff: the first wrong {d.first.kind} is at {d.first.id} ({d.first.name}): "
                           + d.first.text.replace("\n", "; "))
    model.diff = d
    return d


__all__ = ["grad_diff", "GradDiff", "DiffNode", "reference_grads", "mark_diff"]
