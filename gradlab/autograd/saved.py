"""``SavedTensor``: what a node keeps for backward, and the check that it is still valid.

A node saves a tensor together with the version counter it had at that
moment. In-place changes bump the counter, so if the tensor was changed after
saving, backward refuses to use it (the gradient would be silently wrong) and
says how to fix the program. ``saved_tensor_hooks()`` is this thread's stack
of ``(pack, unpack)`` pairs that ``gradlab.autograd.graph.saved_tensors_hooks``
pushes (per thread, as PyTorch's: it lives in ``grad_mode.state``): a pack
hook can move a saved tensor elsewhere (to the host, recompute it) and unpack
brings it back.
"""
from __future__ import annotations

from .._tensor import Tensor, _Version
from ..errors import GradError, fmt_shape
from .grad_mode import state as _state


def saved_tensor_hooks() -> list:
    """This thread's stack of ``(pack, unpack)`` pairs, innermost last (a thread starts with none)."""
    return _state.saved_hooks


class SavedTensor:
    """A tensor kept for backward, with the version it had when it was saved.

    An op's own output is stored as its array only (not the Tensor), with a
    flag, and rebuilt on use pointing back at the node: the same trick PyTorch
    uses to avoid the cycle ``output -> grad_fn -> saved output``.
    """

    @property
    def data(self):
        """The saved array (or None once released): what the lessons inspect."""
        return self._data

    __slots__ = ("tensor", "_data", "version_obj", "version", "output_nr", "packed", "unpack", "name")

    def __init__(self, t: Tensor, output_nr=None):
        # (every saving op makes these, in every forward: written for speed)
        self.output_nr = output_nr
        self._data = t._data
        vc = t._vcounter
        if vc is None:  # (the counter is made on first use: ``Tensor._version``, inline)
            vc = t._vcounter = _Version()
        self.version_obj = vc
        self.version = vc.value
        self.name = t.name
        self.tensor = None if output_nr is not None else t
        hooks = _state.saved_hooks
        if hooks:
            pack, unpack = hooks[-1]
            self.packed, self.unpack = pack(t), unpack
            self._data = None
            # where ``t`` sits in the graph (not its memory), so what unpack returns can be put back there
            self.tensor = None if output_nr is not None or not t._requires_grad else (
                (t.grad_fn, t._output_nr, None) if t.grad_fn is not None else (None, 0, t))  # (a leaf lives anyway)
        else:
            self.packed = self.unpack = None

    @property
    def nbytes(self) -> int:
        """Bytes this saved tensor keeps alive (0 when a pack hook moved it elsewhere)."""
        if self._data is not None:
            return int(self._data.nbytes)
        p = self.packed
        return int(getattr(p, "nbytes", 0) or 0) if not isinstance(p, Tensor) else p.nbytes

    @property
    def shape(self):
        return self._data.shape if self._data is not None else getattr(self.packed, "shape", None)

    @property
    def dtype(self):
        return self._data.dtype if self._data is not None else getattr(self.packed, "dtype", None)

    def get(self, node) -> Tensor:
        if self.version_obj.value != self.version:
            nm = self.name or getattr(self.version_obj, "name", None)
            who = f"'{nm}'" if nm else "a tensor"
            raise GradError(
                f"in-place change: {who} (shape {fmt_shape(self.shape or ())}) was saved by {node.name} for "
                f"backward at version {self.version} and is now at version {self.version_obj.value}; "
                f"use {nm or 'x'} = {nm or 'x'} + ... instead of {nm or 'x'} += ... "
                "(or .clone() it before changing it)"
            )
        if self.unpack is not None:
            return self._attach(self.unpack(self.packed), node)
        if self.tensor is not None:
            return self.tensor
        t = Tensor._make(self._data, True, node, self.output_nr)
        t._version = self.version_obj
        return t

    def _attach(self, u, node):
        """What an unpack hook returned, put back in the saved tensor's place in the graph (as PyTorch
        does): a gradient of backward itself (``create_graph=True``) must flow through it to the graph
        it came from, also when the hook made a copy (``save_on_cpu``) or recomputed it (checkpoint)."""
        if not isinstance(u, Tensor):
            return u
        if self.output_nr is not None:  # this node's own output
            if u.grad_fn is node and u._output_nr == self.output_nr:
                return u
            return Tensor._make(u._data, True, node, self.output_nr)
        if self.tensor is None:  # an input that needs no gradient
            return u
        fn, nr, leaf = self.tensor
        if leaf is not None:  # a leaf: a new tensor whose gradient goes to the leaf's accumulator
            if u is leaf:
                return u
            from .function import edge_of
            edge_of(leaf)
            t = Tensor._make(u._data, True)
            t._acc_ref = leaf._acc_ref
            return t
        if u.grad_fn is fn and u._output_nr == nr:
            return u
        return Tensor._make(u._data, True, fn, nr)

    def array(self, node):
        """The saved array itself (for ``vjp_arrays``), after the same checks as :meth:`get`."""
        if self.version_obj.value == self.version and self.unpack is None:
            return self._data
        return self.get(node)._data
