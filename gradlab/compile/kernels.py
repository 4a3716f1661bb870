"""Code generation for fused kernels: NumPy on the CPU, a CuPy ``ElementwiseKernel`` on CUDA.

See ``fuse.py`` for why. The CPU kernel is generated Python source (kept in
``node.source`` so a student can read it): it allocates the outputs, then
walks the rows in chunks of about :data:`CHUNK` elements, evaluating every op
of the chain on the chunk with ufuncs writing into scratch buffers (``out=``).
The chunks are shared among ``gradlab.get_num_threads()`` threads, each taking
the next chunk as it frees up (:func:`parallel_chunks`): NumPy's ufuncs release
the GIL while they loop, so on a machine with several cores the chunks really
run in parallel (what ``numexpr`` does too).
"""
from __future__ import annotations

import math

import numpy as np

from .._tensor import Tensor
from ..backend.threads import parallel_items
from ..ops.registry import REGISTRY
from .ir import Node, Value, show_arg

CHUNK = 1 << 17   # elements per chunk (per scratch buffer): 512 KB of float32; a kernel's buffers stay in L3
# (64K -> 128K elements: half as many chunks to hand between the threads. benchmarks/bench_compile.py's block,
# 2 threads, idle machine, alternating, medians of 12: compiled 25.6 -> 23.2 ms (eager 58.3); one thread unchanged
# (39.3 vs 39.4 ms). 256K gave 22.4 ms, with 1 MB buffers.)

# What each op is inside a fused kernel is part of its registry entry (``register(..., kernel=(ufunc,
# C expression))``, beside the op): adding an op touches its own file only. Here: the tables read from
# the entries, and the few rules that are not one ufunc or one expression (below, by name).
_NUMPY = {i.name: i.kernel[0] for i in REGISTRY.values() if i.kernel and i.kernel[0]}
_CUDA = {i.name: i.kernel[1] for i in REGISTRY.values() if i.kernel and i.kernel[1]}
# the fused backward ops (ops/fused_backward.py) are nodes, not registry entries
_CUDA.update({"tanh_backward": "({0} * (1 - {1} * {1}))", "sigmoid_backward": "({0} * {1} * (1 - {1}))",
              "clone": "{0}"})


def _np_rule(op, ins, out):
    """NumPy statements computing ``op`` from input expressions into ``out`` (None: no rule)."""
    if op in _NUMPY and len(ins) == getattr(np, _NUMPY[op]).nin:
        return [f"_np.{_NUMPY[op]}({', '.join(ins)}, out={out})"]
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
NUMPY_RULES = sorted(set(_NUMPY) | {"relu", "sigmoid", "where", "to", "clone", "tanh_backward", "sigmoid_backward"})

#: ops (by name) with a CUDA C rule
CUDA_RULES = sorted(set(_CUDA) | {"where", "to", "gelu"})
_CTYPE = {"float16": "float16", "float32": "float", "float64": "double", "bool": "bool", "int32": "int",
          "int64": "long long", "int8": "signed char", "uint8": "unsigned char", "int16": "short"}


def _c_rule(op, ins, lits, dtype):
    if op in _CUDA and len(ins) == (2 if "{1}" in _CUDA[op] else 1):
        return _CUDA[op].format(*ins)
    if op == "where" and len(ins) == 3:
        return f"({ins[0]} ? {ins[1]} : {ins[2]})"
    if op == "to":
        return f"(({_CTYPE.get(dtype.name, 'float')}){ins[0]})"
    if op == "gelu" and len(ins) == 1 and (not lits or lits[0] == "none"):
        return f"({ins[0]} * normcdf({ins[0]}))"
    return None


