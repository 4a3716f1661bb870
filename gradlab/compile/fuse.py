"""Elementwise fusion: a chain of elementwise ops becomes one kernel.

Eager, ``y = 0.5 * x * (1 + tanh(c * (x + 0.044715 * x**3))) * s`` runs ten
ops; each reads a whole array from memory and writes a whole new one. On a
4M-element tensor that is ten 16 MB round trips through main memory and ten
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
  chunks of rows (about :data:`CHUNK` elements, 256 KB of float32, so a
  chunk and its few scratch buffers stay in L2 cache) and evaluates the whole
  chain on each chunk into preallocated scratch buffers, writing results
  straight into the output arrays. No per-op full-size array is ever made.
  Why not ``numexpr``? It would also do this (multi-threaded), but it lacks
  ``erf``, rounding and most of gradlab's ops, is an extra dependency, and its
  generated code is hidden; these kernels are plain NumPy a student can read.
  Ops without a rule call their own ``forward`` on the chunk (still chunk-sized).
* **CUDA** (CuPy). A ``cupy.ElementwiseKernel`` whose body is one C expression
  per op (:data:`CUDA_RULES`); CuPy compiles it with NVRTC and one thread
  handles one element, with broadcasting done by CuPy.
"""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from ..ops.registry import REGISTRY
from .ir import Graph, Node, Value

CHUNK = 1 << 16   # elements per chunk (per scratch buffer): 256 KB of float32

_UNARY = {"neg": "negative", "exp": "exp", "log": "log", "sqrt": "sqrt", "tanh": "tanh", "abs": "absolute",
          "sin": "sin", "cos": "cos", "log1p": "log1p", "expm1": "expm1", "reciprocal": "reciprocal",
          "floor": "floor", "ceil": "ceil", "trunc": "trunc", "sign": "sign", "logical_not": "logical_not"}
_BINARY = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide", "pow": "power",
           "maximum": "maximum", "minimum": "minimum", "gt": "greater", "lt": "less", "ge": "greater_equal",
           "le": "less_equal", "eq": "equal", "ne": "not_equal", "logical_and": "logical_and",
           "logical_or": "logical_or"}


def _np_rule(op, ins, out):
    """NumPy statements computing ``op`` from input expressions into ``out`` (None: no rule)."""
    if op in _UNARY and len(ins) == 1:
        return [f"_np.{_UNARY[op]}({ins[0]}, out={out})"]
    if op in _BINARY and len(ins) == 2:
        return [f"_np.{_BINARY[op]}({ins[0]}, {ins[1]}, out={out})"]
    if op == "relu":
        return [f"_np.maximum({ins[0]}, 0, out={out})"]
    if op == "sigmoid":
        return [f"_np.negative({ins[0]}, out={out})", f"_np.exp({out}, out={out})", f"_np.add({out}, 1, out={out})",
                f"_np.reciprocal({out}, out={out})"]
    if op == "tanh_backward" and len(ins) == 2:   # g * (1 - y^2)
        return [f"_np.multiply({ins[1]}, {ins[1]}, out={out})", f"_np.subtract(1, {out}, out={out})",
                f"_np.multiply({ins[0]}, {out}, out={out})"]
    if op == "sigmoid_backward" and len(ins) == 2:   # g * y * (1 - y)
        return [f"_np.subtract(1, {ins[1]}, out={out})", f"_np.multiply({out}, {ins[1]}, out={out})",
                f"_np.multiply({ins[0]}, {out}, out={out})"]
    if op == "where" and len(ins) == 3:
        return [f"_np.copyto({out}, {ins[2]})", f"_np.copyto({out}, {ins[1]}, where={ins[0]})"]
    if op in ("to", "clone") and len(ins) >= 1:
        return [f"_np.copyto({out}, {ins[0]}, casting='unsafe')"]
    return None


#: ops (by name) with a NumPy rule, beyond the registry's elementwise ones
NUMPY_RULES = sorted(set(_UNARY) | set(_BINARY) | {"relu", "sigmoid", "where", "to", "clone", "tanh_backward",
                                                   "sigmoid_backward"})

_C1 = {"neg": "(-{0})", "exp": "exp({0})", "log": "log({0})", "sqrt": "sqrt({0})", "tanh": "tanh({0})",
       "abs": "fabs({0})", "sin": "sin({0})", "cos": "cos({0})", "log1p": "log1p({0})", "expm1": "expm1({0})",
       "reciprocal": "(1 / {0})", "floor": "floor({0})", "ceil": "ceil({0})", "trunc": "trunc({0})",
       "round": "rint({0})", "sign": "(({0} > 0) - ({0} < 0))", "relu": "({0} > 0 ? {0} : 0)",
       "sigmoid": "(1 / (1 + exp(-{0})))", "erf": "erf({0})", "silu": "({0} / (1 + exp(-{0})))",
       "logical_not": "(!{0})", "clone": "{0}"}
