"""Shape ops: they move numbers without computing anything.

Holds: ``reshape``/``view``, ``permute``/``transpose``/``swapaxes``/``t``, ``squeeze``/``unsqueeze``,
``flatten``/``unflatten``/``ravel``, ``expand``/``expand_as``/``broadcast_to``, ``contiguous``,
``movedim``/``moveaxis``, ``narrow``, ``atleast_1d/2d/3d``; ``repeat``/``tile``/``repeat_interleave``,
``flip``/``fliplr``/``flipud``/``rot90``, ``roll``, ``as_strided`` and ``meshgrid``; ``Alias``, the identity
node forward mode's ``make_dual`` records (``gradlab/autograd/forward_ad.py``).

Each VJP moves the gradient back into the input's layout: reshape's is a reshape, permute's is the
inverse permutation, expand's and repeat's are sums, flip's is a flip, roll's a roll the other way.
Most return *views* that share memory (and the version counter) with their input; ``view``
insists on it and says what to do when it cannot.
"""
from __future__ import annotations

import math

import numpy as np

from .. import checks as _c, ops as O
from .._tensor import Tensor
from ..autograd.function import Op
from ..backend.arrays import as_strided as _as_strided
from ..backend.device import xp_of
from ..errors import ArgumentError, ArgumentTypeError, IndexOutOfRange, ShapeError, fmt_shape
from ._util import OneRule, apply_in, check_tensor, method_spelling, norm_dim, one_dim, sizes_arg, view_of
from .indexing import Index, IndexAddZeros
from .reduce import sum_to_in
from .registry import Sample, export, register

narrow = method_spelling("narrow", "``length`` entries along ``dim`` from ``start`` (``x.narrow(...)``).")
movedim = method_spelling("movedim", "Move dim(s) ``source`` to ``destination`` (``x.movedim(...)``).")
unflatten = method_spelling("unflatten", "Split dim ``dim`` into ``sizes`` (``x.unflatten(dim, sizes)``).")
ravel = method_spelling("ravel", "The elements as a 1-D tensor (``x.ravel()``).")


register('narrow', samples=lambda src: [Sample((src.tensor((3, 4)), 1, 1, 2))],
         formula="dX = dY in the narrowed slice, 0 elsewhere", torch=lambda torch, x, *a: torch.narrow(x, *a))(narrow)


register('movedim', samples=lambda src: [Sample((src.tensor((2, 3, 4)), 0, -1)), Sample((src.tensor((2, 3, 4)), (0, 1), (2, 0)))],
         formula="dX = movedim(dY) back", torch=lambda torch, x, s, d: torch.movedim(x, s, d))(movedim)
moveaxis = export("moveaxis")(movedim)


register('unflatten', samples=lambda src: [Sample((src.tensor((3, 4)), 1, (2, 2)))],
         formula="dX = reshape(dY, X.shape)", torch=lambda torch, x, d, s: torch.unflatten(x, d, s))(unflatten)


register('ravel', samples=lambda src: [Sample((src.tensor((2, 3)),))],
         formula="dX = reshape(dY, X.shape)", torch=lambda torch, x: torch.ravel(x))(ravel)


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
        return x._data.reshape(shape)

    def vjp(self, g):  # ``.reshape`` is the same call on a Tensor and on an array: one rule serves both
        return g.reshape(self.in_shape), None

    vjp_arrays = vjp

    def jvp(self, t, _):
        return O.reshape(t, self.out.shape)


def _reshape_samples(src):
    shape = src.shape(1, 3, 1, 4)
    n = int(np.prod(shape))
    yield Sample((src.tensor(shape), (n,)), desc="flatten")
    yield Sample((src.tensor(shape), (-1, 1)), desc="-1")
    yield Sample((src.tensor((2, 3, 4)), (4, 6)))
    yield Sample((src.tensor((0, 3)), (3, 0)), desc="empty")


def _view_dtype(x, dtype):
    dt = np.dtype(dtype)
    if dt.itemsize != x.dtype.itemsize and x.ndim and x.strides[-1] != 1:
        raise ShapeError(f"view: viewing {x.dtype} as {dt} changes the element size, which needs the last dim "
                         "to be contiguous; call .contiguous() first")
    try:
        out = x._data.view(dt)
    except ValueError as e:
        raise ShapeError(f"view: cannot view a {fmt_shape(x.shape)} {x.dtype} tensor as {dt}: {e}") from None
    return view_of(Tensor._make(out), x)


