"""The ``gradlab.linalg`` namespace (as ``torch.linalg``): ``vector_norm``, ``matrix_norm``, ``norm``.

Each is written with ``gradlab.norm``, ``sum``, ``abs`` and ``amax``, so gradients need no formula
of their own.
"""
from __future__ import annotations

from .. import ops as O
from ..errors import fmt_shape, ShapeError
from ._util import check_tensor


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
