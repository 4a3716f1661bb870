"""Draw a :class:`GraphModel`: DOT text, then SVG/PNG in process.

``to_dot(model, depth=None, max_nodes=400, ...)`` returns Graphviz DOT text;
``render_svg(dot)`` lays it out and renders it with ``pygraphviz``, whose
wheel bundles Graphviz (no ``dot`` binary needed).

What the widgets can rely on:

* every node and edge has an ``id`` (see ``model.py`` for the scheme; a
  collapsed module box is ``mod_<path>``, the overflow box ``more``,
  legend entries ``legend_<what>``), optionally prefixed with ``id_prefix``
  so that several graphs can live in one page;
* every node has ``class`` = its kind and role: ``tensor parameter``,
  ``tensor leaf missing-grad``, ``op``, ``op accumulate``, ``group folded``,
  ``more``, ``legend``; edges ``data`` (forward) or ``grad`` (backward).
  Graphviz adds ``node`` / ``edge`` in front in the SVG.

Colours are the Okabe-Ito palette (safe for colour-blind readers), and no
role relies on colour alone: each label names its role, parameters have a
double border, outputs a thick one, constants a dashed one, a missing
gradient a thick vermillion border and a "grad: None" line.

The bundled fontconfig prints a one-time "Fontconfig warning" on the first
render. Rendering therefore points file descriptor 2 at a temporary file
(``dup2``) while Graphviz runs, drops fontconfig's lines, and passes
anything else on; nothing reaches a notebook's stderr.
"""
from __future__ import annotations

import html
import textwrap
import threading

from ..backend.memory_limit import format_bytes
from .collapse import DrawPlan, plan as make_plan
from .model import GraphModel
from .quiet import quiet_stderr

# Okabe-Ito: (fill, border)
PALETTE = {
    "parameter": ("#cfe6f5", "#0072b2"),
    "leaf": ("#fbe3bd", "#e69f00"),
    "output": ("#c5eadd", "#009e73"),
    "intermediate": ("#faf5c6", "#8c7e00"),
    "constant": ("#ececec", "#7a7a7a"),
    "op": ("#ffffff", "#444444"),
    "group": ("#f0dce8", "#cc79a7"),
    "more": ("#ffffff", "#7a7a7a"),
}
MISSING = "#d55e00"
ACCUM = "#cc79a7"
DIFF = "#c00000"           # the gradient diff view: the first node whose gradient is wrong
ROLE_STYLE = {             # (shape, style, peripheries, penwidth)
    "parameter": ("box", "filled", 2, 1.2),
    "leaf": ("box", "filled", 1, 1.2),
    "output": ("box", "filled,bold", 1, 2.8),
    "intermediate": ("box", "filled", 1, 1.0),
    "constant": ("box", "filled,dashed", 1, 1.0),
}
MAX_SAVED_LINES = 3


def fmt_shape(shape) -> str:
    if shape is None:
        return "?"
    shape = tuple(shape)
    return f"({shape[0]},)" if len(shape) == 1 else "(" + ", ".join(str(s) for s in shape) + ")"


def _num(x: float) -> str:
    return f"{x:.3g}"


def _esc(s) -> str:
    return html.escape(str(s), quote=True)


def _q(s) -> str:
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _small(text, color="#444444", size=9):
    return f'<FONT POINT-SIZE="{size}" COLOR="{color}">{text}</FONT>'


def _table(rows) -> str:
    body = "".join(f"<TR><TD>{r}</TD></TR>" for r in rows)
    return f'<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">{body}</TABLE>>'


def _grad_rows(t, view):
    rows = []
    if t.grad is not None:
        g = t.grad
        bad = f" {g.nonfinite} NaN/inf" if g.nonfinite else ""
        color = MISSING if g.nonfinite else "#1f4e79"
        rows.append(_small(f"grad {fmt_shape(g.shape)} norm {_num(g.norm)}{_esc(bad)}", color))
        rows.append(_small(f"min {_num(g.min)} mean {_num(g.mean)} max {_num(g.max)}", color))
    elif t.missing_grad:
        rows.append(_small("<B>grad: None (missing)</B>", MISSING, 10))
    return rows


