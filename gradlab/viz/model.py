"""Read a finished autograd graph into a plain :class:`GraphModel`.

Nothing here draws. The model is a list of dataclasses (tensor nodes, op
nodes, edges, memory totals) that the renderer (``render.py``), the
collapser (``collapse.py``) and the backward animation read. It never holds
the graph's tensors, only summaries, so a model kept in a notebook's output
history keeps no activations alive.

Two views of the same graph (``build_model(root, view=...)``):

* ``"forward"``: how the value was computed. Leaves and constants at the top,
  one op node per recorded op, edges labelled with the shape that flows.
* ``"backward"``: how the gradient flows: from the output, through one node
  per backward function, into the leaves' ``.grad``. A node that receives
  gradients from two or more consumers is an *accumulation point*
  (``accumulates >= 2``): the engine adds those gradients up there.

Stable ids (they become SVG element ids the widgets address):

* ``op<r>``        the op (backward function) created r-th in this graph
                   (rank of ``node.seq``, 0 = earliest), in both views;
* ``leaf<r>``      the r-th leaf, in order of first use (both views; in the
                   backward view it stands for the leaf's ``AccumulateGrad``);
* ``op<r>_out<k>`` a value shown as its own node (the root, tensors passed
                   with ``params=``, tensors that ``retain_grad()``);
* ``op<r>_in<i>``  a constant (no-grad tensor) fed to input i of op r;
* edges ``e_<dst>_in<i>`` (forward), ``g_<src>_in<i>`` (backward: the
  gradient for input i of ``src``), ``e_<op>_out<k>`` / ``g_start``.

``model.node_ids[graph_node]`` gives the id for a backward node object
(``Function`` or ``AccumulateGrad``); ``model.id_for_seq[node.seq]`` the same
keyed by creation number. The walk is an explicit stack: a 100 000-op chain is fine.
"""
from __future__ import annotations

import os
import sys
import weakref

from ..autograd.function import AccumulateGrad
from ..backend.device import device_of_array
from ..ops.registry import formula_of
from .._tensor import Tensor
from .nodes import (  # noqa: F401 - re-exported: the model's types live in nodes.py
    ROLES, Edge, GradSummary, GraphModel, MemoryTotals, OpNode, SavedInfo, TensorNode, _dname, grad_summary,
    is_parameter, no_gc,
)


def _named(params):
    """``params=`` as (name or None, tensor) pairs: a dict, ``named_parameters()``, or tensors."""
    if params is None:
        return []
    if isinstance(params, Tensor):
        return [(None, params)]
    if isinstance(params, dict):
        items = list(params.items())
    else:
        items = [p if isinstance(p, tuple) and len(p) == 2 else (None, p) for p in params]
    for name, t in items:
        if not isinstance(t, Tensor):
            raise TypeError(f"show_graph: params must be Tensors (or name -> Tensor), got {type(t).__name__}"
                            f"{' for ' + repr(name) if name else ''}")
    return items


_GRADLAB_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class CallerNames:
    """What the caller's code calls things: names of the tensors and modules bound in user frames.

    Walks the frames outside gradlab (innermost first: a function's locals, then
    its module's or the notebook's globals) once. ``tensor[id(t)]`` is the
    variable a tensor is bound to, ``data[id(t.data)]`` the same keyed by its
    array (a constant input is only known to the graph by what it saved),
    ``param[id(p)]`` every qualified name of a Module parameter
    (``blocks.0.attn.qkv.weight``; a tied weight has two), from the modules bound
    in those frames, biggest first.
    """

    def __init__(self, frame=None, max_frames=12):
        from .._tensor import Tensor
        self.tensor, self.data, self.param = {}, {}, {}
        modules = []
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
                        if isinstance(v, Tensor):
                            self.tensor.setdefault(id(v), k)
                            self.data.setdefault(id(v.data), v.name or k)
                        elif _is_module(v):
                            modules.append(v)
            f = f.f_back
        mods = []
        for m in modules:
            if all(m is not o for o in mods):
                mods.append(m)
        sizes = []
        for m in mods:
            try:
                named = list(m.named_parameters(remove_duplicate=False))
            except Exception:  # noqa: BLE001 - a user Module with an unusual named_parameters
                continue
            sizes.append((len(named), named))
        sizes.sort(key=lambda x: -x[0])
        for _, named in sizes:
            fresh = {}
            for qn, p in named:
                if id(p) not in self.param:
                    fresh.setdefault(id(p), []).append(qn)
            self.param.update(fresh)

    def __bool__(self):
        return bool(self.tensor or self.param)


