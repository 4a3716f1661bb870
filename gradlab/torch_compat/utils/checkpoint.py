"""Activation checkpointing: trade compute for memory.

Normally every op in ``fn`` saves what its backward needs (activations), and
all of it stays alive until backward. ``checkpoint(fn, *args)`` runs ``fn``
while keeping only its *inputs* (and tensors that live anyway, such as
parameters); when backward first needs one of the dropped tensors, ``fn`` is
run again (with the same random state, so dropout masks match) and the
recomputed tensors are used instead. Gradients are identical; peak memory of
saved activations drops, at the price of one more forward of ``fn``.

Built on :class:`gradlab.autograd.graph.saved_tensors_hooks` (PyTorch's
non-reentrant checkpoint works the same way): during the first run the pack
hook replaces each saved activation by a small placeholder recording *which*
save it was (its position); during backward the unpack hook recomputes ``fn``
once, collecting every saved tensor in the same order, and hands back the
matching one.
"""
from __future__ import annotations

from ..._tensor import Tensor
from ...autograd import graph as _graph
from ...autograd.grad_mode import state as _grad_state
from ...backend.random import get_rng_state, set_rng_state
from ...errors import GradError

__all__ = ["checkpoint", "checkpoint_sequential"]


class _Dropped:
    """What a checkpointed op keeps instead of an activation: where to find it again."""

    __slots__ = ("holder", "index", "shape", "dtype")
    nbytes = 0

    def __init__(self, holder, index, shape, dtype):
        self.holder, self.index, self.shape, self.dtype = holder, index, shape, dtype

    def __repr__(self):
        return f"<dropped activation #{self.index}, recomputed in backward>"


class _Holder:
    def __init__(self, fn, args, kwargs, rng_state):
        self.fn, self.args, self.kwargs, self.rng_state = fn, args, kwargs, rng_state
        self.count = 0
        self.recomputed = None

    def pack(self, t):
        i = self.count
        self.count += 1
        if t.grad_fn is None or any(t is a for a in self.args):
            return t  # an input or a leaf (a parameter): it exists anyway, keep the reference
        return _Dropped(self, i, t.shape, t.dtype)

    def unpack(self, packed):
        if isinstance(packed, Tensor):
            return packed
        if _grad_state.enabled:  # backward(create_graph=True): the engine records the backward pass
            raise GradError(
                "checkpoint: higher-order gradients (create_graph=True) through a checkpointed function are not "
                "supported by gradlab; the recomputed activations are not connected to the original graph. "
                "Run that part without checkpoint()")
        if self.recomputed is None:
            self._recompute()
        return self.recomputed[packed.index]

    def _recompute(self):
        saved = []

        def pack(t):
            saved.append(t)
            return t
        args = tuple(_alias(a) for a in self.args)
        state = get_rng_state() if self.rng_state is not None else None
        if self.rng_state is not None:
            set_rng_state(self.rng_state)
        prev = _grad_state.enabled
        _grad_state.enabled = True
        try:
            with _graph.saved_tensors_hooks(pack, lambda t: t):
                self.fn(*args, **self.kwargs)
        finally:
            _grad_state.enabled = prev
            if state is not None:
                set_rng_state(state)
        self.recomputed = saved


def _alias(a):
    """A detached stand-in for input ``a`` with the same requires_grad (so ops record and save alike)."""
    if not isinstance(a, Tensor):
        return a
    t = a.detach()
    if a._requires_grad:
        t.requires_grad_(True)
    return t


def checkpoint(function, *args, use_reentrant=None, preserve_rng_state=True, **kwargs):
    """Run ``function(*args, **kwargs)`` keeping only its inputs; recompute its activations in backward.

    ``function`` must compute the same thing when run twice (random ops are
    replayed from the saved RNG state when ``preserve_rng_state``).
    ``use_reentrant`` is accepted for PyTorch compatibility; gradlab always uses
    the non-reentrant (saved-tensor hooks) method.
    """
    if not _grad_state.enabled:
        return function(*args, **kwargs)
    holder = _Holder(function, args, kwargs, get_rng_state() if preserve_rng_state else None)
    with _graph.saved_tensors_hooks(holder.pack, holder.unpack):
        return function(*args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Split a sequence of layers (a list or ``nn.Sequential``) into ``segments`` checkpointed chunks."""
    fns = list(functions.children()) if hasattr(functions, "children") else list(functions)
    n = len(fns)
    size = max(1, -(-n // max(1, segments)))

    def run(chunk):
        def f(x):
            for m in chunk:
                x = m(x)
            return x
        return f
    x = input
    for start in range(0, n, size):
        x = checkpoint(run(fns[start:start + size]), x, **kwargs)
    return x
