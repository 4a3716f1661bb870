"""The reverse-mode engine: ``backward()`` and ``gradlab.grad()``, in one file, read top to bottom.

Reverse mode is the chain rule applied from the output back to the inputs:
each node turns the gradient of its output into gradients of its inputs (a
vector-Jacobian product, the ``vjp`` written in the op's class). The engine
only decides the *order*, and adds up the gradients that meet at one place.

What this file holds, in reading order:

1. **The idea** -- :func:`reference_backward`: micrograd's loop on gradlab's
   nodes in twenty lines. Sort the graph depth first
   (:func:`depth_first_order`), walk it backwards, call each node's ``vjp``,
   add up gradients that meet. Read this first.
2. **The entry points** -- :func:`backward` (``Tensor.backward``) and
   :func:`grad` (``gradlab.grad``): check the arguments, seed the roots'
   gradients, call :func:`run_backward`.
3. **The real order** -- :func:`schedule`: the same sort without recursion
   (a 100 000-op chain is fine), highest sequence number first, as PyTorch.
4. **The real loop** -- :func:`run_backward` and :func:`_run_nodes`: the
   reference loop made complete (several roots, hooks, ``retain_grad``,
   ``grad()``'s capture, ``retain_graph``, observers, the error messages) and
   fast. The everyday node (no hook, an op with an array twin, nothing
   watching) runs inline in the loop; any other goes to :func:`_run_node`,
   which handles every case.
5. **One node's VJP** -- :func:`call_vjp` / :func:`call_vjp_arrays`: call
   the rule and check what it hands back (shape, dtype).
6. **Where gradients land** -- :func:`pre_process` (tensor hooks,
   ``retain_grad``, capture for ``grad()``) before a node runs, and
   :func:`add_to_grad` / :func:`add_array_to_grad` into a leaf's ``.grad``.

Two speeds. With ``create_graph=True`` gradients flow as Tensors and every VJP
is computed with gradlab ops, so backward is itself recorded (higher-order
gradients); the same happens while an op observer (profiler, trace_shapes)
watches, so it sees the ops inside each VJP. Otherwise -- nearly always --
gradients flow as raw arrays and an op that has the same rule written on
arrays (``vjp_arrays``, derived from its ``vjp`` wherever the op's file can)
runs that: no Tensor or node is made for a gradient nobody will differentiate.

The checks: ``tests/test_engine_reference.py`` runs generated programs
through :func:`reference_backward` and the real loop (both node paths) and
requires the same gradients; ``tests/test_engine_loops.py`` and
``tests/test_engine_fuzz.py`` compare the two node paths on programs with
hooks, user Functions, ``grad()`` and the rest; ``tests/test_engine_order.py``
pins the order against PyTorch's.
"""
from __future__ import annotations

import bisect
import operator

import numpy as _np

from .. import _tensor as _tensor_mod
from .._tensor import Tensor
from ..backend import dtypes as _dt
from ..backend.device import xp_of
from ..backend.fperr import enter as _fp_quiet, leave as _fp_restore, quiet as _quiet
from ..errors import ArgumentTypeError, GradError, ShapeError, fmt_shape
from . import function as _fn
from .function import AccumulateGrad, edge_of, freed_graph_error
from .grad_mode import no_grad, state as _grad_state

_ndarray = _np.ndarray


# ======================================================================= 1. the idea
def reference_backward(root):
    """Backward in twenty lines: fill each leaf's ``.grad`` with d root / d leaf (``root``: a scalar).

    1. Sort the graph so that every node comes after the nodes it feeds on
       (:func:`depth_first_order`, as micrograd).
    2. Walk that order backwards, from the root: by the time a node runs,
       every node that uses its output has run and sent its gradient.
    3. Each node turns its output gradient into one gradient per input: its
       ``vjp``, the rule written in the op's class (``gradlab.source("tanh")``
       shows one). Gradients that meet at one place are added up. A leaf's
       node adds the total into ``.grad``.

    ``backward()`` computes the same (tests/test_engine_reference.py checks it) and more.
    """
    order = depth_first_order(root.grad_fn)
    grads = {root.grad_fn: [Tensor._make(_ones_like(root._data))]}  # d root / d root = 1
    with no_grad(), _quiet():  # (backward is not itself recorded; inf and nan without NumPy warnings)
        for node in reversed(order):
            g_out = grads.pop(node, None)
            if g_out is None:
                continue  # no gradient reached it (it only feeds integer or detached paths)
            if type(node) is AccumulateGrad:
                leaf = node.variable
                leaf.grad = g_out[0] if leaf.grad is None else leaf.grad + g_out[0]
                continue
            g_in = node.vjp(*g_out)  # the chain rule at one node: one gradient per input
            for edge, g, meta in zip(node.next_functions, g_in, node.input_meta):
                if edge is not None and g is not None:  # edge = (the input's node, which of its outputs)
                    g = g.to(meta[1])  # (an input of another float dtype than the op's gets its own)
                    slot = grads.setdefault(edge[0], [None] * len(edge[0].out_meta))
                    slot[edge[1]] = g if slot[edge[1]] is None else slot[edge[1]] + g


