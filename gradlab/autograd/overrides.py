"""Replace the backward rule of an existing op (TensorFlow's ``RegisterGradient`` idea).

The lesson on custom gradients uses this to try out gradients that are *not*
the true derivative: a straight-through estimator for ``round`` or ``sign``,
a clipped gradient for ``tanh``, or a deliberately wrong rule to watch
gradcheck catch it::

    def straight_through(ctx, grad):
        return (grad, None)            # one gradient per positional forward input

    with gradlab.autograd.override_vjp("round", straight_through):
        loss = model(x).round().sum()
        loss.backward()

The override replaces the op class's ``vjp`` method for as long as it is
registered, so an op without an override pays nothing at all (there is no
lookup). ``fn(ctx, *grads)`` receives the node as ``ctx`` -- with
``ctx.saved_tensors``, ``ctx.input_meta`` and whatever the forward stored --
and returns one gradient per positional forward input (``None`` for none).
"""
from __future__ import annotations

import contextlib

from .. import _tensor as _tensor_mod
from ..errors import ArgumentError
from .function import Function

_originals: dict = {}   # op class -> its own (vjp, vjp_arrays) before the first override (None if inherited)
_MISSING = object()      # "the class had no vjp_arrays of its own"
_stack: dict = {}       # op class -> list of active override functions (last wins)


def _op_class(op):
    if isinstance(op, type) and issubclass(op, Function):
        return op
    if isinstance(op, str):
        registry = _tensor_mod._ops.REGISTRY  # (gradlab.ops, reached through the slot it fills: a layer above)
        info = registry.get(op) or registry.get(f"functional.{op}")
        if info is None:
            raise ArgumentError(f"register_vjp: there is no op named {op!r} in the registry "
                                "(see gradlab.ops.REGISTRY); you can also pass the op's Function class")
        if info.op is None:
            raise ArgumentError(
                f"register_vjp: {op!r} is built from other ops and has no backward node of its own; override "
                "one of the ops it is made of (its graph nodes show their names), or pass a Function class")
        return info.op
    raise TypeError(f"register_vjp: op must be a registry name or a Function class, got {type(op).__name__}")


def _install(cls):
    fns = _stack.get(cls)
    if fns:
        fn = fns[-1]

        def vjp(self, *grads):
            res = fn(self, *grads)
            return res if isinstance(res, tuple) else (res,)
        vjp.__doc__ = f"overridden backward of {cls.name} ({getattr(fn, '__name__', fn)})"
        vjp._override = fn
        cls.vjp = vjp
        cls.vjp_arrays = None  # the op's fast array twin would bypass the override
    else:
        orig, orig_arrays = _originals.pop(cls, (None, _MISSING))
        if orig is None:
            if "vjp" in cls.__dict__:
                del cls.vjp
        else:
            cls.vjp = orig
        if orig_arrays is _MISSING:
            if "vjp_arrays" in cls.__dict__:
                del cls.vjp_arrays
        else:
            cls.vjp_arrays = orig_arrays


def register_vjp(op, fn):
    """Use ``fn(ctx, *grads) -> grads`` as the backward rule of ``op`` (a name or Function class).

    Returns a handle whose ``.remove()`` restores the previous rule.
    """
    cls = _op_class(op)
    if not callable(fn):
        raise TypeError(f"register_vjp: fn must be callable, got {type(fn).__name__}")
    if cls not in _stack or not _stack[cls]:
        _originals[cls] = (cls.__dict__.get("vjp"), cls.__dict__.get("vjp_arrays", _MISSING))
        _stack[cls] = []
    _stack[cls].append(fn)
    _install(cls)
    return _Handle(cls, fn)


class _Handle:
    def __init__(self, cls, fn):
        self.cls, self.fn = cls, fn

    def remove(self):
        fns = _stack.get(self.cls, [])
        if self.fn in fns:
            fns.remove(self.fn)
            _install(self.cls)


@contextlib.contextmanager
def override_vjp(op, fn):
    """Context manager form of :func:`register_vjp`."""
    handle = register_vjp(op, fn)
    try:
        yield handle
    finally:
        handle.remove()


def overridden() -> dict:
    """``{op name: override function}`` for the overrides active now."""
    return {cls.name: fns[-1] for cls, fns in _stack.items() if fns}
