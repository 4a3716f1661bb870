"""PyTorch's autograd nodes, read one at a time (``torch_graph`` builds the whole model from them).

Holds: detection without importing torch (``is_torch_tensor``, ``is_torch_module``, ``is_torch_node``,
``is_accumulate``); small conversions (``dtype_name``, ``to_numpy``, ``nbytes``, ``safe_grad``,
``node_name``, ``storage_key``, ``shape_of_meta``); a PyTorch node's name -> gradlab's registry
(``gradlab_op_for``, ``formula_for``, ``elementwise``); saved tensors (``saved_tensors``,
``saved_or_freed``, ``is_released``); the graph walk (``collect``) and the id scheme (``NodeIds``).
"""
from __future__ import annotations

import re
import sys

from ..ops.registry import REGISTRY, formula_of
from .graph_base import collect_nodes


# ------------------------------------------------------------------ detection (no torch import)
def is_torch_tensor(x) -> bool:
    """Is ``x`` a ``torch.Tensor`` (or a subclass, e.g. ``nn.Parameter``)? Never imports torch."""
    mods = sys.modules
    if "torch" not in mods:
        return False
    for c in type(x).__mro__:
        if (c.__name__ == "Tensor" and c.__module__ == "torch") or \
                (c.__name__ == "TensorBase" and c.__module__ == "torch._C"):
            return True
    return False


def is_torch_module(x) -> bool:
    """Is ``x`` a ``torch.nn.Module``?"""
    if "torch" not in sys.modules:
        return False
    return any(c.__name__ == "Module" and c.__module__ == "torch.nn.modules.module" for c in type(x).__mro__)


def is_torch_node(n) -> bool:
    """A PyTorch autograd node (``grad_fn``, ``AccumulateGrad``)."""
    return hasattr(n, "next_functions") and hasattr(n, "_sequence_nr") and hasattr(n, "register_prehook")


def is_accumulate(n) -> bool:
    return type(n).__name__ == "AccumulateGrad" and hasattr(n, "variable")


def _torch():
    import torch  # only reached with a torch tensor in hand: torch is already imported
    return torch


# ------------------------------------------------------------------ small conversions
def dtype_name(dt) -> str:
    s = str(dt)
    return s[6:] if s.startswith("torch.") else s


def to_numpy(t):
    """The values of a torch tensor as a NumPy array (bfloat16 -> float32; on the host)."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if t.dtype not in (_torch().float16, _torch().float32, _torch().float64) and t.is_floating_point():
        t = t.float()
    if t.is_complex():
        return t.resolve_conj().numpy()
    return t.numpy()


def nbytes(t) -> int:
    return int(t.numel()) * int(t.element_size())


def safe_grad(t):
    """``t.grad`` without PyTorch's warning for a non-leaf (None unless a leaf or ``retain_grad()``)."""
    if t.is_leaf or getattr(t, "retains_grad", False):
        return t.grad
    return None


def node_name(n) -> str:
    s = n.name()
    return s.rsplit("::", 1)[-1]


def storage_key(t):
    """What identifies the memory of a saved tensor: two nodes saving one array count it once."""
    try:
        return (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()), str(t.dtype))
    except Exception:  # noqa: BLE001 - a tensor without storage (meta, sparse): count it by identity
        return ("id", id(t))


# ------------------------------------------------------------------ op names -> gradlab's registry
_ALIASES = {
    "mm": "matmul", "bmm": "bmm", "addmm": "addmm", "mv": "mv", "dot": "matmul", "t": "transpose",
    "unsafeview": "reshape", "view": "reshape", "reshapealias": "reshape", "expand": "broadcast_to",
    "rsub": "sub", "addcmul": "mul", "select": "getitem", "slice": "getitem", "index": "getitem",
    "maxpool2dwithindices": None, "nativelayernorm": None, "gelu": "gelu", "logsoftmax": "functional.log_softmax",
    "clampmin": "clamp_min", "clampmax": "clamp_max", "maskedfill": "masked_fill", "indexselect": "index_select",
    "squeezedim": "squeeze", "unsqueeze": "unsqueeze", "softplus": "softplus", "leakyrelu": "leaky_relu",
    "tobackward": "to", "todtype": "to", "tocopy": "to", "logsumexp": "logsumexp", "nllloss": None,
    "softmax": "functional.softmax",
}


