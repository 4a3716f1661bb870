"""Decide what to draw: module boxes, folded repeats, and the ``max_nodes`` cap.

A transformer's graph has thousands of ops; nobody reads that. The nn layer
records, for every op, the dotted path of the module that ran it
(``node.meta["module"]``, e.g. ``"blocks.0.attn"``). :func:`plan` uses it:

* ``depth=d``: every module whose path has ``d`` parts (``depth=2`` ->
  ``blocks.0``, ``head.proj``...) is drawn as ONE box with its op count,
  parameter count and saved bytes; ops of shallower modules stay visible,
  framed by their module. ``depth=None`` draws every op.
* ``fold=True``: consecutive identical sibling boxes (``blocks.0`` ...
  ``blocks.3`` with the same ops and parameter shapes) fold into one box
  ``TransformerBlock x4``.
* ``max_nodes``: if the drawing would have more nodes, the depth is lowered
  until it fits; if even that is too many (no module names, e.g. a long
  chain), the nodes nearest the root are kept and the rest become one
  "... N more" box. A note says what happened and how to expand.

The result is a :class:`DrawPlan`: ``items`` (drawn id -> model node or
:class:`GroupNode`), ``edges``, and ``element_of`` (model id -> the id of
the element that shows it; the widgets use this to light up a collapsed box
when a backward node inside it runs).
"""
from __future__ import annotations

import dataclasses
import re
from math import prod
from typing import Optional

from .model import Edge, GraphModel
from .nodes import no_gc


@dataclasses.dataclass
class GroupNode:
    id: str
    path: str
    module_type: Optional[str] = None
    members: list = dataclasses.field(default_factory=list)   # model ids inside
    op_count: int = 0
    param_count: int = 0
    param_bytes: int = 0
    grad_sq: float = 0.0       # sum of squared grad norms of the parameters inside
    with_grad: int = 0         # how many of them have a .grad
    missing: list = dataclasses.field(default_factory=list)   # names of those marked "grad: None"
    shared: list = dataclasses.field(default_factory=list)    # parameters it shares with other boxes (tied)
    saved_bytes: int = 0
    folded: int = 1            # how many identical sibling blocks this box stands for
    last_path: Optional[str] = None
    kind: str = "group"


@dataclasses.dataclass
class MoreNode:
    id: str
    hidden: int
    kind: str = "more"


@dataclasses.dataclass
class DrawPlan:
    items: dict                # drawn id -> TensorNode | OpNode | GroupNode | MoreNode
    edges: list
    element_of: dict           # model id -> drawn id
    clusters: dict             # drawn id -> module path of the frame it sits in (expanded ops)
    depth: Optional[int] = None
    notes: list = dataclasses.field(default_factory=list)
    full_count: int = 0
    truncated: bool = False
    expand: frozenset = frozenset()

    @property
    def count(self) -> int:
        return len(self.items)


def _gid(path: str) -> str:
    return "mod_" + (re.sub(r"[^A-Za-z0-9]", "_", path) if path else "model")


def _parts(module: Optional[str]):
    return [] if not module else module.split(".")


def max_module_depth(model: GraphModel) -> int:
    return max((len(_parts(o.module)) for o in model.ops if o.module is not None), default=-1)


def _group_key(parts, depth, expand):
    """The box an op of module ``parts`` goes in at ``depth`` (None: drawn itself), opening ``expand``ed boxes."""
    d = depth
    while len(parts) >= d:
        path = ".".join(parts[:d])
        if path not in expand:
            return path
        d += 1
    return None


