"""The graph as data: saved-tensor hooks and the saved-bytes report.

Reverse mode has a memory price: every node keeps what its backward needs
(``tanh`` keeps its output, ``matmul`` both inputs) until backward runs. This
module lets a student *see* that price and *change* it:

* :func:`saved_tensors` reads any graph and lists, node by node, the tensors it
  saved, with shape, dtype and bytes, and the total (the same memory saved
  twice, as in ``x * x``, is counted once). The memory lesson and the
  visualizers read this.
* :class:`saved_tensors_hooks` ``(pack, unpack)`` intercepts every tensor an op
  saves while the context is active: ``pack(tensor)`` returns what to keep,
  ``unpack(kept)`` gives the tensor back during backward. Offloading
  (:class:`save_on_cpu`), compression and activation checkpointing are all
  built on this one mechanism (as in PyTorch).
"""
from __future__ import annotations

import dataclasses

from .._tensor import Tensor
from ..backend import dtypes as _dt
from ..errors import fmt_shape
from . import function as _fn
from .function import AccumulateGrad, SavedTensor

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "saved_tensors",
           "SavedTensorsReport", "SavedEntry", "walk"]


class saved_tensors_hooks:
    """Context manager: ops save ``pack(tensor)`` instead of the tensor; backward calls ``unpack``.

    ``pack`` must not change the tensor in place; ``unpack`` must return a tensor
    with the original's shape and values. Nested contexts: the innermost wins. The hooks are
    this thread's (as PyTorch's): another thread saves its tensors as they are.
    """

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        _fn.saved_tensor_hooks().append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        stack = _fn.saved_tensor_hooks()
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] == (self.pack_hook, self.unpack_hook):
                del stack[i]
                break
        return False


class save_on_cpu(saved_tensors_hooks):
    """Keep saved tensors on the CPU (host memory) and bring them back to their device in backward.

    On a GPU this trades transfer time for accelerator memory; on the CPU it is
    a copy, which still shows the mechanism.
    """

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(t):
            return _OnCpu(t.device, t.detach().to("cpu") if t.device.type != "cpu" else t.detach().clone())

        def unpack(packed):
            return packed.tensor.to(packed.device) if packed.device.type != "cpu" else packed.tensor
        super().__init__(pack, unpack)


class _OnCpu:
    """A saved tensor parked in host memory by :class:`save_on_cpu` (the report counts its bytes)."""

    __slots__ = ("device", "tensor")

    def __init__(self, device, tensor):
        self.device, self.tensor = device, tensor

    shape = property(lambda self: self.tensor.shape)
    dtype = property(lambda self: self.tensor.dtype)
    nbytes = property(lambda self: self.tensor.nbytes)


class disable_saved_tensors_hooks:
    """Inside, enclosing saved-tensor hooks are suspended: ops save tensors normally."""

    def __init__(self, error_message="saved tensor hooks are disabled here"):
        self.msg = error_message

    def __enter__(self):
        self._prev = list(_fn.saved_tensor_hooks())
        _fn.saved_tensor_hooks().clear()
        return self

    def __exit__(self, *exc):
        _fn.saved_tensor_hooks()[:] = self._prev
        return False


# ------------------------------------------------------------- the report
@dataclasses.dataclass(frozen=True)
class SavedEntry:
    """One tensor a node keeps for backward."""
    node: object           # the backward node (Function instance)
    op: str                # its name (``tanh``, ``mul``...)
    index: int             # position among the node's saved tensors
    shape: tuple
    dtype: object
    nbytes: int            # bytes this saved tensor keeps alive (0 when a hook moved it away)
    name: str = None       # the tensor's name, if it had one
    kind: str = "input"    # "input", "output" (the op's own output) or "packed" (by a hook)
    is_leaf: bool = False  # a leaf (a parameter or input): its memory exists anyway
    duplicate: bool = False  # the same memory is already counted by an earlier entry

    def __repr__(self):
        dt = _dt.dtype_name(self.dtype) if self.dtype is not None else "?"
        shp = fmt_shape(self.shape) if self.shape is not None else "?"
        extra = " (counted above)" if self.duplicate else ""
        return f"{self.op}: {self.kind} {self.name or ''} {shp} {dt} {self.nbytes} B{extra}".replace("  ", " ")