# ------------------------------------------------------- NumPy codegen
def numpy_kernel(node: Node, chunk: int = None):
    """Generate and compile the CPU kernel of a fused node: ``(source, callable)``."""
    chunk = chunk or CHUNK
    grp, ins, outs = node.group, node.inputs, node.outputs
    shape = grp[-1].outputs[0].shape
    rest = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    chunked = len(shape) >= 1 and shape[0] > 1 and shape[0] * rest > chunk
    rows = max(1, chunk // max(rest, 1))
    # constants are written with repr(): inf, -inf and nan (a causal mask's -inf) and NumPy scalars
    # (np.float32(0.5)) must name something in the kernel's namespace
    env, consts = {"_np": np, "np": np, "_Tensor": Tensor, "inf": float("inf"), "nan": float("nan")}, {}
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
    free, bufs, buf_of, shown = {}, [], {}, []
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
        # a number beside float arrays of one dtype becomes a 0-d array of that dtype, made once: the same
        # value NumPy would round the Python number to, without its per-call conversion (0.99 -> 0.53 us)
        fdt = {a.dtype for a in n.args if isinstance(a, Value)}
        fdt = fdt.pop() if len(fdt) == 1 and next(iter(fdt)).kind == "f" else None
        for a in n.args:
            if isinstance(a, Value):
                args.append(_ref(a, name, ins, outs, buf_of, shape))
            elif fdt is not None and type(a) in (int, float):
                args.append(f"_c{len(consts)}")
                consts[args[-1]] = np.asarray(a, dtype=fdt)
                shown.append(f"{args[-1]} = {fdt.name}({a!r})")
            else:  # inf/nan have no literal: float('inf')
                args.append(repr(a) if not isinstance(a, float) or a == a and abs(a) != float("inf") else f"float({str(a)!r})")
        tens = [x for a, x in zip(n.args, args) if isinstance(a, Value) or isinstance(a, (int, float))]
        simple = n.op == "to" or all(isinstance(a, Value) or isinstance(a, (int, float, bool)) for a in n.args)
        stmts = _np_rule(n.op, tens, target) if simple and not n.kwargs else None
        if stmts is None:  # call the op's own forward on the chunk
            fname = f"_op{k}"
            env[fname] = _forward_caller(n)
            vals = ", ".join(x for a, x in zip(n.args, args) if isinstance(a, Value))
            stmts = [f"{target}[...] = {fname}({vals})"]
        body.append(f"# %{v.name} = {n.op}({', '.join(show_arg(a) for a in n.args)})")
        body.extend(stmts)
    step_shape = (rows,) + tuple(shape[1:]) if chunked else tuple(shape)
    nchunks = -(-shape[0] // rows) if chunked else 1
    # each thread makes its own scratch buffers once (scratch()), then takes chunks one at a time as it
    # frees up (chunk(i, bufs); backend.threads.parallel_items): see parallel_chunks for why
    lines.append("    def scratch():  # one thread's buffers")
    lines.append("        return [" + ",\n                ".join(f"_np.empty({step_shape!r}, dtype=_np.{dt})" for dt in bufs) + "]")
    lines.append("    def chunk(i, bufs):")
    ind = " " * 8
    if chunked:
        lines.append(f"{ind}s = i * {rows}")
        lines.append(f"{ind}e = min(s + {rows}, {shape[0]})")
        for i, v in enumerate(ins):
            sl = "[s:e]" if len(v.shape) == len(shape) and v.shape[0] == shape[0] else ""
            lines.append(f"{ind}a{i} = in{i}{sl}")
        for j in range(len(outs)):
            lines.append(f"{ind}o{j} = out{j}[s:e]")
        for b in range(len(bufs)):
            lines.append(f"{ind}t{b} = bufs[{b}][:e - s]")
    else:
        for i in range(len(ins)):
            lines.append(f"{ind}a{i} = in{i}")
        for j in range(len(outs)):
            lines.append(f"{ind}o{j} = out{j}[...]" if outs[j].shape else f"{ind}o{j} = out{j}")
        for b in range(len(bufs)):
            lines.append(f"{ind}t{b} = bufs[{b}]")
    lines += [ind + s for s in body]
    env["_parallel"] = parallel_chunks
    env.update(inf=float("inf"), nan=float("nan"))  # repr() of an infinite argument (softplus's threshold) is 'inf'
    lines.append("    with _np.errstate(all='ignore'):  # (the worker threads run under the caller's errstate)")
    lines.append(f"        _parallel(chunk, {nchunks}, scratch, {int(np.prod(shape))})")
    lines.append(f"    return ({', '.join(f'out{j}' for j in range(len(outs)))},)")
    if consts:  # (what the _c names hold, for a reader of the source)
        lines.insert(2, "    # " + ", ".join(shown))
    src = "\n".join(lines)
    env.update(consts)
    exec(compile(src, f"<gradlab.compile {node.op}>", "exec"), env)
    return src, env[node.op]


def _c_literal(a, f32):
    """C source for a constant (``0.5f`` in a float32 chain, or C would compute in double; inf/nan spelt out)."""
    if isinstance(a, float) and not math.isfinite(a):
        one, zero = ("1.0f", "0.0f") if f32 else ("1.0", "0.0")
        return f"(-{one}/{zero})" if a < 0 else f"({one}/{zero})" if a > 0 else f"({zero}/{zero})"
    return f"{float(a)!r}f" if f32 and isinstance(a, float) else repr(a)


def parallel_chunks(chunk, n, scratch, work):
    """Run ``chunk(i, bufs)`` for every chunk ``i`` in ``range(n)``; each thread makes its scratch buffers
    once (``bufs = scratch()``) and takes the next chunk nobody has taken yet as it frees up
    (``backend.threads.parallel_items``), across ``gradlab.get_num_threads()`` threads when the kernel
    touches at least ``threads.MIN_ELEMENTS`` elements.

    Why chunk by chunk, not a fixed run of chunks per thread (``parallel_for``'s pieces): a loop lasts as
    long as its slowest thread, and on a machine shared with other programs the operating system pauses
    one of them now and then; taking chunks as threads free up, the paused thread simply does fewer.
    Measured with ``benchmarks/bench_compile.py`` (64 chunks a kernel) on the 2-core machine beside
    other work (load 3.5-4.0), compiled step at 2 threads against 1: fixed pieces 48.3 vs 43.8 ms (the
    second thread cost time), chunk by chunk 44.9 vs 43.2 ms. Same bits for any thread count: each chunk
    writes its own rows.
    """
    if n <= 1:
        chunk(0, scratch())
        return
    parallel_items(chunk, n, work=work, setup=scratch)


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
    f32 = n.outputs and n.outputs[0] is not None and n.outputs[0].dtype == np.float32

    args = [name[a] if isinstance(a, Value) else _c_literal(a, f32) for a in n.args
            if isinstance(a, Value) or (isinstance(a, (int, float)) and not isinstance(a, bool))]
    return args, [a for a in n.args if not isinstance(a, Value)]


def cupy_kernel(node: Node):
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
