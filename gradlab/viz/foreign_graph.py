"""Read a *foreign* autograd engine's graph (micrograd's ``Value``, a student's own engine) into gradlab's model.

``gradlab.show_graph(v)``, ``animate_backward(v)`` and ``graph_widget(v)`` accept a value of any small
reverse-mode engine, the way they accept a ``torch.Tensor`` (``torch_graph.py``): this module reads its
graph into the same :class:`GraphModel`, so the renderer, the collapser and the widgets draw it unchanged.

The protocol (what a value must expose; micrograd's published ``Value`` follows it as is):

==============  ============================  =======================================================
role            attribute looked for          what it holds
==============  ============================  =======================================================
``inputs``      ``_prev``, then ``inputs``    the values this one was computed from (any iterable; empty
                                              for a leaf). A method is called.
``data``        ``data``                      its value: a number or an array (read with ``np.asarray``)
``grad``        ``grad``                      its gradient once backward ran (a number, an array or None)
``op``          ``_op``, then ``op``          optional: the op's name (``'+'``, ``'*'``, ``'tanh'``...)
``label``       ``label``, then ``name``      optional: a name to draw (else the caller's variable name)
``backward``    ``backward``                  optional: the method on the output that runs the backward
``node_backward`` ``_backward``               optional: the per-node closure backward calls (micrograd's);
                                              ``animate_backward`` wraps it to record the real order
==============  ============================  =======================================================

An engine that names them otherwise says which attribute is which: ``show_graph(v, attrs={"inputs":
"children", "data": "value", "grad": "gradient"})``. A value without them gets
:class:`EngineProtocolError`, naming what is missing and, where the object has likely candidates, the
``attrs=`` to pass.

Holds: the protocol (:class:`Protocol`, :class:`EngineProtocolError`, :func:`is_engine_value`), the
graph walk (:class:`ForeignGraph`: an explicit stack, so a 10 000-deep chain is fine; a cycle is drawn
and named in a note), the model (:func:`build_foreign_model`) and the recorded backward
(:func:`record_foreign_backward`: the engine's own ``backward()`` runs, each node's closure watched).

The model keeps the engine's values alive (they are the engine's, usually small; gradlab's own model
keeps no tensors), so that the recorder and the diff view (``grad_diff_view.py``) can read them later.
"""
from __future__ import annotations

import contextlib
import sys

import numpy as np

from ..errors import GradError
from ..ops.registry import REGISTRY
from .graph_base import FrameNames, GraphBuilder
from .nodes import GraphModel, OpNode, TensorNode, _dname, grad_summary, no_gc
from .show import NotATensorError
from .torch_nodes import NodeIds  # node -> id by id(node), keeping the leaves (AccumulateGrad) alive

#: attribute names tried for each role, in order (micrograd's first)
DEFAULT_ATTRS = {
    "inputs": ("_prev", "inputs"), "data": ("data",), "grad": ("grad",), "op": ("_op", "op"),
    "label": ("label", "name"), "backward": ("backward",), "node_backward": ("_backward",),
}
REQUIRED = ("inputs", "data", "grad")

#: common op spellings in small engines -> gradlab's registry name (for formulas and for the diff view)
OP_ALIASES = {"+": "add", "*": "mul", "-": "sub", "/": "div", "@": "matmul", "ReLU": "relu", "**": "pow",
              "neg": "neg", "T": "transpose"}


class EngineProtocolError(NotATensorError):
    """A value handed to ``show_graph``/``animate_backward`` does not expose the graph protocol
    (a ``NotATensorError``, as it is for anything that is not a tensor)."""


def registry_name(op: str):
    """gradlab's registry name for an engine's op name (``'*'`` -> ``'mul'``, ``'**2'`` -> ``'pow'``), or None."""
    if not op:
        return None
    if op in REGISTRY:
        return op
    if op in OP_ALIASES:
        return OP_ALIASES[op]
    if op.startswith("**"):
        return "pow"
    low = op.lower()
    return low if low in REGISTRY else None


def _formula(op):
    name = registry_name(op)
    return REGISTRY[name].formula if name in REGISTRY else ""


