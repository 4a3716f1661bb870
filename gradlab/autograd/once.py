"""``@once_differentiable``: a user Function whose backward is not itself differentiable.

Most backward formulas written with gradlab ops can be differentiated again
(higher-order gradients for free). One computed on raw arrays, or with
``detach()``, cannot: a second derivative through it would silently come out
as zero. Marking ``backward`` with this decorator makes that case raise a
clear error instead (as in PyTorch).
"""
from __future__ import annotations

import functools

from .._tensor import Tensor
from ..errors import GradError
from .function import Function, _seq
from .grad_mode import state as _grad_state

__all__ = ["once_differentiable"]


def once_differentiable(backward):
    """Decorator for a user Function's ``backward`` that is not itself differentiable.

    The backward then runs without recording, and a second derivative through it
    raises a clear error instead of silently coming out as zero.
    """
    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        create = _grad_state.enabled
        _grad_state.enabled = False
        try:
            res = backward(ctx, *grads)
        finally:
            _grad_state.enabled = create
        if not create or not any(e is not None for e in ctx.next_functions):
            return res
        outs = res if isinstance(res, tuple) else (res,)
        outs = tuple(_once_node(ctx, g) if isinstance(g, Tensor) else g for g in outs)
        return outs if isinstance(res, tuple) else outs[0]
    return wrapper


def _once_node(ctx, g):
    """``g`` as the output of a node that depends on ``ctx``'s inputs and refuses to differentiate."""
    node = object.__new__(_OnceDifferentiable)
    node.fn_name = ctx.name
    node.next_functions = tuple(ctx.next_functions)
    node.input_meta = tuple(ctx.input_meta)
    node.out_meta = ((g.shape, g.dtype),)
    node.seq = next(_seq)
    return Tensor._make(g._data, True, node, 0)


class _OnceDifferentiable(Function):
    """A node whose backward refuses: marks the result of a ``@once_differentiable`` backward."""

    name = "once_differentiable"
    formula = "(no second derivative)"

    def vjp(self, *grads):
        raise GradError(f"{self.fn_name}: its backward is marked @once_differentiable, so it cannot be "
                        "differentiated again (no second derivative through it); write the backward with "
                        "differentiable gradlab ops instead")