def tensor_label(t, view="forward") -> str:
    role = t.role if t.in_graph else f"{t.role}, not in graph"
    head = f"<B>{_esc(t.name)}</B>" + ("" if t.name == role else " " + _small(_esc(role), "#333333"))
    if view == "backward" and t.role in ("leaf", "parameter"):
        head = f"<B>{_esc(t.name)}</B>.grad " + _small("AccumulateGrad" if t.in_graph else "not in graph", "#333333")
    elif view == "backward" and t.role == "output":
        head = f"<B>{_esc(t.name)}</B> " + _small("output: backward starts here with grad 1", "#333333")
    flags = [fmt_shape(t.shape), t.dtype, t.device]
    if t.requires_grad:
        flags.append("requires_grad")
    rows = [head, _small(_esc(" ".join(flags)), "#222222", 10)]
    if t.aliases:
        rows.append(_small(_esc("also " + ", ".join(t.aliases) + " (tied: one tensor)"), "#333333"))
    if len(t.users) > 1:
        rows.append(_small(_esc("used by " + ", ".join(t.users)), "#333333"))
    rows += _grad_rows(t, view)
    if t.accumulates >= 2:
        rows.append(_small(f"<B>&#931; adds {t.accumulates} gradients</B>", "#7a2e5a"))
    rows += _diff_rows(t)
    return _table(rows)


def op_label(o, view="forward") -> str:
    name = f"<B>{_esc(o.op)}</B>" + (" backward" if view == "backward" and "Backward" not in o.op else "")
    rows = [name]
    if o.formula:
        rows.append(_small(_esc(o.formula), "#555555"))
    if o.saved_freed:
        rows.append(_small("saved: freed by backward()", "#7a7a7a"))
    elif o.saved:
        for s in o.saved[:MAX_SAVED_LINES]:
            who = s.name or ("output" if s.is_output else "input")
            rows.append(_small(_esc(f"saved {who} {fmt_shape(s.shape)} {s.dtype} {format_bytes(s.nbytes)}"), "#555555"))
        if len(o.saved) > MAX_SAVED_LINES:
            rest = sum(s.nbytes for s in o.saved[MAX_SAVED_LINES:])
            rows.append(_small(f"... {len(o.saved) - MAX_SAVED_LINES} more saved, {format_bytes(rest)}", "#555555"))
    if o.accumulates >= 2:
        rows.append(_small(f"<B>&#931; adds {o.accumulates} incoming gradients</B>", "#7a2e5a"))
    rows += _grad_rows(o, view) if o.grad is not None else []
    rows += _diff_rows(o)
    return _table(rows)


def _diff_rows(n):
    """The gradient diff view's mark: where a student's gradient first differs from gradlab's."""
    if not n.diff:
        return []
    lines = [w for line in n.diff.split("\n") for w in textwrap.wrap(line, 52)]
    return [_small("<B>first wrong gradient</B>", DIFF, 10)] + [_small(_esc(line), DIFF) for line in lines]


def group_label(g) -> str:
    title = (g.path or "(whole model)") if g.folded == 1 else f"{g.path} ... {g.last_path}"
    kind = g.module_type or "module"
    head = f"<B>{_esc(kind)}{' &#215;' + str(g.folded) if g.folded > 1 else ''}</B>"
    rows = [head, _small(_esc(title), "#333333", 10),
            _small(f"{g.op_count} ops, {g.param_count:,} params ({format_bytes(g.param_bytes)})"
                   + (f", incl. {len(g.shared)} shared: {_esc(', '.join(g.shared[:2]))}" if g.shared else "")),
            _small(f"saved for backward {format_bytes(g.saved_bytes)}")]
    if g.with_grad:
        rows.append(_small(f"grads: {g.with_grad} tensors, total norm {_num(g.grad_sq ** 0.5)}", "#1f4e79"))
    if g.missing:
        names = ", ".join(g.missing[:3]) + (f" +{len(g.missing) - 3}" if len(g.missing) > 3 else "")
        rows.append(_small(f"<B>grad: None for {len(g.missing)}</B> ({_esc(names)})", MISSING))
    return _table(rows)


def _attrs(**kw) -> str:
    return "[" + ", ".join(f"{k}={v}" for k, v in kw.items() if v is not None) + "]"


def _node_stmt(nid, n, view, prefix) -> str:
    pid = _q(prefix + nid)
    if n.kind == "tensor":
        shape, style, per, pen = ROLE_STYLE[n.role]
        fill, color = PALETTE[n.role]
        cls = f"tensor {n.role}"
        if n.missing_grad:
            color, pen, cls = MISSING, 3.0, cls + " missing-grad"
            if "bold" not in style:
                style += ",bold"
        if n.grad is not None:
            cls += " has-grad"
        if n.accumulates >= 2:
            cls += " accumulate"
        if n.diff:
            color, pen, cls = DIFF, 4.0, cls + " grad-diff"
        return f"{_q(nid)} " + _attrs(id=pid, **{"class": _q(cls)}, label=tensor_label(n, view), shape=shape,
                                       style=_q(style), peripheries=per, penwidth=pen, fillcolor=_q(fill),
                                       color=_q(color))
    if n.kind == "op":
        fill, color = PALETTE["op"]
        cls, pen = "op", 1.0
        if n.accumulates >= 2:
            cls, pen, color = "op accumulate", 3.0, ACCUM
        if n.diff:
            cls, pen, color = cls + " grad-diff", 4.0, DIFF
        return f"{_q(nid)} " + _attrs(id=pid, **{"class": _q(cls)}, label=op_label(n, view), shape="box",
                                       style=_q("rounded,filled"), penwidth=pen, fillcolor=_q(fill),
                                       color=_q(color))
    if n.kind == "group":
        fill, color = PALETTE["group"]
        cls = "group folded" if n.folded > 1 else "group"
        pen = 1.5
        if n.missing:
            cls, color, pen = cls + " missing-grad", MISSING, 3.0
        return f"{_q(nid)} " + _attrs(id=pid, **{"class": _q(cls)}, label=group_label(n), shape="box3d",
                                       style="filled", fillcolor=_q(fill), color=_q(color), penwidth=pen)
    fill, color = PALETTE["more"]
    label = _table([f"<B>... {n.hidden} more nodes</B>", _small("not drawn: see the note below")])
    return f"{_q(nid)} " + _attrs(id=pid, **{"class": '"more"'}, label=label, shape="note",
                                   style=_q("filled,dashed"), fillcolor=_q(fill), color=_q(color))


