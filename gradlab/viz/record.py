"""Record what autograd *actually did*, step by step, for the animations.

The widgets never re-derive the backward pass: they replay a recording of a
real one. Two recorders plug into the engine's extension points:

* :class:`BackwardRecorder` is a ``gradlab.autograd.engine.backward_observers``
  entry. The engine calls ``node_start(node, grads)`` and
  ``node_end(node, grads_in, grads_out)`` in the order it really runs nodes
  (latest-created first among the ready ones), so each :class:`BackwardStep`
  is one node, with the gradient it received, the gradient it sent to each
  input, which broadcast axes were summed on the way, how many contributions
  were added up for it (a tensor used twice gets two), and, at a leaf, its
  ``.grad`` before and after.
* :class:`ForwardRecorder` is a ``gradlab.autograd.function.node_observers``
  entry: it sees each node as the forward pass records it, in execution order.

Both keep a **memory timeline**: the bytes held by tensors saved for backward.
They grow during the forward (each op keeps what its backward needs: that is
why training needs more memory than inference, which saves nothing) and fall
during the backward, as each node frees its saved tensors right after running
(unless ``retain_graph=True``). An array saved by two nodes is counted once.
"""
from __future__ import annotations

import dataclasses
import os
import sys
from contextlib import contextmanager

import numpy as np

from ..autograd import engine as _engine, function as _function
from ..autograd.function import AccumulateGrad
from ..ops.registry import REGISTRY, formula_of
from . import torch_graph as _torch_graph

_GRADLAB_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --------------------------------------------------------------------- helpers
def is_leaf_node(node) -> bool:
    """An ``AccumulateGrad`` node: gradlab's, or PyTorch's (read by ``torch_graph``)."""
    return type(node) is AccumulateGrad or (type(node).__name__ == "AccumulateGrad" and hasattr(node, "variable"))


def summed_axes(grad_shape, input_shape):
    """Axes summed to reduce a broadcast gradient of ``grad_shape`` to ``input_shape``.

    The rule of broadcasting run backwards: leading axes the input did not
    have, and axes where the input had size 1 but the gradient does not.
    ``None`` when the shapes are not a broadcast pair (no reduction happened).
    """
    grad_shape, input_shape = tuple(grad_shape), tuple(input_shape)
    if grad_shape == input_shape or len(input_shape) > len(grad_shape):
        return None
    lead = len(grad_shape) - len(input_shape)
    axes = list(range(lead))
    for i, s in enumerate(input_shape):
        g = grad_shape[lead + i]
        if s == g:
            continue
        if s != 1:
            return None
        axes.append(lead + i)
    return tuple(axes) or None


_ELEMENTWISE = None
_BROADCASTING_NAMES = {"broadcast_to", "expand", "expand_as"}


def _broadcasts(node) -> bool:
    """Does this op broadcast its inputs (so its VJP sums gradients back down)?"""
    global _ELEMENTWISE
    if _ELEMENTWISE is None:
        _ELEMENTWISE = {info.op for info in REGISTRY.values() if info.op is not None and info.elementwise}
    return type(node) in _ELEMENTWISE or node.name in _BROADCASTING_NAMES


def _array(t):
    if t is None:
        return None
    if not isinstance(t, np.ndarray) and _torch_graph.is_torch_tensor(t):
        return _torch_graph.to_numpy(t)
    data = getattr(t, "_data", t)
    if hasattr(data, "get") and not isinstance(data, np.ndarray):  # CuPy -> host, for display only
        data = data.get()
    return np.asarray(data)


@dataclasses.dataclass
class Value:
    """A small, display-ready summary of a tensor's values (recorded, not live)."""
    shape: tuple
    dtype: str
    array: np.ndarray    # a copy, at most ``limit`` elements (a leading slice of larger tensors)
    total: int           # number of elements in the full tensor
    norm: float          # L2 norm of the full tensor (NaN/inf show up here)

    @classmethod
    def of(cls, t, limit=256):
        a = _array(t)
        if a is None:
            return None
        full = a
        if a.ndim >= 2:
            side = max(1, int(limit ** 0.5))
            a = a[(0,) * (a.ndim - 2) + (slice(0, side), slice(0, side))]
        else:
            a = a.reshape(-1)[:limit]
        with np.errstate(all="ignore"):
            norm = float(np.sqrt(np.sum(np.square(full.astype(np.float64))))) if full.size else 0.0
        return cls(tuple(full.shape), str(full.dtype), np.array(a, dtype=np.float64, copy=True), int(full.size), norm)


