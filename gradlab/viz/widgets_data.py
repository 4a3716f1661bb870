"""Turn a graph model and a recording into the plain JSON the widgets replay.

Everything the browser needs is computed here, once, and sent once: the SVG,
one record per node (what the inspector shows) and one record per frame (what
a step shows). The browser then steps with no kernel round trip. Numbers are
rounded to 4 significant digits and previews kept small, so that a notebook
holding a widget stays small.
"""
from __future__ import annotations

import math

import numpy as np

from ..autograd import cell_origin as _cell_origin
from ..autograd.function import AccumulateGrad
from . import torch_graph as _torch_graph
from .record import BackwardRecorder, ForwardRecorder, Value, is_leaf_node

PREVIEW = 6      # values shown inline for a gradient
HEAT_SIDE = 8    # heatmaps show at most HEAT_SIDE x HEAT_SIDE values


def num(v):
    """A JSON-safe rounded float (NaN/inf become strings: JSON has no NaN)."""
    v = float(v)
    if math.isfinite(v):
        return float(f"{v:.4g}")
    return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")


def value_json(v: Value, heat=False, preview=None):
    if v is None:
        return None
    a = v.array
    k = PREVIEW if preview is None else preview
    out = {"s": list(v.shape), "d": v.dtype, "p": [num(x) for x in a.reshape(-1)[:k]], "n": num(v.norm),
           "k": v.total}
    if heat:
        h = a if a.ndim == 2 else a.reshape(1, -1)
        out["h"] = [[num(x) for x in row[:HEAT_SIDE]] for row in h[:HEAT_SIDE]]
        out["hs"] = len(v.shape) > 2 or any(s > HEAT_SIDE for s in v.shape)  # a slice of it
    return out


def tensor_facts(t):
    """What the inspector shows about a live tensor: strides (in elements) and contiguity."""
    try:
        strides = t.stride() if callable(getattr(t, "stride", None)) else t.strides   # torch: .stride()
        return {"strides": list(strides), "contiguous": bool(t.is_contiguous())}
    except Exception:  # noqa: BLE001 - a display helper never breaks the widget
        return {}


def _saved_list(op):
    return [{"name": s.name, "shape": list(s.shape) if s.shape is not None else None, "dtype": s.dtype,
             "bytes": int(s.nbytes), "output": bool(s.is_output)} for s in op.saved]


def node_infos(model, root=None, sites=None, compact=False):
    """id -> inspector record for every node of ``model`` (a ``GraphModel``)."""
    live = {}
    for node, nid in list(model.node_ids.items()):
        if is_leaf_node(node):
            live[nid] = node.variable
    if root is not None:
        live.setdefault(model.root_id, root)
    out = {}
    for nid, n in model.nodes.items():
        if n.kind == "op":
            rec = {
                "kind": "op", "label": n.op, "op": n.op, "formula": n.formula,
                "shape": list(n.out_shapes[0]) if n.out_shapes else None,
                "dtype": n.out_dtypes[0] if n.out_dtypes else None, "device": n.device,
                "requires_grad": True, "saved": _saved_list(n), "saved_bytes": int(n.saved_bytes),
                "module": n.module,
            }
            if len(n.out_shapes) > 1:
                rec["outputs"] = [list(s) for s in n.out_shapes]
        else:
            rec = {
                "kind": "tensor", "label": n.name, "role": n.role, "shape": list(n.shape), "dtype": n.dtype,
                "device": n.device, "requires_grad": bool(n.requires_grad), "bytes": int(n.nbytes),
                "module": n.module,
            }
            if n.grad is not None:
                g = n.grad
                rec["grad_summary"] = {"shape": list(g.shape), "norm": num(g.norm), "min": num(g.min),
                                       "mean": num(g.mean), "max": num(g.max), "nonfinite": g.nonfinite}
            if getattr(n, "missing_grad", False):
                rec["missing"] = n.missing_reason
            if n.aliases:
                rec["aliases"] = list(n.aliases)
            if n.users:
                rec["users"] = list(n.users)
        t = live.get(nid)
        if t is not None:
            rec.update(tensor_facts(t))
            g = _torch_graph.safe_grad(t) if _torch_graph.is_torch_tensor(t) else t.grad
            if n.kind == "tensor" and g is not None and "grad" not in rec and (not compact or n.role != "intermediate"):
                rec["grad"] = value_json(Value.of(g), heat=True)
        if sites and nid in sites:
            rec["site"] = sites[nid]
        out[nid] = rec
    return out


def _value_node_of(model, op_id):
    """The value nodes drawn for an op's outputs (the root, retained tensors)."""
    return [k for k in model.nodes if k.startswith(op_id + "_out")]


def _nbytes(v: Value) -> int:
    if v is None:
        return 0
    try:
        return int(v.total) * np.dtype(v.dtype).itemsize
    except TypeError:  # pragma: no cover - a dtype NumPy does not know by name
        return int(v.total) * 4