def depth_first_order(node):
    """Every node ``node`` depends on, each after all the nodes it feeds on (then ``node`` itself).

    micrograd's ``build_topo``: visit a node's inputs' nodes first, then append
    the node. Recursive, so only for small graphs; the engine's :func:`schedule`
    does the same job with a stack.
    """
    order, seen = [], set()

    def visit(n):
        if n not in seen:
            seen.add(n)
            for edge in n.next_functions:
                if edge is not None:
                    visit(edge[0])
            order.append(n)  # after all its inputs' nodes

    visit(node)
    return order


# ================================================================ 2. the entry points
#: Objects with ``node_start(node, grads)`` / ``node_end(node, grads_in, grads_out)``
#: and optionally ``begin(roots)`` / ``end()``: the animation and profilers record with these.
backward_observers: list = []


def _label(t: Tensor) -> str:
    return f"'{t.name}'" if t.name else f"the tensor of shape {fmt_shape(t.shape)}"


def _root_edge(t: Tensor):
    if t._view_base is not None and t._requires_grad and t._vcounter.value != t._view_version:
        from .views import refresh_view
        refresh_view(t)
    if t.grad_fn is not None:
        return (t.grad_fn, t._output_nr)
    return edge_of(t)


def _make_grads(outputs, grad_outputs, what):
    grad_outputs = list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        arg = "grad_tensors" if what == "backward" else "grad_outputs"
        raise GradError(f"{what}: got {len(outputs)} tensors and {len(grad_outputs)} gradients; pass one entry of "
                        f"{arg} per tensor (None for a scalar to start from 1)")
    grads = []
    for i, (t, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:
            if t._data.size != 1:
                raise GradError(
                    f"{what}: {_label(t)} has {t._data.size} elements; backward needs a scalar to start from, "
                    f"or an explicit gradient of the same shape: call .sum() (or .mean()) first, or pass "
                    f"gradient=gradlab.ones_like(...)"
                )
            g = Tensor._make(_ones_like(t._data))
        elif not isinstance(g, Tensor):
            from ..factories import tensor as _tensor
            g = _tensor(g, dtype=t.dtype)
        if g.shape != t.shape:
            raise ShapeError(
                f"{what}: the gradient given for {_label(t)} has shape {fmt_shape(g.shape)}, "
                f"but the tensor has shape {fmt_shape(t.shape)}; they must match"
            )
        grads.append(g)
    return grads


def _ones_like(arr):
    out = arr.copy()
    out.fill(1)
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of ``tensors`` into the leaves' ``.grad`` (``Tensor.backward``)."""
    tensors = _tensor_list(tensors, "tensors", "backward")
    if grad_tensors is None or isinstance(grad_tensors, Tensor):
        grad_tensors = [grad_tensors] * len(tensors) if grad_tensors is None else [grad_tensors]
    for t in tensors:
        if not t._requires_grad:
            raise GradError(
                f"backward: {_label(t)} does not require grad and has no grad_fn, so there is no graph to "
                "differentiate; did you forget requires_grad=True on the inputs, or compute it under no_grad()?"
            )
    grads = _make_grads(tensors, grad_tensors, "backward")
    if retain_graph is None:
        retain_graph = create_graph
    targets = None
    if inputs is not None:
        targets = _tensor_list(inputs, "inputs", "backward")
        if not targets:
            raise GradError("backward: inputs=[] names no tensor to accumulate gradients into, so nothing would be "
                            "computed; pass the tensors whose .grad you want, or omit inputs= for all leaves")
    run_backward(tensors, grads, retain_graph, create_graph, targets, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False,
         materialize_grads=False):
    """Return the gradients of ``outputs`` with respect to ``inputs``, leaving ``.grad`` untouched."""
    single = isinstance(inputs, Tensor)
    outputs = _tensor_list(outputs, "outputs")
    inputs = [inputs] if single else _tensor_list(inputs, "inputs")
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs] * len(outputs) if grad_outputs is None else [grad_outputs]
    for t in outputs:
        if not t._requires_grad:
            raise GradError(f"grad: output {_label(t)} does not require grad, so it has no graph to differentiate")
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"grad: inputs[{i}] must be a Tensor, got {type(t).__name__}")
        if not t._requires_grad:
            raise GradError(f"grad: input {i} ({_label(t)}) does not require grad; set requires_grad=True on it")
    grads = _make_grads(outputs, grad_outputs, "grad")
    if retain_graph is None:
        retain_graph = create_graph
    result = run_backward(outputs, grads, retain_graph, create_graph, inputs, accumulate=False)
    for i, (t, g) in enumerate(zip(inputs, result)):
        if g is None:
            if materialize_grads:
                result[i] = Tensor._make(_ones_like(t._data) * 0)
            elif not allow_unused:
                raise GradError(
                    f"grad: input {i} ({_label(t)}) is not reachable from the outputs (it was not used to compute "
                    "them, or the path was cut by detach()/no_grad); pass allow_unused=True to get None for it"
                )
    return tuple(result)


