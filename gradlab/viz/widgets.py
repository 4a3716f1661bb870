"""Live widgets: step through the backward (or forward) pass of *your* graph.

``gradlab.animate_backward(loss)`` runs ``loss.backward()`` for real while
recording every node the engine visits (``record.BackwardRecorder``), then
shows the graph (laid out once by ``show_graph``'s renderer) with Play /
Pause / Step controls. Each step is one node in the engine's real order:
the gradient it received, the formula it applied, what it sent to each
input, which broadcast axes were summed, leaves' ``.grad`` filling in, and
the bytes of saved tensors freed as it goes.

``gradlab.animate_forward(fn, *args)`` calls ``fn(*args)`` and shows the
nodes appearing in execution order, with the saved-for-backward bytes
growing; with ``backward=True`` (the default, for a scalar result) it then
continues through the backward, so the memory chart rises and falls: why
training needs more memory than inference.

``graph_widget(root)`` is ``show_graph``'s picture as a widget: no
animation, but click any node to inspect it.

All frames are computed here and sent once; stepping runs in the browser
(``widgets/graph_player.js``, an anywidget ES module) with no kernel round
trip. Each widget's display bundle also carries the graph as
``image/svg+xml``, so exported HTML, GitHub and front ends without widget
support still show the graph. Clicking a node opens the inspector.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from .. import _tensor
from ..errors import ArgumentError, GradError
from . import torch_graph as _torch_graph, widgets_data as _data
from .record import BackwardRecorder, observing_backward, record_backward, record_forward


def asset_dir() -> Path:
    """Where ``graph_player.js``/``.css`` live: the source tree's ``widgets/`` or the installed copy."""
    here = Path(__file__).resolve().parents[2] / "widgets"
    candidates = [here, Path(sys.prefix) / "share" / "gradlab" / "widgets",
                  Path(sys.base_prefix) / "share" / "gradlab" / "widgets"]
    env = os.environ.get("GRADLAB_WIDGETS_DIR")
    if env:
        candidates.insert(0, Path(env))
    for c in candidates:
        if (c / "graph_player.js").is_file():
            return c
    raise FileNotFoundError(
        "gradlab's widget files (graph_player.js, graph_player.css) were not found in " +
        ", ".join(str(c) for c in candidates) + "; reinstall gradlab (pip install -e .) or set GRADLAB_WIDGETS_DIR")


def _anywidget():
    try:
        import anywidget
        import traitlets
    except ImportError as exc:
        raise ImportError("the live widgets need anywidget: pip install 'gradlab[lab]' (or pip install anywidget)"
                          ) from exc
    return anywidget, traitlets


_CLASS = None


def _widget_class():
    """The anywidget class, made on first use so that ``import gradlab`` never imports anywidget."""
    global _CLASS
    if _CLASS is not None:
        return _CLASS
    anywidget, t = _anywidget()
    d = asset_dir()

    class GraphPlayer(anywidget.AnyWidget):
        """A recorded pass over a drawn graph; see :func:`animate_backward`."""
        _esm = d / "graph_player.js"
        _css = d / "graph_player.css"
        title = t.Unicode("").tag(sync=True)
        svg = t.Unicode("").tag(sync=True)
        nodes = t.Dict().tag(sync=True)
        frames = t.List().tag(sync=True)
        mem0 = t.Int(0).tag(sync=True)
        step = t.Int(0).tag(sync=True)
        #: the drawing: model id -> drawn id where they differ (a collapsed module box), drawn edges
        #: [id, src, dst], the boxes (id -> what they hold), the memory footer's fixed parts
        elem = t.Dict().tag(sync=True)
        edges = t.List().tag(sync=True)
        groups = t.Dict().tag(sync=True)
        meta = t.Dict().tag(sync=True)

        def __init__(self, *, static_svg="", order=(), drawing=None, **kw):
            super().__init__(**kw)
            self._static_svg = static_svg
            #: the model ids of the nodes, one per frame, in the order the engine ran them
            self.order = list(order)
            self._drawing = drawing      # (GraphModel, plan options) to re-plan when a box is expanded
            self.expanded = []
            self.on_msg(self._on_msg)

        def _on_msg(self, _widget, content, _buffers):
            if isinstance(content, dict) and content.get("expand"):
                self.expand(content["expand"])

        def expand(self, box):
            """Open a collapsed module box (its drawn id ``mod_...`` or its module path) in place."""
            if self._drawing is None:
                return False
            model, opts = self._drawing
            path = self.groups.get(box, {}).get("path", box)
            if path in self.expanded:
                return False
            self.expanded = self.expanded + [path]
            gv = _view(model, opts, self.expanded)
            d = _drawing_traits(gv)
            self._static_svg = d["svg"]
            with self.hold_sync():
                for k, v in d.items():
                    setattr(self, k, v)
            return True

        @property
        def num_steps(self) -> int:
            return len(self.frames)

        def _repr_mimebundle_(self, **kwargs):
            res = super()._repr_mimebundle_(**kwargs)
            data, meta = res if isinstance(res, tuple) else (res, {})
            if self._static_svg:
                data = dict(data)
                data["image/svg+xml"] = self._static_svg   # static fallback (nbconvert, GitHub)
            return data, meta

        def __repr__(self):
            return f"<gradlab {self.title}>"

    _CLASS = GraphPlayer
    return GraphPlayer


