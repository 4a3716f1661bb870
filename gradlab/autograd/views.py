"""Views and in-place changes: keeping the graph true when two tensors share memory.

A view (``h[0:2]``, ``h.T``, ``h.reshape(-1)``) shares its base's memory and
version counter (``ops._util.view_of`` links them). An in-place change through
either one changes both, so both graphs must follow:

* the **base** changed in place: the view's values change too, so its node is
  rebuilt from the base's new graph before the view is used again (the engine
  and ``Function.apply`` call :func:`refresh_view` when a view's version moved);
* the **view** changed in place: the base's graph is rewritten to say "the old
  base with these positions replaced", PyTorch's ``CopySlices``
  (``autograd.inplace.write_through_view``), and the view is then refreshed
  from it as above.

Both directions find the view's elements in its base by memory address
(:func:`positions_in`), so any view op works, whatever its shape or strides.
"""
from __future__ import annotations

import numpy as np

from .. import _tensor as _tensor_mod
from .._tensor import Tensor
from ..errors import GradError, fmt_shape
from .grad_mode import state as _grad_state


def _label(t):
    return f"'{t.name}'" if t.name else f"a tensor of shape {fmt_shape(t.shape)}"


def refresh_view(view):
    """Rebuild the graph of a view whose base tensor was changed in place after the view was made.

    ``v = h[0:1]; h.mul_(2)``: ``v``'s memory is ``h``'s, so its values are now
    doubled, but its ``grad_fn`` still describes ``h[0:1]`` of the *old* ``h``.
    Using it as it is would give a silently wrong gradient. So, as PyTorch
    does, the view's node is rebuilt from the base's current graph: ``v`` is
    ``h.reshape(-1)[positions]``, with ``positions`` found by matching memory
    addresses. Its values do not move; only its place in the graph does. (A
    base changed under ``no_grad`` keeps its graph, and so does the view.)
    """
    base = view._view_base
    view._view_version = view._version.value
    if base.grad_fn is view._view_fn:
        return  # the base's graph did not change (a leaf updated under no_grad, as optimizers do)
    if view._view_no_grad:
        raise GradError(
            f"{_label(view)} is a view made under no_grad() (or inference_mode()) of a tensor that was then changed in "
            "place while gradients were recorded, and it is now used where they are: its gradient would be "
            "ambiguous (as in PyTorch). Make both the view and the change inside no_grad(), or both outside it")
    view._view_fn = base.grad_fn
    positions = positions_in(view._data, base._data)
    if positions is None:
        raise GradError(
            f"{_label(view)} is a view of a tensor that was changed in place after the view was made, and gradlab "
            f"cannot rebuild the view's graph here; make the view again after the change (v = h[...] once h is final)")
    O = _tensor_mod._ops
    prev, _grad_state.enabled = _grad_state.enabled, True  # (also when backward() is called under no_grad)
    try:
        new = O.getitem(O.reshape(base, (-1,)), Tensor._make(positions))
    finally:
        _grad_state.enabled = prev
    old_fn, old_nr = view.grad_fn, view._output_nr
    view._requires_grad = new._requires_grad
    view.grad_fn = new.grad_fn
    view._output_nr = new._output_nr
    if view._retains_grad and view.grad_fn is not None:  # retain_grad() moves with the tensor, as in PyTorch
        kept = old_fn._retained if old_fn is not None else None
        if kept and kept.get(old_nr) is not None and kept[old_nr]() is view:
            del kept[old_nr]
        view.retain_grad()


def positions_in(view_arr, base_arr):
    """For each element of ``view_arr``, the row-major index of the element of ``base_arr`` at the same
    memory address (None when the arrays do not live in host memory, or an element is not found)."""
    if type(view_arr) is not np.ndarray or type(base_arr) is not np.ndarray:
        return None
    b_addr = _addresses(base_arr).reshape(-1)
    order = np.argsort(b_addr, kind="stable")
    v_addr = _addresses(view_arr)
    found = np.searchsorted(b_addr[order], v_addr)
    found = np.minimum(found, max(b_addr.size - 1, 0))
    if b_addr.size == 0 or not np.array_equal(b_addr[order][found], v_addr):
        return None if v_addr.size else np.zeros(view_arr.shape, dtype=np.int64)
    return order[found]


def _addresses(a):
    """The memory address of every element of host array ``a`` (shape of ``a``)."""
    addr = np.full(a.shape, a.__array_interface__["data"][0], dtype=np.int64)
    for d, (n, st) in enumerate(zip(a.shape, a.strides)):
        shape = [1] * a.ndim
        shape[d] = n
        addr = addr + (np.arange(n, dtype=np.int64) * st).reshape(shape)
    return addr