def _tensor_list(x, what, fn="grad"):
    """``x`` as a list of Tensors (a Tensor alone, or any sequence of them), else a clear error."""
    if isinstance(x, Tensor):
        return [x]
    try:
        items = list(x)
    except TypeError:
        items = None
    if items is None or not all(isinstance(t, Tensor) for t in items):
        bad = type(x).__name__ if items is None else next(type(t).__name__ for t in items if not isinstance(t, Tensor))
        raise ArgumentTypeError(f"{fn}: {what} must be a Tensor or a sequence of Tensors, got {bad}")
    return items



# ================================================================== 3. the real order
def schedule(starts):
    """Every node reachable from ``starts``, in the order backward runs them.

    A node must run after every node that sends it a gradient. Its users were
    all created after it, so they have higher sequence numbers: running nodes
    from the highest number down is a valid order (PyTorch's engine uses the
    same priority). A leaf's ``AccumulateGrad`` runs right after the first-created
    of its users (the last of them to run), so a leaf's ``.grad`` is final as
    early as possible; two leaves of one op in argument order.

    The walk is an explicit stack, not recursion: a 100 000-op chain is fine.
    Leaves' accumulators never go on the stack (they lead nowhere); the walk
    only notes each one's first-created user. The op nodes are then sorted by
    sequence number (``list.sort``, in C) and each accumulator is placed
    behind its user. This runs once per backward over every node, so it is
    written for speed; ``tests/test_engine_order.py`` pins the order.
    """
    seen = set(starts)
    stack = [n for n in seen if type(n) is not AccumulateGrad]
    ops = []
    first_user = {}  # AccumulateGrad node -> (its first-created user, argument position there)
    while stack:
        node = stack.pop()
        ops.append(node)
        for e in node.next_functions:
            if e is None:
                continue
            nxt = e[0]
            if type(nxt) is AccumulateGrad:
                u = first_user.get(nxt)
                if u is None or node.seq < u[0].seq:
                    first_user[nxt] = (node, node.next_functions.index(e))
            elif nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    ops.sort(key=_seq_of, reverse=True)
    roots = [n for n in starts if type(n) is AccumulateGrad and n not in first_user]  # a root leaf: runs first
    if not first_user:
        return roots + ops if roots else ops
    # Each accumulator goes right behind its user. ``ops`` is sorted, so the user's place is found by
    # bisection, and the order is then put together from slices of ``ops`` (no Python loop over every node).
    behind = sorted((bisect.bisect_left(ops, -user.seq, key=_minus_seq), pos, acc)
                    for acc, (user, pos) in first_user.items())  # (user's place, argument position, accumulator)
    order = sorted(roots, key=_seq_of, reverse=True)
    start = 0
    for i, _, acc in behind:
        order += ops[start:i + 1]  # the nodes up to and including the user ...
        order.append(acc)          # ... then the accumulator
        start = i + 1
    order += ops[start:]
    return order


_seq_of = operator.attrgetter("seq")


def _minus_seq(node):
    return -node.seq  # (``ops`` is sorted from the highest number down; bisect wants rising keys)