# ------------------------------------------------------------------ the protocol
class Protocol:
    """Which attribute plays which role (see the module docstring); ``attrs`` overrides the defaults."""

    def __init__(self, names: dict):
        self.names = names   # role -> attribute name (None: the optional role is absent)

    @classmethod
    def resolve(cls, root, attrs=None, fn="show_graph") -> "Protocol":
        """The protocol of ``root``'s engine, or :class:`EngineProtocolError` naming what is missing."""
        attrs = dict(attrs or {})
        bad = [k for k in attrs if k not in DEFAULT_ATTRS]
        if bad:
            from ..errors import ArgumentError
            raise ArgumentError(f"{fn}: attrs= has unknown role(s) {bad}; the roles are {list(DEFAULT_ATTRS)}")
        names, missing = {}, []
        for role, tried in DEFAULT_ATTRS.items():
            cand = (attrs[role],) if role in attrs else tried
            found = next((a for a in cand if isinstance(a, str) and hasattr(root, a)), None)
            names[role] = found
            if found is None and role in REQUIRED:
                missing.append((role, cand))
        if missing:
            raise cls._missing_error(root, missing, attrs, fn)
        return cls(names)

    @staticmethod
    def _missing_error(root, missing, attrs, fn):
        what = "; ".join(f"no {role} (looked for {', '.join(repr(a) for a in cand)})" for role, cand in missing)
        msg = (f"{fn}: expected a gradlab Tensor, a torch.Tensor or a value of an autograd engine (e.g. the loss), "
               f"got {type(root).__name__}: {what}. A value of an engine exposes its inputs, data and grad "
               "(and optionally its op name), as micrograd's Value does (_prev, data, grad, _op)")
        guess = _guess_attrs(root, [r for r, _ in missing])
        if guess and not any(hasattr(root, a) for a in DEFAULT_ATTRS["op"]) and "op" not in attrs:
            guess.update(_guess_attrs(root, ["op"]))
        if guess:
            full = {**attrs, **guess}
            msg += f"; if this is such a value under other names, say which is which: {fn}(v, attrs={full!r})"
        else:
            msg += (f"; an engine with other names says which is which: {fn}(v, attrs={{'inputs': ..., "
                    "'data': ..., 'grad': ..., 'op': ...})")
        return EngineProtocolError(msg)

    # ------------------------------------------------------------ reading one value
    def inputs(self, v) -> list:
        raw = getattr(v, self.names["inputs"], None)
        if callable(raw) and not isinstance(raw, (list, tuple, set, frozenset)):
            raw = raw()
        return list(raw) if raw is not None else []

    def data(self, v):
        return _as_array(getattr(v, self.names["data"]))

    def grad(self, v):
        g = getattr(v, self.names["grad"], None)
        return None if g is None else _as_array(g)

    def op(self, v) -> str:
        a = self.names["op"]
        o = getattr(v, a, "") if a else ""
        return o if isinstance(o, str) else type(o).__name__

    def label(self, v):
        a = self.names["label"]
        s = getattr(v, a, None) if a else None
        return s if isinstance(s, str) and s else None

    def follows(self, v) -> bool:
        return all(hasattr(v, self.names[r]) for r in REQUIRED)


def _as_array(x):
    """An engine's number or array as a NumPy array (a gradlab Tensor through ``.numpy()``)."""
    if hasattr(x, "numpy") and callable(x.numpy) and not isinstance(x, np.ndarray):
        try:
            return np.asarray(x.numpy())
        except Exception:  # noqa: BLE001 - an object whose numpy() is something else
            pass
    return np.asarray(x)


def _guess_attrs(obj, roles) -> dict:
    """For a micrograd-like object with other names: the instance attributes that look like each role."""
    try:
        items = list(vars(obj).items())
    except TypeError:
        return {}
    out = {}
    same = type(obj)
    for role in roles:
        for k, v in items:
            if k in out.values():
                continue
            if role == "inputs" and isinstance(v, (list, tuple, set, frozenset)) and all(
                    type(c) is same for c in v):
                out[role] = k
            elif role == "data" and isinstance(v, (int, float, np.ndarray, np.number)) and "grad" not in k:
                out[role] = k
            elif role == "op" and isinstance(v, str):
                out[role] = k
            elif role == "grad" and "grad" in k.lower() and isinstance(v, (int, float, np.ndarray, np.number,
                                                                            type(None))):
                out[role] = k
            if role in out:
                break
    return out if len(out) == len(roles) else {}


def is_engine_value(x, attrs=None) -> bool:
    """Does ``x`` follow the protocol (with ``attrs``' names)? Never raises."""
    try:
        Protocol.resolve(x, attrs)
        return True
    except Exception:  # noqa: BLE001
        return False


