"""Read a *PyTorch* autograd graph into gradlab's plain :class:`GraphModel`.

``gradlab.show_graph(loss)``, ``animate_backward(loss)``, ``graph_widget(loss)``,
``explain_grad`` and ``memory_report`` accept a ``torch.Tensor`` too: this
module turns PyTorch's graph into the same dataclasses that gradlab's own
graph becomes (``model.py``), so the renderer, the collapser and the widgets
draw it unchanged.

What is read, and from where:

* nodes: ``loss.grad_fn`` and every ``next_functions`` behind it (an explicit
  stack); ops are numbered in creation order (``node._sequence_nr()``), so the
  ids follow gradlab's scheme (``op<r>``, ``leaf<r>``, ``op<r>_out<k>``);
* leaves: the ``AccumulateGrad`` nodes and their ``.variable`` (shape, dtype,
  ``.grad``; ``nn.Parameter`` drawn as a parameter);
* shapes and dtypes: each node's ``_input_metadata`` (what its forward produced);
* saved tensors: the node's ``_saved_*`` attributes that hold tensors, with
  their bytes (``numel * element_size``; an array held by two nodes counted once
  in the totals);
* module names: ``track_modules(model)`` tags each node a module's forward
  created with ``node.metadata["module"]`` (PyTorch nodes have no such record
  of their own); parameter names come from ``named_parameters()`` of the
  modules bound in the caller's frames (or ``params=``);
* formulas: from gradlab's op registry where the PyTorch node has a gradlab
  twin (``MmBackward0`` -> matmul's), else none (the node's name is shown).

:func:`record_backward` runs PyTorch's ``backward()`` for real with node hooks
(``register_prehook`` / ``register_hook``) and records the order the engine
ran the nodes, the gradients in and out of each, and the leaves' ``.grad``
before and after, as :class:`gradlab.viz.record.BackwardStep` s.

Three files: ``torch_nodes.py`` reads one node (detection, conversions, saved tensors, the walk), this
file builds the :class:`GraphModel` (``build_torch_model``, ``track_modules``), ``torch_record.py``
records the real backward (``record_backward``). Every name of the three is importable from here.

Importing these modules never imports torch: detection goes by the type's module
name; torch is imported only when one of these functions is handed a torch
tensor (and then it is already imported, by whoever made the tensor).
"""
from __future__ import annotations

import contextlib
import sys

from .graph_base import FrameNames, GraphBuilder
from .nodes import GraphModel, OpNode, SavedInfo, TensorNode, grad_summary
from .torch_nodes import (  # noqa: F401 - re-exported: gradlab.viz.torch_graph is the adapter's public path
    NodeIds,
    _torch,
    collect,
    dtype_name,
    elementwise,
    formula_for,
    gradlab_op_for,
    is_accumulate,
    is_released,
    is_torch_module,
    is_torch_node,
    is_torch_tensor,
    nbytes,
    node_name,
    safe_grad,
    saved_or_freed,
    saved_tensors,
    shape_of_meta,
    storage_key,
    to_numpy,
)
from .torch_record import TorchBackwardRecorder, record_backward  # noqa: F401 - re-exported


# ------------------------------------------------------------------ names from the caller's frames
class TorchCallerNames(FrameNames):
    """The variables the caller's code binds torch tensors and modules to (see ``graph_base.FrameNames``).

    ``data`` is keyed by ``data_ptr()``; ``module_types[path]`` is the class name of each submodule.
    """

    def _is_tensor(self, v) -> bool:
        return is_torch_tensor(v)

    def _is_module(self, v) -> bool:
        return is_torch_module(v)

    def _note_data(self, t, k):
        try:
            self._data.setdefault(t.data_ptr(), k)
        except Exception:  # noqa: BLE001 - a tensor without storage
            pass

    def _note_module(self, m):
        for path, sub in m.named_modules():
            self.module_types.setdefault(path, type(sub).__name__)


# ------------------------------------------------------------------ module tags
def _flat_tensors(obj, out, depth=0):
    if depth > 4:
        return out
    if is_torch_tensor(obj):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            _flat_tensors(x, out, depth + 1)
    elif isinstance(obj, dict):
        for x in obj.values():
            _flat_tensors(x, out, depth + 1)
    return out


def _tagger(path, type_name):
    def hook(module, args, kwargs, output):
        stop = {t.grad_fn for t in _flat_tensors((args, kwargs), []) if t.grad_fn is not None}
        stack = [t.grad_fn for t in _flat_tensors(output, []) if t.grad_fn is not None]
        seen = set()
        while stack:
            n = stack.pop()
            if n in seen or n in stop:
                continue
            seen.add(n)
            if is_accumulate(n):
                continue
            md = n.metadata
            if "module" not in md:
                md["module"] = path
                md["module_type"] = type_name
            for src, _nr in n.next_functions:
                if src is not None and src not in seen and src not in stop:
                    stack.append(src)
    return hook