# =================================================================== 4. the real loop
def run_backward(roots, root_grads, retain_graph, create_graph, targets=None, accumulate=True):
    """The engine. ``targets``: tensors whose gradients to capture (``grad``) or to
    restrict accumulation to (``backward(inputs=...)``). Returns the captured list."""
    root_edges = [_root_edge(t) for t in roots]
    capture = {}
    if targets is not None:
        for i, t in enumerate(targets):
            e = _root_edge(t)
            if e is not None:
                capture.setdefault(e, []).append(i)
    order = schedule([e[0] for e in root_edges if e is not None])  # 1. the order
    needed = None
    if targets is not None:
        target_nodes = {e[0] for e in capture}
        needed = set()
        # inputs before their users: a node is needed if it is a target or feeds one that is
        for node in reversed(order):
            if node in target_nodes or any(e is not None and e[0] in needed for e in node.next_functions):
                needed.add(node)
    captured = [None] * (len(targets) if targets is not None else 0)

    # 2. seed the roots' gradients and run the nodes in that order. Gradients flow as arrays unless the
    #    backward pass is itself to be recorded (create_graph) or watched op by
    #    op (the profiler and trace_shapes show the ops each VJP runs, as
    #    PyTorch's profiler shows the kernels inside a backward node).
    arrays = not create_graph and not _fn.op_observers
    buffers = {}
    for e, g in zip(root_edges, root_grads):
        if e is None:
            continue
        buf = buffers.setdefault(e[0], [None] * len(e[0].out_meta))
        g = g._data if arrays else g
        buf[e[1]] = g if buf[e[1]] is None else _sum(buf[e[1]], g)
    handed = set()  # ids of gradient arrays already stored in some .grad (never share one)
    prev_mode, prev_root = _grad_state.enabled, _grad_state.backward_root  # (this thread's: see grad_mode)
    _grad_state.enabled = bool(create_graph)
    _grad_state.backward_root = roots[0] if roots else None  # (for the freed-graph error; labelled only then)
    observers = list(backward_observers)
    for o in observers:
        if hasattr(o, "begin"):
            o.begin(roots)
    st = _Pass(arrays, create_graph, retain_graph, accumulate, targets, capture, captured, needed, observers, handed)
    quiet = _fp_quiet()  # NumPy's overflow/invalid/divide warnings off for the whole pass (inf/nan, as PyTorch)
    try:
        _run_nodes(order, buffers, st)
        if buffers:  # a gradient reached a node that had already run: never drop it silently
            late = next(iter(buffers))
            raise GradError(f"backward: a gradient reached {late.name} (node #{late.seq}) after it ran; the "
                            "graph's nodes are not in creation order (was a grad_fn set by hand?)")
        if accumulate and targets is not None:
            _accumulate_non_leaves(targets, captured, create_graph)
    finally:
        _fp_restore(quiet)
        _grad_state.enabled = prev_mode
        _grad_state.backward_root = prev_root
        for o in observers:
            if hasattr(o, "end"):
                o.end()
    return captured


def _accumulate_non_leaves(targets, captured, create_graph):
    """``backward(inputs=[h])`` with a non-leaf ``h``: its gradient goes into ``h.grad`` too, as PyTorch
    does (leaves got theirs at their AccumulateGrad node; the gradient also flowed on past ``h``)."""
    done = set()
    for t, g in zip(targets, captured):
        if g is None or t.grad_fn is None or id(t) in done or t._retains_grad:
            continue  # (a tensor that retains its gradient got it already, once)
        done.add(id(t))
        if t.grad is None:  # a copy, as for retain_grad: the same array flowed on and may be a leaf's .grad
            t.grad = g if create_graph else Tensor._make(g._data.copy())
        elif create_graph or t.grad._requires_grad:
            t.grad = t.grad + g
        else:
            t.grad = Tensor._make(_sum(t.grad._data, g._data))


class _Pass:
    """What one backward pass needs at every node (so the node runner takes one argument for it)."""
    __slots__ = ("arrays", "create_graph", "retain_graph", "accumulate", "targets", "capture", "captured",
                 "needed", "observers", "handed")

    def __init__(self, arrays, create_graph, retain_graph, accumulate, targets, capture, captured, needed,
                 observers, handed):
        self.arrays, self.create_graph, self.retain_graph, self.accumulate = arrays, create_graph, retain_graph, accumulate
        self.targets, self.capture, self.captured, self.needed = targets, capture, captured, needed
        self.observers, self.handed = observers, handed


