"""Sparse COO tensors, enough for graph networks: ``sparse_coo_tensor``, ``Tensor.to_sparse``,
``to_dense``, ``coalesce``, ``indices``/``values``, and the sparse-times-dense product.

A COO ("coordinate") tensor stores only its nonzero entries: ``indices``, an int64 tensor of shape
``(sparse_dim, nnz)`` whose column ``j`` is the position of entry ``j``, and ``values``, shape
``(nnz, *dense_dims)``. A graph's adjacency matrix with ``E`` edges is ``E`` numbers instead of ``N^2``.

Autograd: the values are an ordinary tensor (a leaf, or the output of ops), so a gradient reaches them
through its two ops, ``SparseMM`` (``S @ D``) and ``SparseToDense`` (in ``gradlab/ops/sparse_ops.py``); ``coalesce`` and
``to_sparse`` are made of ordinary differentiable ops (``index_add``, indexing). The indices carry no
gradient (they are integers). ``show_graph`` draws these ops like any other.

Only what graph networks use is supported; every other operation on a sparse tensor is refused with a
message saying what to do (usually ``.to_dense()`` first), never a silent wrong answer.
"""
from __future__ import annotations

import numpy as np

from .. import ops as O
from .._tensor import Tensor
from ..backend import dtypes as _dt
from ..errors import ArgumentError, ArgumentTypeError, GradlabError, ShapeError, fmt_shape
from ..ops.sparse_ops import SparseMM, SparseToDense