class track_modules(contextlib.ContextDecorator):
    """Tag every autograd node a module's forward creates with the module's path, for ``depth=``.

    ``with gradlab.viz.track_modules(model): loss = model(x)`` and then
    ``show_graph(loss, depth=2)`` draws ``blocks.0``, ``blocks.1``... as boxes
    (folded when identical), as for a gradlab model. PyTorch's nodes keep no
    record of the module that made them, so it is written into each node's
    ``metadata`` dict (``node.metadata["module"]``) by a forward hook on every
    submodule, which walks back from the module's outputs to its inputs. Also
    usable without ``with``: ``track_modules(model).start()`` / ``.stop()``.
    """

    def __init__(self, model):
        if not is_torch_module(model):
            from ..errors import ArgumentError
            raise ArgumentError(f"track_modules: expected a torch.nn.Module, got {type(model).__name__}")
        self.model = model
        self._handles = []

    def start(self):
        if not self._handles:
            for path, m in self.model.named_modules():
                self._handles.append(m.register_forward_hook(_tagger(path, type(m).__name__), with_kwargs=True))
        return self

    def stop(self):
        for h in self._handles:
            h.remove()
        self._handles = []

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


# ------------------------------------------------------------------ the model


def build_torch_model(root, view="forward", params=None, caller=None) -> GraphModel:
    """The :class:`GraphModel` of the PyTorch graph behind ``root`` (see the module docstring)."""
    if view not in ("forward", "backward"):
        from ..errors import ArgumentError
        raise ArgumentError(f"show_graph: view must be 'forward' or 'backward', got {view!r}")
    named, mods = _named(params)
    if not isinstance(caller, TorchCallerNames):
        caller = TorchCallerNames(caller if caller is not None else sys._getframe(1), modules=mods)
    b = _TorchBuilder(root, view, {id(t): n for n, t in named if n is not None}, caller)
    return b.build(named)


def _named(params):
    """``params=`` for torch: a Module, a dict, ``named_parameters()`` pairs or tensors -> (pairs, modules)."""
    if params is None:
        return [], []
    if is_torch_module(params):
        return list(params.named_parameters()), [params]
    if is_torch_tensor(params):
        return [(None, params)], []
    items = list(params.items()) if isinstance(params, dict) else [
        p if isinstance(p, tuple) and len(p) == 2 else (None, p) for p in params]
    for name, t in items:
        if not is_torch_tensor(t):
            raise TypeError(f"show_graph: params must be torch tensors here (the root is one), got "
                            f"{type(t).__name__}{' for ' + repr(name) if name else ''}")
    return items, []