def _run_nodes(order, buffers, st):
    """The loop: run each node that a gradient reached, in ``order``.

    For each node: pop the gradients of its outputs from ``buffers``, run its
    VJP, check each gradient it returns against its input's shape and dtype,
    add it into the buffer of the node it goes to (``_sum``: gradients that
    meet add up), and free the node's saved tensors (unless ``retain_graph``).

    The everyday node runs right here, inline: gradients as arrays and nothing
    watching the pass (``plain``: no ``create_graph``, no capture for
    ``grad()``, no observer), no hook on the node, an op with an array twin.
    Anything else (hooks, ``retain_grad``, a user Function, a freed graph, a
    leaf with hooks, ``create_graph``, an observer) goes to :func:`_run_node`,
    which handles every case. Same order, same results: the inline path only
    skips the checks that cannot apply (``tests/test_engine_loops.py`` and
    ``tests/test_engine_fuzz.py`` require the same bits both ways).

    This loop runs once per node of every backward pass. Three shortcuts are
    kept for speed, each with what it saves (CPU time per node of backward on
    the 200-op chain of ``benchmarks/bench_foundation.py``, about 4 us a node
    on a busy 2-core machine, side by side with the plain spelling):

    * a node with one output (nearly all) is called without unpacking a list and
      without looking for a missing gradient among its outputs: 0.93 and 0.97 us
      a node in two runs, a quarter of the node's backward;
    * one gradient per input is read with ``enumerate`` and indexing rather than
      a ``zip`` of three sequences: 0.03 and 0.48 us a node;
    * the names the loop uses are bound to locals first (a local is one array
      read, a global or an attribute a dictionary lookup), a one-output node's
      buffer is made in one step with its gradient in it, and the saved tensors
      are freed inline (``node.release()``'s two lines): together 0.23 to 0.32
      us a node (about 7% of the node's backward; one by one each is within
      the noise).
    """
    plain = st.arrays and not st.capture and st.needed is None and not st.observers
    pop, get = buffers.pop, buffers.get
    retain, handed, accumulate = st.retain_graph, st.handed, st.accumulate
    run_node, fix, add, ndarray, Acc = _run_node, _fix, _sum, _ndarray, AccumulateGrad
    for node in order:
        grads = pop(node, None)
        if grads is None:
            continue  # no gradient reached it
        fast = type(node).vjp_arrays if plain else None  # (the class's function, called with the node)
        if fast is None or node._hooked:
            if type(node) is Acc and plain and not node._hooked and not node.variable._hooks:
                if accumulate:
                    add_array_to_grad(node.variable, grads[0], handed)  # a leaf: into .grad
            else:  # a hook, retain_grad, an op with no array twin (a user Function), or not plain
                run_node(node, grads, buffers, st)
            continue
        if len(grads) == 1:  # one output: the usual node
            if node._released:  # (freed by an earlier backward: _run_node says so)
                run_node(node, grads, buffers, st)
                continue
            outs = fast(node, grads[0])
        elif node._released or any(g is None for g in grads):  # (freed; an output got no gradient)
            run_node(node, grads, buffers, st)
            continue
        else:
            outs = fast(node, *grads)
        edges, metas = node.next_functions, node.input_meta
        for i, g in enumerate(outs):  # one gradient per input
            if g is None:
                continue
            e = edges[i]
            if e is None:
                continue  # (an input that needs no gradient)
            meta = metas[i]
            if type(g) is not ndarray or g.dtype is not meta[1] or g.shape != meta[0]:
                g = fix(node, g, meta)  # (a NumPy scalar, another dtype: made right, or an error)
                if g is None:
                    continue
            nxt, nr = e
            buf = get(nxt)
            if buf is None:
                if len(nxt.out_meta) == 1:  # (the usual: one output, one gradient)
                    buffers[nxt] = [g]
                    continue
                buf = buffers[nxt] = [None] * len(nxt.out_meta)
            buf[nr] = g if buf[nr] is None else add(buf[nr], g)
        if not retain and node._saved:
            node._saved = ()  # node.release(), inline
            node._released = True