@register(op=Reshape, method=True, samples=_reshape_samples, torch=lambda torch, x, shape: torch.reshape(x, shape))
def reshape(input, *shape):
    """The same elements in a new shape (one size may be -1). A view when possible."""
    x = check_tensor(input, "reshape")
    shape = _infer_shape(sizes_arg(shape, "reshape"), x._data.size, "reshape", x.shape)
    return view_of(Reshape.apply(x, shape), x)  # (a new view even for the same shape, as PyTorch's)


@export(method=True)
def view(input, *shape):
    """Like ``reshape``, but never copies: a non-contiguous tensor raises, as in PyTorch. ``x.view(dtype)``
    reinterprets the bytes as another dtype (no gradient flows through that)."""
    x = check_tensor(input, "view")
    if len(shape) == 1 and isinstance(shape[0], (np.dtype, type)) and not isinstance(shape[0], (int, tuple, list)):
        return _view_dtype(x, shape[0])
    shape = _infer_shape(sizes_arg(shape, "view"), x._data.size, "view", x.shape)
    probe = x._data.view()
    try:
        probe.shape = shape  # NumPy refuses exactly when a copy would be needed
    except AttributeError:
        raise ShapeError(
            f"view: cannot view {fmt_shape(x.shape)} with strides {x.strides} as {fmt_shape(shape)} without "
            "copying (the tensor is not contiguous, e.g. after a transpose); use .reshape() or .contiguous().view()"
        ) from None
    return view_of(Reshape.apply(x, shape), x)


class Permute(OneRule, Op):
    name = "permute"
    formula = "dX = permute(dY, inverse(dims))"

    @staticmethod
    def kernel(a, dims):
        return a.transpose(dims)

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return x._data.transpose(dims)

    @property
    def inverse(self):
        """The permutation that undoes ``dims`` (``inverse[dims[i]] == i``)."""
        inv = [0] * len(self.dims)
        for i, d in enumerate(self.dims):
            inv[d] = i
        return tuple(inv)

    def rule(self, ns, g):  # the VJP, on tensors and arrays alike (OneRule)
        return apply_in(ns, Permute, g, self.inverse), None

    def jvp(self, t, _):
        return O.permute(t, self.dims)


def _permute_samples(src):
    shape = src.shape(1, 4, 1, 4)
    perm = list(src.rng.permutation(len(shape)))
    yield Sample((src.tensor(shape), tuple(int(p) - len(shape) if src.boolean() else int(p) for p in perm)))


@register(op=Permute, method=True, samples=_permute_samples, torch=lambda torch, x, dims: x.permute(dims))
def permute(input, *dims):
    """Reorder the dimensions (a view: only the strides change)."""
    x = check_tensor(input, "permute")
    dims = sizes_arg(dims, "permute")
    if len(dims) != x.ndim:
        raise ShapeError(f"permute: got {len(dims)} dims {dims} for a tensor with {x.ndim} dimensions {fmt_shape(x.shape)}")
    norm = tuple(one_dim(d, x.ndim, "permute") for d in dims)
    if len(set(norm)) != len(norm):
        raise ArgumentError(f"permute: dims {dims} repeat a dimension; each must appear once")
    return view_of(Permute.apply(x, norm), x)


def _transpose_samples(src):
    shape = src.shape(2, 4, 1, 4)
    yield Sample((src.tensor(shape), src.dim(len(shape)), src.dim(len(shape))))


@register(method=True, samples=_transpose_samples, formula="dX = transpose(dY, dim0, dim1)",
          torch=lambda torch, x, a, b: x.transpose(a, b))
def transpose(input, dim0, dim1):
    """Swap two dimensions (a view)."""
    x = check_tensor(input, "transpose")
    if x.ndim == 0:
        return alias(x)  # (PyTorch allows dims 0/-1 on a 0-d tensor)
    a, b = one_dim(dim0, x.ndim, "transpose"), one_dim(dim1, x.ndim, "transpose")
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return view_of(Permute.apply(x, tuple(perm)), x)  # (perm is valid by construction: no need to re-check)