class _TorchBuilder(GraphBuilder):
    NO_GRAD = "torch.no_grad()"
    NO_GRAPH = "PyTorch recorded no graph"
    NOT_REACHED = ("backward() ran but this leaf's .grad is None: it was left out with backward(inputs=...), "
                   "its .grad was reset afterwards (zero_grad), or no gradient reached it")
    RELEASED_NOTE = "backward() already ran without retain_graph=True, so PyTorch freed the saved tensors"

    def __init__(self, root, view, names, caller):
        super().__init__(root, view, names, caller)
        self.saved_keys = {}       # op id -> [(storage key, bytes)]
        self.released = False

    # ------------------------------------------------------------ hooks (see graph_base.GraphBuilder)
    def _own_name(self, t):
        own = getattr(t, "name", None)
        return own if isinstance(own, str) and own else None

    def _output_nr(self, t):
        return t.output_nr

    def _out_meta(self, n, nr):
        return shape_of_meta(n, nr)[:2]

    def _single_node_start(self, t):
        self.backward_ran = safe_grad(t) is not None
        self.op_id, self.id_for_seq = {}, {}

    def _saved_entries(self):
        for keys in self.saved_keys.values():
            yield from keys

    def _released(self) -> bool:
        return self.released

    def _tensor_node(self, nid, t, role, order):
        name, gen, aliases = self._name_aliases(t, role)
        g = safe_grad(t)
        gs = None
        if g is not None:
            gs = grad_summary(to_numpy(g))
            gs.dtype = dtype_name(g.dtype)
            gs.nbytes = nbytes(g)
        return TensorNode(id=nid, name=name, role=role, shape=tuple(t.shape), dtype=dtype_name(t.dtype),
                          device=str(t.device), requires_grad=bool(t.requires_grad), nbytes=nbytes(t), grad=gs,
                          generated_name=gen, order=order, aliases=aliases)

    # ------------------------------------------------------------- walk
    def walk(self):
        root = self.root
        fn = root.grad_fn
        self.node_ids = NodeIds()
        if fn is None:
            self._single_node()
            return
        ops, accs = collect(fn)
        self.ops = ops
        op_id = {}
        id_for_seq = {}
        for r, n in enumerate(ops):
            op_id[n] = f"op{r}"
            self.node_ids[n] = op_id[n]
            id_for_seq[n._sequence_nr()] = op_id[n]
        self.op_id, self.id_for_seq = op_id, id_for_seq
        want = {(fn, root.output_nr): root}
        for t in self.named_values:
            if t.grad_fn in op_id:
                want.setdefault((t.grad_fn, t.output_nr), t)
        self.want = want
        self.backward_ran = any(a.variable.grad is not None for a in accs)
        order = 0
        types = self.caller.module_types
        for r, n in enumerate(ops):
            nid = op_id[n]
            name = node_name(n)
            raw, freed = saved_or_freed(n)
            if freed:
                self.released = True
            saved = [SavedInfo(sn, tuple(t.shape), dtype_name(t.dtype), nbytes(t), sn.startswith("result"))
                     for sn, t in raw]
            self.saved_keys[nid] = [(storage_key(t), nbytes(t)) for _sn, t in raw]
            outs = [shape_of_meta(n, k) for k in range(len(n._input_metadata))]
            md = n.metadata
            module = md.get("module") if isinstance(md, dict) else None
            mtype = (md.get("module_type") or types.get(module)) if module is not None else None
            op = OpNode(id=nid, op=name, formula=formula_for(name), seq=n._sequence_nr(), saved=saved,
                        saved_bytes=sum(s.nbytes for s in saved), saved_freed=freed,
                        out_shapes=tuple(o[0] or () for o in outs), out_dtypes=tuple(o[1] or "?" for o in outs),
                        device=next((o[2] for o in outs if o[2]), "cpu"), module=module, module_type=mtype,
                        order=order)
            order += 1
            consts = None
            for i, (src, nr) in enumerate(n.next_functions):
                if src is None:
                    if not self.backward:
                        if consts is None:
                            consts = self._constant_inputs(n, raw)
                        cid = f"{nid}_in{i}"
                        shape, cdt, cname = consts.pop(0) if consts else (None, "?", None)
                        cname, gen = self._next_constant(cname)
                        self.nodes[cid] = TensorNode(id=cid, name=cname, role="constant",
                                                     shape=shape if shape is not None else (), dtype=cdt,
                                                     order=order, generated_name=gen)
                        order += 1
                        self._edge(cid, nid, i, shape, cdt if shape is not None else None)
                    continue
                shape, dt, _dev = shape_of_meta(src, nr)
                if is_accumulate(src):
                    lid = self.leaf_of.get(src)
                    if lid is None:
                        lid = self._add_leaf(src, order)
                        order += 1
                    if shape is None:
                        shape, dt = tuple(src.variable.shape), dtype_name(src.variable.dtype)
                    if self.backward:
                        self._edge(nid, lid, i, shape, dt)
                    else:
                        self._edge(lid, nid, i, shape, dt)
                else:
                    sid = op_id[src]
                    vid = self._value(src, nr, order)
                    if self.backward:
                        self._edge(nid, vid or sid, i, shape, dt)
                    else:
                        self._edge(vid or sid, nid, i, shape, dt)
            self.nodes[nid] = op
        for (n, nr), t in want.items():
            self._value(n, nr, order, t)
        for a, lid in self.leaf_of.items():
            self.node_ids[a] = lid
        self.root_id = self.shown[(fn, root.output_nr)]
        if not any(o.module is not None for o in self.nodes.values() if o.kind == "op"):
            self.no_modules = True

    def _constant_inputs(self, n, raw):
        """Shapes (and names) for a node's inputs that need no grad: its saved inputs that need none, in order."""
        out = []
        c = self.caller
        for sn, t in raw:
            if sn.startswith("result") or t.requires_grad:
                continue
            name = None
            if c:
                try:
                    name = c._data.get(t.data_ptr())
                except Exception:  # noqa: BLE001
                    name = None
            out.append((tuple(t.shape), dtype_name(t.dtype), name))
        nones = sum(1 for src, _ in n.next_functions if src is None)
        return out if len(out) == nones else []

    def finish(self):
        super().finish()
        self.model.source = "torch"
        self.model.saved_keys = self.saved_keys


__all__ = ["is_torch_tensor", "is_torch_module", "build_torch_model", "record_backward", "track_modules",
           "TorchBackwardRecorder", "saved_tensors", "collect"]