def _run_node(node, grads, buffers, st):
    """Run one node in full generality: hooks, capture, observers, either speed."""
    arrays, create_graph, needed = st.arrays, st.create_graph, st.needed
    is_acc = type(node) is AccumulateGrad
    if needed is not None and node not in needed:
        return  # it leads to no target
    if st.capture or node._pre_hooks or node._retained or node._node_pre_hooks or (is_acc and node.variable._hooks):
        grads = pre_process(node, grads, create_graph, st.capture, st.captured, arrays)
    observers = st.observers
    if observers:
        for o in observers:
            o.node_start(node, _tensors(grads) if arrays else grads)
    outs = ()
    if is_acc:
        if st.accumulate and (st.targets is None or (node, 0) in st.capture):
            if arrays:
                add_array_to_grad(node.variable, grads[0], st.handed)
            else:
                add_to_grad(node.variable, grads[0], create_graph)
    elif needed is None or any(e is not None and e[0] in needed for e in node.next_functions):
        outs = call_vjp_arrays(node, grads) if arrays else call_vjp(node, grads)
        if node._post_hooks:
            for h in list(node._post_hooks):
                new = h(_tensors(outs), _tensors(grads)) if arrays else h(outs, grads)
                if new is not None:  # new grad_inputs, as PyTorch's Node hooks may return
                    new = _checked(node, new, outs, node.input_meta, "register_hook", "grad_inputs")
                    outs = tuple(None if g is None else g._data for g in new) if arrays else new
    if observers:
        for o in observers:
            if arrays:
                o.node_end(node, _tensors(grads), _tensors(outs))
            else:
                o.node_end(node, grads, outs)
    for e, g in zip(node.next_functions, outs):
        if e is None or g is None:
            continue
        nxt, nr = e
        buf = buffers.get(nxt)
        if buf is None:
            buf = buffers[nxt] = [None] * len(nxt.out_meta)
        buf[nr] = g if buf[nr] is None else _sum(buf[nr], g)
    if not st.retain_graph and node._saved:
        node.release()


def _sum(a, b):
    """Two gradients for the same place add up (0-d arrays stay arrays, not NumPy scalars)."""
    s = a + b
    return _np.asarray(s) if isinstance(s, _np.generic) else s


# ================================================================== 5. one node's VJP
# The loop decides *which* node runs *when*; this runs one. ``call_vjp`` calls a node's ``vjp`` (or a
# user Function's ``backward``) on Tensors, ``call_vjp_arrays`` its array twin. Either way each gradient
# must come back with its input's shape and dtype: a float gradient of another dtype is cast back, one
# of the broadcast shape (a user backward that forgot to reduce) is summed down as PyTorch does, and
# anything else is an error that names the node and both shapes.
class BackwardShapeError(ShapeError, GradError):
    """A backward (or hook) returned a gradient of the wrong shape: a shape problem (``ShapeError``)
    found by autograd (``GradError``, a RuntimeError, as PyTorch raises here)."""


def call_vjp(node, grads):
    """Run ``node.vjp`` on the Tensor gradients ``grads``; return one checked gradient per input."""
    if node._released:
        raise freed_graph_error(node)
    if len(grads) > 1 and node._materialize and any(g is None for g in grads):  # (`None in grads` would call ==)
        like = next(g for g in grads if g is not None)._data
        grads = [g if g is not None else Tensor._make(_zeros(node.out_meta[i], like)) for i, g in enumerate(grads)]
    outs = node.vjp(*grads)
    if type(outs) is not tuple:
        outs = tuple(outs) if isinstance(outs, list) else (outs,)
    edges = node.next_functions
    if len(outs) != len(edges):
        raise GradError(f"{node.name}: backward returned {len(outs)} gradients for {len(edges)} inputs; "
                        "return one per input (None where there is none)")
    fixed = None
    metas = node.input_meta
    for i, g in enumerate(outs):
        if g is None or edges[i] is None:
            continue
        if type(g) is not Tensor and not isinstance(g, Tensor):
            raise GradError(f"{node.name}: backward returned a {type(g).__name__} for input {i}; return Tensors")
        shape, dtype = metas[i]
        data = g._data
        if data.shape != shape and _expands_to(shape, data.shape):
            # a gradient of the broadcast shape (a user backward that forgot to reduce): summed
            # down to the input's shape, as PyTorch does
            if fixed is None:
                fixed = list(outs)
            g = fixed[i] = _tensor_mod._ops.sum_to(g, shape)
            data = g._data
        if data.shape != shape:
            raise BackwardShapeError(
                f"{node.name}: backward gave a gradient of shape {fmt_shape(g.shape)} for input {i}, "
                f"whose shape is {fmt_shape(shape)}; a gradient must have its input's shape"
            )
        if data.dtype != dtype:
            if fixed is None:
                fixed = list(outs)
            fixed[i] = g.to(dtype) if _dt.is_floating(dtype) else None
    return tuple(fixed) if fixed is not None else outs


