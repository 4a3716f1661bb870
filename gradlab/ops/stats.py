"""Order statistics, counting and NaN-aware reductions: ``cumprod``, ``kthvalue``, ``median``, ``mode``,
``unique``/``unique_consecutive``, ``bincount``, ``isin``, ``nansum``/``nanmean``, ``nan_to_num``, ``xlogy``.

They are written with ops gradlab already has (``sort``, ``gather``, ``prod``, ``where``), so their
gradients come from the ops they are made of: the median's gradient goes to the element that was picked,
exactly as PyTorch's does. ``cumprod`` is the product of a lower-triangular block of copies of the
input, which keeps its gradient right where an element is zero (dividing by the input would not).
"""
from __future__ import annotations

import collections

import numpy as np

from .. import ops as O
from ..backend import dtypes as _dt
from ..backend import xp_of
from .._tensor import Tensor
from ..errors import ArgumentError, DTypeError, ShapeError, ValueRuntimeError, fmt_shape
from ._util import check_tensor, one_dim
from .registry import Sample, register

ValuesIndices = collections.namedtuple("ValuesIndices", ["values", "indices"])


def _cumprod_samples(src):
    yield Sample((src.tensor((4,)), 0))
    yield Sample((src.tensor((2, 3)), 1))
    yield Sample((Tensor._make(np.array([[1.5, 0.0, 2.0, -1.0], [0.0, 0.0, 3.0, 0.5]])), -1), desc="zeros")


@register(samples=_cumprod_samples, formula="dX_i = sum_{j >= i} dY_j * prod_{k <= j, k != i} X_k",
          torch=lambda torch, x, dim: torch.cumprod(x, dim))
def cumprod(input, dim, *, dtype=None):
    """Running product along ``dim``: ``y[j] = x[0] * ... * x[j]``; integer and bool inputs give int64."""
    x = check_tensor(input, "cumprod")
    if dtype is not None:
        x = O.to(x, _dt.as_dtype(dtype))
    elif _dt.category(x.dtype) < 2:
        x = O.to(x, _dt.int64)
    if x.ndim == 0:
        return O.clone(x)
    d = one_dim(dim, x.ndim, "cumprod")
    n = x.shape[d]
    xl = O.movedim(x, d, -1)
    block = O.expand(O.unsqueeze(xl, -2), *(xl.shape[:-1] + (n, n)))  # block[..., j, i] = x[..., i]
    keep = Tensor._make(np.tril(np.ones((n, n), dtype=bool)))  # i <= j
    if keep.device != x.device:
        keep = O.to(keep, x.device)
    y = O.prod(O.where(keep, block, Tensor._make(np.ones((), dtype=x.dtype)).to(x.device)), -1)
    return O.movedim(y, -1, d)


def _kth_samples(src):
    yield Sample((src.tensor((3, 5), distinct=True), 2), dict(dim=1))
    yield Sample((src.tensor((4, 3), distinct=True), 4, 0, True))


@register(samples=_kth_samples, formula="dX = dY at the picked element, 0 elsewhere",
          torch=lambda torch, x, k, dim=-1, keepdim=False: torch.kthvalue(x, k, dim, keepdim))
def kthvalue(input, k, dim=-1, keepdim=False):
    """The ``k``-th smallest entry along ``dim`` (``k`` counts from 1) and its index."""
    x = check_tensor(input, "kthvalue")
    d = one_dim(dim, x.ndim, "kthvalue") if x.ndim else 0
    n = x.shape[d] if x.ndim else 1
    if not 1 <= int(k) <= n:
        raise ArgumentError(f"kthvalue: k={k} is out of range for dim {d} of size {n} (input {fmt_shape(x.shape)}); "
                            f"k counts from 1 and must be at most {n}")
    if x.ndim == 0:
        return ValuesIndices(O.clone(x), Tensor._make(np.zeros((), np.int64)))
    _, order = O.sort(x, d)
    idx = O.narrow(order, d, int(k) - 1, 1)
    vals = O.gather(x, d, idx)
    if not keepdim:
        vals, idx = O.squeeze(vals, d), O.squeeze(idx, d)
    return ValuesIndices(vals, idx)


def _median_samples(src):
    yield Sample((src.tensor((3, 5), distinct=True),))
    yield Sample((src.tensor((3, 4), distinct=True),), dict(dim=1))
    yield Sample((src.tensor((4, 3), distinct=True), 0, True))


