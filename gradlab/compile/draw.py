"""Drawing a compiled function: the traced graph and the optimised one, side by side.

Each graph is a Graphviz cluster. Values that enter the graph (inputs,
parameters, gradients, saved values) are boxes coloured like ``show_graph``'s
leaves and parameters; constants are dashed; each op is an ellipse; a fused
kernel is one box that lists the ops it contains. Edges carry the shape and
dtype of the value that flows along them. Rendering goes through
``gradlab.viz.render_svg`` (in process, no ``dot`` binary needed).
"""
from __future__ import annotations

import html

from ..viz import render as R
from .ir import Graph, Value, show_arg


def _val_style(v: Value):
    role = {"input": "leaf", "param": "parameter", "grad": "leaf", "const": "constant"}.get(v.kind, "leaf")
    fill, border = R.PALETTE[role]
    shape, style, periph, pen = R.ROLE_STYLE[role]
    return f'shape={shape}, style="{style}", fillcolor="{fill}", color="{border}", peripheries={periph}'


def graph_dot_lines(g: Graph, prefix: str, title: str, n_out=None) -> list:
    lines = [f'subgraph "cluster_{prefix}" {{', f'label=<<b>{html.escape(title)}</b>>; fontname="Helvetica";',
             'style="rounded"; color="#999999";']
    where = {}
    used = set(a for n in g.nodes for a in n.inputs) | set(v for v in g.outputs if v is not None)
    for v in list(g.inputs) + list(g.consts):
        if v not in used:
            continue
        nid = f"{prefix}_v{v.name}"
        what = {"input": "input", "param": "parameter", "grad": "incoming grad", "const": "const",
                "op": "kept by forward"}.get(v.kind, v.kind)
        text = f"%{v.name}  ({what})"
        if v.kind == "const" and v.size == 1:
            text = f"%{v.name} = {float(v._data.reshape(()).item()):.4g}"
        lines.append(f'"{nid}" [id="{nid}", class="tensor {v.kind}", label=<{html.escape(text)}<br/>'
                     f'<font point-size="9">{v.type}</font>>, {_val_style(v)}, fontname="Helvetica"];')
        where[v] = nid
    for i, n in enumerate(g.nodes):
        nid = f"{prefix}_n{i}"
        if n.group:
            fill, border = R.PALETTE["group"]
            rows = "".join(f'<tr><td align="left"><font point-size="9">{html.escape(m.op)} '
                           f'-&gt; %{m.outputs[0].name}</font></td></tr>' for m in n.group)
            label = (f'<<table border="0" cellspacing="0"><tr><td><b>{html.escape(n.op)}</b> '
                     f'({len(n.group)} ops, one kernel)</td></tr>{rows}</table>>')
            lines.append(f'"{nid}" [id="{nid}", class="op fused", shape=box, style="filled,rounded", '
                         f'fillcolor="{fill}", color="{border}", penwidth=2, label={label}, fontname="Helvetica"];')
        else:
            lits = [show_arg(a) for a in n.args if not isinstance(a, Value)]
            text = n.op + (f" ({', '.join(lits)})" if lits else "")
            lines.append(f'"{nid}" [id="{nid}", class="op", shape=ellipse, label=<{html.escape(text)}>, '
                         f'fontname="Helvetica"];')
        for a in dict.fromkeys(n.inputs):
            src = where.get(a)
            if src is not None:
                lines.append(f'"{src}" -> "{nid}" [label=<<font point-size="8">{a.type}</font>>];')
        for v in n.all_outputs:
            where[v] = nid
    for j, v in enumerate(g.outputs):
        if v is None:
            continue
        oid = f"{prefix}_out{j}"
        what = (f"gradient {j}:" if n_out is None else f"output {j}:" if j < n_out else "kept for backward:")
        fill, border = R.PALETTE["output"]
        lines.append(f'"{oid}" [id="{oid}", class="tensor output", shape=box, style="filled,bold", penwidth=2.8, '
                     f'fillcolor="{fill}", color="{border}", label=<{what} %{v.name}<br/>'
                     f'<font point-size="9">{v.type}</font>>, fontname="Helvetica"];')
        if v in where:
            lines.append(f'"{where[v]}" -> "{oid}";')
    lines.append("}")
    return lines


def compiled_dot(before: Graph, after: Graph, title="", rankdir="TB", n_out=None) -> str:
    body = graph_dot_lines(before, "before", f"traced: {before.op_count} ops", n_out)
    n_fused = sum(1 for n in after.nodes if n.group)
    body += graph_dot_lines(after, "after", f"after passes: {len(after.nodes)} step(s), {n_fused} fused kernel(s)",
                            n_out)
    return "\n".join([f'digraph "{title}" {{', f"rankdir={rankdir}; newrank=true; compound=true;",
                      'node [fontsize=11]; edge [fontsize=9, color="#555555"];'] + body + ["}"])


class CompiledGraphView:
    """The drawing of a compiled function: shows inline in Jupyter; ``save(path)``; ``source`` is the DOT."""

    def __init__(self, source: str, before: Graph, after: Graph):
        self.source, self.before, self.after = source, before, after
        self._svg = None

    def svg(self) -> str:
        if self._svg is None:
            self._svg = R.render_svg(self.source, "svg")
        return self._svg

    def _repr_mimebundle_(self, include=None, exclude=None):
        try:
            s = self.svg()
            s = s[s.find("<svg"):] if "<svg" in s else s
        except Exception as exc:  # never a blank output
            return {"text/plain": f"{self!r}\n  could not draw it: {type(exc).__name__}: {exc}"}
        return {"image/svg+xml": s, "text/plain": repr(self)}

    def save(self, path) -> str:
        data = self.source if str(path).endswith((".dot", ".gv")) else self.svg()
        with open(path, "w", encoding="utf-8") as f:
            f.write(data)
        return str(path)

    def __repr__(self):
        return (f"CompiledGraphView({self.before.name}: {self.before.op_count} traced ops -> "
                f"{len(self.after.nodes)} step(s), {sum(1 for n in self.after.nodes if n.group)} fused kernel(s))")


def show_compiled(compiled, which="forward", rankdir="TB", **_ignored) -> CompiledGraphView:
    """``which``: ``"forward"`` or ``"backward"`` (when gradients were traced)."""
    e = compiled.entry
    if which == "backward":
        if e.backward is None:
            from ..errors import ArgumentError
            raise ArgumentError(f"show_graph: {compiled.__name__} was compiled without gradients (no input "
                                "required grad, or grad mode was off); there is no backward graph to draw")
        before, after = e.traced_backward, e.backward
        n_out = None
    else:
        before, after = e.traced_forward, e.forward
        n_out = e.n_out
    return CompiledGraphView(compiled_dot(before, after, compiled.__name__, rankdir, n_out), before, after)