def _inline(svg: str) -> str:
    i = svg.find("<svg")
    return svg[i:] if i > 0 else svg


def _graph_view(root, view, legend, depth=None, max_nodes=400, fold=True, attrs=None, fn="show_graph"):
    """The drawing the widget steps over: ``show_graph``'s, with the same ``depth=`` / folding / ``max_nodes``."""
    from .model import build_model
    from .show import view_of
    model = build_model(root, view=view, attrs=attrs, fn=fn)
    opts = dict(depth=depth, max_nodes=max_nodes, fold=fold, legend=legend)
    return view_of(model, **opts), opts


def _view(model, opts, expand=()):
    from .show import view_of
    return view_of(model, expand=expand, **opts)


def _group_info(g):
    title = g.path if g.folded == 1 else f"{g.path} … {g.last_path}"
    return {"path": g.path, "label": title, "type": g.module_type or "module", "ops": g.op_count,
            "params": g.param_count, "saved": int(g.saved_bytes), "folded": g.folded}


def _drawing_traits(gv):
    """What the browser needs to draw and light up ``gv``: the SVG, id map, edges, boxes."""
    p = gv.plan
    elem = {m: d for m, d in p.element_of.items() if m != d}
    edges = [[e.id, e.src, e.dst] for e in p.edges]
    groups = {nid: _group_info(g) for nid, g in p.items.items() if g.kind == "group"}
    if "more" in p.items:
        groups["more"] = {"path": None, "label": f"{p.items['more'].hidden} more nodes", "more": True}
    return {"svg": _inline(gv.svg()), "elem": elem, "edges": edges, "groups": groups}


def _meta(model):
    m = model.memory
    return {"parameters": int(m.parameters), "leaves": int(m.leaves), "gradients": int(m.gradients),
            "saved": int(m.saved)}


def _is_tensor(root) -> bool:
    return isinstance(root, _tensor.Tensor) or _torch_graph.is_torch_tensor(root)


def _check_root(root, what, attrs=None):
    if not _is_tensor(root):
        from .foreign_graph import Protocol
        proto = Protocol.resolve(root, attrs, what)     # a value of another engine, or an error naming what lacks
        if not proto.inputs(root):
            raise GradError(f"{what}: this {type(root).__name__} has no graph behind it (no inputs): it is a leaf; "
                            "compute something from it (y = x * 2) and pass y")
        return
    if root.grad_fn is None:
        raise GradError(
            f"{what}: the tensor has no graph behind it (grad_fn is None): it is a leaf, or it was computed under "
            "no_grad() or from tensors without requires_grad=True; set requires_grad=True on the inputs")


_BIG = 200   # above this many nodes (or when boxes are drawn), previews are shorter and heatmaps only for leaves


