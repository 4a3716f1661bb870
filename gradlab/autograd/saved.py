"""``SavedTensor``: what a node keeps for backward, and the check that it is still valid.

A node saves a tensor together with the version counter it had at that
moment. In-place changes bump the counter, so if the tensor was changed after
saving, backward refuses to use it (the gradient would be silently wrong) and
says how to fix the program. ``saved_tensor_hooks`` is the stack of
``(pack, unpack)`` pairs that ``gradlab.autograd.graph.saved_tensors_hooks``
pushes: a pack hook can move a saved tensor elsewhere (to the host,
recompute it) and unpack brings it back.
"""
from __future__ import annotations

from ..errors import GradError, fmt_shape
from .._tensor import Tensor

saved_tensor_hooks: list = []  # stack of (pack, unpack) pairs


class SavedTensor:
    """A tensor kept for backward, with the version it had when it was saved.

    An op's own output is stored as its array only (not the Tensor), with a
    flag, and rebuilt on use pointing back at the node: the same trick PyTorch
    uses to avoid the cycle ``output -> grad_fn -> saved output``.
    """

    __slots__ = ("tensor", "data", "version_obj", "version", "output_nr", "packed", "unpack", "name")

    def __init__(self, t: Tensor, output_nr=None):
        self.output_nr = output_nr
        self.data = t.data
        self.version_obj = vc = t._version
        self.version = vc.value
        self.name = t.name
        self.tensor = None if output_nr is not None else t
        if saved_tensor_hooks:
            pack, unpack = saved_tensor_hooks[-1]
            self.packed, self.unpack = pack(t), unpack
            self.tensor = self.data = None
        else:
            self.packed = self.unpack = None

    @property
    def nbytes(self) -> int:
        """Bytes this saved tensor keeps alive (0 when a pack hook moved it elsewhere)."""
        if self.data is not None:
            return int(self.data.nbytes)
        p = self.packed
        return int(getattr(p, "nbytes", 0) or 0) if not isinstance(p, Tensor) else p.nbytes

    @property
    def shape(self):
        return self.data.shape if self.data is not None else getattr(self.packed, "shape", None)

    @property
    def dtype(self):
        return self.data.dtype if self.data is not None else getattr(self.packed, "dtype", None)

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
            return self.unpack(self.packed)
        if self.tensor is not None:
            return self.tensor
        t = Tensor._make(self.data, True, node, self.output_nr)
        t._version = self.version_obj
        return t

    def array(self, node):
        """The saved array itself (for ``vjp_arrays``), after the same checks as :meth:`get`."""
        if self.version_obj.value == self.version and self.unpack is None:
            return self.data
        return self.get(node).data
