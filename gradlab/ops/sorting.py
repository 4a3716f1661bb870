"""Sorting and order statistics: ``sort``, ``argsort``, ``topk``, ``msort``, ``kthvalue``,
``median``, ``mode``, ``unique``, ``unique_consecutive``.

``sort``'s values are ``gather(x, dim, indices)``, so gradients flow back to where each value came
from with no formula of their own; the others are written on top of ``sort`` and ``gather``.
"""
from __future__ import annotations

import collections

import numpy as np

from .. import checks as _c, ops as O
from .._tensor import Tensor
from ..backend import xp_of
from ..backend.device import to_host
from ..errors import ArgumentError, fmt_shape
from . import _stdsort
from ._util import check_tensor, method_spelling, one_dim
from .reduce import ValuesIndices
from .registry import Sample, export, register


def _host_rows(x, d):
    """``x``'s values with ``dim`` last, as a host array of rows ``(-1, n)``."""
    a = np.moveaxis(np.asarray(to_host(x._data)), d, -1)
    return a.reshape(-1, a.shape[-1])


def _tied(rows):
    """The rows with a repeated value or a NaN: there the index PyTorch returns depends on its algorithm."""
    if rows.shape[-1] < 2:
        return np.zeros(rows.shape[0], bool)
    s = np.sort(rows, axis=-1)
    out = (s[:, 1:] == s[:, :-1]).any(axis=-1)
    if _dt_is_float(rows.dtype):
        out |= np.isnan(rows).any(axis=-1)
    return out


def _replay(x, d, idx, which, fn):
    """``idx`` (indices along ``d``, with ``x``'s other dims) with the rows chosen by ``which`` (a bool per
    row) replaced by ``fn(row as a list)``: PyTorch's own choice, replayed (``_stdsort``)."""
    pick = np.nonzero(which)[0]
    if pick.size == 0:
        return idx
    rows = _host_rows(x, d)
    ia = np.moveaxis(np.array(to_host(idx._data)), d, -1)
    shape = ia.shape
    ir = ia.reshape(-1, shape[-1])
    for r in pick:
        ir[r] = fn(rows[r].tolist())
    out = np.ascontiguousarray(np.moveaxis(ir.reshape(shape), -1, d)).astype(np.int64)
    return Tensor._make(out).to(x.device)


sort = method_spelling("sort", "``(values, indices)`` of ``input`` sorted along ``dim`` (``x.sort(...)``).")
argsort = method_spelling("argsort", "The indices that sort ``input`` along ``dim`` (``x.argsort(...)``).")
topk = method_spelling("topk", "The ``k`` largest entries along ``dim`` and their indices (``x.topk(k, ...)``).")


register('sort', samples=lambda src: [Sample((src.tensor((3, 4), distinct=True),), dict(dim=src.dim(2), descending=src.boolean()))],
         formula="dX = scatter dY back to where each sorted value came from", torch=lambda torch, x, **kw: torch.sort(x, **kw))(sort)


register('argsort', samples=lambda src: [Sample((src.tensor((3, 4), distinct=True),), dict(dim=src.dim(2)))],
         formula='(no gradient)', torch=lambda torch, x, **kw: torch.argsort(x, **kw), differentiable=False)(argsort)


register('topk', samples=lambda src: [Sample((src.tensor((3, 4), distinct=True), 2), dict(dim=-1, largest=src.boolean()))],
         formula="dX = scatter dY back to the k picked entries", torch=lambda torch, x, k, **kw: torch.topk(x, k, **kw))(topk)


def _kth_samples(src):
    yield Sample((src.tensor((3, 5), distinct=True), 2), dict(dim=1))
    yield Sample((src.tensor((4, 3), distinct=True), 4, 0, True))


@register(method=True, samples=_kth_samples, formula="dX = dY at the picked element, 0 elsewhere",
          torch=lambda torch, x, k, dim=-1, keepdim=False: torch.kthvalue(x, k, dim, keepdim))
