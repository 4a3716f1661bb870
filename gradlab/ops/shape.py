"""Shape ops: reshape/view, transpose/permute, (un)squeeze, expand, cat, stack.

These move no numbers, so their VJPs only move the gradient back into the
input's layout: reshape's is a reshape, permute's is the inverse permutation,
expand's is a sum over the expanded dims, cat's is a split.
Most return *views* that share memory (and the version counter) with their
input; ``view`` insists on it and says what to do when it cannot.
"""
from __future__ import annotations

import math

import numpy as np

from .. import ops as O
from ..autograd.function import Op
from ..backend import dtypes as _dt
from ..backend.device import xp_of
from ..errors import ArgumentError, ArgumentTypeError, ShapeError, fmt_shape
from .._tensor import Tensor
from ._util import check_tensor, device_mismatch, norm_dim, one_dim, sizes_arg, view_of
from .reduce import sum_to_array
from .registry import Sample, register


def _infer_shape(shape, numel, op, in_shape):
    shape = list(shape)
    if shape.count(-1) > 1:
        raise ShapeError(f"{op}: only one dimension can be -1, got {tuple(shape)}")
    if -1 in shape:
        known = int(math.prod(s for s in shape if s != -1))
        if known == 0 or numel % known:
            raise ShapeError(f"{op}: cannot reshape {fmt_shape(in_shape)} ({numel} elements) into "
                             f"{fmt_shape(shape)}: the -1 cannot be solved")
        shape[shape.index(-1)] = numel // known
    if any(s < 0 for s in shape) or int(np.prod(shape)) != numel:
        raise ShapeError(f"{op}: cannot reshape {fmt_shape(in_shape)} ({numel} elements) into {fmt_shape(shape)} "
                         f"({int(np.prod(shape))} elements); the number of elements must stay the same")
    return tuple(shape)


class Reshape(Op):
    name = "reshape"
    formula = "dX = reshape(dY, X.shape)"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        return x.data.reshape(shape)

    def vjp(self, g):
        return O.reshape(g, self.in_shape), None

    def vjp_arrays(self, g):
        return g.reshape(self.in_shape), None

    def jvp(self, t, _):
        return O.reshape(t, self.out.shape)


def _reshape_samples(src):
    shape = src.shape(1, 3, 1, 4)
    n = int(np.prod(shape))
    yield Sample((src.tensor(shape), (n,)), desc="flatten")
    yield Sample((src.tensor(shape), (-1, 1)), desc="-1")
    yield Sample((src.tensor((2, 3, 4)), (4, 6)))
    yield Sample((src.tensor((0, 3)), (3, 0)), desc="empty")


@register(op=Reshape, samples=_reshape_samples, torch=lambda torch, x, shape: x.reshape(shape))
def reshape(input, *shape):
    """The same elements in a new shape (one size may be -1). A view when possible."""
    x = check_tensor(input, "reshape")
    shape = _infer_shape(sizes_arg(shape, "reshape"), x.data.size, "reshape", x.shape)
    if shape == x.shape:
        return x
    return view_of(Reshape.apply(x, shape), x)


def view(input, *shape):
    """Like ``reshape``, but never copies: a non-contiguous tensor raises, as in PyTorch."""
    x = check_tensor(input, "view")
    shape = _infer_shape(sizes_arg(shape, "view"), x.data.size, "view", x.shape)
    probe = x.data.view()
    try:
        probe.shape = shape  # NumPy refuses exactly when a copy would be needed
    except AttributeError:
        raise ShapeError(
            f"view: cannot view {fmt_shape(x.shape)} with strides {x.strides} as {fmt_shape(shape)} without "
            "copying (the tensor is not contiguous, e.g. after a transpose); use .reshape() or .contiguous().view()"
        ) from None
    if shape == x.shape:
        return x
    return view_of(Reshape.apply(x, shape), x)