class _SavedLedger:
    """Bytes kept alive by saved tensors, each array counted once however many nodes hold it."""

    def __init__(self):
        self.count = {}     # id(array) -> (nbytes, holders)
        self.bytes = 0

    @staticmethod
    def _arrays(node):
        out = []
        for s in getattr(node, "saved", ()):
            if getattr(s, "_data", None) is not None:
                out.append((id(s._data), int(s._data.nbytes)))
            elif s.nbytes:
                out.append((id(s), int(s.nbytes)))   # packed by a saved-tensor hook
        return out

    def add(self, node):
        return self.add_keys(self._arrays(node))

    def add_keys(self, keys):
        """Count ``(key, nbytes)`` pairs as held once more (an array's bytes count when it is first held)."""
        for key, nb in keys:
            nbytes, holders = self.count.get(key, (nb, 0))
            if holders == 0:
                self.bytes += nbytes
            self.count[key] = (nbytes, holders + 1)
        return keys

    def drop(self, keys):
        freed = 0
        for key, _ in keys:
            if key not in self.count:
                continue
            nbytes, holders = self.count[key]
            if holders <= 1:
                del self.count[key]
                self.bytes -= nbytes
                freed += nbytes
            else:
                self.count[key] = (nbytes, holders - 1)
        return freed


def walk_nodes(roots):
    """Every backward node reachable from ``roots`` (nodes or tensors), iteratively."""
    stack, seen, out = [], set(), []
    for r in roots:
        n = getattr(r, "grad_fn", r) if not hasattr(r, "next_functions") else r
        if n is None and getattr(r, "requires_grad", False):
            e = _function.edge_of(r)
            n = e[0] if e else None
        if n is not None and id(n) not in seen:
            seen.add(id(n))
            stack.append(n)
    while stack:
        n = stack.pop()
        out.append(n)
        for e in n.next_functions:
            if e is not None and id(e[0]) not in seen:
                seen.add(id(e[0]))
                stack.append(e[0])
    return out


# -------------------------------------------------------------------- backward
@dataclasses.dataclass
class GradOut:
    """The gradient one node sent to one of its inputs."""
    input: int                 # positional input index of the op
    to: object                 # the node it went to
    value: Value
    summed_axes: tuple = None  # broadcast axes summed to fit the input's shape


@dataclasses.dataclass
class BackwardStep:
    index: int
    node: object
    name: str
    formula: str
    grads_in: list              # Value (or None) per output of the op
    grads_out: list             # GradOut per input that received a gradient
    contributions: list         # (from_node, input_nr) whose gradients were added up into grads_in
    leaf_before: Value = None   # AccumulateGrad: the leaf's .grad before / after this step
    leaf_after: Value = None
    broadcast_axes: tuple = None  # a SumTo node: axes its backward broadcasts the gradient back along
    saved_freed: int = 0        # bytes of saved tensors this node released after running
    saved_bytes: int = 0        # bytes still held by saved tensors after this step


class BackwardRecorder:
    """A ``backward_observers`` entry that records one backward pass."""

    def __init__(self, preview_limit=256):
        self.limit = preview_limit
        self.steps: list[BackwardStep] = []
        self.roots = None
        self.start_bytes = 0
        self._ledger = _SavedLedger()
        self._held = {}             # node -> ledger keys of what it saved
        self._contrib = {}          # node -> [(from_node, input_nr)]
        self._pending = None        # (step, node) whose release is checked at the next event

    # -- engine protocol
    def begin(self, roots):
        self.roots = list(roots)
        for n in walk_nodes(self.roots):
            self._held[n] = self._ledger.add(n)
        self.start_bytes = self._ledger.bytes
        for t in self.roots:
            n = t.grad_fn
            if n is not None:
                self._contrib.setdefault(n, []).append((None, 0))  # the seed gradient

    def node_start(self, node, grads):
        self._settle()
        step = BackwardStep(
            index=len(self.steps), node=node, name=node.name, formula=formula_of(node),
            grads_in=[Value.of(g, self.limit) for g in grads], grads_out=[],
            contributions=self._contrib.pop(node, []),
        )
        if is_leaf_node(node):
            step.leaf_before = Value.of(node.variable.grad, self.limit)
        if node.name == "sum_to" and getattr(node, "axes", None):
            step.broadcast_axes = tuple(node.axes)
        self.steps.append(step)

    def node_end(self, node, grads_in, grads_out):
        step = self.steps[-1]
        if is_leaf_node(node):
            step.leaf_after = Value.of(node.variable.grad, self.limit)
        broadcasting = _broadcasts(node)
        for i, e in enumerate(node.next_functions):
            if e is None or not grads_out or grads_out[i] is None:
                continue
            g = grads_out[i]
            axes = None
            if broadcasting and node.num_outputs == 1:
                axes = summed_axes(node.out_meta[0][0], node.input_meta[i][0])
            step.grads_out.append(GradOut(i, e[0], Value.of(g, self.limit), axes))
            self._contrib.setdefault(e[0], []).append((node, i))
        self._pending = (step, node)

    def end(self):
        self._settle()
        self._held.clear()

    def _settle(self):
        """The engine frees a node's saved tensors right after its observers ran: account for it."""
        if self._pending is None:
            return
        step, node = self._pending
        self._pending = None
        if getattr(node, "_released", False) and node in self._held:
            step.saved_freed = self._ledger.drop(self._held.pop(node))
        step.saved_bytes = self._ledger.bytes