@register(samples=_median_samples, formula="dX = dY at the median element, 0 elsewhere",
          torch=lambda torch, x, dim=None, keepdim=False: torch.median(x) if dim is None else torch.median(x, dim, keepdim))
def median(input, dim=None, keepdim=False):
    """The median; for an even count the lower of the two middle values (PyTorch's rule, not their mean).

    Without ``dim``: one value over all elements. With ``dim``: ``(values, indices)`` along it."""
    x = check_tensor(input, "median")
    if dim is None:
        flat = O.flatten(x)
        if flat.shape[0] == 0:
            return O.sum(flat) * float("nan")
        return kthvalue(flat, (flat.shape[0] + 1) // 2, 0).values
    n = x.shape[one_dim(dim, x.ndim, "median")] if x.ndim else 1
    return kthvalue(x, (n + 1) // 2, dim, keepdim)


@register(samples=lambda src: [Sample((Tensor._make(np.array([[1.0, 2.0, 2.0, 3.0], [4.0, 4.0, 1.0, 0.5]])), 1))],
          formula="dX = dY at the picked element, 0 elsewhere",
          torch=lambda torch, x, dim=-1, keepdim=False: torch.mode(x, dim, keepdim))
def mode(input, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` (the smallest one among ties) and the last index where it occurs."""
    x = check_tensor(input, "mode")
    if x.ndim == 0:
        return ValuesIndices(O.clone(x), Tensor._make(np.zeros((), np.int64)))
    d = one_dim(dim, x.ndim, "mode")
    a = np.moveaxis(np.asarray(x.cpu().data), d, -1)
    rows = a.reshape(-1, a.shape[-1])
    idx = np.zeros(rows.shape[0], np.int64)
    for r, row in enumerate(rows):
        vals, counts = np.unique(row, return_counts=True)
        v = vals[np.argmax(counts)]
        idx[r] = np.nonzero(row == v)[0][-1]
    idx = Tensor._make(np.moveaxis(idx.reshape(a.shape[:-1] + (1,)), -1, d)).to(x.device)
    vals = O.gather(x, d, idx)
    if not keepdim:
        vals, idx = O.squeeze(vals, d), O.squeeze(idx, d)
    return ValuesIndices(vals, idx)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct values, sorted (``dim=None``: of the flattened input; ``dim=d``: distinct slices along d),
    optionally with ``inverse`` (where each input element went) and ``counts``."""
    x = check_tensor(input, "unique")
    a = np.asarray(x.cpu().data)
    if dim is None:
        vals, first, inv, counts = np.unique(a.reshape(-1), return_index=True, return_inverse=True, return_counts=True)
        out = O.getitem(O.flatten(x), Tensor._make(first.astype(np.int64)).to(x.device)) if x.requires_grad \
            else Tensor._make(xp_of(x.data).asarray(vals))
        inv = inv.reshape(a.shape)
    else:
        d = one_dim(dim, x.ndim, "unique")
        moved = np.moveaxis(a, d, 0)
        _, first, inv, counts = np.unique(moved.reshape(moved.shape[0], -1), axis=0, return_index=True,
                                          return_inverse=True, return_counts=True)
        out = O.index_select(x, d, Tensor._make(first.astype(np.int64)).to(x.device))
        inv = inv.reshape(-1)
    res = [out]
    if return_inverse:
        res.append(Tensor._make(inv.astype(np.int64)).to(x.device))
    if return_counts:
        res.append(Tensor._make(counts.astype(np.int64)).to(x.device))
    return res[0] if len(res) == 1 else tuple(res)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive values to one (``[1, 1, 2, 1]`` -> ``[1, 2, 1]``)."""
    x = check_tensor(input, "unique_consecutive")
    if dim is not None:
        d = one_dim(dim, x.ndim, "unique_consecutive")
        moved = np.moveaxis(np.asarray(x.cpu().data), d, 0)
        rows = moved.reshape(moved.shape[0], -1)
        starts = np.ones(rows.shape[0], bool)
        starts[1:] = (rows[1:] != rows[:-1]).any(axis=1)
        out = O.index_select(x, d, Tensor._make(np.nonzero(starts)[0].astype(np.int64)).to(x.device))
        n = rows.shape[0]
    else:
        flat = np.asarray(x.cpu().data).reshape(-1)
        starts = np.ones(flat.shape[0], bool)
        starts[1:] = flat[1:] != flat[:-1]
        out = O.getitem(O.flatten(x), Tensor._make(np.nonzero(starts)[0].astype(np.int64)).to(x.device))
        n = flat.shape[0]
    res = [out]
    if return_inverse:
        inv = np.cumsum(starts) - 1
        res.append(Tensor._make(inv.reshape(x.shape if dim is None else (n,)).astype(np.int64)).to(x.device))
    if return_counts:
        pos = np.append(np.nonzero(starts)[0], n)
        res.append(Tensor._make(np.diff(pos).astype(np.int64)).to(x.device))
    return res[0] if len(res) == 1 else tuple(res)


def bincount(input, weights=None, minlength=0):
    """How often each value 0, 1, 2, ... occurs in a 1-D non-negative integer tensor (summing ``weights``
    instead of counting ones when given); at least ``minlength`` bins."""
    x = check_tensor(input, "bincount")
    if x.ndim != 1 or x.dtype.kind not in "iu":
        raise ValueRuntimeError(f"bincount: input must be a 1-D integer tensor, got shape {fmt_shape(x.shape)} "
                         f"and dtype {x.dtype}; count class labels with y.long().flatten()")
    a = np.asarray(x.cpu().data)
    if a.size and a.min() < 0:
        raise ValueRuntimeError(f"bincount: input must hold only non-negative values, found {int(a.min())}; shift them first "
                                f"(x - x.min())")
    w = None
    if weights is not None:
        weights = check_tensor(weights, "bincount", "weights")
        if weights.shape != x.shape:
            raise ShapeError(f"bincount: weights {fmt_shape(weights.shape)} must have the same shape as input "
                             f"{fmt_shape(x.shape)}")
        w = np.asarray(weights.cpu().data)
    out = np.bincount(a, weights=w, minlength=int(minlength))
    if w is None:
        out = out.astype(np.int64)
    elif w.dtype == np.float32:
        out = out.astype(np.float32)
    return Tensor._make(out).to(x.device)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """A bool tensor shaped like ``elements``: True where the element occurs in ``test_elements``."""
    e = elements if isinstance(elements, Tensor) else Tensor._make(np.asarray(elements))
    t = np.asarray(test_elements.cpu().data if isinstance(test_elements, Tensor) else test_elements)
    return Tensor._make(np.isin(np.asarray(e.cpu().data), t, invert=invert)).to(e.device)


@register(samples=lambda src: [Sample((Tensor._make(np.array([[1.0, np.nan, 2.0], [np.nan, 0.5, -1.0]])),)),
                               Sample((Tensor._make(np.array([[1.0, np.nan], [3.0, 4.0]])), 1))],
          formula="dX = dY where X is not NaN, 0 elsewhere",
          torch=lambda torch, x, dim=None, keepdim=False: torch.nansum(x) if dim is None else torch.nansum(x, dim, keepdim))
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """The sum, counting NaNs as zero."""
    x = check_tensor(input, "nansum")
    z = O.where(O.isnan(x), O.zeros_like(x), x) if _dt.is_floating(x.dtype) else x
    return O.sum(z, dim, keepdim, dtype=dtype) if dim is not None else O.sum(z, dtype=dtype)


@register(samples=lambda src: [Sample((Tensor._make(np.array([[1.0, np.nan, 2.0], [np.nan, 0.5, -1.0]])),)),
                               Sample((Tensor._make(np.array([[1.0, np.nan], [3.0, 4.0]])), 1))],
          formula="dX = dY / count(not NaN) where X is not NaN",
          torch=lambda torch, x, dim=None, keepdim=False: torch.nanmean(x) if dim is None else torch.nanmean(x, dim, keepdim))
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """The mean of the entries that are not NaN."""
    x = check_tensor(input, "nanmean")
    if not _dt.is_floating(x.dtype):
        raise DTypeError(f"nanmean: input must be a floating point tensor, got dtype {x.dtype}; use x.float()")
    ok = O.logical_not(O.isnan(x))
    total = nansum(x, dim, keepdim, dtype=dtype)
    count = O.sum(ok, dim, keepdim) if dim is not None else O.sum(ok)
    return total / O.to(count, total.dtype)


@register(samples=lambda src: [Sample((Tensor._make(np.array([1.0, np.nan, np.inf, -np.inf, -2.0])),)),
                               Sample((Tensor._make(np.array([1.0, np.nan, np.inf, -np.inf])), 0.5, 9.0, -9.0))],
          formula="dX = dY where X is finite, 0 elsewhere", elementwise=True,
          torch=lambda torch, x, nan=0.0, posinf=None, neginf=None: torch.nan_to_num(x, nan, posinf, neginf))
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """Replace NaN by ``nan``, +inf by ``posinf`` and -inf by ``neginf`` (default: the dtype's largest and
    smallest finite values)."""
    x = check_tensor(input, "nan_to_num")
    if not _dt.is_floating(x.dtype):
        return O.clone(x)
    info = np.finfo(x.dtype)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    y = O.where(O.isnan(x), O.full_like(x, nan), x)
    y = O.where(O.logical_and(O.isinf(x), x > 0), O.full_like(x, posinf), y)
    return O.where(O.logical_and(O.isinf(x), x < 0), O.full_like(x, neginf), y)


def _xlogy_samples(src):
    yield Sample((src.tensor((2, 3), low=-2, high=2), src.tensor((2, 3), low=0.3, high=2)))
    yield Sample((Tensor._make(np.array([0.0, 1.5, 0.0])), Tensor._make(np.array([0.5, 2.0, 3.0]))), desc="x = 0")


@register(samples=_xlogy_samples, formula="dX = dY log(Y_in), dY_in = dY X / Y_in (0 where X = 0)",
          elementwise=True, torch=lambda torch, x, y: torch.xlogy(x, y))
def xlogy(input, other):
    """``input * log(other)``, defined as 0 where ``input`` is 0 (so ``0 * log(0)`` is 0, as in entropies)."""
    x = input if isinstance(input, Tensor) else Tensor._make(np.asarray(input, dtype=_dt.get_default_dtype()))
    y = other if isinstance(other, Tensor) else O.full_like(x, other)
    if not _dt.is_floating(x.dtype):
        x = O.to(x, _dt.get_default_dtype())
    zero = x == 0
    safe = O.where(zero, O.ones_like(y), y)
    out = O.where(zero, O.zeros_like(x * safe), x * O.log(safe))
    return O.where(O.isnan(y), y + x * 0, out)


STATS_METHODS = ["cumprod", "kthvalue", "median", "mode", "unique", "unique_consecutive", "bincount",
                 "nansum", "nanmean", "nan_to_num", "xlogy"]


def _cum_extreme(name, better):
    def fn(input, dim):
        x = check_tensor(input, name)
        if x.ndim == 0:
            return ValuesIndices(O.clone(x), Tensor._make(np.zeros((), np.int64)))
        d = one_dim(dim, x.ndim, name)
        a = np.moveaxis(np.asarray(x.cpu().data), d, -1)
        n = a.shape[-1]
        idx = np.zeros(a.shape, np.int64)
        if n:
            best = a[..., 0].copy()
            for j in range(1, n):  # ties go to the later index, as PyTorch
                take = better(a[..., j], best) | (a[..., j] == best) | np.isnan(a[..., j]) if a.dtype.kind == "f" \
                    else better(a[..., j], best) | (a[..., j] == best)
                if a.dtype.kind == "f":
                    take &= ~np.isnan(best)
                best = np.where(take, a[..., j], best)
                idx[..., j] = np.where(take, j, idx[..., j - 1])
        idx = Tensor._make(np.moveaxis(idx, -1, d)).to(x.device)
        return ValuesIndices(O.gather(x, d, idx), idx)
    fn.__name__ = name
    fn.__doc__ = (f"Running {'maximum' if name == 'cummax' else 'minimum'} along ``dim`` and the index where "
                  "each running value was found (the later one among ties).")
    return fn


def _cum_samples(src):
    yield Sample((src.tensor((3, 4), distinct=True), 1))
    yield Sample((src.tensor((4,), distinct=True), 0))


cummax = register("cummax", samples=_cum_samples, formula="dX = dY added at the running maximum's index",
                  torch=lambda torch, x, dim: torch.cummax(x, dim))(_cum_extreme("cummax", np.greater))
cummin = register("cummin", samples=_cum_samples, formula="dX = dY added at the running minimum's index",
                  torch=lambda torch, x, dim: torch.cummin(x, dim))(_cum_extreme("cummin", np.less))
STATS_METHODS += ["cummax", "cummin"]