_C2 = {"add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})", "div": "({0} / {1})",
       "pow": "pow({0}, {1})", "maximum": "max({0}, {1})", "minimum": "min({0}, {1})", "gt": "({0} > {1})",
       "lt": "({0} < {1})", "ge": "({0} >= {1})", "le": "({0} <= {1})", "eq": "({0} == {1})",
       "ne": "({0} != {1})", "leaky_relu": "({0} > 0 ? {0} : {0} * {1})", "logical_and": "({0} && {1})",
       "logical_or": "({0} || {1})", "tanh_backward": "({0} * (1 - {1} * {1}))",
       "sigmoid_backward": "({0} * {1} * (1 - {1}))"}
#: ops (by name) with a CUDA C rule
CUDA_RULES = sorted(set(_C1) | set(_C2) | {"where", "to", "gelu"})
_CTYPE = {"float16": "float16", "float32": "float", "float64": "double", "bool": "bool", "int32": "int",
          "int64": "long long", "int8": "signed char", "uint8": "unsigned char", "int16": "short"}


def _c_rule(op, ins, lits, dtype):
    if op in _C1 and len(ins) == 1:
        return _C1[op].format(*ins)
    if op in _C2 and len(ins) == 2:
        return _C2[op].format(*ins)
    if op == "where" and len(ins) == 3:
        return f"({ins[0]} ? {ins[1]} : {ins[2]})"
    if op == "to":
        return f"(({_CTYPE.get(dtype.name, 'float')}){ins[0]})"
    if op == "gelu" and len(ins) == 1 and (not lits or lits[0] == "none"):
        return f"({ins[0]} * normcdf({ins[0]}))"
    return None


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
    """Lists of nodes to fuse: same output shape, no cycle through an outside op."""
    group_of = {}      # node index -> group id
    groups = []        # [ [node index...] ]
    gshape = []
    producer = {}
    deps = []          # per node: set of group ids it depends on (through any path)
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
            # joining is safe if no input reaches the group through an op outside it
            if all(not (producer.get(b) is not None and group_of.get(producer[b]) != gid
                        and gid in deps[producer[b]]) for b in n.inputs):
                chosen = gid
                break
        if chosen is None:
            chosen = len(groups)
            groups.append([])
            gshape.append(n.outputs[0].shape)
        groups[chosen].append(i)
        group_of[i] = chosen
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
        node.kernel = _cupy_kernel(node)
    else:
        node.source, node.kernel = numpy_kernel(node)
    saved = sum(v.size * v.dtype.itemsize for v in produced if v not in outputs)
    report.append(
        f"fusion: {len(grp)} ops [{', '.join(n.op for n in grp)}] -> one kernel over "
        f"{grp[-1].outputs[0].type}: {len(produced) - len(outputs)} intermediate array(s) "
        f"({saved / 2**20:.1f} MB) never materialised; outputs "
        + ", ".join(f"%{v.name}" for v in outputs))
    return node