class Permute(Op):
    name = "permute"
    formula = "dX = permute(dY, inverse(dims))"

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return x.data.transpose(dims)

    @property
    def inverse(self):
        """The permutation that undoes ``dims`` (``inverse[dims[i]] == i``)."""
        inv = [0] * len(self.dims)
        for i, d in enumerate(self.dims):
            inv[d] = i
        return tuple(inv)

    def vjp(self, g):
        return O.permute(g, self.inverse), None

    def vjp_arrays(self, g):
        return g.transpose(self.inverse), None

    def jvp(self, t, _):
        return O.permute(t, self.dims)


def _permute_samples(src):
    shape = src.shape(1, 4, 1, 4)
    perm = list(src.rng.permutation(len(shape)))
    yield Sample((src.tensor(shape), tuple(int(p) - len(shape) if src.boolean() else int(p) for p in perm)))


@register(op=Permute, samples=_permute_samples, torch=lambda torch, x, dims: x.permute(dims))
def permute(input, *dims):
    """Reorder the dimensions (a view: only the strides change)."""
    x = check_tensor(input, "permute")
    dims = sizes_arg(dims, "permute")
    if len(dims) != x.ndim:
        raise ShapeError(f"permute: got {len(dims)} dims {dims} for a tensor with {x.ndim} dimensions {fmt_shape(x.shape)}")
    norm = tuple(one_dim(d, x.ndim, "permute") for d in dims)
    if len(set(norm)) != len(norm):
        raise ArgumentError(f"permute: dims {dims} repeat a dimension; each must appear once")
    if norm == tuple(range(x.ndim)):
        return x
    return view_of(Permute.apply(x, norm), x)


def _transpose_samples(src):
    shape = src.shape(2, 4, 1, 4)
    yield Sample((src.tensor(shape), src.dim(len(shape)), src.dim(len(shape))))


@register(samples=_transpose_samples, formula="dX = transpose(dY, dim0, dim1)",
          torch=lambda torch, x, a, b: x.transpose(a, b))
def transpose(input, dim0, dim1):
    """Swap two dimensions (a view)."""
    x = check_tensor(input, "transpose")
    if x.ndim == 0:
        return x
    a, b = one_dim(dim0, x.ndim, "transpose"), one_dim(dim1, x.ndim, "transpose")
    if a == b:
        return x
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return view_of(Permute.apply(x, tuple(perm)), x)  # (perm is valid by construction: no need to re-check)


def swapaxes(input, axis0, axis1):
    return transpose(input, axis0, axis1)


def t(input):
    """Transpose a matrix (0-d and 1-d tensors are returned as they are)."""
    x = check_tensor(input, "t")
    if x.ndim > 2:
        raise ShapeError(f"t: expects a tensor with at most 2 dims, got {fmt_shape(x.shape)}; use transpose(x, a, b) or .mT")
    return transpose(x, 0, 1) if x.ndim == 2 else x


def _unsqueeze_samples(src):
    shape = src.shape(0, 3, 1, 4)
    d = src.integers(-(len(shape) + 1), len(shape))
    yield Sample((src.tensor(shape), d))


@register(samples=_unsqueeze_samples, formula="dX = reshape(dY, X.shape)", torch=lambda torch, x, d: x.unsqueeze(d))
def unsqueeze(input, dim):
    """Insert a dimension of size 1 at ``dim``."""
    x = check_tensor(input, "unsqueeze")
    d = one_dim(dim, x.ndim + 1, "unsqueeze")
    return reshape(x, x.shape[:d] + (1,) + x.shape[d:])


def _squeeze_samples(src):
    yield Sample((src.tensor((1, 3, 1, 2)),), desc="all size-1 dims")
    yield Sample((src.tensor((1, 3, 1, 2)), -2), desc="one dim")
    yield Sample((src.tensor((1, 3, 1, 2)), 1), desc="dim of size 3 stays")


