"""``torch.autograd.functional``'s API: vjp, jvp, jacobian, hessian, hvp, vhp on gradlab tensors.

These take a function and its inputs *now* (``jacobian(f, x)``), where
``gradlab.func`` builds a new function (``jacrev(f)(x)``). They are thin
wrappers around :mod:`gradlab.func`. Results are plain values unless
``create_graph=True`` (then they stay differentiable w.r.t. inputs that
require grad).
"""
from __future__ import annotations

from .._tensor import Tensor
from ..errors import ArgumentError

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _func():
    from .. import func
    return func


def _inputs(inputs, create_graph):
    single = isinstance(inputs, Tensor)
    ins = (inputs,) if single else tuple(inputs)
    if not create_graph:
        ins = tuple(i.detach() if isinstance(i, Tensor) else i for i in ins)
    return single, ins


def _ones_for(t, what):
    if t.numel() != 1:
        raise ArgumentError(f"{what}: v can be omitted only when it would have one element; got shape "
                            f"{tuple(t.shape)}, so pass v explicitly")
    from ..factories import ones_like
    return ones_like(t)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``."""
    single, ins = _inputs(inputs, create_graph)
    out, fn = _func().vjp(func, *ins)
    if v is None:
        if isinstance(out, tuple):
            raise ArgumentError("vjp: the function returns several outputs; pass v (one per output)")
        v = _ones_for(out, "vjp")
    gs = fn(v) if not isinstance(out, tuple) else fn(tuple(v))
    return out, (gs[0] if single else gs)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)`` (forward mode)."""
    single, ins = _inputs(inputs, create_graph)
    if v is None:
        if len(ins) != 1:
            raise ArgumentError("jvp: pass v (one tangent per input)")
        v = (_ones_for(ins[0], "jvp"),)
    vs = (v,) if isinstance(v, Tensor) else tuple(v)
    return _func().jvp(func, ins, vs)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian, shaped ``output.shape + input.shape`` (tuples over inputs and/or outputs)."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ArgumentError(f"jacobian: strategy must be 'reverse-mode' or 'forward-mode', got {strategy!r}")
    single, ins = _inputs(inputs, create_graph)
    f = _func()
    transform = f.jacrev if strategy == "reverse-mode" else f.jacfwd
    return transform(func, argnums=0 if single else tuple(range(len(ins))))(*ins)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of scalar ``func``: ``H[i][j]`` for tuple inputs."""
    single, ins = _inputs(inputs, create_graph)
    return _func().hessian(func, argnums=0 if single else tuple(range(len(ins))))(*ins)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)``."""
    single, ins = _inputs(inputs, create_graph)
    if v is None:
        v = tuple(_ones_for(i, "hvp") for i in ins)
    vs = (v,) if isinstance(v, Tensor) else tuple(v)
    if single:  # one input tensor: H v is one tensor too, as in PyTorch
        return _func().hvp(func, ins[0], vs[0])
    return _func().hvp(func, ins, vs)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)``; equal to :func:`hvp` since a Hessian is symmetric."""
    return hvp(func, inputs, v, create_graph, strict)
