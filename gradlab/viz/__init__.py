"""Layer 6: seeing the graph. ``gradlab.show_graph(loss)`` draws it.

The engine never imports this package; it reads the finished graph.

API for other tools (the backward animation builds on it):

* ``build_model(root, view="forward"|"backward", params=None) -> GraphModel``:
  plain dataclasses (``model.nodes`` id -> TensorNode/OpNode, ``model.edges``,
  ``model.memory``); ``model.node_ids[backward_node]`` / ``model.id_for_seq[seq]``
  map graph nodes to their stable ids (``op<r>``, ``leaf<r>``...);
* ``plan(model, depth=None, max_nodes=400, fold=True) -> DrawPlan``: what is
  drawn; ``plan.element_of[model_id]`` is the SVG id that shows it;
* ``to_dot(model, ..., plan=None, id_prefix="") -> str`` and
  ``render_svg(dot, format="svg")`` (in process, via pygraphviz);
* ``show_graph(...)`` returns a ``GraphView`` holding all three
  (``view.model``, ``view.plan``, ``view.source``); ``view.element_id(node)``
  is the SVG id for a backward node, ``id_prefix`` included.

The files: ``nodes.py`` (the dataclasses), ``model.py`` (``build_model`` and the id scheme),
``collapse.py`` (folding by module, ``plan``), ``render.py`` (DOT and SVG), ``show.py``
(``show_graph``, ``GraphView``), ``record.py`` (recording a backward or forward pass step by
step), ``widgets.py`` and ``widgets_data.py`` (the anywidget widgets and the data they are sent),
``monitor.py`` (``LossMonitor``), ``quiet.py`` (Graphviz's stderr kept out of notebooks).
A ``torch.Tensor`` root is read by ``torch_graph.py`` into the same model
(``build_torch_model``); ``track_modules(model)`` names its nodes' modules.
A value of another autograd engine (micrograd's ``Value``, a student's own) is read by
``foreign_graph.py`` through a small protocol (inputs, op, data, grad); ``grad_diff_view.py`` marks the
first node where its gradients differ from gradlab's (``show_graph(v, compare=True)``).
"""
from .collapse import DrawPlan, GroupNode, plan
from .model import Edge, GraphModel, GradSummary, MemoryTotals, OpNode, SavedInfo, TensorNode, build_model
from .render import quiet_stderr, render_svg, to_dot
from .show import GraphView, NotATensorError, show_graph
from .monitor import LossMonitor
from .torch_graph import track_modules   # PyTorch graphs: tag nodes with their module (imports no torch)
from .foreign_graph import EngineProtocolError
from .grad_diff_view import GradDiff, grad_diff

__all__ = [
    "show_graph", "GraphView", "NotATensorError", "build_model", "plan", "to_dot", "render_svg", "quiet_stderr",
    "GraphModel", "TensorNode", "OpNode", "Edge", "GradSummary", "SavedInfo", "MemoryTotals", "DrawPlan",
    "GroupNode", "LossMonitor", "track_modules", "EngineProtocolError", "grad_diff", "GradDiff",
]
