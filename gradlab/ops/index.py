"""Indexing: ``x[...]`` (slices, integer arrays, boolean masks) and ``gather``.

Reading ``y = x[idx]`` picks elements; its VJP puts the gradient back where the
elements came from, into a zero tensor of ``x``'s shape. When an index repeats
(``x[[0, 0, 1]]``) the gradients for the repeated element must be *added*, not
overwritten -- ``np.add.at`` does that, where ``out[idx] = g`` would silently
keep only the last one.
"""
from __future__ import annotations

import numpy as np

from ..autograd.function import Op
from ..backend import dtypes as _dt
from ..errors import (
    ArgumentError, ArgumentTypeError, DTypeError, IndexOutOfRange, IndexTypeError, ShapeError, fmt_shape,
)
from .._tensor import Tensor
from ..backend.arrays import scatter_add as _scatter_add
from ..backend.device import xp_of
from ._util import check_tensor, device_mismatch, one_dim, view_of
from .registry import Sample, register


def _check_steps(index, op="getitem"):
    """PyTorch refuses a zero or negative slice step (``x[::-1]``): tensors have no reversed views."""
    for i in (index if type(index) is tuple else (index,)):
        if type(i) is slice and i.step is not None and i.step <= 0:
            raise ArgumentError(f"{op}: step must be greater than zero, got the slice step {i.step}; "
                                "to reverse a dim use x.flip(dim)")


def _sequence_as_tuple(index):
    """PyTorch's legacy rule: a list that holds a sequence, a tensor, a slice, None or ``...`` indexes like a
    tuple (``x[[[0, 1], [1, 0]]]`` is ``x[[0, 1], [1, 0]]``), with a deprecation warning."""
    if type(index) is not list or len(index) >= 32:
        return index
    if any(isinstance(i, (list, tuple, Tensor, slice, np.ndarray)) or i is None or i is Ellipsis for i in index):
        import warnings
        warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated; use "
                      "x[tuple(seq)] instead of x[seq] (a later PyTorch will read it as x[torch.tensor(seq)])",
                      UserWarning, stacklevel=4)
        return tuple(index)
    return index


def _norm_index(index, shape, op="getitem"):
    """Turn tensors and lists inside an index into arrays; check float indices and slice steps."""
    index = _sequence_as_tuple(index)
    _check_steps(index, op)
    def conv(i):
        if isinstance(i, Tensor):
            i = i.data
        elif isinstance(i, list):
            i = np.asarray(i)
            if i.size == 0:
                i = i.astype(np.int64)
        if isinstance(i, np.ndarray) and i.dtype.kind not in "biu":
            raise IndexTypeError(f"{op}: index arrays must hold integers or bools, got dtype {i.dtype}; "
                            "convert with .long() (or build a boolean mask)")
        if isinstance(i, float):
            raise ArgumentTypeError(f"{op}: {i!r} is a float; indices must be integers")
        return i
    if isinstance(index, tuple):
        return tuple(conv(i) for i in index)
    return conv(index)


def _plain_basic(index) -> bool:
    """True for an index made only of plain slices, ints, None and ``...`` (exact types): the common
    ``x[:, 3:5]`` case, which needs none of ``_norm_index``'s conversions and is basic (a view)."""
    t = type(index)
    if t is tuple:
        for i in index:
            ti = type(i)
            if ti is not slice and ti is not int and i is not None and i is not Ellipsis:
                return False
        return True
    return t is slice or t is int


def _is_basic(index) -> bool:
    """Slices, ints, None and ``...`` only: no element can be picked twice."""
    if _plain_basic(index):
        return True
    parts = index if isinstance(index, tuple) else (index,)
    return all(isinstance(i, (int, np.integer, slice)) or i is None or i is Ellipsis
               for i in parts) and not any(isinstance(i, (bool, np.bool_)) for i in parts)


class Index(Op):
    name = "index"
    formula = "dX = zeros(X.shape); dX[idx] += dY   (repeated indices accumulate)"

    @staticmethod
    def forward(ctx, x, index):
        ctx.in_shape, ctx.index = x.shape, index
        return x.data[index]

    def vjp(self, g):
        return IndexAddZeros.apply(g, self.index, self.in_shape), None

    def vjp_arrays(self, g):
        return index_add_zeros(g, self.index, self.in_shape), None

    def jvp(self, t, _):
        return Index.apply(t, self.index)


class IndexAddZeros(Op):
    """``zeros(shape)`` with ``g`` added at ``index``: the VJP of indexing."""

    name = "index_add_zeros"
    formula = "dG = dY[idx]"

    @staticmethod
    def forward(ctx, g, index, shape):
        ctx.index = index
        return index_add_zeros(g.data, index, shape)

    def vjp(self, gg):
        return Index.apply(gg, self.index), None, None

    def vjp_arrays(self, gg):
        return gg[self.index], None, None

    def jvp(self, t, *_):
        return IndexAddZeros.apply(t, self.index, self.out.shape)


def index_add_zeros(g, index, shape):
    """The array ``zeros(shape)`` with ``g`` added at ``index`` (on ``g``'s device, in its dtype)."""
    out = xp_of(g).zeros(shape, dtype=g.dtype)
    if _is_basic(index):  # no element is picked twice: a plain assignment, much faster than add.at
        out[index] = g
    else:
        _scatter_add(out, index, g)
    return out


