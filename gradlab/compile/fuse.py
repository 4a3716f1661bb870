"""Elementwise fusion: a chain of elementwise ops becomes one kernel.

Eager, ``y = 0.5 * x * (1 + tanh(c * (x + 0.044715 * x**3))) * s`` runs eleven
ops; each reads a whole array from memory and writes a whole new one. On a
4M-element tensor that is eleven 16 MB round trips through main memory and eleven
16 MB allocations, while the arithmetic itself is nearly free: elementwise
chains are *memory-bound*. A fused kernel reads the inputs once, does every op
while the numbers are still in cache (or registers), and writes only the
results that someone outside the chain needs.

Which ops fuse: those the op registry flags ``elementwise`` (``REGISTRY[name]
.elementwise``), plus the comparison/select/cast ops a backward uses
(``gt``, ``where``, ``to``...) for which :data:`NUMPY_RULES` has a rule. A group
grows while the ops have the same output shape and joining would not create a
cycle through an op outside the group.

Two code generators, both emitting readable source (``node.source``):

* **CPU** (NumPy). NumPy ufuncs accept ``out=``. The kernel walks the arrays in
  chunks of rows (about ``kernels.CHUNK`` elements, 256 KB of float32, so a
  chunk and its few scratch buffers stay in cache; the chunks are shared
  among ``gradlab.get_num_threads()`` threads, since ufuncs release the GIL) and evaluates the whole
  chain on each chunk into preallocated scratch buffers, writing results
  straight into the output arrays. No per-op full-size array is ever made.
  Why not ``numexpr`` or a JIT? Measured on the benchmark block's forward
  (4M float32, CPU time, one thread): these NumPy kernels ~9 ms, numexpr 2.14
  (the same expression as a string) ~86 ms, a numba scalar loop ~74 ms (scalar ``tanhf`` is not vectorised,
  NumPy's SIMD ``tanh`` is). And a generated NumPy kernel needs no extra
  dependency, runs every gradlab op, and is plain source a student can read.
  Ops without a rule call their own ``forward`` on the chunk (still chunk-sized).
* **CUDA** (CuPy). A ``cupy.ElementwiseKernel`` whose body is one C expression
  per op (:data:`CUDA_RULES`); CuPy compiles it with NVRTC and one thread
  handles one element, with broadcasting done by CuPy.
"""
from __future__ import annotations

import numpy as np

from ..backend.memory_limit import format_bytes
from ..ops.registry import REGISTRY
from . import kernels as _k
from .ir import Graph, Node, Value
from .kernels import NUMPY_RULES, _c_args, _c_rule, cuda_source, numpy_kernel

_ELEMENTWISE = None


def elementwise_names():
    """Op names the registry flags elementwise (computed once)."""
    global _ELEMENTWISE
    if _ELEMENTWISE is None:
        _ELEMENTWISE = frozenset(info.op.name for info in REGISTRY.values() if info.elementwise and info.op)
    return _ELEMENTWISE


def fusible(n: Node, device="cpu") -> bool:
    """Can ``n`` be part of a fused kernel on ``device``?"""
    if n.group is not None or n.hidden or len(n.outputs) != 1 or n.outputs[0] is None:
        return False
    out = n.outputs[0]
    if out.dtype is None or out.dtype.kind not in "fb":
        return False
    if any(a.dtype.kind not in "fbiu" for a in n.inputs) or not n.inputs:
        return False
    try:
        if np.broadcast_shapes(*[a.shape for a in n.inputs]) != out.shape:
            return False
    except ValueError:
        return False
    if any(not isinstance(a, Value) and not isinstance(a, (int, float, bool, str, type(None), np.dtype))
           for a in n.args):
        return False
    if device == "cuda":
        args, lits = _c_args(n, {a: "a" for a in n.inputs})
        return _c_rule(n.op, args, lits, out.dtype) is not None
    return n.op in elementwise_names() or n.op in NUMPY_RULES


