"""How ops become Tensor methods and operators: ``x.tanh()`` is ``gradlab.tanh(x)``, ``x * y`` is
``gradlab.mul(x, y)``. An op's registry entry calls ``bind_method`` (``register(..., method=True)``, through
``registry.export``) and ``gradlab.ops`` binds the operators at import; the tensor layer below knows no op names.
"""
from __future__ import annotations

from .. import _tensor
from .._tensor import Tensor, array_operand


def _method(op_name, doc=None):
    def method(self, *args, **kwargs):
        return getattr(_tensor._ops, op_name)(self, *args, **kwargs)
    method.__name__ = op_name
    method.__doc__ = doc or f"Same as ``gradlab.{op_name}(self, ...)``."
    return method


def bind_method(name, fn=None):
    """Give Tensor the method ``x.<name>(...)`` for the op ``gradlab.<name>`` (unless it has one already);
    called by an op's registry entry (``method=True``).

    The method looks its op up in ``gradlab.ops`` on every call, so a tool that
    swaps an op function for a while (``gradlab.compile``'s tracer wraps the ops
    that make no graph node) is seen by ``x.op()`` too. ``fn``, given for an op
    that always makes a node (which the tracer sees through ``Function.apply``),
    becomes the method itself: one Python call fewer on the hottest path
    (``y.tanh()`` is ``gradlab.tanh(y)``).
    """
    if not hasattr(Tensor, name):
        setattr(Tensor, name, fn if fn is not None else _method(name))


def bind_methods(names, direct=()):
    """:func:`bind_method` for each op name; those in ``direct`` bound to their function in ``gradlab.ops``."""
    for name in names:
        bind_method(name, getattr(_tensor._ops, name) if name in direct else None)


#: Operators bound straight to their op function when it always makes a node (see bind_method).
OPERATORS = {"__add__": "add", "__sub__": "sub", "__mul__": "mul", "__truediv__": "div", "__pow__": "pow",
             "__matmul__": "matmul", "__neg__": "neg"}


def _operator(fn, apply=None):
    """``x <op> other`` calling the op function ``fn`` held here (no lookup per call); ``other`` as
    ``Tensor.__add__`` takes it (a NumPy array as a tensor: ``_tensor.array_operand``).

    ``apply``: the op class's ``apply``, where ``fn(x, other)`` is that call alone for a tensor or a float
    ``other`` (``arithmetic.OPERATOR_APPLY``: + - *); the operator then skips the function. Measured on the
    200-op chain of ``benchmarks/bench_foundation.py`` (three ops in four are + - *): 7.28 -> 7.11 us/op
    forward and backward (load 13, best of 7 alternated rounds), about 2%."""
    if apply is not None:
        def operator(self, other):
            if type(other) is Tensor or type(other) is float:
                return apply(self, other)
            return fn(self, array_operand(other))
    else:
        def operator(self, other):
            if type(other) is not Tensor and type(other) is not float:
                other = array_operand(other)
            return fn(self, other)
    operator.__name__ = fn.__name__
    operator.__doc__ = fn.__doc__
    return operator


def bind_operators(direct, applies):
    """Make ``x + y`` call ``gradlab.add(x, y)`` straight from the op function held in a closure (same
    result as ``Tensor.__add__``, faster); unary ``-x`` is the op function itself. ``applies``: the op
    classes' ``apply`` an operator may call directly (``arithmetic.OPERATOR_APPLY``, see ``_operator``)."""
    for dunder, name in OPERATORS.items():
        if name in direct:
            fn = getattr(_tensor._ops, name)
            setattr(Tensor, dunder, fn if dunder == "__neg__" else _operator(fn, applies.get(name)))
