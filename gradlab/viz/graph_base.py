"""What the two graph readers share: gradlab's (``model.py``) and PyTorch's (``torch_graph.py``).

Both turn an autograd graph into the same :class:`GraphModel`, with the same
ids, edges, notes and memory totals; they differ only in how a graph is read
(gradlab's ``out_meta`` and ``saved`` records, PyTorch's ``_input_metadata`` and
``_saved_*`` attributes) and in a few words (``no_grad()`` /
``torch.no_grad()``). :class:`FrameNames` reads the caller's variable names,
:class:`GraphBuilder` builds the model; each backend subclasses them and fills
in the small hooks (``_own_name``, ``_output_nr``, ``_out_meta`` ...).

Nothing here imports torch.
"""
from __future__ import annotations

import os
import sys

from .nodes import Edge, GraphModel, MemoryTotals, is_parameter, no_gc

_GRADLAB_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def collect_nodes(root_fn, is_acc, sources, seq):
    """Every node reachable from ``root_fn`` (explicit stack, no recursion): ``(ops sorted by seq(n),
    AccumulateGrad nodes in order of first use)``. ``sources(n)``: the nodes ``n`` takes inputs from."""
    seen = {root_fn}
    stack = [root_fn]
    ops, accs = [], []
    while stack:
        n = stack.pop()
        (accs if is_acc(n) else ops).append(n)
        for src in sources(n):
            if src not in seen:
                seen.add(src)
                stack.append(src)
    ops.sort(key=seq)
    return ops, accs


class FrameNames:
    """What the caller's code calls things: names of the tensors and modules bound in user frames.

    Walks the frames outside gradlab (innermost first: a function's locals, then
    its module's or the notebook's globals) once. ``tensor[id(t)]`` is the
    variable a tensor is bound to, ``data[...]`` the same keyed by its array (a
    constant input is only known to the graph by what it saved), ``param[id(p)]``
    every qualified name of a Module parameter (``blocks.0.attn.qkv.weight``; a
    tied weight has two), from the modules bound in those frames (and
    ``modules``), biggest first.

    Hooks: ``_is_tensor``, ``_is_module``, ``_note_data`` (how a tensor's array is
    keyed) and ``_note_module`` (anything else to read from a module).
    """

    def __init__(self, frame=None, max_frames=12, modules=()):
        self.tensor, self._data, self.param, self.module_types = {}, {}, {}, {}
        mods = list(modules)
        seen_ns = set()
        f = frame if frame is not None else sys._getframe(1)
        n = 0
        while f is not None and n < max_frames:
            fn = f.f_code.co_filename
            if not os.path.abspath(fn).startswith(_GRADLAB_DIR) and not fn.startswith("<frozen"):
                n += 1
                for ns in (f.f_locals, f.f_globals):
                    if id(ns) in seen_ns:
                        continue
                    seen_ns.add(id(ns))
                    for k, v in list(ns.items()):
                        if not isinstance(k, str) or k.startswith("_") or not k.isidentifier():
                            continue
                        if self._is_tensor(v):
                            self.tensor.setdefault(id(v), k)
                            self._note_data(v, k)
                        elif self._is_module(v) and all(v is not m for m in mods):
                            mods.append(v)
            f = f.f_back
        self.add_modules(mods)

    def add_modules(self, mods):
        sized = []
        for m in mods:
            try:
                named = list(m.named_parameters(remove_duplicate=False))
            except Exception:  # noqa: BLE001 - a user Module with an unusual named_parameters
                continue
            sized.append((len(named), named))
            self._note_module(m)
        sized.sort(key=lambda x: -x[0])
        for _, named in sized:
            fresh = {}
            for qn, p in named:
                if id(p) not in self.param:
                    fresh.setdefault(id(p), []).append(qn)
            self.param.update(fresh)

    def __bool__(self):
        return bool(self.tensor or self.param)

    # hooks
    def _is_tensor(self, v) -> bool:
        raise NotImplementedError

    def _is_module(self, v) -> bool:
        raise NotImplementedError

    def _note_data(self, t, k):
        pass

    def _note_module(self, m):
        pass


