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

import sys
import weakref

from .._tensor import Tensor
from ..autograd.function import AccumulateGrad
from ..backend.device import device_of_array
from ..ops.registry import formula_of
from .graph_base import FrameNames, GraphBuilder, collect_nodes
from .nodes import (  # noqa: F401 - re-exported: the model's types live in nodes.py
    ROLES,
    Edge,
    GradSummary,
    GraphModel,
    MemoryTotals,
    OpNode,
    SavedInfo,
    TensorNode,
    _dname,
    grad_summary,
    is_parameter,
    no_gc,
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


class CallerNames(FrameNames):
    """What the caller's code calls things (see :class:`graph_base.FrameNames`), for gradlab tensors.

    ``data`` is keyed by ``id(t.data)`` and holds the tensor's own name where it has one.
    """

    def _is_tensor(self, v) -> bool:
        return isinstance(v, Tensor)

    def _is_module(self, v) -> bool:
        return _is_module(v)

    def _note_data(self, t, k):
        self._data.setdefault(id(t._data), t.name or k)


def _is_module(v) -> bool:
    try:
        from ..nn import Module
    except Exception:  # pragma: no cover - nn always imports
        return False
    return isinstance(v, Module)


def collect(root_fn):
    """Every node reachable from ``root_fn`` (explicit stack, no recursion), ops sorted by seq."""
    return collect_nodes(root_fn, lambda n: type(n) is AccumulateGrad,
                         lambda n: [e[0] for e in n.next_functions if e is not None], lambda n: n.seq)


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
    return b.build(named)


class _Builder(GraphBuilder):
    # ------------------------------------------------------------ hooks (see graph_base.GraphBuilder)
    def _own_name(self, t):
        return t.name

    def _output_nr(self, t):
        return t._output_nr

    def _out_meta(self, n, nr):
        sh, dt = n.out_meta[nr]
        return tuple(sh), _dname(dt)

    @staticmethod
    def _label(t):
        return f"'{t.name}'" if t.name else f"this tensor (shape {tuple(t.shape)})"

    def _single_node_start(self, t):
        self.backward_ran = t.grad is not None
        self.node_ids, self.id_for_seq = weakref.WeakKeyDictionary(), {}
        if t._acc_ref is not None and t._acc_ref() is not None:
            self.node_ids[t._acc_ref()] = "leaf0"

    def _saved_entries(self):
        for n in self.ops:
            for s in n.saved:
                yield (id(s._data) if s._data is not None else id(s)), s.nbytes

    def _released(self) -> bool:
        return any(n._released for n in self.ops)

    def _tensor_node(self, nid, t, role, order):
        name, gen, aliases = self._name_aliases(t, role)
        return TensorNode(
            id=nid, name=name, role=role, shape=tuple(t.shape), dtype=_dname(t.dtype), device=str(t.device),
            requires_grad=bool(t.requires_grad), nbytes=int(t._data.nbytes), grad=grad_summary(t.grad),
            generated_name=gen, order=order, aliases=aliases)

    def _constant_name(self, n, i, im):
        """A no-grad input is not kept by the graph; what op ``n`` saved may say what it was called."""
        c = self.caller
        shape = tuple(im[0])
        for s in n.saved:
            if s.output_nr is not None or s.shape is None or tuple(s.shape) != shape:
                continue
            if s._data is not None and c and id(s._data) in c._data:
                return c._data[id(s._data)]
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
                if s._data is not None:
                    dev = str(device_of_array(s._data))
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
                        cname, gen = self._next_constant(self._constant_name(n, i, im))
                        self.nodes[cid] = TensorNode(
                            id=cid, name=cname, role="constant", shape=tuple(im[0]),
                            dtype=_dname(im[1]), order=order, generated_name=gen)
                        order += 1
                        self._edge(cid, nid, i, *_meta(im))
                    continue
                src, nr = e
                if type(src) is AccumulateGrad:
                    lid = self.leaf_of.get(src)
                    if lid is None:
                        lid = self._add_leaf(src, order)
                        order += 1
                    in_devs.append(self.nodes[lid].device)
                    if self.backward:
                        self._edge(nid, lid, i, *_meta(im))
                    else:
                        self._edge(lid, nid, i, *_meta(im))
                else:
                    sid = op_id[src]
                    in_devs.append(devices.get(sid))
                    vid = self._value(src, nr, order)
                    if self.backward:
                        self._edge(nid, vid or sid, i, *_meta(im))
                    else:
                        self._edge(vid or sid, nid, i, *_meta(im))
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


def _meta(im):
    """``(shape, dtype name)`` of an ``input_meta`` entry (``(None, None)`` when there is none)."""
    return (tuple(im[0]), _dname(im[1])) if im is not None else (None, None)