class Layout:
    """A tensor layout, as ``torch.strided`` / ``torch.sparse_coo``."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"gradlab.{self.name}"


strided = Layout("strided")
sparse_coo = Layout("sparse_coo")


class SparseNotSupported(GradlabError, NotImplementedError):
    """An operation gradlab's sparse COO tensors do not have (PyTorch raises NotImplementedError or
    RuntimeError for the ones its sparse backend lacks; NotImplementedError subclasses RuntimeError)."""


SUPPORTED = ("to_dense(), coalesce(), indices()/values(), t(), detach(), requires_grad_(), and "
             "gradlab.sparse.mm / gradlab.spmm / gradlab.mm / @ with a dense matrix")


def refusal(what):
    return SparseNotSupported(f"{what}: not supported on a sparse COO tensor in gradlab; sparse tensors have "
                              f"{SUPPORTED}. Call .to_dense() first for anything else")


# ------------------------------------------------------------------ the tensor
class SparseCOOTensor:
    """A sparse tensor in COO form (``layout == gradlab.sparse_coo``); made by ``sparse_coo_tensor`` or
    ``x.to_sparse()``."""

    layout = sparse_coo
    is_sparse = True

    def __init__(self, indices, values, size, coalesced=False):
        self._idx = indices          # a host int64 array (sparse_dim, nnz)
        self._vals = values          # a Tensor (nnz, *dense_dims)
        self._size = tuple(size)
        self._coalesced = coalesced

    # shapes and metadata
    @property
    def shape(self):
        return self._size

    def size(self, dim=None):
        return self._size if dim is None else self._size[dim]

    def dim(self):
        return len(self._size)

    ndim = property(dim)

    def sparse_dim(self):
        return self._idx.shape[0]

    def dense_dim(self):
        return len(self._size) - self._idx.shape[0]

    def _nnz(self):
        return self._idx.shape[1]

    @property
    def dtype(self):
        return self._vals.dtype

    @property
    def device(self):
        return self._vals.device

    @property
    def requires_grad(self):
        return self._vals.requires_grad

    @property
    def grad_fn(self):
        return self._vals.grad_fn

    @property
    def is_leaf(self):
        return self._vals.is_leaf

    @property
    def grad(self):
        """The gradient of a leaf sparse tensor: a sparse tensor with the same indices (PyTorch's too)."""
        if not self._vals.is_leaf or self._vals.grad is None:
            return None
        return SparseCOOTensor(self._idx, self._vals.grad, self._size, self._coalesced)

    def requires_grad_(self, requires_grad=True):
        self._vals.requires_grad_(requires_grad)
        return self

    def is_coalesced(self):
        return self._coalesced

    def _indices(self):
        return Tensor._make(self._idx.copy())

    def _values(self):
        return self._vals

    def indices(self):
        """The positions of the stored entries, ``(sparse_dim, nnz)``; only on a coalesced tensor (as PyTorch)."""
        if not self._coalesced:
            raise ArgumentError("indices: Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._indices()

    def values(self):
        """The stored entries, ``(nnz, *dense_dims)`` (with their graph); only on a coalesced tensor."""
        if not self._coalesced:
            raise ArgumentError("values: Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._vals

    # conversions
    def coalesce(self):
        """The same tensor with indices sorted and duplicates summed (differentiable in the values)."""
        if self._coalesced:
            return self
        sd = self.sparse_dim()
        if self._nnz() == 0:
            return SparseCOOTensor(self._idx, self._vals, self._size, True)
        lin = np.ravel_multi_index(tuple(self._idx), self._size[:sd])
        uniq, inverse = np.unique(lin, return_inverse=True)
        idx = np.stack(np.unravel_index(uniq, self._size[:sd])).astype(np.int64)
        vals = O.zeros((len(uniq),) + tuple(self._vals.shape[1:]), dtype=self._vals.dtype)
        vals = vals.index_add(0, Tensor._make(inverse.astype(np.int64).reshape(-1)), self._vals)
        return SparseCOOTensor(idx, vals, self._size, True)

    def to_dense(self, dtype=None):
        out = SparseToDense.apply(self._vals, self._idx, self._size)
        return out if dtype is None else out.to(dtype)

    def t(self):
        """The transpose of a 2-D sparse matrix (rows and columns of the indices swapped)."""
        if self.sparse_dim() != 2 or self.dense_dim():
            raise refusal("t (of other than a 2-D sparse matrix)")
        return SparseCOOTensor(self._idx[::-1].copy(), self._vals, self._size[::-1])

    def detach(self):
        return SparseCOOTensor(self._idx, self._vals.detach(), self._size, self._coalesced)

    def to_sparse(self):
        return self

    # products
    def _sparse_mm(self, other, fn):
        return _mm(self, other, fn)

    def __matmul__(self, other):
        return _mm(self, other, "matmul")

    def mm(self, other):
        return _mm(self, other, "mm")

    matmul = __matmul__

    def __repr__(self):
        return (f"tensor(indices={self._indices()!r},\n       values={self._vals!r},\n       size={self._size}, "
                f"nnz={self._nnz()}, layout=gradlab.sparse_coo)")

    def _refused(self, what):
        raise refusal(what)

    def __getattr__(self, name):
        if not name.startswith("_") and hasattr(Tensor, name):
            raise refusal(f"x.{name}")
        raise AttributeError(f"'SparseCOOTensor' object has no attribute {name!r}")

    # every operator is refused (a silent densification would hide an N^2 memory cost)
    for _op in ("add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "pow", "neg", "rmatmul",
                "getitem", "setitem", "iadd", "imul", "lt", "le", "gt", "ge", "abs"):
        locals()[f"__{_op}__"] = (lambda n: lambda self, *a: self._refused(f"the {n} operator"))(_op)
    del _op

    def __array__(self, *a, **k):
        raise refusal("converting to a NumPy array")

    def __bool__(self):
        raise refusal("bool()")

    def __len__(self):
        return self._size[0]


def _mm(s, other, fn):
    if not isinstance(other, Tensor):
        what = "a sparse matrix" if isinstance(other, SparseCOOTensor) else type(other).__name__
        raise refusal(f"{fn} of a sparse matrix with {what} (only a dense Tensor is supported)")
    if s.sparse_dim() != 2 or s.dense_dim():
        raise refusal(f"{fn} with a sparse tensor of shape {fmt_shape(s.shape)} (only 2-D sparse matrices)")
    if other.ndim != 2:
        raise ShapeError(f"{fn}: a sparse matrix times a dense one needs a 2-D dense matrix, got shape "
                         f"{fmt_shape(other.shape)}")
    if other.shape[0] != s.shape[1]:
        raise ShapeError(f"{fn}: cannot multiply the sparse {fmt_shape(s.shape)} by {fmt_shape(other.shape)}: "
                         f"inner dimensions {s.shape[1]} and {other.shape[0]} differ")
    if other.dtype != s.dtype:
        raise ArgumentError(f"{fn}: the sparse matrix has dtype {_dt.dtype_name(s.dtype)} and the dense one "
                            f"{_dt.dtype_name(other.dtype)}; convert one with .to()")
    return SparseMM.apply(s._vals, other, s._idx, s._size)


# ------------------------------------------------------------------ construction
def _as_tensor(x, what, dtype=None):
    from ..factories import tensor
    if isinstance(x, Tensor):
        return x if dtype is None else x.to(dtype)
    if isinstance(x, SparseCOOTensor):
        raise ArgumentTypeError(f"sparse_coo_tensor: {what} must be dense, got a sparse tensor")
    return tensor(x, dtype=dtype)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, requires_grad=False,
                      check_invariants=None, is_coalesced=None):
    """A sparse COO tensor with ``values[j]`` at position ``indices[:, j]`` (PyTorch's signature).

    ``size`` defaults to the smallest shape holding every index. Repeated positions are allowed (they
    are summed by ``coalesce`` and ``to_dense``). ``requires_grad=True`` makes the values a leaf that
    collects gradients (``S.grad`` is then sparse, with ``S``'s indices).
    """
    idx_t = _as_tensor(indices, "indices")
    if idx_t.dtype.kind not in "iu":
        raise ArgumentTypeError(f"sparse_coo_tensor: indices must be an int64 tensor, got dtype "
                                f"{_dt.dtype_name(idx_t.dtype)}")
    idx = np.asarray(idx_t.numpy(), dtype=np.int64)
    if idx.ndim != 2:
        raise ShapeError(f"sparse_coo_tensor: indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    vals = _as_tensor(values, "values", dtype)
    if vals.ndim == 0:
        raise ShapeError("sparse_coo_tensor: values must be at least 1-D (one entry per column of indices)")
    if vals.shape[0] != idx.shape[1]:
        raise ShapeError(f"sparse_coo_tensor: indices and values must have same nnz, but got nnz from indices: "
                         f"{idx.shape[1]}, nnz from values: {vals.shape[0]}")
    if idx.size and idx.min() < 0:
        raise ArgumentError(f"sparse_coo_tensor: found negative index {int(idx.min())} in indices")
    sd = idx.shape[0]
    if size is None:
        size = tuple(int(m) + 1 for m in (idx.max(1) if idx.shape[1] else np.zeros(sd, int) - 1)) + tuple(vals.shape[1:])
    else:
        size = tuple(int(s) for s in (size if isinstance(size, (tuple, list)) else (size,)))
        if len(size) != sd + vals.ndim - 1:
            raise ShapeError(f"sparse_coo_tensor: number of dimensions must be sparse_dim ({sd}) + dense_dim "
                             f"({vals.ndim - 1}), but got {len(size)}")
        for d in range(sd):
            if idx.shape[1] and idx[d].max() >= size[d]:
                raise ArgumentError(f"sparse_coo_tensor: size is inconsistent with indices: for dim {d}, size is "
                                    f"{size[d]} but found index {int(idx[d].max())}")
        if tuple(vals.shape[1:]) != size[sd:]:
            raise ShapeError(f"sparse_coo_tensor: values has dense shape {fmt_shape(vals.shape[1:])} but size asks "
                             f"for {fmt_shape(size[sd:])}")
    if device is not None and str(device) != "cpu":
        raise refusal(f"sparse_coo_tensor on device {device!r} (sparse tensors live on the CPU)")
    if requires_grad:
        vals = vals.detach().requires_grad_(True)
    return SparseCOOTensor(idx, vals, size, coalesced=bool(is_coalesced))


def to_sparse(self, sparse_dim=None, *, layout=None):
    """``x.to_sparse()``: a COO tensor of ``x``'s nonzero entries (its values keep ``x``'s graph)."""
    if isinstance(self, SparseCOOTensor):
        return self
    if layout is not None and layout is not sparse_coo:
        raise refusal(f"to_sparse(layout={layout!r}) (only gradlab.sparse_coo)")
    sd = self.ndim if sparse_dim is None else int(sparse_dim)
    if not 0 < sd <= self.ndim:
        raise ArgumentError(f"to_sparse: sparse_dim must be in [1, {self.ndim}] for a {self.ndim}-D tensor, got {sd}")
    a = np.asarray(self.detach().numpy())
    nonzero = a.reshape(a.shape[:sd] + (-1,)).any(-1) if sd < a.ndim else a != 0
    idx = np.stack(np.nonzero(nonzero)).astype(np.int64) if a.ndim else np.zeros((0, 1), np.int64)
    vals = self[tuple(Tensor._make(np.ascontiguousarray(r)) for r in idx)]
    return SparseCOOTensor(idx, vals, tuple(self.shape), coalesced=True)