def _group_plan(model: GraphModel, depth, fold: bool, expand=frozenset()) -> DrawPlan:
    nodes = model.nodes
    key = {}                                   # model id -> group path
    shared_of = {}                             # a tied parameter (drawn apart) -> the groups that use it
    if depth is not None:
        for o in model.ops:
            if o.module is not None:
                k = _group_key(_parts(o.module), depth, expand)
                if k is not None:
                    key[o.id] = k
    if key:
        neigh = {}
        for e in model.edges:
            neigh.setdefault(e.src, []).append(e.dst)
            neigh.setdefault(e.dst, []).append(e.src)
        for t in model.tensors:
            if t.id == model.root_id or not t.in_graph:
                continue
            if t.role == "intermediate" and not t.generated_name:
                continue                           # the user asked to see it by name
            ks = {key.get(n) for n in neigh.get(t.id, ()) if nodes[n].kind == "op"}
            if len(ks) == 1:
                (k,) = ks
                if k is not None:
                    key[t.id] = k
            elif t.role in ("parameter", "leaf") and t.requires_grad:
                shared_of[t.id] = sorted(k for k in ks if k is not None)
    groups = {}
    used_ids = set()
    for nid, k in key.items():
        g = groups.get(k)
        if g is None:
            gid = _gid(k)
            while gid in used_ids:                 # "a.b" and "a_b" would clash
                gid += "_"
            used_ids.add(gid)
            g = groups[k] = GroupNode(gid, k)
        g.members.append(nid)
        n = nodes[nid]
        if n.kind == "op":
            g.op_count += 1
            g.saved_bytes += n.saved_bytes
            if n.module == k and n.module_type and not g.module_type:
                g.module_type = n.module_type
        elif n.role in ("parameter", "leaf") and n.requires_grad:
            g.param_count += prod(n.shape)
            g.param_bytes += n.nbytes
            if n.grad is not None:
                g.with_grad += 1
                g.grad_sq += n.grad.norm ** 2
            if n.missing_grad:
                g.missing.append(n.name)
    for tid, ks in shared_of.items():          # counted in each box that uses it, and said so
        t = nodes[tid]
        for k in ks:
            g = groups.get(k)
            if g is not None:
                g.param_count += prod(t.shape)
                g.param_bytes += t.nbytes
                g.shared.append(t.name)
    rename = {k: k for k in groups}
    if fold and len(groups) > 1:
        _fold(groups, rename, nodes)
    element_of = {}
    for nid in nodes:
        k = key.get(nid)
        element_of[nid] = groups[rename[k]].id if k is not None else nid
    items = {}
    clusters = {}
    for nid, n in nodes.items():
        d = element_of[nid]
        if d in items:
            continue
        if d == nid:
            items[nid] = n
            if n.kind == "op" and n.module:      # the outermost module ("") gets no frame
                clusters[nid] = n.module
        else:
            g = next(g for g in groups.values() if g.id == d)
            items[d] = g
            parent = g.path.rsplit(".", 1)[0] if "." in g.path else None
            if parent is not None:
                clusters[d] = parent
    edges = _map_edges(model.edges, element_of)
    return DrawPlan(items, edges, element_of, clusters, depth=depth)


def _signature(g: GroupNode, nodes):
    ops = sorted((nodes[m] for m in g.members if nodes[m].kind == "op"), key=lambda o: o.seq)
    params = sorted(tuple(nodes[m].shape) for m in g.members
                    if nodes[m].kind == "tensor" and nodes[m].role in ("parameter", "leaf"))
    return (g.module_type, tuple((o.op, o.out_shapes) for o in ops), tuple(params))


def _fold(groups: dict, rename: dict, nodes):
    by_parent = {}
    for path, g in groups.items():
        parent, _, last = path.rpartition(".")
        if last.isdigit():
            by_parent.setdefault(parent, []).append((int(last), path))
    for parent, kids in by_parent.items():
        kids.sort()
        run = []
        sigs = {p: _signature(groups[p], nodes) for _, p in kids}

        def close(run):
            if len(run) < 2:
                return
            head = groups[run[0]]
            for p in run[1:]:
                g = groups.pop(p)
                head.members += g.members
                head.op_count += g.op_count
                head.param_count += g.param_count
                head.param_bytes += g.param_bytes
                head.grad_sq += g.grad_sq
                head.with_grad += g.with_grad
                head.missing += g.missing
                head.shared += [n for n in g.shared if n not in head.shared]
                head.saved_bytes += g.saved_bytes
                rename[p] = run[0]
            head.folded = len(run)
            head.last_path = run[-1]

        prev = None
        for idx, p in kids:
            if run and prev is not None and idx == prev + 1 and sigs[p] == sigs[run[0]]:
                run.append(p)
            else:
                close(run)
                run = [p]
            prev = idx
        close(run)


