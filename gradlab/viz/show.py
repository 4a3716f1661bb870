"""``gradlab.show_graph(root)``: the graph behind a tensor, drawn in place.

A student types ``gradlab.show_graph(loss)`` while debugging and gets a
picture inline in JupyterLab, VS Code or exported HTML: every op, every
leaf, the shapes on the edges, what each op saved for backward, the
gradients once ``backward()`` ran, and which leaves did *not* get one.

The work is split so that other tools can reuse it:

* ``model.build_model(root, view=...)`` reads the graph into plain data;
* ``collapse.plan(model, depth=, max_nodes=)`` decides what to draw;
* ``render.to_dot(model, plan=...)`` writes DOT; ``render.render_svg(dot)`` draws it.

``GraphView`` ties them together. It renders lazily (building the DOT text
is instant; Graphviz runs the first time the picture is asked for).
"""
from __future__ import annotations

import os

from ..errors import GradlabError
from . import collapse as _collapse, render as _render
from .model import GraphModel, build_model


class NotATensorError(GradlabError, TypeError):
    """``show_graph`` was given something that is not a gradlab Tensor."""


class GraphView:
    """A drawn graph: shows itself inline, and saves as svg, png or dot.

    ``model``: the :class:`GraphModel`; ``plan``: what is drawn;
    ``source``: the DOT text; ``svg()``: the picture; ``element_id(node)``:
    the SVG id of the element showing a backward node (a module box when
    that node's module is collapsed).
    """

    def __init__(self, model: GraphModel, plan, source: str, id_prefix: str = ""):
        self.model, self.plan, self.source, self.id_prefix = model, plan, source, id_prefix
        self._svg = None

    # ------------------------------------------------------------ output
    def svg(self) -> str:
        """The SVG text (rendered once, then cached)."""
        if self._svg is None:
            self._svg = _render.render_svg(self.source, "svg")
        return self._svg

    def _inline_svg(self) -> str:
        s = self.svg()
        i = s.find("<svg")
        return s[i:] if i > 0 else s

    def _repr_svg_(self):
        return self._inline_svg()

    def _repr_mimebundle_(self, include=None, exclude=None):
        try:
            svg = self._inline_svg()
        except Exception as exc:  # never a blank output: say what went wrong instead of a picture
            return {"text/plain": f"{self!r}\n  could not draw it: {type(exc).__name__}: {exc}"}
        return {"image/svg+xml": svg, "text/plain": repr(self)}

    def save(self, path) -> str:
        """Write the picture: the format follows the extension (``.svg``, ``.png``, ``.dot``/``.gv``, ``.pdf``)."""
        path = os.fspath(path)
        ext = os.path.splitext(path)[1].lower().lstrip(".")
        if ext in ("dot", "gv"):
            data = self.source.encode("utf-8")
        elif ext == "svg":
            data = self.svg().encode("utf-8")
        elif ext in ("png", "pdf"):
            data = _render.render_svg(self.source, ext)
        else:
            from ..errors import ArgumentError
            raise ArgumentError(
                f"GraphView.save: cannot tell the format of {path!r}; end the name with .svg, .png, .pdf or .dot")
        with open(path, "wb") as f:
            f.write(data)
        return path

    def to_graphviz(self):
        """The same drawing as a ``graphviz.Digraph`` (needs ``pip install graphviz``; rendering it needs ``dot``)."""
        import graphviz
        body = _render.dot_statements(self.model, self.plan, id_prefix=self.id_prefix)
        return graphviz.Digraph("gradlab", body=["\t" + s + "\n" for s in body])

    def element_id(self, node):
        """The SVG id of what shows backward node ``node`` (a Function/AccumulateGrad, or a model id)."""
        mid = node if isinstance(node, str) else self.model.id_of(node)
        if mid is None:
            return None
        return self.id_prefix + self.plan.element_of.get(mid, mid)

    # ----------------------------------------------------------- reading
    @property
    def notes(self) -> list:
        return list(self.model.notes) + list(self.plan.notes)

    @property
    def reason(self):
        """Why there is no graph (a leaf or a no_grad result), else None."""
        return self.model.notes[0] if not self.model.ops and self.model.notes else None

    def __repr__(self):
        m = self.model
        what = f"{m.view} graph of '{m.root_name}'"
        counts = f"{len(m.ops)} ops, {len(m.tensors)} tensors"
        if self.plan.count != len(m.nodes):
            counts += f" (drawn as {self.plan.count} nodes)"
        lines = [f"GraphView({what}: {counts})", "  " + _render.memory_line(m)]
        lines += ["  note: " + n for n in self.notes]
        return "\n".join(lines)


def show_graph(root, view: str = "forward", depth=None, max_nodes=400, params=None, fold: bool = True,
               legend: bool = True, id_prefix: str = "", rankdir: str = "TB", expand=(), attrs=None,
               compare=None) -> GraphView:
    """Draw the graph behind ``root`` (usually the loss).

    ``view``: ``"forward"`` (how the value was computed) or ``"backward"``
    (how gradients flow back, with accumulation points marked).
    ``depth``: group ops by the modules that ran them (``node.meta["module"]``,
    recorded by ``gradlab.nn``): ``depth=1`` draws each top-level module
    (``tok_emb``, ``blocks``, ``head``) as one box, ``depth=2`` each of
    ``blocks.0``, ``blocks.1``...; ops of shallower modules stay visible.
    ``None``: every op.
    ``max_nodes``: above this many nodes the drawing collapses by itself and
    says how to expand (``None``: never). ``params``: a dict name -> tensor
    (or ``model.named_parameters()``) to name leaves and to flag the ones that
    the root does not reach. ``fold``: fold identical repeated blocks.
    ``id_prefix``: prepended to every SVG id (several graphs in one page).
    ``expand``: module paths to open although ``depth`` would box them (``expand=["blocks.0"]``).

    ``root`` may be a value of another autograd engine (micrograd's ``Value``, your own engine's): see
    ``gradlab.viz.foreign_graph`` for what it must expose; ``attrs`` says which attribute is which when
    its names differ (``attrs={"inputs": "children", "data": "value", "grad": "gradient"}``).
    ``compare`` (such an engine, after its backward): the gradient diff view. ``True`` recomputes the same
    graph in gradlab, ``{value: expected grad}`` gives gradlab's gradients; the first node, in backward
    order, whose gradient differs is marked with both values (see ``gradlab.viz.grad_diff``).
    """
    if hasattr(root, "_show_graph_"):  # a gradlab.compile'd function draws its graphs before/after the passes
        return root._show_graph_(which=view, rankdir=rankdir)
    model = build_model(root, view=view, params=params, attrs=attrs)
    if compare is not None and compare is not False:
        from .grad_diff_view import mark_diff
        mark_diff(model, compare, fn="show_graph")
    return view_of(model, depth=depth, max_nodes=max_nodes, fold=fold, legend=legend, id_prefix=id_prefix,
                   rankdir=rankdir, expand=expand)


def view_of(model: GraphModel, depth=None, max_nodes=400, fold=True, legend=True, id_prefix="", rankdir="TB",
            expand=()) -> GraphView:
    """A :class:`GraphView` of an already-built model (the widgets re-plan it when a box is expanded)."""
    p = _collapse.plan(model, depth=depth, max_nodes=max_nodes, fold=fold, expand=expand)
    rankdir = rankdir if rankdir in ("TB", "LR", "BT", "RL") else "TB"
    source = _render.to_dot(model, plan=p, legend=legend, id_prefix=id_prefix, rankdir=rankdir)
    return GraphView(model, p, source, id_prefix)