def _expands_to(shape, big):
    """Does ``shape`` broadcast to ``big`` (so a gradient of shape ``big`` can be summed down to it)?"""
    if len(shape) > len(big):
        return False
    return all(s == b or s == 1 for s, b in zip(shape[::-1], big[::-1]))


def call_vjp_arrays(node, grads):
    """``call_vjp`` with gradients as arrays: the op's ``vjp_arrays`` if it has one (and no
    override replaced its rule), else its tensor ``vjp`` on wrapped arrays."""
    fast = node.vjp_arrays
    if fast is None:
        outs = call_vjp(node, _tensors(grads))
        return tuple(None if g is None else g._data for g in outs)
    if node._released:
        raise freed_graph_error(node)
    if len(grads) > 1 and any(g is None for g in grads):
        like = next(g for g in grads if g is not None)
        grads = [g if g is not None else _zeros(node.out_meta[i], like) for i, g in enumerate(grads)]
    outs = fast(*grads)
    for g, meta in zip(outs, node.input_meta):  # the common case: all as expected
        if g is not None and (type(g) is not _ndarray or g.dtype is not meta[1] or g.shape != meta[0]):
            return _fixed(node, outs)
    return outs


def _fixed(node, outs):
    """Check a twin's gradients (see :func:`_fix`)."""
    return tuple(None if g is None else _fix(node, g, meta) for g, meta in zip(outs, node.input_meta))


def _fix(node, g, meta):
    """One gradient from a twin, made right: a 0-d NumPy scalar becomes an array, a float dtype is
    cast back to its input's (None for an integer input); a wrong shape is a bug in gradlab."""
    if isinstance(g, _np.generic):  # NumPy turns 0-d results into scalars; keep arrays
        g = _np.asarray(g)
    shape, dtype = meta
    if g.shape != shape:
        raise ShapeError(f"{node.name}: vjp_arrays gave a gradient of shape {fmt_shape(g.shape)} for an input "
                         f"of shape {fmt_shape(shape)}")
    if g.dtype != dtype:
        g = g.astype(dtype) if _dt.is_floating(dtype) else None
    return g


def _zeros(meta, like):
    """A zero gradient for an output no gradient reached, on the device of ``like``."""
    return xp_of(like).zeros(meta[0], dtype=meta[1])


# ============================================================ 6. where gradients land
# What happens at the two ends of a node: before it runs, its incoming gradient passes through the
# tensor hooks and is kept for ``retain_grad()`` or ``gradlab.grad()`` (``pre_process``); at a leaf,
# the total is added into ``.grad``. Hooks always see Tensors, also when backward moves raw arrays.
def _tensors(values):
    """Arrays -> Tensors (None stays None): for hooks and observers, which see Tensors."""
    return tuple(None if v is None else Tensor._make(v) for v in values)


def pre_process(node, grads, create_graph, capture, captured, arrays=False):
    """Tensor hooks, retain_grad and capture for ``grad()``, before the node runs."""
    if arrays:
        grads = list(_tensors(grads))
    if type(node) is AccumulateGrad:
        v = node.variable
        if v._hooks:
            grads = [_run_hooks(v._hooks, grads[0], v, node)]
    elif node._pre_hooks:
        grads = list(grads)
        for nr, hooks in node._pre_hooks.items():
            if grads[nr] is not None:
                grads[nr] = _run_hooks(hooks, grads[nr], None, node)
    if node._retained:
        for nr, ref in node._retained.items():
            t = ref()
            if t is not None and grads[nr] is not None:
                g = grads[nr] if create_graph else grads[nr].detach()
                if t.grad is None:  # a copy, as PyTorch: the same array flows on and may become a leaf's .grad
                    t.grad = g if create_graph else Tensor._make(g._data.copy())
                else:
                    t.grad = t.grad + g
    if node._node_pre_hooks:
        for h in list(node._node_pre_hooks):
            new = h(tuple(grads))
            if new is not None:
                grads = list(_checked(node, new, grads, node.out_meta, "register_prehook", "grad_outputs"))
    if capture:
        for nr in range(len(grads)):
            for i in capture.get((node, nr), ()):
                captured[i] = grads[nr]
    if arrays:
        return [None if g is None else g._data for g in grads]
    return grads