# ------------------------------------------------------------------ the graph
class AccumulateGrad:
    """A leaf of a foreign engine, as the recorder and the widgets see it: where its gradient ends up.

    Named as gradlab's and PyTorch's leaf nodes are, with ``.variable``, so that the widgets (and
    ``NodeIds``, the id map PyTorch's graphs use too: values may be unhashable) treat it as one.
    """

    def __init__(self, proto, value):
        self.variable = _Variable(proto, value)
        self.name = "AccumulateGrad"


class _Variable:
    """A foreign leaf seen through the protocol: ``.grad`` is its gradient as an array."""

    def __init__(self, proto, value):
        self.proto, self.value = proto, value

    @property
    def grad(self):
        return self.proto.grad(self.value)

    @property
    def shape(self):
        return self.proto.data(self.value).shape


class ForeignGraph:
    """The graph behind ``root``, walked once: ``order`` (inputs before their users: a topological order
    when there is no cycle), each value's inputs, and the cycles found (``(user, input)`` back edges)."""

    def __init__(self, root, proto: Protocol):
        self.root, self.proto = root, proto
        self._inputs = {}
        self.order, self.cycles = [], []
        self.leaf_node = {}      # id(leaf value) -> its AccumulateGrad
        self._walk()

    def inputs(self, v) -> list:
        k = self._inputs.get(id(v))
        if k is None:
            k = self._inputs[id(v)] = self.proto.inputs(v)
        return k

    def is_leaf(self, v) -> bool:
        return not self.inputs(v)

    def node_of(self, v):
        """The node object the model's ids are keyed by: the value itself, or a leaf's AccumulateGrad."""
        return self.leaf_node.get(id(v), v)

    def _walk(self):
        root, proto = self.root, self.proto
        state = {id(root): 1}            # 1: on the stack, 2: done
        stack = [(root, iter(self.inputs(root)))]
        while stack:
            v, it = stack[-1]
            for c in it:
                s = state.get(id(c))
                if s is None:
                    if not proto.follows(c):
                        raise EngineProtocolError(
                            f"show_graph: an input of a {type(v).__name__} ({proto.op(v) or 'op'}) is a "
                            f"{type(c).__name__}, which has no {', '.join(proto.names[r] for r in REQUIRED)}: an "
                            "engine's op must wrap plain numbers into its value type (Value(other))")
                    state[id(c)] = 1
                    stack.append((c, iter(self.inputs(c))))
                    break
                if s == 1:
                    self.cycles.append((v, c))
            else:
                stack.pop()
                state[id(v)] = 2
                self.order.append(v)
                if not self.inputs(v):
                    self.leaf_node[id(v)] = AccumulateGrad(proto, v)

    def backward_order(self) -> list:
        """Values in the order a reverse-mode engine finishes their gradients: the root first."""
        return self.order[::-1]


# ------------------------------------------------------------------ the model
class ForeignNames(FrameNames):
    """The caller's variable names for the engine's values (see ``graph_base.FrameNames``)."""

    def __init__(self, proto, frame=None):
        self._proto = proto
        super().__init__(frame)

    def _is_tensor(self, v) -> bool:
        try:
            return self._proto.follows(v) and not isinstance(v, type)
        except Exception:  # noqa: BLE001 - a property that raises
            return False

    def _is_module(self, v) -> bool:
        return False