# ------------------------------------------------------- NumPy codegen
def numpy_kernel(node: Node, chunk: int = None):
    """Generate and compile the CPU kernel of a fused node: ``(source, callable)``."""
    chunk = chunk or CHUNK
    grp, ins, outs = node.group, node.inputs, node.outputs
    shape = grp[-1].outputs[0].shape
    rest = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    chunked = len(shape) >= 1 and shape[0] > 1 and shape[0] * rest > chunk
    rows = max(1, chunk // max(rest, 1))
    env, consts = {"_np": np, "_Tensor": Tensor}, {}
    lines = [f"def {node.op}({', '.join(f'in{i}' for i in range(len(ins)))}):",
             f'    """{len(grp)} ops: {", ".join(n.op for n in grp)}."""']
    for j, v in enumerate(outs):
        lines.append(f"    out{j} = _np.empty({v.shape!r}, dtype=_np.{v.dtype.name})")
    name = {}
    for i, v in enumerate(ins):
        name[v] = f"in{i}"
    last = {}
    for k, n in enumerate(grp):
        for a in n.inputs:
            last[a] = k
    # scratch buffers for internal values, reused once a value is dead
    free, bufs, buf_of = {}, [], {}
    body = []
    for k, n in enumerate(grp):
        v = n.outputs[0]
        if v in outs:
            target = f"o{outs.index(v)}"
        else:
            pool = free.setdefault(v.dtype.name, [])
            if pool:
                b = pool.pop()
            else:
                b = len(bufs)
                bufs.append(v.dtype.name)
            buf_of[v] = b
            target = f"t{b}"
        for a in set(n.inputs):
            if a in buf_of and last.get(a) == k:
                free.setdefault(a.dtype.name, []).append(buf_of[a])
        args = []
        for a in n.args:
            if isinstance(a, Value):
                args.append(_ref(a, name, ins, outs, buf_of, shape))
            else:
                args.append(repr(a))
        tens = [x for a, x in zip(n.args, args) if isinstance(a, Value) or isinstance(a, (int, float))]
        simple = n.op == "to" or all(isinstance(a, Value) or isinstance(a, (int, float, bool)) for a in n.args)
        stmts = _np_rule(n.op, tens, target) if simple and not n.kwargs else None
        if stmts is None:  # call the op's own forward on the chunk
            fname = f"_op{k}"
            env[fname] = _forward_caller(n)
            vals = ", ".join(x for a, x in zip(n.args, args) if isinstance(a, Value))
            stmts = [f"{target}[...] = {fname}({vals})"]
        body.append(f"# %{v.name} = {n.op}(...)")
        body.extend(stmts)
    step_shape = (rows,) + tuple(shape[1:]) if chunked else tuple(shape)
    for b, dt in enumerate(bufs):
        lines.append(f"    _t{b} = _np.empty({step_shape!r}, dtype=_np.{dt})")
    lines.append("    with _np.errstate(all='ignore'):")
    if chunked:
        lines.append(f"        for s in range(0, {shape[0]}, {rows}):")
        lines.append(f"            e = min(s + {rows}, {shape[0]})")
        ind = " " * 12
        for i, v in enumerate(ins):
            sl = "[s:e]" if len(v.shape) == len(shape) and v.shape[0] == shape[0] else ""
            lines.append(f"{ind}a{i} = in{i}{sl}")
        for j in range(len(outs)):
            lines.append(f"{ind}o{j} = out{j}[s:e]")
        for b in range(len(bufs)):
            lines.append(f"{ind}t{b} = _t{b}[:e - s]")
    else:
        ind = " " * 8
        for i in range(len(ins)):
            lines.append(f"{ind}a{i} = in{i}")
        for j in range(len(outs)):
            lines.append(f"{ind}o{j} = out{j}[...]" if outs[j].shape else f"{ind}o{j} = out{j}")
        for b in range(len(bufs)):
            lines.append(f"{ind}t{b} = _t{b}")
    lines += [ind + s for s in body]
    lines.append(f"    return ({', '.join(f'out{j}' for j in range(len(outs)))},)")
    src = "\n".join(lines)
    env.update(consts)
    exec(compile(src, f"<gradlab.compile {node.op}>", "exec"), env)
    return src, env[node.op]


def _ref(a, name, ins, outs, buf_of, shape):
    if a in name:
        return f"a{ins.index(a)}"
    if a in outs:
        return f"o{outs.index(a)}"
    return f"t{buf_of[a]}"


def _forward_caller(n: Node):
    """``f(*arrays) -> array``: the op's own forward (for ops with no NumPy rule)."""
    from .runtime import run_node
    pos = [i for i, a in enumerate(n.args) if isinstance(a, Value)]

    def call(*arrays):
        args = list(n.args)
        for i, arr in zip(pos, arrays):
            args[i] = arr
        return run_node(n, args)[0][0]
    return call


# -------------------------------------------------------- CUDA codegen
def cuda_source(node: Node) -> dict:
    """The pieces of a ``cupy.ElementwiseKernel`` for a fused node: in/out params, body, name."""
    ins, outs = node.inputs, node.outputs
    name = {v: f"in{i}" for i, v in enumerate(ins)}
    body = []
    for k, n in enumerate(node.group):
        v = n.outputs[0]
        args, lits = _c_args(n, name)
        expr = _c_rule(n.op, args, lits, v.dtype)
        if expr is None:
            raise NotImplementedError(f"compile: no CUDA rule for {n.op}")
        local = f"v{k}"
        body.append(f"{_CTYPE.get(v.dtype.name, 'float')} {local} = {expr};  // %{v.name} = {n.op}")
        name[v] = local
    for j, v in enumerate(outs):
        body.append(f"out{j} = {name[v]};")
    return {"in_params": ", ".join(f"{v.dtype.name} in{i}" for i, v in enumerate(ins)),
            "out_params": ", ".join(f"{v.dtype.name} out{j}" for j, v in enumerate(outs)),
            "operation": "\n".join(body), "name": f"gradlab_{node.op}"}


def _c_args(n: Node, name):
    """C operands of a node (values by name, numbers as literals) and its other literal arguments."""
    args = [name[a] if isinstance(a, Value) else repr(a) for a in n.args
            if isinstance(a, Value) or (isinstance(a, (int, float)) and not isinstance(a, bool))]
    return args, [a for a in n.args if not isinstance(a, Value)]


def _cupy_kernel(node: Node):
    """Build the CuPy kernel lazily (compiled by NVRTC on first call)."""
    cache = {}

    def run(*arrays):
        import cupy
        if "k" not in cache:
            src = cuda_source(node)
            cache["k"] = cupy.ElementwiseKernel(src["in_params"], src["out_params"], src["operation"], src["name"])
        outs = [cupy.empty(v.shape, dtype=v.dtype) for v in node.outputs]
        cache["k"](*arrays, *outs)
        return tuple(outs)
    return run