def kthvalue(input, k, dim=-1, keepdim=False):
    """The ``k``-th smallest entry along ``dim`` (``k`` counts from 1) and its index."""
    x = check_tensor(input, "kthvalue")
    d = one_dim(dim, x.ndim, "kthvalue") if x.ndim else 0
    n = x.shape[d] if x.ndim else 1
    k = _c.size(k, "kthvalue", "k", None)
    keepdim = _c.flag(keepdim, "kthvalue", "keepdim")
    if x.ndim:
        _c.nonempty_dim(x.shape, d, "kthvalue")
    if not 1 <= k <= n:
        raise ArgumentError(f"kthvalue: k={k} is out of range for dim {d} of size {n} (input {fmt_shape(x.shape)}); "
                            f"k counts from 1 and must be at most {n}")
    if x.ndim == 0:
        return ValuesIndices(O.clone(x), Tensor._make(np.zeros((), np.int64)))
    _, order = O.sort(x, d)
    idx = O.narrow(order, d, int(k) - 1, 1)  # (a stable sort: PyTorch's pick wherever values are distinct)
    idx = _replay(x, d, idx, _tied(_host_rows(x, d)), lambda row: [_stdsort.kthvalue_row(row, int(k))])
    vals = O.gather(x, d, idx)
    if not keepdim:
        vals, idx = O.squeeze(vals, d), O.squeeze(idx, d)
    return ValuesIndices(vals, idx)


def _median_samples(src):
    yield Sample((src.tensor((3, 5), distinct=True),))
    yield Sample((src.tensor((3, 4), distinct=True),), dict(dim=1))
    yield Sample((src.tensor((4, 3), distinct=True), 0, True))


@register(method=True, samples=_median_samples, formula="dX = dY at the median element (over all elements: shared evenly by the elements equal to it), 0 elsewhere",
          torch=lambda torch, x, dim=None, keepdim=False: torch.median(x) if dim is None else torch.median(x, dim, keepdim))
def median(input, dim=None, keepdim=False):
    """The median; for an even count the lower of the two middle values (PyTorch's rule, not their mean).

    Without ``dim``: one value over all elements. With ``dim``: ``(values, indices)`` along it."""
    x = check_tensor(input, "median")
    return _median("median", x, dim, keepdim, ignore_nan=False)


