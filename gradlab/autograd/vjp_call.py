"""Calling one node's VJP, and checking what it hands back.

The engine (``engine.py``) decides *which* node runs *when*; this module runs
one: ``_call_vjp`` calls a node's tensor ``vjp`` (or a user Function's
``backward``), ``_call_vjp_arrays`` its array twin. Either way each gradient
must come back with its input's shape and dtype: a float gradient of another
dtype is cast back, one of the broadcast shape (a user backward that forgot to
reduce) is summed down as PyTorch does, and anything else is an error that
names the node and both shapes.
"""
from __future__ import annotations

import numpy as _np

from .. import _tensor as _tensor_mod
from .._tensor import Tensor
from ..backend import dtypes as _dt
from ..backend.device import xp_of
from ..errors import GradError, ShapeError, fmt_shape
from . import function as _fn
from .accumulate import _tensors

_ndarray = _np.ndarray


class BackwardShapeError(ShapeError, GradError):
    """A backward (or hook) returned a gradient of the wrong shape: a shape problem (``ShapeError``)
    found by autograd (``GradError``, a RuntimeError, as PyTorch raises here)."""


def _call_vjp(node, grads):
    if node._released:
        raise _fn._freed_error(node)
    if len(grads) > 1 and node._materialize and any(g is None for g in grads):  # (`None in grads` would call ==)
        like = next(g for g in grads if g is not None)._data
        grads = [g if g is not None else Tensor._make(_zeros(node.out_meta[i], like)) for i, g in enumerate(grads)]
    outs = node.vjp(*grads)
    if type(outs) is not tuple:
        outs = tuple(outs) if isinstance(outs, list) else (outs,)
    edges = node.next_functions
    if len(outs) != len(edges):
        raise GradError(f"{node.name}: backward returned {len(outs)} gradients for {len(edges)} inputs; "
                        "return one per input (None where there is none)")
    fixed = None
    metas = node.input_meta
    for i, g in enumerate(outs):
        if g is None or edges[i] is None:
            continue
        if type(g) is not Tensor and not isinstance(g, Tensor):
            raise GradError(f"{node.name}: backward returned a {type(g).__name__} for input {i}; return Tensors")
        shape, dtype = metas[i]
        data = g._data
        if data.shape != shape and _expands_to(shape, data.shape):
            # a gradient of the broadcast shape (a user backward that forgot to reduce): summed
            # down to the input's shape, as PyTorch does
            if fixed is None:
                fixed = list(outs)
            g = fixed[i] = _tensor_mod._ops.sum_to(g, shape)
            data = g._data
        if data.shape != shape:
            raise BackwardShapeError(
                f"{node.name}: backward gave a gradient of shape {fmt_shape(g.shape)} for input {i}, "
                f"whose shape is {fmt_shape(shape)}; a gradient must have its input's shape"
            )
        if data.dtype != dtype:
            if fixed is None:
                fixed = list(outs)
            fixed[i] = g.to(dtype) if _dt.is_floating(dtype) else None
    return tuple(fixed) if fixed is not None else outs


def _expands_to(shape, big):
    """Does ``shape`` broadcast to ``big`` (so a gradient of shape ``big`` can be summed down to it)?"""
    if len(shape) > len(big):
        return False
    return all(s == b or s == 1 for s, b in zip(shape[::-1], big[::-1]))


def _call_vjp_arrays(node, grads):
    """``_call_vjp`` with gradients as arrays: the op's ``vjp_arrays`` if it has one (and no
    override replaced its rule), else its tensor ``vjp`` on wrapped arrays."""
    fast = node.vjp_arrays
    if fast is None:
        outs = _call_vjp(node, _tensors(grads))
        return tuple(None if g is None else g._data for g in outs)
    if node._released:
        raise _fn._freed_error(node)
    if len(grads) > 1 and any(g is None for g in grads):
        like = next(g for g in grads if g is not None)
        grads = [g if g is not None else _zeros(node.out_meta[i], like) for i, g in enumerate(grads)]
    outs = fast(*grads)
    for g, meta in zip(outs, node.input_meta):  # the common case: all as expected
        if g is not None and (type(g) is not _ndarray or g.dtype is not meta[1] or g.shape != meta[0]):
            return _fixed(node, outs)
    return outs


def _fixed(node, outs):
    """Check a twin's gradients (see :func:`_fix`)."""
    return tuple(None if g is None else _fix(node, g, meta) for g, meta in zip(outs, node.input_meta))


def _fix(node, g, meta):
    """One gradient from a twin, made right: a 0-d NumPy scalar becomes an array, a float dtype is
    cast back to its input's (None for an integer input); a wrong shape is a bug in gradlab."""
    if isinstance(g, _np.generic):  # NumPy turns 0-d results into scalars; keep arrays
        g = _np.asarray(g)
    shape, dtype = meta
    if g.shape != shape:
        raise ShapeError(f"{node.name}: vjp_arrays gave a gradient of shape {fmt_shape(g.shape)} for an input "
                         f"of shape {fmt_shape(shape)}")
    if g.dtype != dtype:
        g = g.astype(dtype) if _dt.is_floating(dtype) else None
    return g


def _zeros(meta, like):
    """A zero gradient for an output no gradient reached, on the device of ``like``."""
    return xp_of(like).zeros(meta[0], dtype=meta[1])