@export(method=True)
def swapaxes(input, axis0, axis1):
    return transpose(input, axis0, axis1)


@export(method=True)
def t(input):
    """Transpose a matrix (0-d and 1-d tensors are returned as they are)."""
    x = check_tensor(input, "t")
    if x.ndim > 2:
        raise ShapeError(f"t: expects a tensor with at most 2 dims, got {fmt_shape(x.shape)}; use transpose(x, a, b) or .mT")
    return transpose(x, 0, 1) if x.ndim == 2 else alias(x)


def alias(x):
    """A new view of all of ``x``, same shape: what a view op returns when it changes nothing.

    PyTorch never hands back the input itself from a view op (``x.view(x.shape)``,
    ``x.t()`` of a vector, ``x.transpose(0, 0)``...): the result is a new tensor
    with its own ``grad_fn``, sharing memory and the version counter. Were it ``x``,
    ``x.view(3).requires_grad_(False)`` would silently freeze ``x`` itself.
    """
    return view_of(Reshape.apply(x, x.shape), x)


def _unsqueeze_samples(src):
    shape = src.shape(0, 3, 1, 4)
    d = src.integers(-(len(shape) + 1), len(shape))
    yield Sample((src.tensor(shape), d))


@register(method=True, samples=_unsqueeze_samples, formula="dX = reshape(dY, X.shape)", torch=lambda torch, x, d: x.unsqueeze(d))
def unsqueeze(input, dim):
    """Insert a dimension of size 1 at ``dim``."""
    x = check_tensor(input, "unsqueeze")
    d = one_dim(dim, x.ndim + 1, "unsqueeze")
    return reshape(x, x.shape[:d] + (1,) + x.shape[d:])


def _squeeze_samples(src):
    yield Sample((src.tensor((1, 3, 1, 2)),), desc="all size-1 dims")
    yield Sample((src.tensor((1, 3, 1, 2)), -2), desc="one dim")
    yield Sample((src.tensor((1, 3, 1, 2)), 1), desc="dim of size 3 stays")


@register(method=True, samples=_squeeze_samples, formula="dX = reshape(dY, X.shape)",
          torch=lambda torch, x, dim=None: torch.squeeze(x) if dim is None else torch.squeeze(x, dim))
def squeeze(input, dim=None, *, axis=None):
    """Remove dimensions of size 1 (all of them, or those in ``dim`` that have size 1)."""
    x = check_tensor(input, "squeeze")
    axes = norm_dim(dim if axis is None else axis, x.ndim, "squeeze")
    axes = range(x.ndim) if axes is None else axes
    shape = tuple(s for i, s in enumerate(x.shape) if not (i in axes and s == 1))
    return reshape(x, shape)