def _legend(items, view, prefix):
    """One small sample node per kind actually drawn."""
    present = []
    kinds = {n.kind for n in items.values()}
    roles = {n.role for n in items.values() if n.kind == "tensor"}
    for r in ("parameter", "leaf", "output", "intermediate", "constant"):
        if r in roles:
            present.append((r, r))
    if "op" in kinds:
        present.append(("op", "op (backward function)" if view == "backward" else "op"))
    if any(getattr(n, "missing_grad", False) for n in items.values()):
        present.append(("missing", "grad is None"))
    if any(getattr(n, "accumulates", 0) >= 2 for n in items.values()):
        present.append(("accumulate", "&#931; gradients meet"))
    if "group" in kinds:
        present.append(("group", "module (collapsed)"))
    lines = [f"subgraph {_q('cluster_' + prefix + 'legend')} {{",
             f'label="legend"; id={_q(prefix + "legend")}; class="legend"; fontsize=9; style="rounded,filled"; '
             'fillcolor="#f7f7f7"; color="#bbbbbb"; fontcolor="#333333";']
    ids = []
    for key, text in present:
        nid = f"legend_{key}"
        ids.append(_q(nid))
        if key in ROLE_STYLE:
            shape, style, per, pen = ROLE_STYLE[key]
            fill, color = PALETTE[key]
        elif key == "missing":
            shape, style, per, pen, fill, color = "box", "filled,bold", 1, 3.0, "#ffffff", MISSING
        elif key == "accumulate":
            shape, style, per, pen, fill, color = "box", "rounded,filled", 1, 3.0, "#ffffff", ACCUM
        elif key == "group":
            shape, style, per, pen = "box3d", "filled", 1, 1.5
            fill, color = PALETTE["group"]
        else:
            shape, style, per, pen = "box", "rounded,filled", 1, 1.0
            fill, color = PALETTE["op"]
        lines.append(f"{_q(nid)} " + _attrs(id=_q(prefix + nid), **{"class": f'"legend {key}"'},
                                            label=f"<{_small(text, '#222222', 9)}>", shape=shape,
                                            style=_q(style), peripheries=per, penwidth=pen, fillcolor=_q(fill),
                                            color=_q(color), height=0.25, margin='"0.06,0.02"'))
    if len(ids) > 1:
        lines.append("{rank=same; " + " ".join(ids) + "}")
        lines += [f'{a} -> {b} [style=invis, id={_q(prefix + "legend_e" + str(i))}, class="legend"]'
                  for i, (a, b) in enumerate(zip(ids, ids[1:]))]
    lines.append("}")
    return lines if ids else []


def memory_line(model: GraphModel) -> str:
    m = model.memory
    parts = [f"parameters {format_bytes(m.parameters)}"]
    if m.leaves:
        parts.append(f"other leaves {format_bytes(m.leaves)}")
    parts += [f"saved activations {format_bytes(m.saved)}", f"gradients {format_bytes(m.gradients)}"]
    return "memory: " + ", ".join(parts)


def _footer(model, p, id_prefix=""):
    rows = [f'<FONT POINT-SIZE="10">{_esc(memory_line(model))}</FONT>']
    for note in list(model.notes) + list(p.notes):
        lines = textwrap.wrap("note: " + note, 110, subsequent_indent="   ")
        rows.append(_small('<BR ALIGN="LEFT"/>'.join(_esc(ln) for ln in lines) + '<BR ALIGN="LEFT"/>',
                           "#444444", 9))
    body = "".join(f'<TR><TD ALIGN="LEFT">{r}</TD></TR>' for r in rows)
    # a light card of its own: readable on a light or a dark page (the picture has no background)
    return (f'<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="3" BGCOLOR="#f7f7f7" '
            f'STYLE="rounded" ID="{id_prefix}footer">{body}</TABLE>>')


