"""Tensor methods a PyTorch user reaches for, composed of gradlab's ops.

``x.softmax(-1)``, ``x.unbind(0)``, ``x.view_as(y)``, ``x.new_zeros(3)``...
Each is a few lines over ops that already have their VJPs, so gradients flow
through them with no new backward code (and they need no registry entry of
their own: the ops they are made of are tested there). They are attached to
``Tensor`` only, not exported as functions.
"""
from __future__ import annotations

import functools

from .. import checks as _c, ops as O
from .._tensor import Tensor
from ..errors import ArgumentError, ArgumentTypeError, DTypeError, IndexOutOfRange
from ._util import check_tensor, multi_views, one_dim, sizes_arg
from .diagonals import trace
from .indexing import select
from .sorting import _argsort, _sort, _topk


def _softmax(self, dim, dtype=None):
    """``F.softmax(self, dim)``."""
    from .softmax_ops import softmax
    return softmax(self, dim, dtype=dtype)


def _log_softmax(self, dim, dtype=None):
    """``F.log_softmax(self, dim)``."""
    from .softmax_ops import log_softmax
    return log_softmax(self, dim, dtype=dtype)


def _unbind(self, dim=0):
    """A tuple of the slices along ``dim`` (each without that dim), as ``torch.unbind``."""
    if self.ndim == 0:
        raise IndexOutOfRange("unbind: the input is a 0-d tensor, which has no dim to unbind; "
                              "use x.item() for its value, or x.reshape(1) first")
    d = one_dim(dim, self.ndim, "unbind")
    return multi_views(tuple(select(self, d, i) for i in range(self.shape[d])), "unbind")


def _narrow(self, dim, start, length):
    """``length`` entries along ``dim`` from ``start`` (a view-like slice)."""
    d = one_dim(dim, self.ndim, "narrow")
    n = self.shape[d]
    start = _c.size(start, "narrow", "start", None)
    length = _c.size(length, "narrow", "length", None)
    if not -n <= start <= n:
        raise IndexOutOfRange(f"narrow: start {start} is out of range for dim {dim} of size {n} (valid: {-n} to {n})")
    if start < 0:
        start += n
    if not (0 <= start <= n and 0 <= int(length) and start + int(length) <= n):
        raise ArgumentError(f"narrow: start {start} with length {length} does not fit in dim {dim} of size {n} "
                            f"(input {tuple(self.shape)}); need 0 <= start and start + length <= {n}")
    return self[(slice(None),) * d + (slice(start, start + int(length)),)]


def _view_as(self, other):
    """``self.view(other.shape)``."""
    return self.view(tuple(check_tensor(other, "view_as", "other").shape))


def _reshape_as(self, other):
    """``self.reshape(other.shape)``."""
    return self.reshape(tuple(check_tensor(other, "reshape_as", "other").shape))