class _ForeignBuilder(GraphBuilder):
    NO_GRAD = "the engine's no-grad mode"
    NO_GRAPH = "the engine recorded no graph"
    NOT_REACHED = "backward() ran but this value's grad is None: no gradient reached it"

    def __init__(self, graph: ForeignGraph, view, caller):
        super().__init__(graph.root, view, {}, caller)
        self.g = graph
        self.proto = graph.proto

    def build(self, named=()) -> GraphModel:
        self.named_values = []
        with no_gc():
            self.walk()
            self.finish()
        return self.model

    # ------------------------------------------------------------ hooks
    def _own_name(self, t):
        return self.proto.label(t)

    def _output_nr(self, t):
        return 0

    def _out_meta(self, n, nr):
        a = self.proto.data(self.objs[n])
        return tuple(a.shape), _dname(a.dtype)

    def _single_node_start(self, t):
        g = self.proto.grad(t)
        self.backward_ran = g is not None and bool(np.any(g))
        self.node_ids, self.id_for_seq = NodeIds(), {}
        self.node_ids[self.g.node_of(t)] = "leaf0"

    def _saved_entries(self):
        return ()

    def _released(self) -> bool:
        return False

    def _tensor_node(self, nid, t, role, order):
        if isinstance(t, _Variable):
            t = t.value
        if role == "constant":     # a leaf without requires_grad has no meaning in such an engine
            role = "leaf"
        name, gen, aliases = self._name_aliases(t, role)
        a = self.proto.data(t)
        g = self.proto.grad(t)
        return TensorNode(id=nid, name=name, role=role, shape=tuple(a.shape), dtype=_dname(a.dtype),
                          requires_grad=True, nbytes=int(a.nbytes), grad=grad_summary(g), generated_name=gen,
                          order=order, aliases=aliases)

    def _add_leaf(self, acc, order):
        lid = super()._add_leaf(acc, order)
        self.leaf_tensors[id(acc.variable.value)] = lid
        return lid

    # ------------------------------------------------------------ walk
    def walk(self):
        g, proto, root = self.g, self.proto, self.root
        self.node_ids = NodeIds()
        self.id_for_seq = {}
        gr = proto.grad(root)
        self.backward_ran = gr is not None and bool(np.any(gr))
        if g.is_leaf(root):
            self._single_node()
            self.notes[-1] = (f"{self._label(root)} is a leaf of the engine: no op computed it, so there is no "
                              "graph behind it. Compute something from it and show that")
            return
        self.objs = {}
        op_id = {}
        ops = [v for v in g.order if not g.is_leaf(v)]
        for r, v in enumerate(ops):
            op_id[id(v)] = f"op{r}"
            self.objs[id(v)] = v
            self.node_ids[v] = f"op{r}"
        self.op_id = op_id
        self.ops = ops
        self.want = {(id(root), 0): root}
        order = 0
        for v in g.order:
            if g.is_leaf(v):
                continue
            nid = op_id[id(v)]
            a = proto.data(v)
            name = proto.op(v) or type(v).__name__
            op = OpNode(id=nid, op=name, formula=_formula(name), seq=int(nid[2:]), out_shapes=(tuple(a.shape),),
                        out_dtypes=(_dname(a.dtype),), order=order)
            op.grad = grad_summary(proto.grad(v))
            order += 1
            for i, c in enumerate(g.inputs(v)):
                ca = proto.data(c)
                shape, dt = tuple(ca.shape), _dname(ca.dtype)
                if g.is_leaf(c):
                    acc = g.node_of(c)
                    lid = self.leaf_of.get(acc)
                    if lid is None:
                        lid = self._add_leaf(acc, order)
                        order += 1
                    src = lid
                else:
                    src = op_id[id(c)]
                if self.backward:
                    self._edge(nid, src, i, shape, dt)
                else:
                    self._edge(src, nid, i, shape, dt)
            self.nodes[nid] = op
        self._value(id(root), 0, order, root)
        for acc, lid in self.leaf_of.items():
            self.node_ids[acc] = lid
        self.root_id = self.shown[(id(root), 0)]
        if g.cycles:
            ids = self.node_ids
            pairs = ", ".join(f"{ids.get(g.node_of(a), '?')} ({proto.op(a) or 'value'}) takes "
                              f"{ids.get(g.node_of(b), '?')} ({proto.op(b) or 'value'})" for a, b in g.cycles[:3])
            self.notes.append(f"the graph has a cycle: {pairs}, which is computed from it. Reverse mode needs a "
                              "graph without cycles: every value is computed from values that existed before it")

    def finish(self):
        super().finish()
        self.model.source = "engine"
        self.model.engine = self.g


def build_foreign_model(root, view="forward", attrs=None, caller=None, fn="show_graph", graph=None) -> GraphModel:
    """The :class:`GraphModel` of a foreign engine's graph behind ``root`` (see the module docstring).

    ``graph``: a :class:`ForeignGraph` already walked (the recorder's: the model's ids then key its nodes)."""
    if view not in ("forward", "backward"):
        from ..errors import ArgumentError
        raise ArgumentError(f"{fn}: view must be 'forward' or 'backward', got {view!r}")
    if graph is None:
        graph = ForeignGraph(root, Protocol.resolve(root, attrs, fn))
    proto = graph.proto
    if not isinstance(caller, ForeignNames):
        caller = ForeignNames(proto, caller if caller is not None else sys._getframe(1))
    return _ForeignBuilder(graph, view, caller).build()


