"""The static graph IR: a flat list of ops over named values.

A traced function becomes a :class:`Graph`: its inputs, the constants it
captured, a list of :class:`Node` s in the order they ran, and its outputs.
Every value has a name (``%3``), a shape and a dtype, and the whole graph
prints as text, one op per line, the way a jaxpr or a ``torch.fx`` graph does::

    graph block(%x: f32[1024,4096], %b: f32[4096]) {
      %c0: f32[] = const 0.5
      %2: f32[1024,4096] = add(%x, %b)            # block.py:7
      %3: f32[1024,4096] = tanh(%2)
      return (%3)
    }

Why a flat list? The dynamic graph that autograd records is a web of Python
objects built anew on every call; a static list can be read, checked,
rewritten by passes (``passes.py``), cut into kernels (``fuse.py``) and then
replayed many times without running the user's Python again.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..backend import dtypes as _dt

_SHORT = {"float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16", "int8": "i8", "int16": "i16",
          "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "bool"}


def type_str(shape, dtype) -> str:
    """``f32[8,16]``: the dtype's short name and the shape."""
    name = _dt.dtype_name(dtype) if dtype is not None else "?"
    return f"{_SHORT.get(name, name)}[{','.join(str(s) for s in shape)}]"


class Value:
    """One named value of a graph.

    ``kind``: ``input`` (an argument of the function), ``param`` (a leaf that
    requires grad, found in a closure or module and lifted to an input),
    ``grad`` (an incoming output gradient, in backward graphs), ``saved``
    (kept by the forward for the backward), ``const`` (captured data, baked in)
    or ``op`` (computed by a node).
    """

    __slots__ = ("name", "shape", "dtype", "kind", "_data", "ref", "label")

    def __init__(self, name, shape, dtype, kind="op", data=None, ref=None, label=None):
        self.name, self.shape, self.dtype, self.kind = name, tuple(shape), np.dtype(dtype) if dtype is not None \
            else None, kind
        self._data, self.ref, self.label = data, ref, label

    @property
    def type(self) -> str:
        return type_str(self.shape, self.dtype)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1

    def __repr__(self):
        return f"%{self.name}"


def show_arg(a) -> str:
    """An op argument as text: a value's name, or a Python literal."""
    if isinstance(a, Value):
        return f"%{a.name}"
    if isinstance(a, float):
        return repr(a)
    if isinstance(a, np.ndarray):
        return f"array{tuple(a.shape)}"
    return repr(a)


class Node:
    """One op of the graph: ``outputs = op(*args)``.

    ``args`` are the op's positional arguments in order: :class:`Value` s for
    tensors, plain Python objects otherwise (a dim, a shape, a scalar).
    ``cls`` is the op's ``Function`` class (replayed with its ``forward``), or
    ``fn`` a registered op function with no node of its own (a comparison).
    ``hidden``: values the op's forward keeps inside its ``ctx`` that the
    backward reads (``("saved", k)`` or ``("attr", name)``), exposed as extra
    outputs so the backward graph can name them.
    """

    __slots__ = ("op", "cls", "fn", "args", "kwargs", "outputs", "hidden", "where", "phase", "group", "kernel",
                 "ctx", "source")

    def __init__(self, op, args, outputs, cls=None, fn=None, where=None, phase="forward", kwargs=None):
        self.op, self.args, self.outputs, self.cls, self.fn = op, list(args), list(outputs), cls, fn
        self.kwargs = kwargs or {}
        self.source = None        # for a fused kernel: the generated source text
        self.hidden = []          # [(Value, ("saved", k) | ("attr", name))]
        self.where, self.phase = where, phase
        self.group = None         # for a fused kernel: the nodes it contains, in order
        self.kernel = None        # for a fused kernel: the compiled callable
        self.ctx = None           # the traced node (only while tracing)

    @property
    def inputs(self) -> list:
        return [a for a in self.args if isinstance(a, Value)]

    @property
    def all_outputs(self) -> list:
        return self.outputs + [v for v, _ in self.hidden]

    def text(self) -> str:
        outs = ", ".join(f"%{v.name}: {v.type}" for v in self.all_outputs)
        args = [show_arg(a) for a in self.args] + [f"{k}={show_arg(v)}" for k, v in self.kwargs.items()]
        call = f"{self.op}({', '.join(args)})"
        line = f"{outs} = {call}"
        if self.hidden:
            line += "   # also keeps " + ", ".join(f"%{v.name} ({k[0]} {k[1]})" for v, k in self.hidden)
        elif self.where:
            line = f"{line:<58} # {self.where}"
        if self.group:
            body = "\n".join("      " + n.text() for n in self.group)
            line += "\n" + body
        return line

    def __repr__(self):
        return f"<Node {self.text().splitlines()[0]}>"


class Graph:
    """A traced function: inputs, constants, a flat op list, outputs."""

    def __init__(self, name="fn"):
        self.name = name
        self.inputs: list = []     # Values: inputs, params, grads, saved values (in call order)
        self.consts: list = []
        self.nodes: list = []
        self.outputs: list = []    # Values (or None for "no gradient")
        self._ids = itertools.count()

    def new_value(self, shape, dtype, kind="op", prefix="", **kw) -> Value:
        return Value(f"{prefix}{next(self._ids)}", shape, dtype, kind, **kw)

    def copy(self, name=None) -> "Graph":
        """A shallow copy: new node objects (so passes can rewrite), the same values."""
        g = Graph(name or self.name)
        g.inputs, g.consts, g.outputs = list(self.inputs), list(self.consts), list(self.outputs)
        g._ids = self._ids
        for n in self.nodes:
            m = Node(n.op, n.args, n.outputs, n.cls, n.fn, n.where, n.phase, n.kwargs)
            m.hidden, m.group, m.kernel, m.source = list(n.hidden), n.group, n.kernel, n.source
            g.nodes.append(m)
        return g

    def users(self) -> dict:
        """value -> number of uses (by nodes and as a graph output)."""
        count = {}
        for n in self.nodes:
            for a in n.inputs:
                count[a] = count.get(a, 0) + 1
        for v in self.outputs:
            if v is not None:
                count[v] = count.get(v, 0) + 1
        return count

    @property
    def op_count(self) -> int:
        return sum(len(n.group) if n.group else 1 for n in self.nodes)

    def intermediate_bytes(self) -> int:
        """Bytes of every array the graph materialises (node outputs; fused internals are not)."""
        return sum(v.size * (v.dtype.itemsize if v.dtype is not None else 0)
                   for n in self.nodes for v in n.all_outputs)

    def __str__(self):
        head = ", ".join(f"%{v.name}: {v.type}" + (f" [{'saved' if v.kind == 'op' else v.kind}]"
                                                         if v.kind != "input" else "") for v in self.inputs)
        lines = [f"graph {self.name}({head}) {{"]
        for c in self.consts:
            lines.append(f"  %{c.name}: {c.type} = const {_const_text(c)}")
        for n in self.nodes:
            lines.append("  " + n.text().replace("\n", "\n  "))
        outs = ", ".join("None" if v is None else f"%{v.name}" for v in self.outputs)
        lines.append(f"  return ({outs})")
        lines.append("}")
        return "\n".join(lines)

    def __repr__(self):
        return str(self)


def _const_text(c: Value) -> str:
    d = c._data
    try:
        size = int(d.size)
    except AttributeError:
        return repr(d)
    if size == 1:
        return f"{d.reshape(()).item():.6g}" if d.dtype.kind == "f" else repr(d.reshape(()).item())
    label = f" '{c.label}'" if c.label else ""
    return f"<array{label} {type_str(d.shape, d.dtype)}>"