def _checked(node, new, old, metas, what, names):
    """A node hook's replacement gradients: one per place, None or a Tensor of that place's shape."""
    new = tuple(new) if isinstance(new, (tuple, list)) else (new,)
    if len(new) != len(old):
        raise GradError(f"a {what} hook on {node.name} returned {len(new)} gradients for {len(old)} {names}; "
                        "return one per entry of the tuple it received (None where there is none)")
    for g, meta in zip(new, metas):
        if g is None or meta is None:
            continue
        if not isinstance(g, Tensor) or g.shape != meta[0]:
            got = fmt_shape(g.shape) if isinstance(g, Tensor) else type(g).__name__
            raise GradError(f"a {what} hook on {node.name} returned {got} where a gradient of shape "
                            f"{fmt_shape(meta[0])} belongs; return None or a Tensor of that shape")
    return new


def _run_hooks(hooks, g, tensor, node):
    for h in list(hooks):
        new = h(g)
        if new is not None:
            if not isinstance(new, Tensor) or new.shape != g.shape:
                got = fmt_shape(new.shape) if isinstance(new, Tensor) else type(new).__name__
                raise GradError(
                    f"hook {getattr(h, '__name__', h)!s} on the gradient of {node.name} returned {got}; "
                    f"a hook must return None or a Tensor of the gradient's shape {fmt_shape(g.shape)}"
                )
            if new.dtype != g.dtype:  # (PyTorch refuses this too: the engine casts only a node's outputs)
                raise GradError(
                    f"hook {getattr(h, '__name__', h)!s} on the gradient of {node.name} changed its dtype from "
                    f"{g.dtype} to {new.dtype}; a hook must return a gradient of the same dtype (cast it back "
                    f"with .to({_dtype_name(g.dtype)}))"
                )
            g = new
    return g


def _dtype_name(dt):
    return f"gradlab.{dt}" if hasattr(dt, "name") else str(dt)


def add_to_grad(leaf: Tensor, g: Tensor, create_graph: bool):
    """``leaf.grad += g``, out of place so no gradient array is ever aliased."""
    if not create_graph:
        g = g.detach() if g.grad_fn is not None or g._requires_grad else g
    if leaf.grad is None:
        # never store an array another tensor may own and change in place
        leaf.grad = g if create_graph else Tensor._make(g._data.copy() if _shares(g, leaf) else g._data)
    else:
        if create_graph or leaf.grad._requires_grad:
            leaf.grad = leaf.grad + g
        else:
            leaf.grad = Tensor._make(leaf.grad._data + g._data)
    if leaf._post_acc_hooks:
        for h in leaf._post_acc_hooks:
            h(leaf)


def _shares(g, leaf):
    return g._data is leaf._data or getattr(g._data, "base", None) is not None


def add_array_to_grad(leaf: Tensor, g, handed: set):
    """``add_to_grad`` for a gradient that is an array (backward without create_graph).

    The array is stored as is when nothing else can see it; a view (a broadcast
    gradient is a read-only view), the leaf's own data, or an array already
    handed to another leaf in this pass is copied first, so that changing one
    ``.grad`` in place (``clip_grad_norm_``) never changes another.
    """
    old = leaf._grad
    if old is None or old._requires_grad:
        if id(g) in handed or g is leaf._data or getattr(g, "base", None) is not None:
            g = g.copy()
        handed.add(id(g))
        d = leaf._data
        if old is None and type(g) is type(d) and g.dtype is d.dtype and g.shape == d.shape:
            # (what the .grad setter would check, already true: stored without its checks, which cost
            # about as much as the rest of this function; the usual case, a leaf's first gradient)
            leaf._grad = Tensor._make(g)
        else:
            leaf.grad = Tensor._make(g) if old is None else old + Tensor._make(g)
    else:
        total = old._data + g
        if type(total) is not type(old._data):  # NumPy turns 0-d + 0-d into a scalar: keep a 0-d array
            from ..backend import xp_of
            total = xp_of(old._data).asarray(total)
        leaf.grad = Tensor._make(total)
    if leaf._post_acc_hooks:
        for h in leaf._post_acc_hooks:
            h(leaf)
