"""Where gradients land: hooks, ``retain_grad``, capture for ``grad()``, and ``.grad``.

The engine (``engine.py``) decides the order; this module is what happens at
the two ends of a node: before it runs, its incoming gradient passes through
the tensor hooks and is kept for ``retain_grad()`` or ``gradlab.grad()``; at a
leaf, the total is added into ``.grad``. Hooks always see Tensors, also when
backward moves raw arrays (the fast path).
"""
from __future__ import annotations

from .._tensor import Tensor
from ..errors import GradError, fmt_shape
from .function import AccumulateGrad


def _tensors(values):
    """Arrays -> Tensors (None stays None): for hooks and observers, which see Tensors."""
    return tuple(None if v is None else Tensor._make(v) for v in values)


def _pre_process(node, grads, create_graph, capture, captured, arrays=False):
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


def _accumulate(leaf: Tensor, g: Tensor, create_graph: bool):
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


def _accumulate_array(leaf: Tensor, g, handed: set):
    """``_accumulate`` for a gradient that is an array (backward without create_graph).

    The array is stored as is when nothing else can see it; a view (a broadcast
    gradient is a read-only view), the leaf's own data, or an array already
    handed to another leaf in this pass is copied first, so that changing one
    ``.grad`` in place (``clip_grad_norm_``) never changes another.
    """
    old = leaf.grad
    if old is None or old._requires_grad:
        if id(g) in handed or g is leaf._data or getattr(g, "base", None) is not None:
            g = g.copy()
        handed.add(id(g))
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