@register(samples=_squeeze_samples, formula="dX = reshape(dY, X.shape)",
          torch=lambda torch, x, dim=None: x.squeeze() if dim is None else x.squeeze(dim))
def squeeze(input, dim=None, *, axis=None):
    """Remove dimensions of size 1 (all of them, or those in ``dim`` that have size 1)."""
    x = check_tensor(input, "squeeze")
    axes = norm_dim(dim if axis is None else axis, x.ndim, "squeeze")
    axes = range(x.ndim) if axes is None else axes
    shape = tuple(s for i, s in enumerate(x.shape) if not (i in axes and s == 1))
    return reshape(x, shape)


def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims ``start_dim..end_dim`` into one."""
    x = check_tensor(input, "flatten")
    if x.ndim == 0:
        return reshape(x, (1,))
    a, b = one_dim(start_dim, x.ndim, "flatten"), one_dim(end_dim, x.ndim, "flatten")
    if a > b:
        raise ArgumentError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    return reshape(x, x.shape[:a] + (int(np.prod(x.shape[a:b + 1])),) + x.shape[b + 1:])


class BroadcastTo(Op):
    name = "broadcast_to"
    formula = "dX = sum_to(dY, X.shape)   (sum over the expanded dims)"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        return np.broadcast_to(x.data, shape)

    def vjp(self, g):
        return O.sum_to(g, self.in_shape), None

    def vjp_arrays(self, g):
        return sum_to_array(g, self.in_shape), None

    def jvp(self, t, _):
        return O.broadcast_to(t, self.out.shape)


def _broadcast_samples(src):
    a, b = src.broadcast_pair()
    full = np.broadcast_shapes(a, b)
    yield Sample((src.tensor(a), full))
    yield Sample((src.tensor((3, 1)), (2, 3, 4)), desc="new leading dim")


@register(op=BroadcastTo, samples=_broadcast_samples, torch=lambda torch, x, shape: x.broadcast_to(shape))
def broadcast_to(input, shape):
    """A read-only view of ``input`` repeated (without copying) to ``shape``."""
    x = check_tensor(input, "broadcast_to")
    shape = tuple(int(s) for s in shape)
    if shape == x.shape:
        return x
    try:
        if np.broadcast_shapes(x.shape, shape) != shape:
            raise ValueError
    except ValueError:
        raise ShapeError(f"broadcast_to: cannot broadcast {fmt_shape(x.shape)} to {fmt_shape(shape)}: "
                         "each dimension must match or be 1 in the input (new dims go on the left)") from None
    return view_of(BroadcastTo.apply(x, shape), x)


def expand(input, *sizes):
    """Broadcast to ``sizes``; -1 keeps a dimension's size (PyTorch's ``expand``)."""
    x = check_tensor(input, "expand")
    sizes = sizes_arg(sizes, "expand")
    lead = len(sizes) - x.ndim
    if lead < 0:
        raise ShapeError(f"expand: {len(sizes)} sizes given for a tensor with {x.ndim} dims {fmt_shape(x.shape)}")
    shape = tuple(x.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes))
    return broadcast_to(x, shape)


def expand_as(input, other):
    """``input`` broadcast to ``other``'s shape (a view)."""
    return broadcast_to(input, check_tensor(other, "expand_as", "other").shape)


class Contiguous(Op):
    name = "contiguous"
    formula = "dX = dY"

    @staticmethod
    def forward(ctx, x):
        return xp_of(x.data).ascontiguousarray(x.data)  # on x's device

    def vjp(self, g):
        return (g,)

    def vjp_arrays(self, g):
        return (g,)

    def jvp(self, t):
        return t


def contiguous(input):
    """A C-contiguous copy (the same tensor if it already is contiguous)."""
    x = check_tensor(input, "contiguous")
    return x if x.data.flags.c_contiguous else Contiguous.apply(x)