def _movedim(self, source, destination):
    """Move dim(s) ``source`` to position(s) ``destination``, keeping the others in order."""
    src = (source,) if not isinstance(source, (tuple, list)) else tuple(source)
    dst = (destination,) if not isinstance(destination, (tuple, list)) else tuple(destination)
    if len(src) != len(dst):
        raise ArgumentError(f"movedim: source {source} and destination {destination} must name as many dims")
    src = [one_dim(s, self.ndim, "movedim") for s in src]
    dst = [one_dim(s, self.ndim, "movedim") for s in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ArgumentError(f"movedim: repeated dims in source {source} or destination {destination}")
    order = [None] * self.ndim
    for s, t in zip(src, dst):
        order[t] = s
    rest = iter(d for d in range(self.ndim) if d not in src)
    return self.permute(*[o if o is not None else next(rest) for o in order])


def _unflatten(self, dim, sizes):
    """Split dim ``dim`` into ``sizes`` (one entry may be -1)."""
    d = one_dim(dim, self.ndim, "unflatten")
    return self.reshape(*self.shape[:d], *tuple(sizes), *self.shape[d + 1:])


def _new(fill):
    def new(self, *size, dtype=None, device=None, requires_grad=False):  # (size= is taken by size_keyword)
        from .. import factories
        shape = sizes_arg(size, f"new_{fill}")
        kw = dict(dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
        return factories.zeros(shape, **kw) if fill == "zeros" else factories.ones(shape, **kw)
    new.__name__ = f"new_{fill}"
    new.__doc__ = f"A {fill} tensor of the given size with this tensor's dtype and device (unless given)."
    return _size_keyword(new)


def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """A tensor of ``size`` filled with ``fill_value``, with this tensor's dtype and device (unless given)."""
    from .. import factories
    return factories.full(sizes_arg((size,), "new_full"), fill_value, dtype=dtype or self.dtype,
                          device=device or self.device, requires_grad=requires_grad)


def _new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    """``gradlab.tensor(data)`` with this tensor's dtype and device (unless given)."""
    from .. import factories
    return factories.tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                            requires_grad=requires_grad)


def _new_empty_sized(self, *size, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor of the given size with this tensor's dtype and device (unless given)."""
    from .. import factories
    return factories.empty(sizes_arg(size, "new_empty"), dtype=dtype or self.dtype, device=device or self.device,
                           requires_grad=requires_grad)


def _size_keyword(method):
    """``x.new_zeros(size=(2, 3))``: ``factories.take_size_keyword`` for a method (the tensor stays first)."""
    @functools.wraps(method)
    def with_self(self, *size, **kwargs):
        from ..factories import take_size_keyword
        return method(self, *take_size_keyword(method.__name__.lstrip("_").replace("_sized", ""), size, kwargs),
                      **kwargs)
    return with_self


_new_empty = _size_keyword(_new_empty_sized)


def _type(self, dtype=None):
    """``x.type(dtype)`` is ``x.to(dtype)``; ``x.type()`` names the dtype."""
    if dtype is None:
        from ..backend import dtypes as _dt
        return f"gradlab.{_dt.dtype_name(self.dtype)}"
    return self.to(dtype)


def _ravel(self):
    """The elements as a 1-D tensor (``reshape(-1)``)."""
    return self.reshape(-1)


def _remainder(self, other):
    """``self % other`` (Python's sign rule: the result has the divisor's sign)."""
    return O.remainder(self, other)


def _floor_divide(self, other):
    """``self // other``."""
    return O.floor_divide(self, other)


def _nonzero(self, *, as_tuple=False):
    """The indices of the nonzero entries: an (n, ndim) int64 tensor, or one 1-D tensor per dim."""
    from ..backend import xp_of
    x = check_tensor(self, "nonzero")
    xp = xp_of(x._data)
    if x.ndim == 0:  # a 0-d tensor: one row (if nonzero) with no columns
        n = int(bool(x._data))
        return (Tensor._make(xp.zeros(n, "int64")),) if as_tuple else Tensor._make(xp.zeros((n, 0), "int64"))
    idx = xp.nonzero(x._data)
    if as_tuple:
        return tuple(Tensor._make(i.astype("int64")) for i in idx)
    return Tensor._make(xp.stack(idx, axis=1).astype("int64") if idx else xp.zeros((0, 0), "int64"))


def _where(self, condition, other):
    """``x.where(condition, y)``: ``x`` where ``condition`` is true, else ``y`` (``gradlab.where(condition, x, y)``)."""
    return O.where(condition, self, other)


def _unfold(self, dimension, size, step):
    """``x.unfold(dim, size, step)``: every window of ``size`` entries along ``dim``, ``step`` apart, as a new
    last dim (``dim`` becomes the number of windows). Written with ``index_select``, so it is differentiable."""
    import numpy as np

    from ..backend import xp_of
    d = one_dim(dimension, max(self.ndim, 1), "unfold")
    x = self.reshape(1) if self.ndim == 0 else self
    n, size, step = x.shape[d], int(size), int(step)
    if size < 0 or size > n or step <= 0:
        raise ArgumentError(f"unfold: size {size} and step {step} do not fit dim {dimension} of size {n} "
                            f"(input {tuple(self.shape)}); need 0 <= size <= {n} and step > 0")
    windows = (n - size) // step + 1
    idx = (np.arange(windows)[:, None] * step + np.arange(size)[None, :]).reshape(-1)
    xp = xp_of(x._data)
    picked = O.index_select(x, d, Tensor._make(xp.asarray(idx, dtype=np.int64)))
    out = picked.reshape(*x.shape[:d], windows, size, *x.shape[d + 1:])
    out = O.movedim(out, d + 1, -1)
    return out.reshape(size) if self.ndim == 0 else out


def _masked_scatter(self, mask, source):
    """``x.masked_scatter(mask, source)``: ``x`` with the positions where ``mask`` is True filled, in order, with
    the first elements of ``source`` (differentiable in both ``x`` and ``source``)."""
    import numpy as np

    from ..backend import xp_of
    mask = check_tensor(mask, "masked_scatter", "mask")
    source = check_tensor(source, "masked_scatter", "source")
    _c.same_dtype("masked_scatter", input=self, source=source)
    if mask.dtype != np.bool_:
        raise DTypeError(f"masked_scatter: mask must be a bool tensor, got {mask.dtype}; compare first (x > 0)")
    m = O.broadcast_to(mask, self.shape)
    xp = xp_of(self._data)
    flat = m._data.reshape(-1)
    need = int(flat.sum())
    if source.numel() < need:
        raise ArgumentError(f"masked_scatter: the mask selects {need} positions but source has only "
                            f"{source.numel()} elements (shape {tuple(source.shape)}); source needs at least {need}")
    if need == 0:
        return O.clone(self)
    pos = xp.maximum(xp.cumsum(flat) - 1, 0).astype(np.int64)
    picked = O.index_select(O.flatten(source), 0, Tensor._make(pos)).reshape(self.shape)
    return O.where(m, picked.to(self.dtype), self)


def _masked_scatter_(self, mask, source):
    """In-place ``masked_scatter``."""
    return self.copy_(_masked_scatter(self, mask, source))


def _index_put(self, indices, values, accumulate=False):
    """``x.index_put(indices, values, accumulate=False)``: a copy of ``x`` with ``x[indices] = values`` (or
    ``+= values`` with repeats adding up when ``accumulate``)."""
    return _index_put_(O.clone(self), indices, values, accumulate)


def _index_put_(self, indices, values, accumulate=False):
    """``x.index_put_(indices, values, accumulate=False)``: ``x[indices] = values`` in place; with
    ``accumulate=True`` repeated indices add up (``x[i] += v`` would keep only one of them)."""
    import numpy as np

    from ..backend import xp_of
    if not isinstance(indices, (tuple, list)):
        raise ArgumentTypeError(f"index_put_: indices must be a tuple of index tensors, got {type(indices).__name__}; "
                                "write x.index_put_((rows, cols), values)")
    indices = tuple(check_tensor(i, "index_put_", "indices") for i in indices)
    if not isinstance(values, Tensor):
        values = Tensor._make(xp_of(self._data).asarray(values, dtype=self.dtype))
    if not accumulate:
        self[indices] = values
        return self
    xp = xp_of(self._data)
    if len(indices) == 1 and indices[0].dtype == np.bool_:
        indices = tuple(Tensor._make(i) for i in xp.nonzero(indices[0]._data))
    k = len(indices)
    arrays = xp.broadcast_arrays(*[i._data.astype(np.int64) for i in indices])
    lead = self.shape[:k]
    lin = xp.ravel_multi_index(tuple(a.reshape(-1) % n for a, n in zip(arrays, lead)), lead)
    rest = tuple(self.shape[k:])
    vals = O.broadcast_to(values.to(self.dtype), tuple(arrays[0].shape) + rest).reshape(-1, *rest)
    zeros = Tensor._make(xp.zeros((int(np.prod(lead)),) + rest, dtype=self.dtype))
    delta = O.index_add(zeros, 0, Tensor._make(lin.astype(np.int64)), vals)
    return self.add_(delta.reshape(self.shape))


METHODS = {
    "new_empty": _new_empty, "type": _type, "ravel": _ravel,
    "sort": _sort, "argsort": _argsort, "topk": _topk, "where": _where, "nelement": lambda self: self.numel(),
    "trace": trace,
    "softmax": _softmax, "log_softmax": _log_softmax, "select": select, "unbind": _unbind, "narrow": _narrow,
    "view_as": _view_as, "reshape_as": _reshape_as, "movedim": _movedim, "moveaxis": _movedim,
    "unflatten": _unflatten, "new_zeros": _new("zeros"), "new_ones": _new("ones"), "new_full": _new_full,
    "new_tensor": _new_tensor, "remainder": _remainder, "floor_divide": _floor_divide, "nonzero": _nonzero,
    "unfold": _unfold, "masked_scatter": _masked_scatter, "masked_scatter_": _masked_scatter_,
    "index_put": _index_put, "index_put_": _index_put_,
}


def _bitwise(name, logical, reflected=False):
    """``&``, ``|``, ``^``: logical on bool tensors, bitwise on integer ones (as in PyTorch)."""
    import numpy as np

    from ._util import arrays_for, operand
    ufunc = getattr(np, "bitwise_" + name)

    def op(self, other):
        a, b = (other, self) if reflected else (self, other)
        a, b = operand(a, name, "input"), operand(b, name, "other")
        x, y, dt = arrays_for(name, a, b)
        if dt.kind in "iu":
            return Tensor._make(ufunc(x, y))
        if dt.kind != "b":
            raise DTypeError(f"{name}: the bitwise operator needs bool or integer tensors, got dtype {dt}; "
                             f"compare first (e.g. (x > 0) & (y > 0))")
        return logical(a, b)
    op.__name__ = f"__{'r' if reflected else ''}{name}__"
    return op


def _invert(self):
    """``~x``: logical not on a bool tensor, bitwise not on an integer one (as in PyTorch)."""
    import numpy as np
    if self.dtype.kind == "b":
        return O.logical_not(self)
    if self.dtype.kind in "iu":
        return Tensor._make(np.invert(self._data))
    raise DTypeError(f"invert: ~ needs a bool or integer tensor, got dtype {self.dtype}; "
                     f"for a mask use ~(x > 0) or x.logical_not()")


def install_methods():
    """Attach the methods above to Tensor (those it does not have yet), and make ``&``, ``|``, ``^``
    and ``~`` bitwise on integer tensors."""
    for name, fn in METHODS.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, fn)
    for name, logical in (("and", O.logical_and), ("or", O.logical_or), ("xor", O.logical_xor)):
        setattr(Tensor, f"__{name}__", _bitwise(name, logical))
        setattr(Tensor, f"__r{name}__", _bitwise(name, logical, reflected=True))
    Tensor.__invert__ = _invert
    for name, ufunc in (("lshift", "left_shift"), ("rshift", "right_shift")):
        setattr(Tensor, f"__{name}__", _shift(name, ufunc))
        setattr(Tensor, f"__r{name}__", _shift(name, ufunc, reflected=True))
        setattr(Tensor, f"bitwise_{ufunc}", _shift(name, ufunc))


def _shift(name, ufunc_name, reflected=False):
    """``<<`` and ``>>`` on integer tensors (``x << 2`` is ``x * 4``), as in PyTorch."""
    import numpy as np

    from ._util import arrays_for, operand
    ufunc = getattr(np, ufunc_name)
    sym = "<<" if name == "lshift" else ">>"

    def op(self, other):
        a, b = (other, self) if reflected else (self, other)
        a, b = operand(a, name, "input"), operand(b, name, "other")
        x, y, dt = arrays_for(name, a, b)
        if dt.kind not in "iu":
            raise DTypeError(f"{sym}: shifts need integer tensors, got dtype {dt}; for a power of two multiply "
                             f"instead (x * 2 ** k)")
        return Tensor._make(ufunc(x, y).astype(dt))
    op.__name__ = f"__{'r' if reflected else ''}{name}__"
    return op
