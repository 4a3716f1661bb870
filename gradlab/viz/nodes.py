"""The plain data a drawn graph is made of (dataclasses; no tensors kept).

``model.py`` fills these in from the autograd graph; ``collapse.py``,
``render.py`` and the widgets read them. See ``model.py`` for the id scheme.
"""
from __future__ import annotations

import contextlib
import dataclasses
import gc
import weakref
from typing import Optional

import numpy as np

from .._tensor import Tensor
from ..backend import dtypes as _dt

ROLES = ("parameter", "leaf", "output", "intermediate", "constant")


@dataclasses.dataclass
class GradSummary:
    """What ``.grad`` holds, in a few numbers (computed in float64)."""
    shape: tuple
    dtype: str
    norm: float
    min: float
    mean: float
    max: float
    nbytes: int
    nonfinite: int = 0    # how many entries are NaN or inf


@dataclasses.dataclass
class SavedInfo:
    """One tensor an op keeps for backward (``node.saved``)."""
    name: Optional[str]
    shape: Optional[tuple]
    dtype: str
    nbytes: int
    is_output: bool = False


@dataclasses.dataclass
class TensorNode:
    id: str
    name: str
    role: str                  # one of ROLES
    shape: tuple
    dtype: str
    device: str = "cpu"
    requires_grad: bool = False
    nbytes: int = 0
    grad: Optional[GradSummary] = None
    missing_grad: bool = False
    missing_reason: str = ""
    in_graph: bool = True      # False for params= tensors the root does not reach
    generated_name: bool = True
    module: Optional[str] = None   # filled by the collapser for absorbed leaves
    aliases: list = dataclasses.field(default_factory=list)   # other qualified names (a tied weight)
    users: list = dataclasses.field(default_factory=list)     # modules whose ops use it (filled in finish)
    accumulates: int = 0       # backward view: how many gradients arrive here
    order: int = 0             # stable sort key
    kind: str = "tensor"


@dataclasses.dataclass
class OpNode:
    id: str
    op: str                    # the op's name (``node.name``)
    formula: str
    seq: int
    saved: list = dataclasses.field(default_factory=list)
    saved_bytes: int = 0
    saved_freed: bool = False  # backward already ran without retain_graph
    out_shapes: tuple = ()
    out_dtypes: tuple = ()
    device: str = "cpu"
    module: Optional[str] = None
    module_type: Optional[str] = None
    accumulates: int = 0       # backward view: gradients arriving from 2+ consumers
    order: int = 0
    kind: str = "op"


@dataclasses.dataclass
class Edge:
    id: str
    src: str
    dst: str
    shape: Optional[tuple] = None
    dtype: Optional[str] = None
    kind: str = "data"         # "data" (forward) or "grad" (backward)


@dataclasses.dataclass
class MemoryTotals:
    parameters: int = 0        # bytes of parameter leaves
    leaves: int = 0            # other leaves that require grad
    saved: int = 0             # saved activations (each array counted once)
    gradients: int = 0         # .grad of the tensors drawn


@dataclasses.dataclass
class GraphModel:
    view: str
    root_id: str
    nodes: dict                # id -> TensorNode | OpNode, in a stable order
    edges: list
    memory: MemoryTotals
    backward_ran: bool = False
    notes: list = dataclasses.field(default_factory=list)
    node_ids: "weakref.WeakKeyDictionary" = dataclasses.field(default_factory=weakref.WeakKeyDictionary)
    id_for_seq: dict = dataclasses.field(default_factory=dict)
    root_name: str = "output"

    @property
    def ops(self):
        return [n for n in self.nodes.values() if n.kind == "op"]

    @property
    def tensors(self):
        return [n for n in self.nodes.values() if n.kind == "tensor"]

    def id_of(self, node) -> Optional[str]:
        """The id for a backward node object (None if it is not in this graph)."""
        try:
            return self.node_ids.get(node)
        except TypeError:
            return None


_DNAMES = {}


def _dname(dtype) -> str:
    """``"float32"``; cached, since NumPy's ``str(dtype)`` is slow and a graph has many."""
    try:
        return _DNAMES[dtype]
    except KeyError:
        name = _DNAMES[dtype] = _dt.dtype_name(dtype) if dtype is not None else "?"
        return name
    except TypeError:  # pragma: no cover - an unhashable dtype-like
        return str(dtype)


def grad_summary(g) -> Optional[GradSummary]:
    """Shape, norm and min/mean/max of a gradient tensor (None when there is none)."""
    if g is None:
        return None
    arr = g._data if isinstance(g, Tensor) else g
    if hasattr(arr, "get"):          # CuPy: summarise on the host
        arr = arr.get()
    a = np.asarray(arr, dtype=np.float64)
    finite = np.isfinite(a)
    nonfinite = int(a.size - np.count_nonzero(finite))
    f = a[finite] if nonfinite else a
    if f.size:
        stats = (float(np.sqrt(np.sum(f * f))), float(f.min()), float(f.mean()), float(f.max()))
    else:
        stats = (0.0, 0.0, 0.0, 0.0)
    return GradSummary(tuple(a.shape), _dname(arr.dtype), *stats, nbytes=int(arr.nbytes), nonfinite=nonfinite)


def is_parameter(t: Tensor) -> bool:
    """A trainable parameter: marked by ``nn.Parameter`` (``_is_param``) or of a class named Parameter."""
    return bool(getattr(t, "_is_param", False)) or type(t).__name__ == "Parameter"


@contextlib.contextmanager
def no_gc():
    """Pause the cyclic garbage collector while walking a big graph.

    The walk only allocates; with a 100 000-node graph alive, every automatic
    collection would re-scan millions of objects and dominate the time.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