class Cat(Op):
    name = "cat"
    formula = "dX_i = dY[..., offset_i : offset_i + size_i, ...]   (split along dim)"

    @staticmethod
    def forward(ctx, dim, *xs):
        ctx.dim = dim
        ctx.sizes = [x.shape[dim] for x in xs]
        kind = type(xs[0].data) if xs else None
        for i, x in enumerate(xs):
            if type(x.data) is not kind:  # nothing is copied between devices implicitly
                raise device_mismatch("cat", xs[0], x, ("tensors[0]", f"tensors[{i}]"))
        dt = _dt.result_type(*xs)
        return np.concatenate([x.data.astype(dt, copy=False) for x in xs], axis=dim)

    def vjp(self, g):
        grads, start = [None], 0
        for s in self.sizes:
            idx = (slice(None),) * self.dim + (slice(start, start + s),)
            grads.append(g[idx])
            start += s
        return tuple(grads)

    vjp_arrays = vjp  # slicing an array is the same code as slicing a Tensor

    def jvp(self, _, *ts):
        parts = [t if t is not None else O.zeros_like(x) for t, x in zip(ts, self.args[1:])]
        return O.cat(parts, self.dim)


def _seq_arg(tensors, op):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise ArgumentTypeError(f"{op}: expects a list or tuple of tensors, got {type(tensors).__name__}")
    if not tensors:
        raise ArgumentError(f"{op}: expects a non-empty list of tensors")
    return [check_tensor(t, op, f"tensors[{i}]") for i, t in enumerate(tensors)]


def _cat_samples(src):
    shape = list(src.shape(1, 3, 1, 3))
    d = src.dim(len(shape))
    parts = []
    for _ in range(src.integers(1, 3)):
        s = list(shape)
        s[d] = src.integers(0, 3)
        parts.append(src.tensor(tuple(s)))
    yield Sample((parts, d))


@register(op=Cat, samples=_cat_samples, torch=lambda torch, xs, dim=0: torch.cat(xs, dim))
def cat(tensors, dim=0, *, axis=None):
    """Join tensors along an existing dimension; all other sizes must match (``axis=`` is ``dim=``)."""
    dim = dim if axis is None else axis
    xs = _seq_arg(tensors, "cat")
    nd = xs[0].ndim
    if nd == 0:
        raise ShapeError("cat: 0-d tensors cannot be concatenated; use stack, or unsqueeze them first")
    d = one_dim(dim, nd, "cat")
    for i, x in enumerate(xs):
        if x.ndim != nd or any(a != b for j, (a, b) in enumerate(zip(x.shape, xs[0].shape)) if j != d):
            raise ShapeError(
                f"cat: tensors[{i}] has shape {fmt_shape(x.shape)} but tensors[0] has {fmt_shape(xs[0].shape)}; "
                f"all sizes except along dim {dim} must match")
    return Cat.apply(d, *xs)


concat = concatenate = cat


def _stack_samples(src):
    shape = src.shape(0, 3, 1, 3)
    n = src.integers(1, 3)
    yield Sample(([src.tensor(shape) for _ in range(n)], src.integers(-(len(shape) + 1), len(shape))))


@register(samples=_stack_samples, formula="dX_i = dY.select(dim, i)", torch=lambda torch, xs, dim=0: torch.stack(xs, dim))
def stack(tensors, dim=0, *, axis=None):
    """Join same-shaped tensors along a new dimension ``dim`` (``axis=`` is ``dim=``)."""
    dim = dim if axis is None else axis
    xs = _seq_arg(tensors, "stack")
    for i, x in enumerate(xs):
        if x.shape != xs[0].shape:
            raise ShapeError(f"stack: tensors[{i}] has shape {fmt_shape(x.shape)} but tensors[0] has "
                             f"{fmt_shape(xs[0].shape)}; stack needs equal shapes")
    d = one_dim(dim, xs[0].ndim + 1, "stack")
    return cat([unsqueeze(x, d) for x in xs], d)