def gradlab_op_for(name: str):
    """The registry name of the gradlab op a PyTorch node corresponds to (``MmBackward0`` -> ``matmul``), or None."""
    base = re.sub(r"Backward\d*$", "", name)
    key = re.sub(r"(Tensor|Scalar)$", "", base).lower()
    if key in _ALIASES:
        return _ALIASES[key]
    if key in REGISTRY:
        return key
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", base).lower()
    return snake if snake in REGISTRY else None


def formula_for(name: str) -> str:
    op = gradlab_op_for(name)
    return formula_of(op) if op else ""


def elementwise(name: str) -> bool:
    op = gradlab_op_for(name)
    info = REGISTRY.get(op) if op else None
    return bool(info is not None and (info.elementwise or op == "broadcast_to"))


# ------------------------------------------------------------------ saved tensors
_SAVED_ATTRS = {}


def _saved_attrs(node):
    tp = type(node)
    names = _SAVED_ATTRS.get(tp)
    if names is None:
        names = _SAVED_ATTRS[tp] = [a for a in dir(node) if a.startswith("_saved_")]
    return names


def saved_tensors(node):
    """``[(name, tensor)]``: the tensors ``node`` saved for backward (its ``_saved_*`` attributes).

    Raises ``RuntimeError`` (PyTorch's) when backward already freed them.
    """
    torch = _torch()
    out = []
    for a in _saved_attrs(node):
        v = getattr(node, a)
        name = a[len("_saved_"):]
        if isinstance(v, torch.Tensor):
            out.append((name, v))
        elif isinstance(v, (list, tuple)):
            out += [(f"{name}[{i}]", x) for i, x in enumerate(v) if isinstance(x, torch.Tensor)]
    return out


def saved_or_freed(node):
    """``(saved list, freed?)``; freed when PyTorch refuses to unpack them (backward ran without retain_graph)."""
    try:
        return saved_tensors(node), False
    except RuntimeError:
        return [], True


def is_released(node) -> bool:
    return saved_or_freed(node)[1]


# ------------------------------------------------------------------ the graph walk
def collect(root_fn):
    """Every node behind ``root_fn``: ``(ops sorted by creation, AccumulateGrad nodes in order of first use)``."""
    return collect_nodes(root_fn, is_accumulate, lambda n: [src for src, _nr in n.next_functions if src is not None],
                         lambda n: n._sequence_nr())


class NodeIds:
    """``model.node_ids`` for a PyTorch graph: node -> id (PyTorch nodes take no weak references).

    Keyed by ``id(node)``; it keeps only the ``AccumulateGrad`` nodes alive (their
    leaves, for the inspector), never the ops and what they saved.
    """

    def __init__(self):
        self._ids = {}
        self._leaves = {}

    def __setitem__(self, node, nid):
        self._ids[id(node)] = nid
        if is_accumulate(node):
            self._leaves[id(node)] = node

    def get(self, node, default=None):
        return self._ids.get(id(node), default)

    def __getitem__(self, node):
        return self._ids[id(node)]

    def __contains__(self, node):
        return id(node) in self._ids

    def __len__(self):
        return len(self._ids)

    def items(self):
        """``(AccumulateGrad node, id)`` for the leaves (ops are not kept)."""
        return [(n, self._ids[k]) for k, n in self._leaves.items()]


def shape_of_meta(n, nr):
    try:
        im = n._input_metadata[nr]
        return tuple(im.shape), dtype_name(im.dtype), str(im.device)
    except Exception:  # noqa: BLE001 - a node without metadata for this output
        return None, None, None