@export(method=True)
def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims ``start_dim..end_dim`` into one."""
    x = check_tensor(input, "flatten")
    if x.ndim == 0:
        return reshape(x, (1,))
    a, b = one_dim(start_dim, x.ndim, "flatten"), one_dim(end_dim, x.ndim, "flatten")
    if a > b:
        raise ArgumentError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    if a == b:
        return x  # nothing to merge: PyTorch returns the input itself here
    return reshape(x, x.shape[:a] + (int(np.prod(x.shape[a:b + 1])),) + x.shape[b + 1:])


class BroadcastTo(OneRule, Op):
    name = "broadcast_to"
    formula = "dX = sum_to(dY, X.shape)   (sum over the expanded dims)"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        return np.broadcast_to(x._data, shape)

    def rule(self, ns, g):  # the VJP, on tensors and arrays alike (OneRule)
        return sum_to_in(ns, g, self.in_shape), None

    def jvp(self, t, _):
        return O.broadcast_to(t, self.out.shape)


def _broadcast_samples(src):
    a, b = src.broadcast_pair()
    full = np.broadcast_shapes(a, b)
    yield Sample((src.tensor(a), full))
    yield Sample((src.tensor((3, 1)), (2, 3, 4)), desc="new leading dim")


@register(op=BroadcastTo, method=True, samples=_broadcast_samples, torch=lambda torch, x, shape: x.broadcast_to(shape))
def broadcast_to(input, shape):
    """A read-only view of ``input`` repeated (without copying) to ``shape``."""
    x = check_tensor(input, "broadcast_to")
    if type(shape) is not tuple or not all(type(s) is int for s in shape):
        if not isinstance(shape, (tuple, list)):  # (as PyTorch: broadcast_to(x, 3) is refused; write (3,))
            raise ArgumentTypeError(f"broadcast_to: size must be a tuple of ints, got {type(shape).__name__} "
                                    f"{shape!r}; write ({shape!r},) for one dimension")
        shape = _c.shape(shape, "broadcast_to", "size", infer=None)  # ints (a float inside is a TypeError)
    if -1 in shape:  # -1 keeps the input's size there (PyTorch's rule), but not in a new leading dim
        lead = len(shape) - x.ndim
        if any(s == -1 for s in shape[:max(lead, 0)]):
            raise ShapeError(f"broadcast_to: size {shape} has -1 in a new leading dimension of input "
                             f"{fmt_shape(x.shape)}, where there is no size to keep; give the size")
        if lead >= 0:
            shape = tuple(x.shape[i - lead] if s == -1 else s for i, s in enumerate(shape))
    if shape == x.shape:
        return alias(x)  # (a writable view: np.broadcast_to's would be read-only)
    try:
        if np.broadcast_shapes(x.shape, shape) != shape:
            raise ValueError
    except ValueError:
        raise ShapeError(f"broadcast_to: cannot broadcast {fmt_shape(x.shape)} to {fmt_shape(shape)}: "
                         "each dimension must match or be 1 in the input (new dims go on the left)") from None
    return view_of(BroadcastTo.apply(x, shape), x)


@export(method=True)
def expand(input, *sizes):
    """Broadcast to ``sizes``; -1 keeps a dimension's size (PyTorch's ``expand``)."""
    x = check_tensor(input, "expand")
    sizes = sizes_arg(sizes, "expand")
    lead = len(sizes) - x.ndim
    if lead < 0:
        raise ShapeError(f"expand: {len(sizes)} sizes given for a tensor with {x.ndim} dims {fmt_shape(x.shape)}")
    shape = tuple(x.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes))
    return broadcast_to(x, shape)


@export(method=True)
def expand_as(input, other):
    """``input`` broadcast to ``other``'s shape (a view)."""
    return broadcast_to(input, check_tensor(other, "expand_as", "other").shape)


class Contiguous(Op):
    name = "contiguous"
    formula = "dX = dY"

    @staticmethod
    def forward(ctx, x):
        return xp_of(x._data).ascontiguousarray(x._data)  # on x's device

    def vjp(self, g):
        return (g,)

    vjp_arrays = vjp  # (g,) on an array too: one rule

    def jvp(self, t):
        return t


@export()
def contiguous(input):
    """A C-contiguous copy (the same tensor if it already is contiguous)."""
    x = check_tensor(input, "contiguous")
    return x if x._data.flags.c_contiguous else Contiguous.apply(x)


class Alias(Op):
    """The identity, as a graph node: a new tensor on the same data.

    ``forward_ad.make_dual`` records one so that the dual tensor has its own tangent while gradients
    (reverse mode) still flow back to the original. No public function: autograd reaches it through
    ``gradlab._tensor._ops`` (it does not import the ops).
    """

    name = "alias"
    formula = "dX = dY"

    @staticmethod
    def forward(ctx, x):
        return x._data

    def vjp(self, g):
        return (g,)

    def jvp(self, t):
        return t


# -------------------------------------------------------------- repeat, tile
class Repeat(Op):
    name = "repeat"
    formula = "dX = sum of dY over the copies   (reshape to (r0, s0, r1, s1, ...), sum the r's)"

    @staticmethod
    def forward(ctx, x, sizes):
        ctx.sizes, ctx.in_shape = sizes, x.shape
        a = x._data.reshape((1,) * (len(sizes) - x.ndim) + x.shape)
        return np.tile(a, sizes)

    def vjp(self, g):  # (``.reshape``, ``.sum(dims)``: the same calls on a Tensor and an array, one rule)
        padded = (1,) * (len(self.sizes) - len(self.in_shape)) + self.in_shape
        inter = tuple(v for r, s in zip(self.sizes, padded) for v in (r, s))
        summed = g.reshape(inter).sum(tuple(range(0, 2 * len(padded), 2))) if padded else g
        return summed.reshape(self.in_shape), None

    vjp_arrays = vjp

    def jvp(self, t, _):
        return Repeat.apply(t, self.sizes)


