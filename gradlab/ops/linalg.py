"""Matrix multiplication, the op that does nearly all of a network's work.

For ``Y = A @ B`` the VJP is two more matmuls::

    dA = dY @ B^T        dB = A^T @ dY

(summed over broadcast batch dims). 1-D operands are treated as a row (left)
or a column (right) vector and the added dimension is removed again, exactly
as NumPy and PyTorch do.
"""
from __future__ import annotations

import numpy as np

from .. import ops as O
from ..autograd.function import Op
from ..amp.state import autocast_args as _autocast_args, state as _amp  # autocast policy (gradlab.amp)
from ..backend.device import xp_of
from ..errors import DTypeError, ShapeError, broadcast_failure, fmt_shape
from ._util import arrays_for, check_tensor
from .reduce import sum_to_array
from .registry import Sample, register


class MatMul(Op):
    name = "matmul"
    formula = "dA = dY @ B^T ; dB = A^T @ dY"

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        x, y, dt = arrays_for("matmul", a, b)
        x, y = blas_ready(x), blas_ready(y)
        if dt.itemsize <= 2:  # float16/bfloat16 products may overflow to inf: quietly, as in PyTorch
            with np.errstate(over="ignore", invalid="ignore"):
                out = np.matmul(x, y)
        else:
            out = np.matmul(x, y)
        return out if out.dtype == dt else out.astype(dt)  # NumPy returns float32 for bfloat16 operands

    def vjp(self, g):
        a, b = self.saved_tensors
        if a.ndim == 2 and b.ndim == 2:  # the common case, said plainly
            return O.matmul(g, b.mT), O.matmul(a.mT, g)
        return _vjp_general(a, b, g)

    def vjp_arrays(self, g):
        """``vjp`` on arrays: the same matmuls, none for an input that needs no gradient.

        A transpose is a view (NumPy's matmul hands transposed operands to BLAS as
        they are, with no copy), so each gradient costs exactly one matmul.
        """
        a, b = self.saved_arrays
        a, b, g = blas_ready(a), blas_ready(b), blas_ready(g)
        need_a, need_b = self.next_functions[0] is not None, self.next_functions[1] is not None
        if g.dtype.itemsize <= 2:  # float16 products may overflow to inf: quietly, as the forward
            with np.errstate(over="ignore", invalid="ignore"):
                return _vjp_arrays(a, b, g, need_a, need_b)
        return _vjp_arrays(a, b, g, need_a, need_b)

    def jvp(self, ta, tb):
        a, b = self.args
        out = None if ta is None else O.matmul(ta, b)
        if tb is not None:
            out = O.matmul(a, tb) if out is None else out + O.matmul(a, tb)
        return out


def _vjp_general(a, b, g):
    """1-D and batched cases: lift to matrices, use the 2-D rule, undo the lift."""
    if a.ndim == 1 and b.ndim == 1:  # a dot product: Y is a scalar
        return g * b, g * a
    a2 = O.unsqueeze(a, 0) if a.ndim == 1 else a
    b2 = O.unsqueeze(b, -1) if b.ndim == 1 else b
    g2 = g
    if a.ndim == 1:
        g2 = O.unsqueeze(g2, -2)
    if b.ndim == 1:
        g2 = O.unsqueeze(g2, -1)
    da = O.sum_to(O.matmul(g2, b2.mT), a2.shape)
    db = O.sum_to(O.matmul(a2.mT, g2), b2.shape)
    return O.reshape(da, a.shape), O.reshape(db, b.shape)


