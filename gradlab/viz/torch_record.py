"""PyTorch's real ``backward()``, recorded: ``record_backward(loss)`` -> ``TorchBackwardRecorder``.

It runs PyTorch's own engine with node hooks (``register_prehook`` / ``register_hook``) and records the
order the engine ran the nodes, the gradients in and out of each, and the leaves' ``.grad`` before and
after, as :class:`gradlab.viz.record.BackwardStep` s (``animate_backward`` plays them).
"""
from __future__ import annotations

from .torch_nodes import (
    collect,
    elementwise,
    formula_for,
    is_accumulate,
    is_released,
    nbytes,
    node_name,
    saved_or_freed,
    shape_of_meta,
    storage_key,
    to_numpy,
)


# ------------------------------------------------------------------ the real backward, recorded
def _value(t, limit):
    from .record import Value
    if t is None:
        return None
    return Value.of(to_numpy(t), limit)


class TorchBackwardRecorder:
    """What PyTorch's engine did in one ``backward()``, seen through node hooks (see :func:`record_backward`).

    ``steps``: :class:`gradlab.viz.record.BackwardStep` s in the order PyTorch ran the
    nodes (its pre-hooks fire as each node starts); ``start_bytes``: saved bytes
    before the backward. A node's saved tensors count as freed once PyTorch
    refuses to unpack them (it frees them right after the node's post-hooks).
    """

    def __init__(self, root, preview_limit=256):
        self.root, self.limit = root, preview_limit
        self.steps = []
        self.nodes = []
        from .record import _SavedLedger
        self._ledger = _SavedLedger()
        self._held = {}
        self._contrib = {}
        self._pending = None
        self._handles = []
        self.start_bytes = 0

    def install(self):
        from .record import BackwardStep, GradOut, summed_axes
        self._Step, self._GradOut, self._summed = BackwardStep, GradOut, summed_axes
        fn = self.root.grad_fn
        ops, accs = collect(fn)
        self.nodes = ops + accs
        for n in ops:
            raw, _freed = saved_or_freed(n)
            keys = [(storage_key(t), nbytes(t)) for _s, t in raw]
            self._held[id(n)] = keys
            self._ledger.add_keys(keys)
        self.start_bytes = self._ledger.bytes
        self._contrib[id(fn)] = [(None, 0)]
        for n in self.nodes:
            self._handles.append(n.register_prehook(self._pre(n)))
            self._handles.append(n.register_hook(self._post(n)))

    def remove(self):
        self._settle()
        for h in self._handles:
            h.remove()
        self._handles = []

    def _pre(self, node):
        def hook(grad_outputs):
            self._settle()
            name = node_name(node)
            step = self._Step(index=len(self.steps), node=node, name=name, formula=formula_for(name),
                              grads_in=[_value(g, self.limit) for g in grad_outputs], grads_out=[],
                              contributions=self._contrib.pop(id(node), []))
            if is_accumulate(node):
                step.leaf_before = _value(node.variable.grad, self.limit)
            self.steps.append(step)
        return hook

    def _post(self, node):
        def hook(grad_inputs, grad_outputs):
            step = self.steps[-1]
            if is_accumulate(node):
                step.leaf_after = _value(node.variable.grad, self.limit)
            ew = elementwise(step.name)
            out_shape = shape_of_meta(node, 0)[0] if ew else None
            for i, (src, nr) in enumerate(node.next_functions):
                if src is None or i >= len(grad_inputs) or grad_inputs[i] is None:
                    continue
                g = grad_inputs[i]
                axes = None
                if ew and out_shape is not None:
                    in_shape = shape_of_meta(src, nr)[0]
                    if in_shape is None and is_accumulate(src):
                        in_shape = tuple(src.variable.shape)
                    if in_shape is not None:
                        axes = self._summed(out_shape, in_shape)
                step.grads_out.append(self._GradOut(i, src, _value(g, self.limit), axes))
                self._contrib.setdefault(id(src), []).append((node, i))
            self._pending = (step, node)
        return hook

    def _settle(self):
        if self._pending is None:
            return
        step, node = self._pending
        self._pending = None
        keys = self._held.get(id(node))
        if keys and is_released(node):
            step.saved_freed = self._ledger.drop(self._held.pop(id(node)))
        step.saved_bytes = self._ledger.bytes


def record_backward(loss, gradient=None, retain_graph=None, preview_limit=256) -> TorchBackwardRecorder:
    """Run ``loss.backward(gradient, retain_graph=...)`` (PyTorch's own) and return the recording."""
    rec = TorchBackwardRecorder(loss, preview_limit)
    rec.install()
    try:
        loss.backward(gradient, retain_graph=retain_graph)
    finally:
        rec.remove()
    return rec