def _compact(gv) -> bool:
    return len(gv.model.nodes) > _BIG or gv.plan.count < len(gv.model.nodes)


def animate_backward(loss, gradient=None, retain_graph=None, view: str = "backward", legend: bool = True,
                     title: str = None, depth=None, max_nodes=400, fold: bool = True, attrs=None, compare=None):
    """Run ``loss.backward()`` and return a widget that replays it step by step.

    The backward really runs (the leaves' ``.grad`` is filled, as after
    ``loss.backward()``; without ``retain_graph=True`` the graph is freed):
    what the widget shows is what the engine did. ``view``: draw the
    ``"backward"`` graph (gradients flowing from the output to the leaves, the
    default) or the ``"forward"`` one, laid out as ``show_graph`` lays it out.
    ``depth`` / ``fold`` / ``max_nodes``: as in ``show_graph``: a collapsed
    module is one box that lights up while the engine is inside it; click it to
    expand it in place. Every step is still one engine node.

    ``loss`` may be a ``torch.Tensor``: then PyTorch's own ``backward()`` runs,
    watched by node hooks (``gradlab.viz.torch_graph.record_backward``), and the
    widget replays the order PyTorch's engine really ran its nodes in.

    ``loss`` may be a value of another autograd engine (micrograd's ``Value``, your own; ``attrs`` as in
    ``show_graph``): its own ``backward()`` runs, each node's ``_backward`` closure watched, and the widget
    replays the order it called them in. ``compare``: the gradient diff view (as in ``show_graph``), marked
    on the drawing and on the step of the first node whose gradient differs from gradlab's.
    """
    _check_root(loss, "animate_backward", attrs)
    foreign = not _is_tensor(loss)
    if foreign:
        from .foreign_graph import ForeignBackwardRecorder, ForeignGraph, Protocol, build_foreign_model
        graph = ForeignGraph(loss, Protocol.resolve(loss, attrs, "animate_backward"))
        rec = ForeignBackwardRecorder(graph, _data.HEAT_SIDE ** 2).run(gradient)   # the engine's own backward
        model = build_foreign_model(loss, view=view, fn="animate_backward", caller=sys._getframe(1), graph=graph)
        opts = dict(depth=depth, max_nodes=max_nodes, fold=fold, legend=legend)
        diff = None
        if compare is not None and compare is not False:
            from .grad_diff_view import mark_diff
            diff = mark_diff(model, compare, fn="animate_backward")
        gv = _view(model, opts)
        compact = _compact(gv)
        infos = _data.node_infos(model, sites={}, compact=compact)
        drawing = _drawing_traits(gv)
        frames = _data.backward_frames(model, rec, infos, compact=compact)
        if diff is not None and diff.first is not None:
            _mark_frames(frames, infos, diff)
    else:
        gv, opts = _graph_view(loss, view, legend, depth, max_nodes, fold)
        model = gv.model
        compact = _compact(gv)
        infos = _data.node_infos(model, root=loss, sites=_data.meta_sites(model), compact=compact)
        drawing = _drawing_traits(gv)
        record = _torch_graph.record_backward if _torch_graph.is_torch_tensor(loss) else record_backward
        rec = record(loss, gradient, retain_graph=retain_graph, preview_limit=_data.HEAT_SIDE ** 2)
        frames = _data.backward_frames(model, rec, infos, compact=compact)
    _refresh_leaf_grads(model, infos)
    cls = _widget_class()
    name = getattr(loss, "name", None) or model.root_name or "output"
    return cls(title=title or f"backward of '{name}': {len(frames)} steps", nodes=infos, frames=frames,
               mem0=int(rec.start_bytes), static_svg=drawing["svg"], order=[f["n"] for f in frames],
               meta=_meta(model), drawing=(model, opts), **drawing)