def backward_frames(model, rec: BackwardRecorder, infos: dict, compact: bool = False):
    """One frame per recorded backward step; also fills the inspector's gradients.

    ``gb``: bytes held by the drawn tensors' ``.grad`` after the step (the
    footer's "gradients" figure, which grows as the leaves fill in).
    ``compact`` (big graphs): shorter previews, and the dY heatmap only for
    leaves, so that a saved notebook stays small.
    """
    frames = []
    pv = 3 if compact else None
    grad_bytes = int(model.memory.gradients)
    values = _value_nodes(model)
    for step in rec.steps:
        nid = model.id_of(step.node)
        if nid is None:      # a node outside the drawn graph (should not happen for the root's graph)
            continue
        formula = step.formula
        if is_leaf_node(step.node):
            who = infos.get(nid, {}).get("label") or "x"
            formula = f"{who}.grad += d{who}" if step.leaf_before is not None else f"{who}.grad = d{who}"
            grad_bytes += _nbytes(step.leaf_after) - _nbytes(step.leaf_before)
        f = {"n": nid, "op": step.name, "f": formula,
             "gin": [value_json(v, preview=pv) for v in step.grads_in],
             "gout": [], "acc": [], "mem": int(step.saved_bytes), "freed": int(step.saved_freed), "gb": grad_bytes}
        for frm, i in step.contributions:
            f["acc"].append({"from": model.id_of(frm) if frm is not None else "seed", "i": i})
        for go in step.grads_out:
            o = {"to": model.id_of(go.to), "i": go.input, "v": value_json(go.value, preview=pv)}
            if go.summed_axes:
                o["axes"] = list(go.summed_axes)
            f["gout"].append(o)
        if step.broadcast_axes:
            f["bcast"] = list(step.broadcast_axes)
        if is_leaf_node(step.node):
            f["leaf"] = {"before": value_json(step.leaf_before, preview=pv),
                         "after": value_json(step.leaf_after, preview=pv)}
            info = infos.get(nid)
            if info is not None and step.leaf_after is not None:
                info["grad"] = value_json(step.leaf_after, heat=True)
        else:
            info = infos.get(nid)
            if info is not None and step.grads_in and step.grads_in[0] is not None:
                info["grad_in"] = value_json(step.grads_in[0], heat=not compact, preview=pv)
        # the value nodes of this op (e.g. the root 'output') light up with it
        also = values.get(nid)
        if also:
            f["also"] = also
        frames.append(f)
    return frames


def forward_frames(model, rec: ForwardRecorder):
    """One frame per recorded forward node in the drawn graph: which nodes appear (in model ids).

    The browser works out the edges (an edge appears with the later of its two
    ends) and which drawn element shows each node (a collapsed module box).
    """
    shown = set()
    inputs_of = {}
    for e in model.edges:
        inputs_of.setdefault(e.dst, []).append(e.src)
    values = _value_nodes(model)
    frames = []
    for step in rec.steps:
        nid = model.id_of(step.node)
        if nid is None:
            continue
        new = [nid]
        for src in inputs_of.get(nid, ()):          # inputs of this op: leaves and constants appear
            if src not in shown and model.nodes[src].kind == "tensor" and "_out" not in src:
                new.append(src)
        new += values.get(nid, [])
        shown.update(new)
        frames.append({"n": nid, "op": step.name, "f": "", "fw": 1, "show": new,
                       "mem": int(step.saved_bytes), "added": int(step.saved_added),
                       **({"site": step.site} if step.site else {})})
    return frames


def _value_nodes(model):
    """op id -> the value nodes drawn for its outputs (``op3_out0``: the root, retained tensors)."""
    out = {}
    for k in model.nodes:
        if "_out" in k:
            out.setdefault(k.split("_out", 1)[0], []).append(k)
    return out


def site_map(model, rec: ForwardRecorder):
    out = {}
    for step in rec.steps:
        nid = model.id_of(step.node)
        if nid is not None and step.site:
            out[nid] = step.site
    return out


def meta_sites(model):
    """Creation sites known without watching the forward: stored on the nodes (``node.meta``, e.g. by
    anomaly detection), else the notebook cell that made each op (``gradlab/autograd/cell_origin.py``)."""
    out = {}
    for node, nid in list(model.node_ids.items()):
        cell = _cell_origin.cell_of(getattr(node, "seq", None)) if not isinstance(node, AccumulateGrad) else None
        if cell is not None:
            out[nid] = f"cell [{cell}]"
        meta = getattr(node, "meta", None)
        if isinstance(meta, dict):
            site = meta.get("site") or meta.get("creation_site")
            if isinstance(site, str):
                out[nid] = site
            elif isinstance(site, (list, tuple)) and site:
                out[nid] = str(site[-1])
    return out


def total_bytes(frames):
    return max([f.get("mem", 0) for f in frames] + [0])


__all__ = ["num", "value_json", "node_infos", "backward_frames", "forward_frames", "site_map", "meta_sites",
           "tensor_facts"]