def _median(op, x, dim, keepdim, ignore_nan):
    """``median`` and ``nanmedian``, as PyTorch computes them.

    Without ``dim``: NaN if there is a NaN (``median``) or if all are NaN (``nanmedian``), its gradient
    shared evenly by the NaNs (as PyTorch's); else the lower middle of the sorted (non-NaN) values.
    With ``dim``: per row, ``median`` picks the first NaN if the row has one; otherwise both pick the
    lower middle in a stable sort (PyTorch breaks ties by index), and an all-NaN row in ``nanmedian``
    the index PyTorch's ``nth_element`` leaves there.
    """
    xp = xp_of(x._data)
    isnan = xp.isnan(x._data) if _dt_is_float(x.dtype) else None
    if dim is None:
        flat = O.flatten(x)
        n = flat.shape[0]
        if n == 0:
            return O.sum(flat) * float("nan")
        nan = None if isnan is None else isnan.reshape(-1)
        nn = 0 if nan is None else int(nan.sum())
        if nn and (not ignore_nan or nn == n):
            return O.mean(O.masked_select(flat, Tensor._make(nan)))
        order = xp.argsort(flat._data, kind="stable")  # NaNs last
        m = (n - nn - 1) // 2
        picked = O.reshape(O.gather(flat, 0, Tensor._make(order[m:m + 1].astype(np.int64))), ())
        tied = flat._data == picked._data
        k = int(tied.sum())
        if k == 1 or not x._requires_grad:
            return picked
        # several elements equal the median: PyTorch shares its gradient evenly among them (any one
        # is a valid subgradient; the even share is PyTorch's). The value stays exactly the median:
        # (s - s.detach()) is 0 forward and passes dY / k to each tied element backward.
        ties = O.masked_select(flat, Tensor._make(tied))
        if not bool(xp.isfinite(picked._data)):
            return O.mean(ties)  # (k infinities: their mean is the same infinity)
        s = O.sum(ties)
        return picked.detach() + (s - s.detach()) / k
    if x.ndim == 0:
        return ValuesIndices(O.clone(x), Tensor._make(xp.zeros((), np.int64)))
    d = one_dim(dim, x.ndim, op)
    n = x.shape[d]
    if n == 0:
        from ..errors import IndexOutOfRange
        raise IndexOutOfRange(f"{op}: dim {d} of input {fmt_shape(x.shape)} is empty; there is no median to take")
    order = xp.argsort(x._data, axis=d, kind="stable")  # NaNs last
    keep = x.shape[:d] + (1,) + x.shape[d + 1:]
    nans = xp.zeros(keep, np.int64) if isnan is None else xp.sum(isnan, axis=d, keepdims=True)
    if ignore_nan:
        k = xp.maximum((n - nans - 1) // 2, 0)
    else:
        k = xp.where(nans > 0, 0, (n - 1) // 2)
    idx = xp.take_along_axis(order, k, axis=d).astype(np.int64)
    if not ignore_nan and bool(nans.any()):  # a row with a NaN: its first NaN
        first = xp.argmax(isnan, axis=d).reshape(keep).astype(np.int64)
        idx = xp.where(nans > 0, first, idx)
    idx = Tensor._make(idx)
    if ignore_nan and bool((nans == n).any()):
        idx = _replay(x, d, idx, (to_host(nans) == n).reshape(-1),
                      lambda row: [_stdsort.all_nan_median_index(len(row))])
    vals = O.gather(x, d, idx)
    if not keepdim:
        vals, idx = O.squeeze(vals, d), O.squeeze(idx, d)
    return ValuesIndices(vals, idx)


def _dt_is_float(dt):
    from ..backend import dtypes as _dt
    return _dt.is_floating(dt)


@register(method=True, samples=lambda src: [Sample((Tensor._make(np.array([[1.0, 2.0, 2.0, 3.0], [4.0, 4.0, 1.0, 0.5]])), 1))],
          formula="dX = dY at the picked element, 0 elsewhere",
          torch=lambda torch, x, dim=-1, keepdim=False: torch.mode(x, dim, keepdim))
def mode(input, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` (the smallest one among ties) and the last index where it occurs."""
    x = check_tensor(input, "mode")
    if x.ndim == 0:
        return ValuesIndices(O.clone(x), Tensor._make(np.zeros((), np.int64)))
    d = one_dim(dim, x.ndim, "mode")
    _c.nonempty_dim(x.shape, d, "mode")
    a = np.moveaxis(np.asarray(x.cpu()._data), d, -1)
    rows = a.reshape(-1, a.shape[-1])
    idx = np.zeros(rows.shape[0], np.int64)
    for r, row in enumerate(rows):  # PyTorch's kernel, replayed: std::sort by value, the first longest run
        idx[r] = _stdsort.mode_row(row.tolist())
    idx = Tensor._make(np.moveaxis(idx.reshape(a.shape[:-1] + (1,)), -1, d)).to(x.device)
    vals = O.gather(x, d, idx)
    if not keepdim:
        vals, idx = O.squeeze(vals, d), O.squeeze(idx, d)
    return ValuesIndices(vals, idx)


@export(method=True)
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct values, sorted (``dim=None``: of the flattened input; ``dim=d``: distinct slices along d),
    optionally with ``inverse`` (where each input element went) and ``counts``."""
    x = check_tensor(input, "unique")
    a = np.asarray(x.cpu()._data)
    if dim is None:
        vals, first, inv, counts = np.unique(a.reshape(-1), return_index=True, return_inverse=True, return_counts=True)
        out = O.getitem(O.flatten(x), Tensor._make(first.astype(np.int64)).to(x.device)) if x._requires_grad \
            else Tensor._make(xp_of(x._data).asarray(vals))
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


@export(method=True)
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive values to one (``[1, 1, 2, 1]`` -> ``[1, 2, 1]``)."""
    x = check_tensor(input, "unique_consecutive")
    if dim is not None:
        d = one_dim(dim, x.ndim, "unique_consecutive")
        moved = np.moveaxis(np.asarray(x.cpu()._data), d, 0)
        rows = moved.reshape(moved.shape[0], -1)
        starts = np.ones(rows.shape[0], bool)
        starts[1:] = (rows[1:] != rows[:-1]).any(axis=1)
        out = O.index_select(x, d, Tensor._make(np.nonzero(starts)[0].astype(np.int64)).to(x.device))
        n = rows.shape[0]
    else:
        flat = np.asarray(x.cpu()._data).reshape(-1)
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


SortResult = collections.namedtuple("SortResult", ["values", "indices"])


def _sort(self, dim=-1, descending=False, stable=False):
    """``(values, indices)`` sorted along ``dim``; values are ``gather(self, dim, indices)``, so
    gradients flow back to where each value came from. Ties keep their original order."""
    from ..backend import xp_of
    d = one_dim(dim, self.ndim, "sort") if self.ndim else 0
    descending, stable = _c.flag(descending, "sort", "descending"), _c.flag(stable, "sort", "stable")
    a = self._data if self.ndim else self._data.reshape(1)
    xp = xp_of(a)
    idx = xp.argsort(-a if descending and a.dtype.kind != "b" else a, axis=d, kind="stable")
    if descending and a.dtype.kind == "b":
        idx = xp.argsort(~a, axis=d, kind="stable")
    elif descending and a.dtype.kind == "f" and bool(xp.isnan(a).any()):
        # PyTorch counts NaN as the largest value: first when descending (NumPy puts it last either way)
        nan_last = xp.isnan(xp.take_along_axis(a, idx, axis=d))
        idx = xp.take_along_axis(idx, xp.argsort(~nan_last, axis=d, kind="stable"), axis=d)
    idx = Tensor._make(idx.astype("int64") if self.ndim else idx.astype("int64").reshape(()))
    return SortResult(O.gather(self, d, idx) if self.ndim else self, idx)


def _argsort(self, dim=-1, descending=False, stable=False):
    """The indices that sort ``self`` along ``dim``."""
    return _sort(self, dim, descending).indices


def _topk(self, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - PyTorch's name
    """The ``k`` largest (or smallest) entries along ``dim`` and their indices, largest first."""
    d = one_dim(dim, self.ndim, "topk") if self.ndim else 0
    n = self.shape[d] if self.ndim else 1
    k = _c.size(k, "topk", "k", None)
    largest, sorted = _c.flag(largest, "topk", "largest"), _c.flag(sorted, "topk", "sorted")  # noqa: A001
    if not 0 <= k <= n:
        raise ArgumentError(f"topk: k={k} is out of range for dim {dim} of size {n} (input {tuple(self.shape)})")
    _, idx = _sort(self, d, descending=largest)
    idx = idx[(slice(None),) * d + (slice(0, int(k)),)] if self.ndim else idx
    if self.ndim and k:  # ties, NaNs (or sorted=False, PyTorch's nth_element order): PyTorch's pick, replayed
        rows = _host_rows(self, d)
        which = _tied(rows) if sorted else np.ones(rows.shape[0], bool)
        idx = _replay(self, d, idx, which, lambda row: _stdsort.topk_row(row, int(k), largest, bool(sorted)))
    return SortResult(O.gather(self, d, idx) if self.ndim else self, idx)


@export(method=True)
def msort(input):
    """``input`` sorted along dim 0 (the values of ``sort(input, 0)``)."""
    return input.sort(0).values


def _nanmedian_samples(src):
    yield Sample((src.tensor((3, 5), distinct=True),), desc="no NaN")
    yield Sample((src.tensor((3, 4), distinct=True),), dict(dim=1), desc="no NaN, along a dim")
    x = src.values((3, 5), distinct=True)
    x[0, 1] = x[2, 0] = x[2, 3] = np.nan
    yield Sample((Tensor._make(x).requires_grad_(True),), dict(dim=1, keepdim=src.boolean()), desc="NaNs in rows")


@register(method=True, samples=_nanmedian_samples, formula="dX = dY at the median element (over all elements: shared evenly by the elements equal to it), 0 elsewhere",
          torch=lambda torch, x, *a, **k: torch.nanmedian(x, *a, **k))
def nanmedian(input, dim=None, keepdim=False):
    """``median`` ignoring NaNs (the lower middle of the values that are not NaN; NaN where all are)."""
    x = check_tensor(input, "nanmedian")
    return _median("nanmedian", x, dim, keepdim, ignore_nan=True)