def animate_forward(fn, *args, backward: bool = True, view: str = "forward", legend: bool = True,
                    title: str = None, depth=None, max_nodes=400, fold: bool = True, **kwargs):
    """Call ``fn(*args, **kwargs)`` and return a widget that replays its forward pass.

    Nodes appear in the order the ops ran, and the chart shows the bytes of
    tensors saved for backward growing. With ``backward=True`` and a scalar
    result, the backward then runs for real and is replayed too, so the
    chart falls as each node frees what it saved. Returns the widget; the
    result of ``fn`` is ``widget.result``. ``depth`` / ``fold`` / ``max_nodes``:
    as in ``show_graph`` (a box appears with its first op and lights up while
    the pass is inside it; click it to expand it in place).
    """
    if not callable(fn):
        raise ArgumentError(f"animate_forward: the first argument must be a function to call, got "
                            f"{type(fn).__name__}; e.g. animate_forward(lambda x: (x * 2).sum(), x)")
    out, frec = record_forward(fn, *args, **kwargs)
    root = out[0] if isinstance(out, (tuple, list)) and out else out
    if _torch_graph.is_torch_tensor(root):
        raise ArgumentError("animate_forward: the function returned a torch tensor; PyTorch's forward cannot be "
                            "watched op by op here. Use animate_backward(loss) or graph_widget(loss) on it")
    _check_root(root, "animate_forward")
    gv, opts = _graph_view(root, view, legend, depth, max_nodes, fold)
    model = gv.model
    compact = _compact(gv)
    sites = _data.meta_sites(model)
    sites.update(_data.site_map(model, frec))
    infos = _data.node_infos(model, root=root, sites=sites, compact=compact)
    drawing = _drawing_traits(gv)
    frames = _data.forward_frames(model, frec)
    if backward and root._data.size == 1:
        rec = BackwardRecorder(preview_limit=_data.HEAT_SIDE ** 2)
        with observing_backward(rec):
            root.backward()
        frames += _data.backward_frames(model, rec, infos, compact=compact)
        _refresh_leaf_grads(model, infos)
    cls = _widget_class()
    w = cls(title=title or f"forward of {getattr(fn, '__name__', 'fn')}: {len(frames)} steps",
            nodes=infos, frames=frames, mem0=0, static_svg=drawing["svg"], order=[f["n"] for f in frames],
            meta=_meta(model), drawing=(model, opts), **drawing)
    w.result = out
    return w


def graph_widget(root, view: str = "forward", legend: bool = True, title: str = None, depth=None, max_nodes=400,
                 fold: bool = True, attrs=None):
    """``show_graph``'s picture as a widget: click any node to open the inspector (no animation, no play bar).

    Nothing runs: the graph is read as it is now (after a backward, leaves show their ``.grad``).
    ``root`` may be a value of another autograd engine (``attrs`` as in ``show_graph``).
    """
    _check_root(root, "graph_widget", attrs)
    gv, opts = _graph_view(root, view, legend, depth, max_nodes, fold, attrs, "graph_widget")
    model = gv.model
    infos = _data.node_infos(model, root=root if _is_tensor(root) else None, sites=_data.meta_sites(model),
                             compact=_compact(gv))
    drawing = _drawing_traits(gv)
    cls = _widget_class()
    return cls(title=title or f"{view} graph of '{model.root_name}' (click a node)", nodes=infos,
               frames=[], static_svg=drawing["svg"], meta=_meta(model), drawing=(model, opts), **drawing)


def _mark_frames(frames, infos, diff):
    """The gradient diff view in the animation: the first wrong node's step says so, with both values."""
    first = diff.first
    if first.id in infos:
        infos[first.id]["diff"] = first.text
    for f in frames:
        if f["n"] == first.id:
            f["diff"] = first.text
            f["f"] = (f["f"] + "  |  " if f["f"] else "") + "first wrong gradient: " + first.text.replace("\n", "; ")
            break


def _refresh_leaf_grads(model, infos):
    """After the backward: the leaves' final ``.grad`` for the inspector."""
    from .record import Value, is_leaf_node
    for node, nid in list(model.node_ids.items()):
        if is_leaf_node(node) and nid in infos and node.variable.grad is not None:  # (torch leaves too)
            infos[nid]["grad"] = _data.value_json(Value.of(node.variable.grad, _data.HEAT_SIDE ** 2), heat=True)