# ------------------------------------------------------------- grouping
def find_groups(graph: Graph, device="cpu") -> list:
    """Lists of nodes to fuse: same output shape, and no cycle between kernels.

    A fused kernel runs as one unit, so it needs *all* its external inputs
    before it starts. Joining node ``n`` to group ``A`` is refused when one of
    ``n``'s inputs depends on ``A`` already, directly or through other ops or
    other groups (``A -> sum -> n`` or ``A -> B -> n``): ``A`` would then wait
    for itself. Group-level dependencies are kept (``gdeps``) and closed
    transitively, since a group gains inputs as it grows.
    """
    group_of = {}      # node index -> group id
    groups = []        # [ [node index...] ]
    gshape, gdeps = [], []
    producer = {}
    deps = []          # per node: groups its inputs come from, directly or through outside ops

    def closure(gids):
        seen, stack = set(), list(gids)
        while stack:
            g = stack.pop()
            if g not in seen:
                seen.add(g)
                stack.extend(gdeps[g])
        return seen

    def upstream(q):
        """Every group that node ``q``'s value depends on (its own group included)."""
        start = set(deps[q])
        if q in group_of:
            start.add(group_of[q])
        return closure(start)

    for i, n in enumerate(graph.nodes):
        d = set()
        for a in n.inputs:
            p = producer.get(a)
            if p is not None:
                d |= deps[p]
                if p in group_of:
                    d.add(group_of[p])
        deps.append(d)
        for v in n.all_outputs:
            producer[v] = i
        if not fusible(n, device):
            continue
        chosen = None
        shape = n.outputs[0].shape
        feeding = [group_of.get(producer.get(a)) for a in n.inputs]
        # prefer a group that feeds this op; else any group of the same shape (horizontal fusion)
        candidates = [gid for gid in feeding if gid is not None]
        candidates += [gid for gid in range(len(groups) - 1, -1, -1) if gid not in candidates]
        for gid in candidates:
            if gshape[gid] != shape:
                continue
            ok = True
            for b in n.inputs:
                q = producer.get(b)
                if q is None or group_of.get(q) == gid:
                    continue
                if gid in upstream(q):
                    ok = False
                    break
            if ok:
                chosen = gid
                break
        if chosen is None:
            chosen = len(groups)
            groups.append([])
            gshape.append(shape)
            gdeps.append(set())
        groups[chosen].append(i)
        group_of[i] = chosen
        gdeps[chosen] |= {g for q in (producer.get(b) for b in n.inputs) if q is not None
                          for g in upstream(q)} - {chosen}
    return [[graph.nodes[i] for i in g] for g in groups if len(g) > 1]


def fuse_elementwise(graph: Graph, report: list, device="cpu") -> Graph:
    """Replace every group from :func:`find_groups` by one fused-kernel node."""
    g = graph.copy()
    groups = find_groups(g, device)
    if not groups:
        report.append("fusion: no chain of two or more elementwise ops to fuse")
        return g
    uses = {}
    for n in g.nodes:
        for a in n.inputs:
            uses.setdefault(a, set()).add(id(n))
    outs_set = set(v for v in g.outputs if v is not None)
    in_group = {id(n): grp for grp in groups for n in grp}
    nodes, done = [], set()
    for n in g.nodes:
        grp = in_group.get(id(n))
        if grp is None:
            nodes.append(n)
        elif id(grp[0]) not in done:
            done.add(id(grp[0]))
            nodes.append(_make_fused(grp, uses, outs_set, len(nodes), device, report))
    nodes = _toposort(nodes)
    # number the kernels in order
    for i, n in enumerate(x for x in nodes if x.group is not None):
        n.op = f"fused_{i}"
    g.nodes = nodes
    return g


def _toposort(nodes):
    """Order nodes so every value is made before it is used (stable: keeps the traced order when it can)."""
    producer = {v: i for i, n in enumerate(nodes) for v in n.all_outputs}
    waiting = [sum(1 for a in set(n.inputs) if a in producer) for n in nodes]
    users = [[] for _ in nodes]
    for i, n in enumerate(nodes):
        for a in set(n.inputs):
            if a in producer:
                users[producer[a]].append(i)
    import heapq
    ready = [i for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        i = heapq.heappop(ready)
        out.append(nodes[i])
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    assert len(out) == len(nodes), "fusion made a cycle"
    return out


def _make_fused(grp, uses, outs_set, pos, device, report) -> Node:
    ids = {id(n) for n in grp}
    produced = [v for n in grp for v in n.outputs]
    ext_inputs = []
    for n in grp:
        for a in n.inputs:
            if a not in produced and a not in ext_inputs:
                ext_inputs.append(a)
    outputs = [v for v in produced if v in outs_set or any(u not in ids for u in uses.get(v, ()))]
    node = Node("fused", ext_inputs, outputs, where=grp[0].where, phase=grp[0].phase)
    node.group = list(grp)
    if device == "cuda":
        node.source = cuda_source(node)
        node.kernel = _k.cupy_kernel(node)
    else:
        node.source, node.kernel = numpy_kernel(node)
    saved = sum(v.size * v.dtype.itemsize for v in produced if v not in outputs)
    report.append(
        f"fusion: {len(grp)} ops [{', '.join(n.op for n in grp)}] -> one kernel over "
        f"{grp[-1].outputs[0].type}: {len(produced) - len(outputs)} intermediate array(s) "
        f"({format_bytes(saved)}) never materialised; outputs "
        + ", ".join(f"%{v.name}" for v in outputs))
    return node


