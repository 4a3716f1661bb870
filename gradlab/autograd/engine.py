"""The reverse-mode engine: ``backward()`` and ``gradlab.grad()``.

Read :func:`reference_backward` first: the whole idea in twenty lines, the
loop of Karpathy's micrograd on gradlab's nodes. Everything after it is that
loop made complete (several roots, hooks, ``retain_grad``, ``grad()``'s
capture, ``retain_graph``, observers, the error messages) and fast.
``tests/test_engine_reference.py`` runs generated programs through both and
requires the same gradients.

Reverse mode is the chain rule applied from the output back to the inputs:
each node turns the gradient of its output into gradients of its inputs (a
vector-Jacobian product). The engine only decides the *order*:

1. Walk the graph from the roots (an explicit stack, not recursion, so a
   100 000-op chain is fine) and sort the nodes it reaches, highest sequence
   number first. A node's users were all created after it, so they run
   before it: by the time a node runs, every gradient for it has arrived
   (PyTorch's engine uses the same priority). See ``schedule.py``.
2. Run the nodes in that order; gradients for the same input are added up in
   a buffer (accumulation).
3. Leaves' ``AccumulateGrad`` nodes add the total into ``.grad``, each right
   after the last of its users has run.

Without ``retain_graph`` each node drops its saved tensors right after it runs.

Two speeds. With ``create_graph=True`` gradients flow as Tensors and every VJP
is computed with gradlab ops, so backward is itself recorded (higher-order
gradients); the same happens while an op observer (profiler, trace_shapes)
watches, so it sees the ops inside each VJP. Otherwise -- nearly always --
gradients flow as raw arrays and an op that has the same rule written on
arrays (``vjp_arrays``) runs that: no Tensor or node is made for a gradient
nobody will differentiate. The tests check each ``vjp_arrays`` against its
op's ``vjp``.

Two loops. :func:`_run_node` handles every case (hooks, ``retain_grad``,
``grad()``'s capture, observers, either speed). The everyday pass -- arrays,
nothing watching -- goes through :func:`_run_plain`, which does the same for
a hook-free node with a twin in a few lines and hands anything else to
``_run_node``; ``tests/test_engine_loops.py`` checks the two agree. Calling one
node's VJP and checking the gradients it returns is ``vjp_call.py``.
"""
from __future__ import annotations

import numpy as _np

from .._tensor import Tensor
from ..backend.fperr import enter as _fp_quiet, leave as _fp_restore, quiet as _quiet
from ..errors import ArgumentTypeError, GradError, ShapeError, fmt_shape
from . import function as _fn
from .accumulate import _accumulate, _accumulate_array, _checked, _pre_process, _tensors
from .function import AccumulateGrad
from .grad_mode import state as _grad_state
from .schedule import schedule as _schedule
from .vjp_call import _call_vjp, _call_vjp_arrays, _fix

_ndarray = _np.ndarray


# ------------------------------------------------------------------------------------ the idea
def reference_backward(root):
    """Backward in twenty lines: fill each leaf's ``.grad`` with d root / d leaf (``root``: a scalar).

    1. Sort the graph so that every node comes after the nodes it feeds on
       (depth first, as micrograd; recursive, so only for small graphs).
    2. Walk that order backwards, from the root: by the time a node runs,
       every node that uses its output has run and sent its gradient.
    3. Each node turns its output gradient into one gradient per input (its
       vector-Jacobian product, ``_call_vjp_arrays``); gradients that meet at
       one place are added up. A leaf's node adds the total into ``.grad``.

    ``backward()`` computes the same (tests/test_engine_reference.py checks it) and more.
    """
    order, seen = [], set()

    def visit(node):
        if node not in seen:
            seen.add(node)
            for edge in node.next_functions:  # edge = (the input's node, which of its outputs) or None
                if edge is not None:
                    visit(edge[0])
            order.append(node)  # after all its inputs' nodes

    visit(root.grad_fn)
    grads = {root.grad_fn: [_ones_like(root._data)]}  # d root / d root = 1
    with _quiet():  # inf and nan without NumPy warnings, as in PyTorch (backend/fperr.py)
        for node in reversed(order):
            g_out = grads.pop(node, None)
            if g_out is None:
                continue  # no gradient reached it (it only feeds integer or detached paths)
            if type(node) is AccumulateGrad:
                leaf = node.variable
                leaf.grad = Tensor._make(g_out[0] if leaf.grad is None else _sum(leaf.grad._data, g_out[0]))
                continue
            g_in = _call_vjp_arrays(node, g_out)  # the chain rule at one node
            for edge, g in zip(node.next_functions, g_in):
                if edge is not None and g is not None:
                    slot = grads.setdefault(edge[0], [None] * len(edge[0].out_meta))
                    slot[edge[1]] = g if slot[edge[1]] is None else _sum(slot[edge[1]], g)


