"""``gradlab.memory_report(model, loss=None, optimizer=None)``: where did the memory go?

Training memory has four parts, and each responds to a different fix:

* **parameters** -- the weights (frozen ones too: freezing saves their
  gradients and optimizer state, not the weights themselves);
* **gradients** -- one array per trainable parameter, after ``backward()``;
* **optimizer state** -- Adam keeps two more arrays per trainable parameter;
* **saved activations** -- what the forward pass kept for backward (each
  node's ``saved``): usually the largest part, proportional to the batch size,
  and what checkpointing, ``no_grad()`` and freezing reduce.

A saved tensor that is a parameter (``matmul`` saves its weight) costs nothing
extra, and two nodes saving the same array cost it once: the report counts
each underlying array once, where it was first saved.
"""
from __future__ import annotations

from ..backend.memory_limit import format_bytes
from ._common import (
    DebugInputError,
    Tensor,
    html_table,
    named_parameters,
    node_module,
    require_tensor,
    text_table,
    walk,
)


def _root(arr):
    """The array that owns the memory (NumPy views keep their base alive)."""
    while getattr(arr, "base", None) is not None and hasattr(arr.base, "nbytes"):
        arr = arr.base
    return arr


def _state_bytes(value):
    if isinstance(value, Tensor):
        return value.nbytes
    if hasattr(value, "nbytes") and hasattr(value, "shape"):
        return int(value.nbytes)
    if isinstance(value, dict):
        return sum(_state_bytes(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_state_bytes(v) for v in value)
    return 0


class MemoryReport:
    """The table ``memory_report`` returns. Bytes: ``parameters`` (``trainable_parameters`` +
    ``frozen_parameters``), ``gradients``, ``optimizer_state``, ``activations`` (None when no loss
    was given), ``total``; ``per_module`` (activation bytes by module), ``top_saved`` (largest saved
    tensors) and ``notes``."""

    def __init__(self):
        self.trainable_parameters = self.frozen_parameters = self.gradients = self.optimizer_state = 0
        self.activations = None
        self.dropped = 0
        self.counts = {}
        self.per_module = {}
        self.modules = {}  # module -> {"parameters", "gradients", "optimizer_state", "activations"} bytes
        self.top_saved = []
        self.notes = []

    @property
    def parameters(self) -> int:
        return self.trainable_parameters + self.frozen_parameters

    @property
    def total(self) -> int:
        return self.parameters + self.gradients + self.optimizer_state + (self.activations or 0)

    def as_dict(self) -> dict:
        return {"parameters": self.parameters, "trainable_parameters": self.trainable_parameters,
                "frozen_parameters": self.frozen_parameters, "gradients": self.gradients,
                "optimizer_state": self.optimizer_state, "activations": self.activations, "total": self.total}

    def rows(self):
        c = self.counts
        act = self.activations
        return [
            ["parameters (trainable)", c.get("trainable", 0), self.trainable_parameters,
             format_bytes(self.trainable_parameters)],
            ["parameters (frozen)", c.get("frozen", 0), self.frozen_parameters, format_bytes(self.frozen_parameters)],
            ["gradients", c.get("grads", 0), self.gradients, format_bytes(self.gradients)],
            ["optimizer state", c.get("state", 0), self.optimizer_state, format_bytes(self.optimizer_state)],
            ["saved activations", c.get("saved", "-") if act is not None else "-",
             act if act is not None else "not measured (pass loss=)", format_bytes(act)],
            ["total", "", self.total, format_bytes(self.total)],
        ]

    HEADERS = ["part", "tensors", "bytes", "size"]

    _PARTS = ("parameters", "gradients", "optimizer_state", "activations")

    def _add(self, module, part, nbytes):
        row = self.modules.setdefault(module, dict.fromkeys(self._PARTS, 0))
        row[part] += int(nbytes)

    def _parameters(self, params, nbytes, key):
        """Count ``(name, tensor)`` pairs (each tensor once) and their grads, by the module that owns each.

        ``nbytes(t)``: a tensor's bytes; returns ``(owner: id(p) -> module, {key(p)})``.
        """
        owner = {id(p): (n.rsplit(".", 1)[0] if "." in n else "(model)") for n, p in params}
        keys, seen = set(), set()
        for _name, p in params:
            if id(p) in seen:
                continue
            seen.add(id(p))
            keys.add(key(p))
            module, nb = owner[id(p)], nbytes(p)
            self._add(module, "parameters", nb)
            if p.requires_grad:
                self.trainable_parameters += nb
                self.counts["trainable"] = self.counts.get("trainable", 0) + 1
            else:
                self.frozen_parameters += nb
                self.counts["frozen"] = self.counts.get("frozen", 0) + 1
            if p.grad is not None:
                gb = nbytes(p.grad)
                self.gradients += gb
                self._add(module, "gradients", gb)
                self.counts["grads"] = self.counts.get("grads", 0) + 1
        if not params:
            self.notes.append("the model has no parameters")
        return owner, keys

    def _optimizer(self, optimizer, owner, state_bytes, what):
        """Count ``optimizer.state`` (``state_bytes(st)`` for each entry) by the module owning each parameter."""
        state = getattr(optimizer, "state", None)
        if state is None or not hasattr(optimizer, "param_groups"):
            raise DebugInputError(f"memory_report: optimizer must be {what} (with state and "
                                  f"param_groups), got {type(optimizer).__name__}")
        for p, st in state.items():
            b = state_bytes(st)
            self.optimizer_state += b
            self._add(owner.get(id(p), "(not in the model)"), "optimizer_state", b)
            self.counts["state"] = self.counts.get("state", 0) + (len(st) if isinstance(st, dict) else 1)
        if not state:
            self.notes.append("the optimizer has no state yet (it is created by the first step())")

    def _start_activations(self, nodes, no_grad="no_grad()") -> bool:
        """Start the activations at 0; False (and a note) when the loss has no graph ``nodes``."""
        self.activations = 0
        self.counts["saved"] = 0
        if not nodes:
            self.notes.append(f"the loss has no graph (computed under {no_grad}, or nothing it used requires grad), "
                              "so no activations are kept for backward")
            return False
        return True

    def module_rows(self):
        rows = sorted(self.modules.items(), key=lambda kv: -sum(kv[1].values()))
        return [[m] + [format_bytes(r[p]) for p in self._PARTS] + [format_bytes(sum(r.values()))] for m, r in rows]

    MODULE_HEADERS = ["module", "parameters", "gradients", "optimizer state", "saved activations", "total"]

    def _modules_sorted(self):
        return sorted(self.per_module.items(), key=lambda kv: -kv[1])

    def verdict(self) -> str:
        parts = {"parameters": self.parameters, "gradients": self.gradients,
                 "optimizer state": self.optimizer_state, "saved activations": self.activations or 0}
        big = max(parts, key=parts.get)
        share = parts[big] / self.total if self.total else 0
        return f"{format_bytes(self.total)} in all; the largest part is {big} ({share:.0%})"

    def __str__(self):
        out = [f"memory_report: {self.verdict()}", "", text_table(self.HEADERS, self.rows())]
        if self.modules:
            out += ["", "by module:", text_table(self.MODULE_HEADERS, self.module_rows())]
        if self.top_saved:
            out += ["", "largest saved tensors:",
                    text_table(["op", "module", "shape", "dtype", "bytes"],
                               [[s["op"], s["module"] or "", s["shape"], s["dtype"], s["bytes"]]
                                for s in self.top_saved])]
        if self.notes:
            out += [""] + [f"note: {n}" for n in self.notes]
        return "\n".join(out)

    __repr__ = __str__

    def _repr_html_(self):
        parts = [f"<p><b>memory_report</b>: {self.verdict()}</p>", html_table(self.HEADERS, self.rows())]
        if self.modules:
            parts.append(html_table(self.MODULE_HEADERS, self.module_rows(), caption="by module"))
        if self.top_saved:
            parts.append(html_table(["op", "module", "shape", "dtype", "bytes"],
                                    [[s["op"], s["module"] or "", s["shape"], s["dtype"], s["bytes"]]
                                     for s in self.top_saved], caption="largest saved tensors"))
        parts += [f"<p>note: {n}</p>" for n in self.notes]
        return "\n".join(parts)


def memory_report(model, loss=None, optimizer=None, top=10) -> MemoryReport:
    """Tabulate the bytes in parameters, gradients, optimizer state and saved activations.

    ``model``: a ``gradlab.nn.Module`` (or a dict / list of tensors), or a
    ``torch.nn.Module`` with a torch ``loss`` and optimizer;
    ``loss``: a tensor whose graph holds the saved activations (before
    ``backward()`` frees them); ``optimizer``: a gradlab optimizer.
    """
    from ..viz import torch_graph as _tg
    if _tg.is_torch_module(model) or _tg.is_torch_tensor(loss) or _tg.is_torch_tensor(model) or (
            isinstance(model, (list, tuple, dict)) and any(_tg.is_torch_tensor(v) for v in (
                model.values() if isinstance(model, dict) else model))):
        from .torch_debug import memory_report_torch  # a PyTorch model: its graph's _saved_* tensors
        return memory_report_torch(model, loss=loss, optimizer=optimizer, top=top)
    params = named_parameters(model, "memory_report")
    rep = MemoryReport()
    owner, param_roots = rep._parameters(params, lambda t: t.nbytes, lambda p: id(_root(p._data)))
    if optimizer is not None:
        rep._optimizer(optimizer, owner, _state_bytes, "a gradlab.optim optimizer")
    if loss is not None:
        _activations(rep, require_tensor(loss, "memory_report", "loss"), param_roots, top)
    return rep


def _activations(rep, loss, param_roots, top):
    nodes = walk(loss)
    if not rep._start_activations(nodes):
        return
    if any(getattr(n, "_released", False) for n in nodes):
        rep.notes.append("backward() already freed some saved tensors of this graph; call memory_report "
                         "between the forward pass and backward() to see them")
    counted = set()
    shared_params = dropped = 0
    entries = []
    for n in sorted(nodes, key=lambda n: n.seq):
        for s in getattr(n, "saved", ()):
            packed = s.packed
            if s._data is None and isinstance(packed, Tensor):
                packed = packed._data  # a pack hook kept the tensor itself (e.g. checkpoint keeps inputs)
            if s._data is not None or hasattr(packed, "base"):
                root = _root(s._data if s._data is not None else packed)
                key, nbytes = id(root), int(root.nbytes)
            else:
                key, nbytes = id(packed), s.nbytes
                if not nbytes:
                    dropped += 1  # a placeholder: recomputed in backward (activation checkpointing)
                    continue
            if key in param_roots:
                shared_params += 1
                continue
            if key in counted:
                continue
            counted.add(key)
            mod = node_module(n)
            rep.activations += nbytes
            rep.counts["saved"] += 1
            rep.per_module[mod or "(outside modules)"] = rep.per_module.get(mod or "(outside modules)", 0) + nbytes
            rep._add(mod or "(outside modules)", "activations", nbytes)
            entries.append({"op": n.name, "module": mod, "shape": s.shape, "dtype": str(s.dtype), "bytes": nbytes,
                            "name": s.name})
    entries.sort(key=lambda e: -e["bytes"])
    rep.top_saved = entries[:top]
    if dropped:
        rep.notes.append(f"{dropped} activation(s) are not kept but recomputed in backward (activation "
                         "checkpointing): they cost no memory now")
    rep.dropped = dropped
    if shared_params:
        rep.notes.append(f"{shared_params} saved tensor(s) are parameters themselves: counted under parameters, "
                         "not again as activations")