def _is_module(v) -> bool:
    try:
        from ..nn import Module
    except Exception:  # pragma: no cover - nn always imports
        return False
    return isinstance(v, Module)


def collect(root_fn):
    """Every node reachable from ``root_fn`` (explicit stack, no recursion), ops sorted by seq."""
    seen = {root_fn}
    stack = [root_fn]
    ops, accs = [], []
    while stack:
        n = stack.pop()
        (accs if type(n) is AccumulateGrad else ops).append(n)
        for e in n.next_functions:
            if e is not None and e[0] not in seen:
                seen.add(e[0])
                stack.append(e[0])
    ops.sort(key=lambda n: n.seq)
    return ops, accs


def build_model(root, view: str = "forward", params=None, caller=None) -> GraphModel:
    """Read the graph behind tensor ``root`` into a :class:`GraphModel`.

    ``params``: tensors to name and to check (a dict name -> tensor, the pairs
    of ``model.named_parameters()``, or tensors). Named leaves take those
    names; named intermediate tensors are drawn as their own nodes; tensors
    that require grad but that ``root`` does not reach are drawn apart and
    marked "missing grad".

    ``caller``: a :class:`CallerNames` (or a frame to read one from): leaves
    without a ``name`` take the variable they are bound to, Module parameters
    their qualified name; by default the calling code's frames are read.
    """
    if not isinstance(root, Tensor):
        from . import torch_graph
        if torch_graph.is_torch_tensor(root):   # a PyTorch graph: read by the adapter (imports nothing new)
            return torch_graph.build_torch_model(root, view=view, params=params,
                                                 caller=caller if caller is not None else sys._getframe(1))
        from .show import NotATensorError
        raise NotATensorError(
            f"show_graph: expected a gradlab Tensor or a torch.Tensor (e.g. the loss), got {type(root).__name__}; "
            "pass the tensor whose graph you want to see")
    if view not in ("forward", "backward"):
        from ..errors import ArgumentError
        raise ArgumentError(f"show_graph: view must be 'forward' or 'backward', got {view!r}")
    named = _named(params)
    names = {}
    for name, t in named:
        if name is not None:
            names.setdefault(id(t), name)
    if caller is None or not isinstance(caller, CallerNames):
        caller = CallerNames(caller if caller is not None else sys._getframe(1))
    b = _Builder(root, view, names, caller)
    b.named_values = [t for _, t in named if t.grad_fn is not None]
    with no_gc():
        b.walk()
        b.add_params(named)
        b.finish()
    return b.model