def _getitem_samples(src):
    x = src.tensor((4, 3, 2))
    yield Sample((x, (slice(1, None), 0)), desc="basic slicing")
    yield Sample((src.tensor((4, 3)), (slice(None, None, 2),)), desc="step")
    yield Sample((src.tensor((5, 2)), [0, 2, 0, 4]), desc="repeated integer indices")
    yield Sample((src.tensor((3, 4)), (Ellipsis, [1, 1, -1])), desc="ellipsis + ints")
    mask_shape = src.shape(1, 2, 1, 4)
    mask = Tensor._make(src.rng.random(mask_shape) > 0.4)
    yield Sample((src.tensor(mask_shape), mask), desc="boolean mask")
    yield Sample((src.tensor((3, 3)), (None, 1)), desc="None adds a dim")


def _ints_first(idx):
    """Split an index mixing integers with index arrays into (integers, the rest), or None.

    PyTorch applies integer indices first, as basic indexing, and then the index arrays; NumPy
    counts the integers as index arrays too, which moves the picked dims to the front whenever
    they are separated by a slice or None (``x[0, :, [1, 2]]`` would come out transposed).
    """
    if not isinstance(idx, tuple):
        return None
    def is_int(i):
        return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))
    def is_array(i):
        return hasattr(i, "shape") and hasattr(i, "dtype") and len(i.shape) > 0
    if not (any(is_int(i) for i in idx) and any(is_array(i) for i in idx)):
        return None
    first, rest = [], []
    for i in idx:
        if is_int(i):
            first.append(i)
        elif i is None:
            first.append(None)
            rest.append(slice(None))
        elif i is Ellipsis:
            first.append(Ellipsis)
            rest.append(Ellipsis)
        else:  # a slice or an index array (a bool mask covers as many dims as it has)
            first.extend([slice(None)] * (len(i.shape) if is_array(i) and i.dtype.kind == "b" else 1))
            rest.append(i)
    return tuple(first), tuple(rest)


@register(op=Index, samples=_getitem_samples, torch=lambda torch, x, idx: x[idx])
def getitem(input, index):
    """``input[index]``: basic slicing (a view), integer-array and boolean indexing (copies)."""
    x = input if type(input) is Tensor else check_tensor(input, "getitem")
    plain = _plain_basic(index)  # slices and ints only (the usual case): nothing to convert or reorder
    if plain:
        _check_steps(index)
    idx = index if plain else _norm_index(index, x.shape)
    split = None if plain else _ints_first(idx)
    if split is not None:  # x[0, :, [1, 2]]: PyTorch applies the integers first
        return getitem(getitem(x, split[0]), split[1])
    try:
        out = Index.apply(x, idx)
    except IndexError as e:
        hint = ("a boolean mask must have the shape of the dims it indexes (x[mask] with mask.shape == "
                "x.shape[:mask.ndim])" if "boolean" in str(e) else "a dim of size n takes indices -n to n-1")
        raise IndexOutOfRange(f"getitem: {e} (indexing a tensor of shape {fmt_shape(x.shape)}); {hint}") from None
    return view_of(out, x) if plain or _is_basic(idx) else out


def _along(index: np.ndarray, dim: int):
    """The full advanced index that picks ``x[..., index[i,j,k], ...]`` along ``dim``."""
    xp, n = xp_of(index), len(index.shape)  # np.indices(shape, sparse=True), on index's device
    grid = [xp.arange(s).reshape((1,) * i + (s,) + (1,) * (n - i - 1)) for i, s in enumerate(index.shape)]
    grid[dim] = index
    return tuple(grid)


def _check_gather(op, x, dim, index):
    index = check_tensor(index, op, "index")
    if type(index.data) is not type(x.data) and index.device != x.device:  # same device (PyTorch)
        raise device_mismatch(op, x, index, ("input", "index"))
    if _dt.category(index.dtype) != 1:
        raise DTypeError(f"{op}: index must be an integer tensor, got dtype {_dt.dtype_name(index.dtype)} "
                         f"(index shape {fmt_shape(index.shape)}, input shape {fmt_shape(x.shape)}); "
                         "convert it with index.long()")
    d = one_dim(dim, x.ndim, op)
    if index.ndim != x.ndim:
        raise ShapeError(f"{op}: index has {index.ndim} dims {fmt_shape(index.shape)} but input has {x.ndim} "
                         f"{fmt_shape(x.shape)}; they must have the same number of dims")
    for i, (a, b) in enumerate(zip(index.shape, x.shape)):
        if i != d and a > b:
            raise ShapeError(f"{op}: index {fmt_shape(index.shape)} is larger than input {fmt_shape(x.shape)} "
                             f"at dim {i}; outside dim {dim} index sizes must be <= the input's")
    if index.data.size and (index.data.max() >= x.shape[d] or index.data.min() < 0):
        # as in PyTorch, negative indices are not counted from the end here (NumPy would wrap them)
        raise IndexOutOfRange(f"{op}: index holds values outside [0, {x.shape[d]}) for dim {dim} of size "
                              f"{x.shape[d]} (found {int(index.data.min())} to {int(index.data.max())})")
    return d, index


def _gather_samples(src):
    shape = src.shape(1, 3, 1, 4)
    d = src.dim(len(shape))
    ishape = tuple(src.integers(1, 4) if i == d % len(shape) else src.integers(1, s)
                   for i, s in enumerate(shape))
    yield Sample((src.tensor(shape), d, src.index_tensor(ishape, shape[d])), desc="repeats likely")


@register(samples=_gather_samples, formula="dX = zeros(X.shape).scatter_add(dim, index, dY)",
          torch=lambda torch, x, d, idx: torch.gather(x, d, idx))
def gather(input, dim, index):
    """``out[i][j] = input[index[i][j]][j]`` for ``dim=0`` (and so on): pick along ``dim``."""
    x = check_tensor(input, "gather")
    d, index = _check_gather("gather", x, dim, index)
    return Index.apply(x, _along(index.data, d))