@contextmanager
def observing_backward(recorder):
    """Install ``recorder`` in the engine's observers for the duration of the block."""
    _engine.backward_observers.append(recorder)
    try:
        yield recorder
    finally:
        _engine.backward_observers.remove(recorder)


def record_backward(tensor, gradient=None, retain_graph=None, preview_limit=256) -> BackwardRecorder:
    """Run ``tensor.backward(...)`` for real and return the recording of every step."""
    with observing_backward(BackwardRecorder(preview_limit)) as rec:
        tensor.backward(gradient, retain_graph=retain_graph)
    return rec


# --------------------------------------------------------------------- forward
def _cell_number(filename):
    """The execution count of the notebook cell IPython compiled into ``filename`` (None if not a cell)."""
    ip_mod = sys.modules.get("IPython")
    if ip_mod is None:
        return None
    try:
        ip = ip_mod.get_ipython()
        fmap = getattr(getattr(ip, "compile", None), "_filename_map", None)
    except Exception:  # noqa: BLE001 - no shell: a plain script
        return None
    if fmap:
        return fmap.get(filename)
    return None


def format_site(filename, lineno, func):
    """``cell [3], line 1`` for a notebook cell (``, in mlp`` inside a function); ``file.py:12 in f`` otherwise."""
    n = _cell_number(filename)
    if n is not None:
        where = f"cell [{n}], line {lineno}"
        return where + (f", in {func}" if func not in ("<module>", "<lambda>", "<listcomp>", "<genexpr>") else "")
    return f"{os.path.basename(filename)}:{lineno} in {func}"


def user_site():
    """Where in the user's code we are: the first caller frame outside gradlab (see :func:`format_site`)."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not os.path.abspath(fn).startswith(_GRADLAB_DIR):
            return format_site(fn, f.f_lineno, f.f_code.co_name)
        f = f.f_back
    return None


@dataclasses.dataclass
class ForwardStep:
    index: int
    node: object
    name: str
    saved_added: int       # bytes this node's saved tensors added (0 when already held by another node)
    saved_bytes: int       # running total after it
    site: str = None       # where in user code it was created


class ForwardRecorder:
    """A ``node_observers`` entry: each node as the forward records it, and the saved bytes."""

    def __init__(self, sites=True):
        self.steps: list[ForwardStep] = []
        self.sites = sites
        self._ledger = _SavedLedger()
        self.holdings = {}   # node -> ledger keys (handed to a BackwardRecorder to continue the timeline)

    def __call__(self, node):
        before = self._ledger.bytes
        self.holdings[node] = self._ledger.add(node)
        meta = getattr(node, "meta", None)
        site = (meta.get("site") or meta.get("creation_site")) if isinstance(meta, dict) else None
        if site is None and self.sites:
            site = user_site()
        self.steps.append(ForwardStep(len(self.steps), node, node.name, self._ledger.bytes - before,
                                      self._ledger.bytes, site if isinstance(site, str) else None))

    @property
    def saved_bytes(self) -> int:
        return self._ledger.bytes


@contextmanager
def observing_forward(recorder):
    _function.node_observers.append(recorder)
    try:
        yield recorder
    finally:
        _function.node_observers.remove(recorder)


def record_forward(fn, *args, **kwargs):
    """Call ``fn(*args, **kwargs)`` and record the nodes it creates: ``(result, ForwardRecorder)``."""
    with observing_forward(ForwardRecorder()) as rec:
        out = fn(*args, **kwargs)
    return out, rec