# ------------------------------------------------------------------ the real backward, recorded
@contextlib.contextmanager
def _room_to_recurse(n):
    """A recursive topological sort (micrograd's) needs a frame per graph level: allow one per node."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 4 * n + 1000))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _snap(a):
    return None if a is None else np.array(a, dtype=np.float64, copy=True)


class ForeignBackwardRecorder:
    """What a foreign engine's own ``backward()`` did: one :class:`gradlab.viz.record.BackwardStep` per node
    closure it called (``node_backward``, micrograd's ``_backward``), in the order it called them, with the
    gradient each sent to each input (the change in that input's grad). ``watched`` is False when the
    engine has no per-node closure to watch: the steps are then its values in reverse topological order."""

    def __init__(self, graph: ForeignGraph, limit=256):
        self.g, self.limit = graph, limit
        self.steps, self.start_bytes, self.watched = [], 0, False
        self._contrib = {}

    def _step(self, v):
        from .record import BackwardStep, Value
        g, proto = self.g, self.g.proto
        name = proto.op(v) or ("AccumulateGrad" if g.is_leaf(v) else type(v).__name__)
        step = BackwardStep(index=len(self.steps), node=g.node_of(v), name=name, formula=_formula(name),
                            grads_in=[Value.of(proto.grad(v), self.limit)], grads_out=[],
                            contributions=self._contrib.pop(id(v), []))
        if g.is_leaf(v):
            step.leaf_after = Value.of(proto.grad(v), self.limit)
        self.steps.append(step)
        return step

    def _sent(self, step, v, before):
        from .record import GradOut, Value, summed_axes
        g, proto = self.g, self.g.proto
        seen = set()
        vshape = proto.data(v).shape
        for i, c in enumerate(g.inputs(v)):
            if id(c) in seen:
                continue
            seen.add(id(c))
            after = proto.grad(c)
            b = before[i]
            if after is None or (b is not None and b.shape == after.shape and np.array_equal(b, after)):
                continue
            delta = after if b is None or b.shape != after.shape else after - b
            cshape = proto.data(c).shape
            axes = summed_axes(vshape, cshape) if tuple(vshape) != tuple(cshape) else None
            step.grads_out.append(GradOut(i, g.node_of(c), Value.of(delta, self.limit), axes))
            self._contrib.setdefault(id(c), []).append((g.node_of(v), i))

    def _wrap(self, v, orig):
        g, proto = self.g, self.g.proto

        def watched(*args, **kwargs):
            step = self._step(v)
            before = [_snap(proto.grad(c)) for c in g.inputs(v)]
            out = orig(*args, **kwargs)
            self._sent(step, v, before)
            return out
        return watched

    def run(self, gradient=None, fn="animate_backward"):
        g, proto = self.g, self.g.proto
        root = g.root
        bw_name, node_bw = proto.names["backward"], proto.names["node_backward"]
        if bw_name is None:
            raise GradError(f"{fn}: a {type(root).__name__} has no backward() method to run; pass "
                            "attrs={'backward': 'name_of_its_method'}")
        wrapped = []
        if node_bw is not None:
            for v in g.order:
                d = getattr(v, "__dict__", None)
                orig = getattr(v, node_bw, None)
                if d is None or not callable(orig):
                    continue
                try:
                    setattr(v, node_bw, self._wrap(v, orig))
                except (AttributeError, TypeError):
                    continue
                wrapped.append((v, node_bw in d, d.get(node_bw)))
        self.watched = bool(wrapped)
        self._contrib[id(root)] = [(None, 0)]
        try:
            with _room_to_recurse(len(g.order)):
                method = getattr(root, bw_name)
                if gradient is None:
                    method()
                else:
                    method(gradient)
        except Exception as exc:   # the engine's own error, as it raised it: its traceback points at its code
            exc.add_note(f"(raised by the engine's own {type(root).__name__}.{bw_name}(), which {fn} ran)")
            raise
        finally:
            for v, own, orig in wrapped:
                if own:
                    setattr(v, node_bw, orig)
                else:
                    delattr(v, node_bw)
        if not self.watched:
            for v in g.backward_order():
                self._step(v)
        return self


__all__ = ["Protocol", "EngineProtocolError", "is_engine_value", "ForeignGraph", "build_foreign_model",
           "ForeignBackwardRecorder", "DEFAULT_ATTRS", "registry_name"]