class GraphBuilder:
    """Builds a :class:`GraphModel`: names, leaves, drawn values, edges, ``params=`` extras, notes, totals.

    A backend's subclass writes ``walk()`` (reading its graph, calling
    ``_add_leaf``, ``_value`` and ``_edge``) and the hooks below.
    """

    NO_GRAD = "no_grad()"                       # how the no-grad block is written in the notes
    NO_GRAPH = "no graph was recorded"
    NOT_REACHED = ("backward() ran but this leaf's .grad is None: it was left out with backward(inputs=...), "
                   "its .grad was reset afterwards, or no gradient reached it (a non-differentiable path)")
    RELEASED_NOTE = "backward() already ran without retain_graph=True, so the saved tensors are freed"

    def __init__(self, root, view, names, caller=None):
        self.root, self.view, self.names = root, view, names
        self.caller = caller
        self.backward = view == "backward"
        self.nodes, self.edges = {}, []
        self.counts = {"p": 0, "x": 0, "c": 0, "t": 0}
        self.leaf_of = {}          # AccumulateGrad -> leaf id
        self.leaf_tensors = {}     # id(tensor) -> leaf id
        self.shown = {}            # (op node, output_nr) -> value node id
        self.notes = []
        self.ops = []
        self.model = None

    def build(self, named) -> GraphModel:
        """Walk the graph, add the ``named`` ``(name, tensor)`` pairs it does not reach, and return the model."""
        self.named_values = [t for _, t in named if t.grad_fn is not None]
        with no_gc():
            self.walk()
            self.add_params(named)
            self.finish()
        return self.model

    # ------------------------------------------------------------ hooks
    def _own_name(self, t):
        """The name the tensor carries itself (``t.name``), or None."""
        raise NotImplementedError

    def _output_nr(self, t):
        raise NotImplementedError

    def _out_meta(self, n, nr):
        """``(shape tuple, dtype name)`` of output ``nr`` of op ``n``."""
        raise NotImplementedError

    def _label(self, t):
        return f"this tensor (shape {tuple(t.shape)})"

    def _single_node_start(self, t):
        """Set ``backward_ran`` and the (empty) id maps for a root without a graph."""
        raise NotImplementedError

    def _saved_entries(self):
        """``(key, bytes)`` for every saved tensor; a key seen twice is counted once."""
        raise NotImplementedError

    def _released(self) -> bool:
        raise NotImplementedError

    # ------------------------------------------------------------ names
    def _name(self, t, prefix):
        if t is not None and id(t) in self.names:
            return self.names[id(t)], False
        own = self._own_name(t) if t is not None else None
        if own:
            return own, False
        c = self.caller
        if t is not None and c:
            qn = c.param.get(id(t))
            if qn:
                return qn[0], False
            var = c.tensor.get(id(t))
            if var:
                return var, False
        k = self.counts[prefix]
        self.counts[prefix] += 1
        return f"{prefix}{k}", True

    def _name_aliases(self, t, role):
        """``(name, generated?, aliases)`` for a tensor node of ``role``."""
        name, gen = self._name(t, {"parameter": "p", "leaf": "x", "constant": "c"}.get(role, "t"))
        aliases = []
        if self.caller and role in ("parameter", "leaf"):
            aliases = [a for a in self.caller.param.get(id(t), ()) if a != name]
        return name, gen, aliases

    def _next_constant(self, cname):
        """A constant's name: ``cname``, or the next generated ``c<k>``; and whether it was generated."""
        if cname is not None:
            return cname, False
        k = self.counts["c"]
        self.counts["c"] += 1
        return f"c{k}", True

    # ------------------------------------------------------------ nodes and edges
    def _add_leaf(self, acc, order):
        v = acc.variable
        lid = f"leaf{len(self.leaf_of)}"
        self.leaf_of[acc] = lid
        self.leaf_tensors[id(v)] = lid
        self.nodes[lid] = self._tensor_node(lid, v, "parameter" if is_parameter(v) else "leaf", order)
        return lid

    def _value(self, n, nr, order, t=None):
        """The id of the node drawn for output ``nr`` of op ``n`` (None if not drawn)."""
        key = (n, nr)
        vid = self.shown.get(key)
        if vid is not None:
            return vid
        t = t if t is not None else self.want.get(key)
        if t is None:
            return None
        sid = self.op_id[n]
        vid = f"{sid}_out{nr}"
        self.shown[key] = vid
        role = "output" if t is self.root else "intermediate"
        tn = self._tensor_node(vid, t, role, order)
        if role == "output" and tn.generated_name:
            tn.name = "output"      # drawn as just "output" (the role is not repeated)
        self.nodes[vid] = tn
        sh, dt = self._out_meta(n, nr)
        if self.backward:
            # the root's gradient starts the backward; a retained tensor's .grad is filled on the way through
            eid = "g_start" if role == "output" else f"g_{sid}_out{nr}"
            self.edges.append(Edge(eid, vid, sid, sh, dt, "grad"))
        else:
            self.edges.append(Edge(f"e_{sid}_out{nr}", sid, vid, sh, dt, "data"))
        return vid

    def _edge(self, src, dst, i, shape, dt):
        if self.backward:
            self.edges.append(Edge(f"g_{src}_in{i}", src, dst, shape, dt, "grad"))
        else:
            self.edges.append(Edge(f"e_{dst}_in{i}", src, dst, shape, dt, "data"))

    def _single_node(self):
        t = self.root
        self._single_node_start(t)
        label = self._label(t)
        if t.requires_grad:
            role = "parameter" if is_parameter(t) else "leaf"
            why = (f"{label} is a leaf: you created it, no op computed it, so there is no graph behind it. "
                   "Compute something from it (y = x * 2) and show y")
        else:
            role = "constant"
            why = (f"{label} does not require grad, so {self.NO_GRAPH}: it was computed under "
                   f"{self.NO_GRAD} (or detached), or none of its inputs had requires_grad=True. "
                   "Set requires_grad=True on the inputs (outside no_grad) to record one")
        self.nodes["leaf0"] = self._tensor_node("leaf0", t, role, 0)
        self.root_id = "leaf0"
        self.leaf_tensors[id(t)] = "leaf0"
        self.notes.append(why)

    # ------------------------------------------------------------ after the walk
    def add_params(self, named):
        """Tensors passed with ``params=`` that the root does not reach: drawn apart, marked."""
        k = 0
        for name, t in named:
            if id(t) in self.leaf_tensors or t is self.root:
                continue
            fn = t.grad_fn
            if fn is not None and fn in getattr(self, "op_id", {}):
                self._value(fn, self._output_nr(t), len(self.nodes), t)
                continue
            nid = f"extra{k}"
            k += 1
            role = "parameter" if is_parameter(t) else ("leaf" if fn is None else "intermediate")
            tn = self._tensor_node(nid, t, role, len(self.nodes))
            tn.in_graph = False
            if t.requires_grad:
                tn.missing_grad = True
                tn.missing_reason = (
                    f"not reached from {self.nodes[self.root_id].name}: it was not used, or it was used under "
                    f"{self.NO_GRAD} or through .detach(), so backward() will never give it a gradient")
            self.nodes[nid] = tn

    def finish(self):
        notes = list(self.notes)
        mem = MemoryTotals()
        seen_saved = set()
        for key, nb in self._saved_entries():
            if key not in seen_saved:
                seen_saved.add(key)
                mem.saved += nb
        for tn in self.nodes.values():
            if tn.kind != "tensor":
                continue
            if tn.role == "parameter":
                mem.parameters += tn.nbytes
            elif tn.role == "leaf" and tn.requires_grad:
                mem.leaves += tn.nbytes
            if tn.grad is not None:
                mem.gradients += tn.grad.nbytes
            if (self.backward_ran and tn.in_graph and tn.role in ("leaf", "parameter") and tn.requires_grad
                    and tn.grad is None and self.ops):
                tn.missing_grad = True
                tn.missing_reason = self.NOT_REACHED
        missing = [t for t in self.nodes.values() if t.kind == "tensor" and t.missing_grad]
        for t in missing[:5]:
            notes.append(f"'{t.name}' has no grad: {t.missing_reason}")
        if len(missing) > 5:
            notes.append(f"... and {len(missing) - 5} more tensors without a grad")
        if self._released():
            notes.append(self.RELEASED_NOTE)
        users = {}
        for e in self.edges:
            a, b = (e.dst, e.src) if self.backward else (e.src, e.dst)   # (tensor, op) in either view
            ta, ob = self.nodes.get(a), self.nodes.get(b)
            if ta is not None and ob is not None and ta.kind == "tensor" and ob.kind == "op" and \
                    ta.role in ("parameter", "leaf"):
                lst = users.setdefault(a, [])
                mod = ob.module if ob.module is not None else ""
                if mod not in lst:
                    lst.append(mod)
        for a, lst in users.items():
            if len(lst) > 1:
                self.nodes[a].users = [m or "(top level)" for m in lst]
        if self.backward:
            incoming = {}
            for e in self.edges:
                incoming[e.dst] = incoming.get(e.dst, 0) + 1
            for nid, k in incoming.items():
                self.nodes[nid].accumulates = k
        self.model = GraphModel(
            view=self.view, root_id=self.root_id, nodes=self.nodes, edges=self.edges, memory=mem,
            backward_ran=self.backward_ran, notes=notes, node_ids=self.node_ids, id_for_seq=self.id_for_seq,
            root_name=self.nodes[self.root_id].name)