def _vjp_arrays(a, b, g, need_a, need_b):
    """``_vjp_general`` (and the 2-D rule) on raw arrays."""
    if a.ndim == 2 and b.ndim == 2:
        return (np.matmul(g, b.T) if need_a else None), (np.matmul(a.T, g) if need_b else None)
    if a.ndim == 1 and b.ndim == 1:
        return (g * b if need_a else None), (g * a if need_b else None)
    a2 = a[None] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    g2 = g
    if a.ndim == 1:
        g2 = g2[..., None, :]
    if b.ndim == 1:
        g2 = g2[..., None]
    da = db = None
    if need_a:
        da = sum_to_array(np.matmul(g2, _mT(b2)), a2.shape).reshape(a.shape)
    if need_b:
        if b2.ndim == 2 and a2.ndim > 2:
            # the batch sum of A_i^T @ dY_i is one matmul over the stacked rows: (k, N) @ (N, m)
            db = np.matmul(a2.reshape(-1, a2.shape[-1]).T, g2.reshape(-1, g2.shape[-1]))
        else:
            db = sum_to_array(np.matmul(_mT(a2), g2), b2.shape)
        db = db.reshape(b.shape)
    return da, db


def blas_ready(x):
    """``x``, or a contiguous copy of it when BLAS cannot read its matrices as they are.

    BLAS needs each matrix's rows (or columns) evenly spaced with unit steps inside them.
    A broadcast gradient (``y.sum()``'s backward hands every entry the same 1: stride 0)
    or a flipped view is not; NumPy's matmul then silently falls back to a plain triple
    loop, several times slower than copying first. Transposes and slices need no copy.
    """
    if x.ndim < 2:
        return x
    r, c = x.shape[-2:]
    s0, s1 = x.strides[-2:]
    it = x.itemsize
    if (s1 == it and s0 % it == 0 and s0 >= c * it) or (s0 == it and s1 % it == 0 and s1 >= r * it):
        return x
    if r * c <= 1:
        return x
    return xp_of(x).ascontiguousarray(x)


def _mT(x):
    """The matrix transpose of the last two dims, as a view."""
    return x.swapaxes(-1, -2)


def _check(a, b, op="matmul", names=("input", "other")):
    if a.dtype != b.dtype:  # PyTorch does not promote in matrix products: "expected m1 and m2 to have the same dtype"
        raise DTypeError(f"{op}: {names[0]} {fmt_shape(a.shape)} has dtype {a.dtype} but {names[1]} "
                         f"{fmt_shape(b.shape)} has dtype {b.dtype}; matrix products need one dtype: convert one "
                         f"with .to(...) (NumPy data is float64: gradlab.tensor(arr, dtype=gradlab.float32) or x.float())")
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"matmul: both arguments need at least 1 dimension, got {fmt_shape(a.shape)} and "
                         f"{fmt_shape(b.shape)}; use * to multiply by a scalar")
    k1 = a.shape[-1]
    k2 = b.shape[-2] if b.ndim >= 2 else b.shape[0]
    if k1 != k2:
        raise ShapeError(f"matmul: cannot multiply {fmt_shape(a.shape)} by {fmt_shape(b.shape)}: inner dimensions "
                         f"{k1} and {k2} differ (the last dim of the first must equal the "
                         f"{'first' if b.ndim == 1 else 'second-to-last'} dim of the second)")
    if a.ndim > 2 and b.ndim > 2:
        try:
            np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:
            raise broadcast_failure("matmul (batch dims)", [a.shape[:-2], b.shape[:-2]], ["A", "B"]) from None


def _matmul_samples(src):
    n, k, m = src.integers(1, 4), src.integers(1, 4), src.integers(1, 4)
    yield Sample((src.tensor((n, k)), src.tensor((k, m))), desc="2-D")
    yield Sample((src.tensor((k,)), src.tensor((k,))), desc="dot")
    yield Sample((src.tensor((k,)), src.tensor((2, k, m))), desc="vector @ batch")
    yield Sample((src.tensor((2, n, k)), src.tensor((k,))), desc="batch @ vector")
    batch_a, batch_b = src.broadcast_pair(max_dims=2, max_side=3)
    yield Sample((src.tensor(batch_a + (n, k)), src.tensor(batch_b + (k, m))), desc="broadcast batch dims")
    yield Sample((src.tensor((n, 0)), src.tensor((0, m))), desc="empty inner dim")