def _repeat_samples(src):
    shape = src.shape(0, 2, 1, 3)
    sizes = tuple(src.integers(1, 3) for _ in range(len(shape) + src.integers(0, 1)))
    yield Sample((src.tensor(shape), sizes), desc="copies (maybe a new leading dim)")
    yield Sample((src.tensor((2, 3)), (2, 0)), desc="zero copies")


@register(op=Repeat, method=True, samples=_repeat_samples, torch=lambda torch, x, sizes: x.repeat(sizes))
def repeat(input, *sizes):
    """``x.repeat(2, 3)``: copy the whole tensor 2 times along dim 0 and 3 times along dim 1 (as
    PyTorch's ``Tensor.repeat``, NumPy's ``tile``). Extra sizes add leading dims."""
    x = check_tensor(input, "repeat")
    sizes = sizes_arg(sizes, "repeat")
    if len(sizes) < x.ndim:
        raise ShapeError(f"repeat: {len(sizes)} repeat counts given for a tensor with {x.ndim} dims "
                         f"{fmt_shape(x.shape)}; give at least one per dim (use tile to pad with 1s)")
    if any(s < 0 for s in sizes):
        raise ArgumentError(f"repeat: repeat counts must be >= 0, got {sizes}")
    return Repeat.apply(x, sizes)


@register(method=True, samples=lambda src: [Sample((src.tensor((2, 3)), (2,)), desc="fewer dims than the input"),
                               Sample((src.tensor((3,)), (2, 2)), desc="more dims")],
          formula=Repeat.formula, torch=lambda torch, x, dims: torch.tile(x, dims))
def tile(input, *dims_args, dims=None):
    """``repeat``, but ``dims`` shorter than the tensor's rank is padded with 1s on the left (``torch.tile``)."""
    x = check_tensor(input, "tile")
    dims = sizes_arg(dims_args if dims is None else (dims,), "tile")
    dims = (1,) * (x.ndim - len(dims)) + dims
    return repeat(x, dims)


# --------------------------------------------------------------- flip, roll
class Flip(OneRule, Op):
    name = "flip"
    formula = "dX = flip(dY, dims)"

    @staticmethod
    def kernel(a, dims):
        xp = xp_of(a)
        return xp.ascontiguousarray(xp.flip(a, axis=dims)) if dims else a.copy()

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return Flip.kernel(x._data, dims)

    def rule(self, ns, g):  # the VJP, on tensors and arrays alike (OneRule): flip back
        return apply_in(ns, Flip, g, self.dims), None

    def jvp(self, t, _):
        return Flip.apply(t, self.dims)


def _dims_arg(dims, ndim, op):
    return norm_dim(dims, ndim, op, allow_none=False) if ndim else ()


@register(op=Flip, method=True, samples=lambda src: [Sample((src.tensor((2, 3, 4)), src.choice([0, -1, (0, 2), [1]])))],
          torch=lambda torch, x, dims: torch.flip(x, dims if isinstance(dims, (list, tuple)) else (dims,)))
def flip(input, *dims_args, dims=None):
    """Reverse the order of elements along ``dims`` (``flip(x, (0, 1))``, ``flip(x, dims=[0])`` or
    ``x.flip(0, 1)``); a copy, as in PyTorch."""
    x = check_tensor(input, "flip")
    if dims is None:
        if not dims_args:
            raise ArgumentTypeError("flip: give the dims to reverse, e.g. flip(x, 0) or flip(x, dims=(0, 1))")
        dims = dims_args[0] if len(dims_args) == 1 else dims_args
    return Flip.apply(x, _dims_arg(dims, x.ndim, "flip"))