def _map_edges(edges, element_of):
    out, merged = [], {}
    for e in edges:
        a, b = element_of[e.src], element_of[e.dst]
        if a == e.src and b == e.dst:
            out.append(e)
            continue
        if a == b:
            continue                           # inside one box
        k = (a, b)
        if k in merged:
            continue
        prefix = "g" if e.kind == "grad" else "e"
        ne = Edge(f"{prefix}_{a}__{b}", a, b, e.shape, e.dtype, e.kind)
        merged[k] = ne
        out.append(ne)
    return out


def plan(model: GraphModel, depth: Optional[int] = None, max_nodes: Optional[int] = 400,
         fold: bool = True, expand=()) -> DrawPlan:
    """What to draw for ``model`` (see the module docstring).

    ``expand``: module paths whose box is opened (its submodules become boxes
    one level deeper, or its ops are drawn): how a widget expands a box in place.
    """
    with no_gc():
        return _plan(model, depth, max_nodes, fold, frozenset(expand or ()))


def _plan(model, depth, max_nodes, fold, expand=frozenset()):
    if depth is not None and depth < 0:
        from ..errors import ArgumentError
        raise ArgumentError(f"show_graph: depth must be None or >= 0, got {depth}")
    p = _group_plan(model, depth, fold, expand)
    p.expand = expand
    full = len(model.nodes)
    p.full_count = full
    if max_nodes is None or p.count <= max_nodes:
        return p
    deepest = max_module_depth(model)
    start = deepest if depth is None else depth - 1
    best = p
    for d in range(start, -1, -1):
        q = _group_plan(model, d, fold, expand)
        q.full_count = full
        if q.count < best.count:
            best = q
        if q.count <= max_nodes:
            q.notes.append(
                f"collapsed to depth={d} (modules {d} name part{'s' if d != 1 else ''} deep drawn as boxes) "
                f"to stay under max_nodes={max_nodes}; the full graph has {full} nodes. "
                f"Expand with show_graph(..., depth={d + 1}) or show_graph(..., max_nodes=None)")
            return q
    return _truncate(model, best, max_nodes)


def _truncate(model: GraphModel, p: DrawPlan, max_nodes: int) -> DrawPlan:
    """Keep the ``max_nodes - 1`` nodes nearest the root; the rest become one box."""
    keep_n = max(1, max_nodes - 1)
    nxt = {}
    for e in p.edges:
        if model.view == "backward":
            nxt.setdefault(e.src, []).append(e.dst)
        else:
            nxt.setdefault(e.dst, []).append(e.src)
    root = p.element_of[model.root_id]
    order, seen, i = [root], {root}, 0
    while i < len(order) and len(order) < keep_n:
        for m in nxt.get(order[i], ()):
            if m not in seen:
                seen.add(m)
                order.append(m)
        i += 1
    keep = set(order[:keep_n])
    for nid, n in p.items.items():               # tensors the user asked about stay
        if len(keep) < keep_n and getattr(n, "in_graph", True) is False:
            keep.add(nid)
    hidden = p.count - len(keep)
    items = {nid: n for nid, n in p.items.items() if nid in keep}
    items["more"] = MoreNode("more", hidden)
    element_of = {m: (d if d in keep else "more") for m, d in p.element_of.items()}
    edges = _map_edges(p.edges, {n: (n if n in keep else "more") for n in p.items})
    clusters = {k: v for k, v in p.clusters.items() if k in keep}
    q = DrawPlan(items, edges, element_of, clusters, depth=p.depth, full_count=p.full_count, truncated=True)
    grouped = " even grouped by module," if p.depth is not None else ""
    q.notes.append(
        f"the graph has {p.full_count} nodes;{grouped} too many to draw under max_nodes={max_nodes}: "
        f"drawing the {len(keep)} nearest the output and {hidden} more in one box. "
        "show_graph(..., max_nodes=None) draws everything (slow for big graphs)")
    return q