def dot_statements(model: GraphModel, p: DrawPlan, legend=True, id_prefix="", rankdir="TB"):
    """The statements of the DOT body (shared by :func:`to_dot` and ``GraphView.to_graphviz``)."""
    view = model.view
    lines = [
        f"graph [id={_q(id_prefix + 'graph')}, class={_q('gradlab-graph ' + view)}, rankdir={rankdir}, "
        'bgcolor="transparent", nodesep=0.25, ranksep=0.3, fontname="Helvetica,Arial,sans-serif", labelloc=b, labeljust=l, '
        f"label={_footer(model, p, id_prefix)}]",
        'node [fontname="Helvetica,Arial,sans-serif", fontsize=11, margin="0.08,0.04", height=0.3]',
        'edge [fontname="Helvetica,Arial,sans-serif", fontsize=9, fontcolor="#808080", color="#808080", '
        'arrowsize=0.7]',
    ]
    # nested frames for ops that ran inside modules (only drawn when some op has a module)
    tree, top = {}, []
    for nid, path in p.clusters.items():
        tree.setdefault(path, []).append(nid)
    for nid, n in p.items.items():
        if nid not in p.clusters:
            top.append(_node_stmt(nid, n, view, id_prefix))
    lines += top
    if tree:
        lines += _clusters(tree, p, view, id_prefix)
    for e in p.edges:
        label = fmt_shape(e.shape) if e.shape is not None else None
        cls = "grad" if e.kind == "grad" else "data"
        style = "dashed" if e.kind == "grad" else None
        a, b = _q(e.src), _q(e.dst)
        lines.append(f"{a} -> {b} " + _attrs(id=_q(id_prefix + e.id), **{"class": _q(cls)},
                                             label=_q(label) if label else None, style=style,
                                             color='"#b8559a"' if e.kind == "grad" else None))
    if legend:
        lines += _legend(p.items, view, id_prefix)
    return lines


def _clusters(tree, p, view, prefix):
    """Nested ``subgraph cluster_...`` frames, one per module path."""
    paths = set()
    for path in tree:
        parts = path.split(".") if path else [""]
        for i in range(1, len(parts) + 1):
            paths.add(".".join(parts[:i]))
    children = {}
    for path in paths:
        parent = path.rsplit(".", 1)[0] if "." in path else None
        children.setdefault(parent, []).append(path)
    types = {}
    for nid, n in p.items.items():
        if n.kind == "op" and n.module and n.module_type:
            types.setdefault(n.module, n.module_type)
    out = []
    stack = [(path, False) for path in sorted(children.get(None, []), reverse=True)]
    while stack:
        path, closing = stack.pop()
        if closing:
            out.append("}")
            continue
        cid = "cluster_" + prefix + "mod_" + "".join(c if c.isalnum() else "_" for c in path)
        label = path + (f" ({types[path]})" if path in types else "")
        out.append(f"subgraph {_q(cid)} {{")
        out.append(f'id={_q(cid)}; class="module"; label={_q(label)}; fontsize=9; fontcolor="#7a2e5a"; '
                   'style="rounded,dashed,filled"; fillcolor="#fbf3f8"; color="#cc79a7";')
        out += [_node_stmt(nid, p.items[nid], view, prefix) for nid in tree.get(path, [])]
        stack.append((path, True))
        stack += [(c, False) for c in sorted(children.get(path, []), reverse=True)]
    return out


def to_dot(model: GraphModel, depth=None, max_nodes=400, fold=True, legend=True, id_prefix="", rankdir="TB",
           plan: DrawPlan = None) -> str:
    """DOT text for ``model`` (collapsed by :func:`gradlab.viz.collapse.plan` unless ``plan`` is given)."""
    p = plan if plan is not None else make_plan(model, depth=depth, max_nodes=max_nodes, fold=fold)
    body = dot_statements(model, p, legend=legend, id_prefix=id_prefix, rankdir=rankdir)
    return "digraph gradlab {\n" + "\n".join("  " + s for s in body) + "\n}\n"


# ------------------------------------------------------------------ rendering
_render_lock = threading.Lock()


def render_svg(dot: str, format: str = "svg"):
    """Lay out ``dot`` and render it in process; returns ``str`` for svg, ``bytes`` otherwise."""
    try:
        import pygraphviz
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise ImportError("show_graph needs pygraphviz (its wheel bundles Graphviz): pip install pygraphviz") from exc
    with _render_lock, quiet_stderr():
        g = pygraphviz.AGraph(string=dot)
        data = g.draw(format=format, prog="dot")
    if format == "svg":
        return data.decode("utf-8")
    return data