class Roll(OneRule, Op):
    name = "roll"
    formula = "dX = roll(dY, -shifts, dims)"

    @staticmethod
    def kernel(a, shifts, dims):
        return xp_of(a).roll(a, shifts, axis=dims)

    @staticmethod
    def forward(ctx, x, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        return Roll.kernel(x._data, shifts, dims)

    def rule(self, ns, g):  # the VJP, on tensors and arrays alike (OneRule): roll back
        back = tuple(-s for s in self.shifts) if isinstance(self.shifts, tuple) else -self.shifts
        return apply_in(ns, Roll, g, back, self.dims), None, None

    def jvp(self, t, *_):
        return Roll.apply(t, self.shifts, self.dims)


def _roll_samples(src):
    yield Sample((src.tensor((3, 4)), src.integers(-5, 5)), desc="flattened")
    yield Sample((src.tensor((3, 4)), src.integers(-5, 5), src.choice([0, 1, -1])), desc="one dim")
    yield Sample((src.tensor((2, 3, 2)), (1, -2), (0, 1)), desc="two dims")


@register(op=Roll, method=True, samples=_roll_samples,
          torch=lambda torch, x, shifts, dims=None: torch.roll(x, shifts, dims))
def roll(input, shifts, dims=None):
    """Shift elements along ``dims`` with wrap-around; with ``dims=None`` the flattened tensor is rolled."""
    x = check_tensor(input, "roll")
    if dims is None:
        if not isinstance(shifts, (int, np.integer)):
            if not isinstance(shifts, (tuple, list)) or len(shifts) != 1:
                raise ArgumentTypeError(f"roll: without dims, shifts must be one int, got {shifts!r}")
            shifts = shifts[0]
        return Roll.apply(x, _c.size(shifts, "roll", "shifts", None), None)
    multi = isinstance(shifts, (tuple, list)) or isinstance(dims, (tuple, list))
    if not multi:
        return Roll.apply(x, _c.size(shifts, "roll", "shifts", None), one_dim(dims, x.ndim, "roll"))
    shifts = tuple(_c.size(s, "roll", "shifts", None) for s in (shifts if isinstance(shifts, (tuple, list)) else (shifts,)))
    dims = tuple(one_dim(d, x.ndim, "roll") for d in (dims if isinstance(dims, (tuple, list)) else (dims,)))
    if len(shifts) != len(dims):
        raise ArgumentError(f"roll: {len(shifts)} shifts for {len(dims)} dims; give one shift per dim")
    return Roll.apply(x, shifts, dims)


# ---------------------------------------------------------------- as_strided
class AsStrided(OneRule, Op):
    name = "as_strided"
    formula = "dX = zeros(X.numel()).index_add(flat_positions, dY).reshape(X.shape)   (overlaps add up)"

    @staticmethod
    def forward(ctx, x, size, stride, offset, positions):
        if type(x._data) is not np.ndarray:  # the gradient's scatter-add needs its indices on x's device
            positions = xp_of(x._data).asarray(positions)
        ctx.in_shape, ctx.positions = x.shape, positions
        a = x._data
        item = a.itemsize
        flat = a.reshape(-1)
        return _as_strided(flat[offset:], size, tuple(s * item for s in stride))  # NumPy's or CuPy's

    def rule(self, ns, g):  # the VJP, on tensors and arrays alike (OneRule)
        flat = apply_in(ns, IndexAddZeros, g, (self.positions,), (int(np.prod(self.in_shape)),))
        return flat.reshape(self.in_shape), None, None, None, None

    def jvp(self, t, *_):
        return Index.apply(O.reshape(t, (-1,)), (self.positions,))


def _as_strided_samples(src):
    yield Sample((src.tensor((6,)), (2, 3), (3, 1)), desc="a plain reshape")
    yield Sample((src.tensor((3, 4)), (4, 3), (1, 4)), desc="a transpose")
    yield Sample((src.tensor((6,)), (4, 3), (1, 1)), desc="overlapping sliding windows")
    yield Sample((src.tensor((2, 5)), (2, 2), (5, 2), 1), desc="storage offset")


@register(op=AsStrided, method=True, samples=_as_strided_samples,
          torch=lambda torch, x, size, stride, storage_offset=0: torch.as_strided(x, size, stride, storage_offset))
def as_strided(input, size, stride, storage_offset=0):
    """A read-only view of ``input``'s memory with the given ``size`` and ``stride`` (in elements).

    Element ``out[i, j]`` is memory slot ``storage_offset + i * stride[0] + j * stride[1]``,
    which is all a tensor's layout is: reshape, transpose, expand and sliding windows are
    each just a choice of strides. The "memory" here is ``input``'s elements in row-major
    order (a non-contiguous input is copied first), and ``storage_offset`` counts from
    ``input``'s first element; for a freshly made tensor that is exactly PyTorch's storage.
    The gradient adds up where windows overlap.
    """
    x = check_tensor(input, "as_strided")
    size, stride = _c.shape(size, "as_strided", "size"), _c.shape(stride, "as_strided", "stride")
    offset = _c.size(storage_offset or 0, "as_strided", "storage_offset")
    if len(size) != len(stride):
        raise ShapeError(f"as_strided: size {fmt_shape(size)} and stride {fmt_shape(stride)} need the same length")
    if any(s < 0 for s in size) or any(s < 0 for s in stride) or offset < 0:
        raise ArgumentError(f"as_strided: size, stride and storage_offset must be >= 0, got size {size}, "
                            f"stride {stride}, storage_offset {offset}")
    n = int(np.prod(x.shape))
    positions = np.asarray(offset, dtype=np.int64)
    for i, (sz, st) in enumerate(zip(size, stride)):
        positions = positions[..., None] + np.arange(sz, dtype=np.int64) * st
    positions = positions.reshape(size)
    if positions.size and int(positions.max()) >= n:
        raise IndexOutOfRange(
            f"as_strided: size {fmt_shape(size)} with stride {fmt_shape(stride)} and storage_offset {offset} reaches "
            f"memory slot {int(positions.max())}, but input {fmt_shape(x.shape)} has only {n} elements")
    if not x._data.flags.c_contiguous:
        x = O.contiguous(x)
    return view_of(AsStrided.apply(x, size, stride, offset, positions), x)


@export()
def atleast_1d(x):
    x = check_tensor(x, "atleast_1d")
    return O.reshape(x, (1,)) if x.ndim == 0 else x


@export()
def atleast_2d(x):
    x = atleast_1d(x)
    return O.unsqueeze(x, 0) if x.ndim == 1 else x


@export()
def atleast_3d(x):
    x = check_tensor(x, "atleast_3d")
    if x.ndim == 0:
        return O.reshape(x, (1, 1, 1))
    if x.ndim == 1:
        return O.reshape(x, (1, x.shape[0], 1))
    return O.unsqueeze(x, -1) if x.ndim == 2 else x


@register(method=True, samples=lambda src: [Sample((src.tensor((2, 3)),)), Sample((src.tensor((2, 3, 2)),))],
          formula="dX = fliplr(dY)", torch=lambda torch, x: torch.fliplr(x))
def fliplr(input):
    """Reverse the columns (dim 1); the input needs at least 2 dims."""
    x = check_tensor(input, "fliplr")
    if x.ndim < 2:
        raise ShapeError(f"fliplr: input must have at least 2 dims, got shape {fmt_shape(x.shape)}")
    return O.flip(x, (1,))


@register(method=True, samples=lambda src: [Sample((src.tensor((2, 3)),)), Sample((src.tensor((3,)),))],
          formula="dX = flipud(dY)", torch=lambda torch, x: torch.flipud(x))
def flipud(input):
    """Reverse the rows (dim 0); the input needs at least 1 dim."""
    x = check_tensor(input, "flipud")
    if x.ndim < 1:
        raise ShapeError("flipud: input must have at least 1 dim, got a 0-d tensor")
    return O.flip(x, (0,))


@register(method=True, samples=lambda src: [Sample((src.tensor((2, 3)),)), Sample((src.tensor((2, 3, 2)), 3, (1, 2))),
                               Sample((src.tensor((2, 3)), -1))],
          formula="dX = rot90(dY, -k, dims)", torch=lambda torch, x, k=1, dims=(0, 1): torch.rot90(x, k, dims))
def rot90(input, k=1, dims=(0, 1)):
    """Turn by 90 degrees ``k`` times, from the first of ``dims`` towards the second."""
    x = check_tensor(input, "rot90")
    dims = tuple(dims)
    if len(dims) != 2:
        raise ArgumentError(f"rot90: dims must name exactly 2 dims, got {dims}")
    if x.ndim < 2:
        raise ShapeError(f"rot90: input must have at least 2 dims, got shape {fmt_shape(x.shape)}")
    d0, d1 = one_dim(dims[0], x.ndim, "rot90"), one_dim(dims[1], x.ndim, "rot90")
    if d0 == d1:
        raise ArgumentError(f"rot90: the two dims must differ, got {dims}")
    k = _c.size(k, "rot90", "k", None) % 4
    if k == 1:
        return O.transpose(O.flip(x, (d1,)), d0, d1)
    if k == 2:
        return O.flip(x, (d0, d1))
    if k == 3:
        return O.flip(O.transpose(x, d0, d1), (d1,))
    return O.clone(x)


@register(samples=lambda src: [Sample((src.tensor((3,)), src.tensor((2,))), dict(indexing="ij")),
                               Sample((src.tensor((3,)), src.tensor((2,)), src.tensor((2,))), dict(indexing="xy"))],
          formula="dX_i = dY_i summed over the other grids' dims",
          torch=lambda torch, *ts, indexing=None: torch.meshgrid(*ts, indexing=indexing))
def meshgrid(*tensors, indexing=None):
    """Coordinate grids: for 1-D inputs of sizes n1..nk, k tensors of shape (n1, ..., nk).

    ``indexing='ij'`` (PyTorch's default) keeps the order; ``'xy'`` swaps the first two dims (as
    ``numpy.meshgrid``). Each result is an expanded view of its input.
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ArgumentError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    xs = [check_tensor(t, "meshgrid", f"tensors[{i}]") for i, t in enumerate(tensors)]
    for i, t in enumerate(xs):
        if t.ndim > 1:
            raise ShapeError(f"meshgrid: expects 0-D or 1-D tensors, but tensors[{i}] has shape {fmt_shape(t.shape)}")
    _c.same_dtype("meshgrid", **{f"tensors[{i}]": t for i, t in enumerate(xs)})
    xs = [atleast_1d(t) for t in xs]
    swap = indexing == "xy" and len(xs) >= 2
    if swap:
        xs[0], xs[1] = xs[1], xs[0]
    shape = tuple(t.shape[0] for t in xs)
    out = []
    for i, t in enumerate(xs):
        view = [1] * len(xs)
        view[i] = t.shape[0]
        out.append(O.expand(O.reshape(t, tuple(view)), *shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


@register(method=True, samples=lambda src: [Sample((src.tensor((2, 3)), 2)), Sample((src.tensor((2, 3)), 3, 1)),
                               Sample((src.tensor((3, 2)), Tensor._make(np.array([1, 0, 2])), 0))],
          formula="dX = sum of dY over each element's copies",
          torch=lambda torch, x, repeats, dim=None: torch.repeat_interleave(x, repeats, dim))
def repeat_interleave(input, repeats, dim=None, *, output_size=None):
    """Repeat each element ``repeats`` times along ``dim`` (the flattened input when ``dim`` is None).

    ``repeats`` is an int, or a tensor with one count per element along ``dim``.
    ``[a, b].repeat_interleave(2)`` is ``[a, a, b, b]``; ``repeat`` would give ``[a, b, a, b]``."""
    x = check_tensor(input, "repeat_interleave")
    if dim is None:
        x, d = O.flatten(x), 0
    else:
        d = one_dim(dim, x.ndim, "repeat_interleave")
    n = x.shape[d] if x.ndim else 1
    if isinstance(repeats, Tensor):
        if repeats.dtype.kind not in "iu" or repeats.ndim > 1:
            raise ArgumentTypeError("repeat_interleave: repeats must be an int or a 1-D integer tensor")
        counts = np.asarray(repeats.cpu()._data).reshape(-1)
    elif isinstance(repeats, (int, np.integer)) and not isinstance(repeats, bool):
        counts = np.asarray([repeats])
    else:
        raise ArgumentTypeError(f"repeat_interleave: repeats must be an int or an integer tensor, got {repeats!r}")
    if counts.size not in (1, n) or (counts < 0).any():
        raise ArgumentError(f"repeat_interleave: repeats must be >= 0 and give one count (or one per element: "
                            f"{n} along dim {d}), got {counts.size}")
    idx = np.repeat(np.arange(n, dtype=np.int64), counts if counts.size == n else int(counts[0]))
    if x.ndim == 0:
        x = O.reshape(x, (1,))
    return O.index_select(x, d, O.to(Tensor._make(idx), x.device))