class SavedTensorsReport:
    """What a graph keeps for backward: ``entries``, ``total_bytes``, ``by_node()``.

    Read-only: building it changes nothing in the graph.
    """

    def __init__(self, entries, n_nodes):
        self.entries = tuple(entries)
        self.n_nodes = n_nodes

    @property
    def total_bytes(self) -> int:
        """Bytes kept alive by saved tensors, each piece of memory counted once."""
        return sum(e.nbytes for e in self.entries if not e.duplicate)

    @property
    def activation_bytes(self) -> int:
        """Like ``total_bytes`` but without leaves (parameters and inputs exist anyway)."""
        return sum(e.nbytes for e in self.entries if not e.duplicate and not e.is_leaf)

    def by_node(self) -> dict:
        out = {}
        for e in self.entries:
            out.setdefault(e.node, []).append(e)
        return out

    def __len__(self):
        return len(self.entries)

    def __iter__(self):
        return iter(self.entries)

    def __repr__(self):
        lines = [f"SavedTensorsReport: {len(self.entries)} saved tensor(s) in {self.n_nodes} node(s), "
                 f"{self.total_bytes} bytes ({self.activation_bytes} bytes of activations)"]
        lines += [f"  {e!r}" for e in self.entries]
        return "\n".join(lines)


def walk(roots):
    """Every node reachable from ``roots`` (tensors or nodes), each once, outputs first."""
    stack = []
    for r in roots if isinstance(roots, (list, tuple)) else [roots]:
        n = r.grad_fn if isinstance(r, Tensor) else r
        if n is not None:
            stack.append(n)
    seen, order = set(), []
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        order.append(n)
        for e in getattr(n, "next_functions", ()):
            if e is not None:
                stack.append(e[0])
    order.sort(key=lambda n: -n.seq)
    return order


def _storage_key(arr):
    try:
        ptr = arr.__array_interface__["data"][0]
    except (AttributeError, TypeError):
        ptr = getattr(getattr(arr, "data", None), "ptr", id(arr))
    return (ptr, arr.nbytes, arr.shape, arr.strides)


def saved_tensors(root) -> SavedTensorsReport:
    """The saved-tensor report for the graph behind ``root`` (a tensor, node, or a list of them)."""
    entries, seen = [], set()
    nodes = walk(root)
    for node in nodes:
        if type(node) is AccumulateGrad:
            continue
        for i, s in enumerate(getattr(node, "saved", ())):
            entries.append(_entry(node, i, s, seen))
    return SavedTensorsReport(entries, len(nodes))


def _entry(node, i, s: SavedTensor, seen):
    if s.packed is not None or s.unpack is not None:
        p = s.packed
        t = p if isinstance(p, Tensor) else None
        if t is not None:
            key = _storage_key(t._data)
            dup = key in seen
            seen.add(key)
            return SavedEntry(node, node.name, i, t.shape, t.dtype, t.nbytes, s.name, "packed",
                              t.grad_fn is None and t._requires_grad, dup)
        return SavedEntry(node, node.name, i, s.shape, s.dtype, s.nbytes, s.name, "packed", False, False)
    key = _storage_key(s._data)
    dup = key in seen
    seen.add(key)
    leaf = s.tensor is not None and s.tensor.grad_fn is None and s.tensor._requires_grad
    kind = "output" if s.output_nr is not None else "input"
    return SavedEntry(node, node.name, i, s._data.shape, s._data.dtype, int(s._data.nbytes), s.name, kind, leaf, dup)