class _Builder:
    def __init__(self, root, view, names, caller=None):
        self.root, self.view, self.names = root, view, names
        self.caller = caller
        self.backward = view == "backward"
        self.nodes, self.edges = {}, []
        self.counts = {"p": 0, "x": 0, "c": 0, "t": 0}
        self.leaf_of = {}          # AccumulateGrad -> leaf id
        self.leaf_tensors = {}     # id(tensor) -> leaf id
        self.shown = {}            # (op node, output_nr) -> value node id
        self.model = None

    # ------------------------------------------------------------ names
    def _name(self, t, prefix):
        if t is not None and id(t) in self.names:
            return self.names[id(t)], False
        if t is not None and t.name:
            return t.name, False
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

    def _tensor_node(self, nid, t, role, order):
        name, gen = self._name(t, {"parameter": "p", "leaf": "x", "constant": "c"}.get(role, "t"))
        aliases = []
        if self.caller and role in ("parameter", "leaf"):
            aliases = [a for a in self.caller.param.get(id(t), ()) if a != name]
        return TensorNode(
            id=nid, name=name, role=role, shape=tuple(t.shape), dtype=_dname(t.dtype), device=str(t.device),
            requires_grad=bool(t.requires_grad), nbytes=int(t.data.nbytes), grad=grad_summary(t.grad),
            generated_name=gen, order=order, aliases=aliases)

    def _constant_name(self, n, i, im):
        """A no-grad input is not kept by the graph; what op ``n`` saved may say what it was called."""
        c = self.caller
        shape = tuple(im[0])
        for s in n.saved:
            if s.output_nr is not None or s.shape is None or tuple(s.shape) != shape:
                continue
            if s.data is not None and c and id(s.data) in c.data:
                return c.data[id(s.data)]
        if not self.backward:
            # an input the op saved under its tensor's own name (x.name = "x")
            named = [s.name for s in n.saved if s.output_nr is None and s.name and s.shape is not None
                     and tuple(s.shape) == shape and s.tensor is None]
            if len(named) == 1:
                return named[0]
        return None

    # ------------------------------------------------------------- walk
    def walk(self):
        root = self.root
        fn = root.grad_fn
        if fn is None:
            self._single_node()
            return
        ops, accs = collect(fn)
        self.ops = ops
        node_ids = weakref.WeakKeyDictionary()
        id_for_seq = {}
        op_id = {}
        for r, n in enumerate(ops):
            op_id[n] = f"op{r}"
            node_ids[n] = op_id[n]
            id_for_seq[n.seq] = op_id[n]
        self.op_id = op_id
        # values drawn as nodes: the root, retained tensors, named intermediates
        want = {(fn, root._output_nr): root}
        for n in ops:
            if n._retained:
                for nr, ref in n._retained.items():
                    t = ref()
                    if t is not None:
                        want.setdefault((n, nr), t)
        for t in self.named_values:          # intermediates passed with params=: drawn in place
            if t.grad_fn in op_id:
                want.setdefault((t.grad_fn, t._output_nr), t)
        self.want = want
        self.backward_ran = any(n._released for n in ops) or any(
            a.variable.grad is not None for a in accs) or root.grad is not None
        devices = {}
        order = 0
        for r, n in enumerate(ops):
            nid = op_id[n]
            raw_saved = n.saved
            saved = [SavedInfo(s.name, tuple(s.shape) if s.shape is not None else None, _dname(s.dtype),
                               s.nbytes, s.output_nr is not None) for s in raw_saved]
            dev = None
            for s in raw_saved:
                if s.data is not None:
                    dev = str(device_of_array(s.data))
                    break
            meta = n.meta if isinstance(n.meta, dict) else {}
            op = OpNode(
                id=nid, op=n.name, formula=formula_of(n), seq=n.seq, saved=saved,
                saved_bytes=sum(s.nbytes for s in saved), saved_freed=bool(n._released),
                out_shapes=tuple(tuple(m[0]) for m in n.out_meta), out_dtypes=tuple(_dname(m[1]) for m in n.out_meta),
                module=meta.get("module"), module_type=meta.get("module_type"), order=order)
            order += 1
            in_devs = []
            for i, e in enumerate(n.next_functions):
                im = n.input_meta[i] if i < len(n.input_meta) else None
                if e is None:
                    if im is not None and not self.backward:
                        cid = f"{nid}_in{i}"
                        cname = self._constant_name(n, i, im)
                        if cname is None:
                            k = self.counts["c"]
                            self.counts["c"] += 1
                        self.nodes[cid] = TensorNode(
                            id=cid, name=cname or f"c{k}", role="constant", shape=tuple(im[0]),
                            dtype=_dname(im[1]), order=order, generated_name=cname is None)
                        order += 1
                        self._edge(cid, nid, i, im)
                    continue
                src, nr = e
                if type(src) is AccumulateGrad:
                    lid = self.leaf_of.get(src)
                    if lid is None:
                        lid = self._add_leaf(src, order)
                        order += 1
                    in_devs.append(self.nodes[lid].device)
                    if self.backward:
                        self._edge(nid, lid, i, im)
                    else:
                        self._edge(lid, nid, i, im)
                else:
                    sid = op_id[src]
                    in_devs.append(devices.get(sid))
                    vid = self._value(src, nr, order)
                    if self.backward:
                        self._edge(nid, vid or sid, i, im)
                    else:
                        self._edge(vid or sid, nid, i, im)
            op.device = dev or next((d for d in in_devs if d), None) or "cpu"
            devices[nid] = op.device
            self.nodes[nid] = op
        for (n, nr), t in want.items():
            self._value(n, nr, order, t)
        for vid in self.shown.values():
            v = self.nodes[vid]
            v.device = devices.get(vid.split("_out")[0], v.device)
        self.node_ids, self.id_for_seq = node_ids, id_for_seq
        for a, lid in self.leaf_of.items():
            node_ids[a] = lid
        rid = self.shown[(fn, root._output_nr)]
        self.root_id = rid

    def _add_leaf(self, acc, order):
        v = acc.variable
        lid = f"leaf{len(self.leaf_of)}"
        self.leaf_of[acc] = lid
        self.leaf_tensors[id(v)] = lid
        role = "parameter" if is_parameter(v) else "leaf"
        self.nodes[lid] = self._tensor_node(lid, v, role, order)
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
        sh, dt = n.out_meta[nr]
        if self.backward:
            if role == "output":
                self.edges.append(Edge("g_start", vid, sid, tuple(sh), _dname(dt), "grad"))
            else:
                # a retained tensor: its .grad is filled on the way through
                self.edges.append(Edge(f"g_{sid}_out{nr}", vid, sid, tuple(sh), _dname(dt), "grad"))
        else:
            self.edges.append(Edge(f"e_{sid}_out{nr}", sid, vid, tuple(sh), _dname(dt), "data"))
        return vid

    def _edge(self, src, dst, i, im):
        shape, dt = (tuple(im[0]), _dname(im[1])) if im is not None else (None, None)
        if self.backward:
            self.edges.append(Edge(f"g_{src}_in{i}", src, dst, shape, dt, "grad"))
        else:
            self.edges.append(Edge(f"e_{dst}_in{i}", src, dst, shape, dt, "data"))

    def _single_node(self):
        t = self.root
        self.ops = []
        self.backward_ran = t.grad is not None
        if t.requires_grad:
            role = "parameter" if is_parameter(t) else "leaf"
            why = (f"{self._label(t)} is a leaf: you created it, no op computed it, so there is no graph behind it. "
                   "Compute something from it (y = x * 2) and show y")
        else:
            role = "constant"
            why = (f"{self._label(t)} does not require grad, so no graph was recorded: it was computed under "
                   "no_grad() (or detached), or none of its inputs had requires_grad=True. "
                   "Set requires_grad=True on the inputs (outside no_grad) to record one")
        self.nodes["leaf0"] = self._tensor_node("leaf0", t, role, 0)
        self.root_id = "leaf0"
        self.node_ids, self.id_for_seq = weakref.WeakKeyDictionary(), {}
        if t._acc_ref is not None and t._acc_ref() is not None:
            self.node_ids[t._acc_ref()] = "leaf0"
        self.leaf_tensors[id(t)] = "leaf0"
        self.notes = [why]

    @staticmethod
    def _label(t):
        return f"'{t.name}'" if t.name else f"this tensor (shape {tuple(t.shape)})"

    def add_params(self, named):
        """Tensors passed with ``params=`` that the root does not reach: drawn apart, marked."""
        k = 0
        for name, t in named:
            if id(t) in self.leaf_tensors or t is self.root:
                continue
            fn = t.grad_fn
            if fn is not None and fn in getattr(self, "op_id", {}):
                self._value(fn, t._output_nr, len(self.nodes), t)
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
                    "no_grad() or through .detach(), so backward() will never give it a gradient")
            self.nodes[nid] = tn

    def finish(self):
        notes = list(getattr(self, "notes", []))
        mem = MemoryTotals()
        seen_saved = set()
        for n in self.ops:
            for s in n.saved:
                key = id(s.data) if s.data is not None else id(s)
                if key not in seen_saved:
                    seen_saved.add(key)
                    mem.saved += s.nbytes
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
                tn.missing_reason = (
                    "backward() ran but this leaf's .grad is None: it was left out with backward(inputs=...), "
                    "its .grad was reset afterwards, or no gradient reached it (a non-differentiable path)")
        missing = [t for t in self.nodes.values() if t.kind == "tensor" and t.missing_grad]
        for t in missing[:5]:
            notes.append(f"'{t.name}' has no grad: {t.missing_reason}")
        if len(missing) > 5:
            notes.append(f"... and {len(missing) - 5} more tensors without a grad")
        if any(n._released for n in self.ops):
            notes.append("backward() already ran without retain_graph=True, so the saved tensors are freed")
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