# ------------------------------------------------------------------------------- the engine
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
    return _fn._edge(t)


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
    order = _schedule([e[0] for e in root_edges if e is not None])
    needed = None
    if targets is not None:
        target_nodes = {e[0] for e in capture}
        needed = set()
        # inputs before their users: a node is needed if it is a target or feeds one that is
        for node in reversed(order):
            if node in target_nodes or any(e is not None and e[0] in needed for e in node.next_functions):
                needed.add(node)
    captured = [None] * (len(targets) if targets is not None else 0)

    # 2. run the nodes in that order. Gradients flow as arrays unless the
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
    prev_mode = _grad_state.enabled
    _grad_state.enabled = bool(create_graph)
    _fn._current_root[0] = roots[0] if roots else None  # (for the freed-graph error; labelled only then)
    observers = list(backward_observers)
    for o in observers:
        if hasattr(o, "begin"):
            o.begin(roots)
    st = _Pass(arrays, create_graph, retain_graph, accumulate, targets, capture, captured, needed, observers, handed)
    quiet = _fp_quiet()  # NumPy's overflow/invalid/divide warnings off for the whole pass (inf/nan, as PyTorch)
    try:
        if arrays and not capture and needed is None and not observers:
            _run_plain(order, buffers, st)
        else:
            for node in order:
                grads = buffers.pop(node, None)
                if grads is not None:
                    _run_node(node, grads, buffers, st)
        if buffers:  # a gradient reached a node that had already run: never drop it silently
            late = next(iter(buffers))
            raise GradError(f"backward: a gradient reached {late.name} (node #{late.seq}) after it ran; the "
                            "graph's nodes are not in creation order (was a grad_fn set by hand?)")
        if accumulate and targets is not None:
            _accumulate_non_leaves(targets, captured, create_graph)
    finally:
        _fp_restore(quiet)
        _grad_state.enabled = prev_mode
        _fn._current_root[0] = None
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


def _run_plain(order, buffers, st):
    """The common pass -- arrays, no capture, no observer -- with the everyday node inlined.

    A node with no hook whose op has an array twin runs right here: call the
    twin, check each gradient against its input's shape and dtype, add it to
    the buffer of the node it goes to, free the saved tensors. Anything else
    (hooks, ``retain_grad``, a user Function, a freed graph) goes through
    :func:`_run_node`, which handles every case. Same order, same results;
    this loop only skips the checks that cannot apply.

    This loop runs once per node of every backward pass, so it is written for
    speed (``tests/test_engine_loops.py`` checks it against ``_run_node``, and
    ``tests/test_engine_reference.py`` both against the 20-line loop above):

    * the names it uses are bound to locals first (a local is one array read;
      a global or an attribute is a dictionary lookup);
    * ``AccumulateGrad`` has no twin, so one test (``fast is None``) sends
      leaves and twin-less nodes to the slower branches;
    * the common buffer case (a node with one output, reached for the first
      time) is one list made with its gradient in it.
    """
    pop, get = buffers.pop, buffers.get
    retain, handed, accumulate = st.retain_graph, st.handed, st.accumulate
    run_node, fix, add, ndarray, Acc = _run_node, _fix, _sum, _ndarray, AccumulateGrad
    for node in order:
        grads = pop(node, None)
        if grads is None:
            continue
        fast = type(node).vjp_arrays  # (the class's function, called with the node: no bound method per node)
        if fast is None or node._hooked:
            if type(node) is Acc and not node._hooked and not node.variable._hooks:
                if accumulate:
                    _accumulate_array(node.variable, grads[0], handed)
            else:  # a hook, retain_grad, or an op with no array twin (a user Function)
                run_node(node, grads, buffers, st)
            continue
        if len(grads) == 1:  # (one output: the usual node, called without unpacking a list)
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
        for i, g in enumerate(outs):  # (one gradient per input; enumerate and indexing cost less than a zip)
            if g is None:
                continue
            e = edges[i]
            if e is None:
                continue
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
        grads = _pre_process(node, grads, create_graph, st.capture, st.captured, arrays)
    observers = st.observers
    if observers:
        for o in observers:
            o.node_start(node, _tensors(grads) if arrays else grads)
    outs = ()
    if is_acc:
        if st.accumulate and (st.targets is None or (node, 0) in st.capture):
            if arrays:
                _accumulate_array(node.variable, grads[0], st.handed)
            else:
                _accumulate(node.variable, grads[0], create_graph)
    elif needed is None or any(e is not None and e[0] in needed for e in node.next_functions):
        outs = _call_vjp_arrays(node, grads) if arrays else _call_vjp(node, grads)
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