@register(op=MatMul, samples=_matmul_samples, torch=lambda torch, a, b: torch.matmul(a, b))
def matmul(input, other):
    """Matrix product with NumPy/PyTorch rules: 1-D, 2-D and batched (batch dims broadcast)."""
    a, b = check_tensor(input, "matmul", "input"), check_tensor(other, "matmul", "other")
    if _amp.enabled:
        a, b = _autocast_args("matmul", a, b)
    _check(a, b)
    return MatMul.apply(a, b)


def mm(input, mat2):
    """2-D matrix product (``matmul`` restricted to matrices)."""
    a, b = check_tensor(input, "mm", "input"), check_tensor(mat2, "mm", "mat2")
    if a.ndim != 2 or b.ndim != 2:
        raise ShapeError(f"mm: expects two matrices, got {fmt_shape(a.shape)} and {fmt_shape(b.shape)}; use matmul for other ranks")
    return matmul(a, b)


def dot(input, other):
    a, b = check_tensor(input, "dot", "input"), check_tensor(other, "dot", "other")
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"dot: expects two 1-D tensors, got {fmt_shape(a.shape)} and {fmt_shape(b.shape)}")
    return matmul(a, b)


# ------------------------------------------------- torch.linalg's norms (gradlab.linalg.norm, ...)
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002 - PyTorch's name
    """``torch.linalg.vector_norm``: the ``ord``-norm of the flattened input (or over ``dim``);
    ``ord`` is a number, ``inf`` or ``-inf``."""
    if isinstance(ord, str):
        from ..errors import ArgumentError
        raise ArgumentError(f"linalg.vector_norm: ord must be a number (2, 1, inf, ...), got {ord!r}; "
                            "for 'fro' and 'nuc' use linalg.matrix_norm")
    return O.norm(x, p=ord, dim=dim, keepdim=keepdim, dtype=dtype)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):  # noqa: A002
    """``torch.linalg.matrix_norm``: the Frobenius norm (``ord='fro'``) or the largest absolute column sum
    (``ord=1``) / row sum (``ord=inf``) of the matrices in the last two dims."""
    from ..errors import ArgumentError
    A = check_tensor(A, "linalg.matrix_norm", "A")
    if A.ndim < 2:
        raise ShapeError(f"linalg.matrix_norm: A must have at least 2 dims, got shape {fmt_shape(A.shape)}")
    if dtype is not None:
        A = O.to(A, dtype)
    dim = tuple(d % A.ndim for d in dim)
    if ord == "fro":
        return O.norm(A, p=2, dim=dim, keepdim=keepdim)
    if ord in (1, -1, float("inf"), float("-inf")):
        rows, cols = dim
        red, keep = (rows, cols) if ord in (1, -1) else (cols, rows)  # column sums for 1, row sums for inf
        s = O.sum(O.abs(A), red, keepdim=True)
        out = O.amax(s, keep, keepdim=True) if ord > 0 else O.amin(s, keep, keepdim=True)
        return out if keepdim else O.squeeze(O.squeeze(out, max(dim)), min(dim))
    raise ArgumentError(f"linalg.matrix_norm: ord={ord!r} is not supported in gradlab; use 'fro', 1, -1, inf or -inf")


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """``torch.linalg.norm``: with ``ord=None`` the 2-norm of the flattened input (over ``dim`` if given);
    a vector norm when ``dim`` is one dim (or the input is 1-D), a matrix norm for two dims or a string ord."""
    A = check_tensor(A, "linalg.norm", "A")
    if ord is None:
        return O.norm(A, p=2, dim=dim, keepdim=keepdim, dtype=dtype)
    if isinstance(dim, int) or (dim is None and A.ndim == 1 and not isinstance(ord, str)):
        return vector_norm(A, ord, dim, keepdim, dtype=dtype)
    if dim is None and A.ndim != 2:
        raise ShapeError(f"linalg.norm: with ord={ord!r} and dim=None the input must be 1-D or 2-D, got shape "
                         f"{fmt_shape(A.shape)}; pass dim=")
    return matrix_norm(A, ord, (-2, -1) if dim is None else tuple(dim), keepdim, dtype=dtype)
