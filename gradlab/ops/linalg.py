"""The ``gradlab.linalg`` namespace (as ``torch.linalg``): ``vector_norm``, ``matrix_norm``, ``norm``.

Each is written with ``gradlab.norm``, ``sum``, ``abs`` and ``amax``, so gradients need no formula
of their own.
"""
from __future__ import annotations

from .. import checks as _c, ops as O
from ..errors import ShapeError, fmt_shape
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


# ------------------------------------------------- the decompositions and solves students meet
# Each is one Op: forward on arrays (NumPy's / CuPy's LAPACK), ``vjp`` written with gradlab ops, so the
# gradient is itself differentiable. The rules are PyTorch's (torch/csrc/autograd/FunctionsManual.cpp).
import collections as _collections

import numpy as _np

from ..autograd.function import Op as _Op
from ..backend.device import xp_of as _xp_of
from ..errors import ArgumentError as _ArgumentError, GradError as _GradError
from .registry import Sample as _Sample, register as _register

_EighResult = _collections.namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
_QRResult = _collections.namedtuple("linalg_qr", ["Q", "R"])
_SVDResult = _collections.namedtuple("linalg_svd", ["U", "S", "Vh"])
_SlogdetResult = _collections.namedtuple("linalg_slogdet", ["sign", "logabsdet"])


def _square(A, op, arg="A"):
    A = check_tensor(A, f"linalg.{op}", arg)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ShapeError(f"linalg.{op}: {arg} must be a square matrix or a batch of square matrices (..., n, n), "
                         f"got shape {fmt_shape(A.shape)}")
    return _float(A, op, arg)


def _matrix(A, op, arg="A"):
    A = check_tensor(A, f"linalg.{op}", arg)
    if A.ndim < 2:
        raise ShapeError(f"linalg.{op}: {arg} must be a matrix or a batch of matrices (..., m, n), got shape "
                         f"{fmt_shape(A.shape)}")
    return _float(A, op, arg)


def _float(A, op, arg):
    from ..backend import dtypes as _dt
    from ..errors import DTypeError
    if not _dt.is_floating(A.dtype) or A.dtype.itemsize < 4:
        raise DTypeError(f"linalg.{op}: {arg} must be float32 or float64, got {_dt.dtype_name(A.dtype)}; "
                         f"convert with {arg}.float() (or .double())")
    return A


def _lapack(op, fn, *arrays, what="the input matrix is singular"):
    try:
        return fn(*arrays)
    except _np.linalg.LinAlgError as e:
        raise _ArgumentError(f"linalg.{op}: {what} ({e}); the operation has no result for it") from None


def _column_signs(v):
    """+-1 per column making each column's largest-magnitude entry positive: a fixed sign for eigenvectors and
    singular vectors (LAPACK's choice is arbitrary and may flip under a tiny change of the input)."""
    if v.shape[-2] == 0:  # an empty matrix: no entry to fix a sign by (and argmax has nothing to pick)
        return _np.ones(v.shape[:-2] + (1, v.shape[-1]), dtype=v.dtype)
    idx = _np.argmax(_np.abs(v), axis=-2)[..., None, :]
    top = _np.take_along_axis(v, idx, axis=-2)
    return _np.where(top < 0, -1.0, 1.0).astype(v.dtype)


def _diag_embed(v):
    """(..., n) -> (..., n, n) with ``v`` on the diagonal (differentiable)."""
    from ..factories import eye
    n = v.shape[-1]
    return O.unsqueeze(v, -1) * eye(n, dtype=v.dtype, device=v.device)


def _sym(X):
    return (X + X.mT) * 0.5


class Inv(_Op):
    name = "linalg_inv"
    formula = "dA = -Y^T dY Y^T   (Y = A^-1)"

    @staticmethod
    def forward(ctx, A):
        y = _lapack("inv", _np.linalg.inv, A._data)
        ctx.save_output(y)
        return y

    def vjp(self, g):
        (y,) = self.saved_tensors
        return (-O.matmul(O.matmul(y.mT, g), y.mT),)

    def jvp(self, t):
        y = self.out
        return -O.matmul(O.matmul(y, t), y)


def inv(A, *, out=None):
    """``torch.linalg.inv``: the inverse of a square matrix (or of each matrix in a batch)."""
    return Inv.apply(_square(A, "inv"))


class Det(_Op):
    name = "linalg_det"
    formula = "dA = dY * det(A) * A^-T"

    @staticmethod
    def forward(ctx, A):
        ctx.save_for_backward(A)
        y = _np.linalg.det(A._data)
        ctx.save_output(_xp_of(A._data).asarray(y, dtype=A._data.dtype))
        return _xp_of(A._data).asarray(y, dtype=A._data.dtype)

    def vjp(self, g):
        A, d = self.saved_tensors
        return (O.unsqueeze(O.unsqueeze(g * d, -1), -1) * inv(A).mT,)

    def jvp(self, t):
        (A,) = self.args
        return self.out * O.sum(O.diagonal(O.matmul(inv(A), t), 0, -2, -1), -1)


def det(A, *, out=None):
    """``torch.linalg.det``: the determinant of a square matrix (or of each in a batch). Its gradient,
    ``det(A) A^-T``, needs ``A`` invertible."""
    return Det.apply(_square(A, "det"))


def slogdet(A, *, out=None):
    """``torch.linalg.slogdet``: ``(sign, log|det A|)``; the gradient flows through ``logabsdet``
    (``d log|det A| = A^-T``), written with ``det``."""
    A = _square(A, "slogdet")
    d = det(A)
    return _SlogdetResult(O.sign(d.detach()), O.log(O.abs(d)))


def _solve_arrays(a, b, vector):
    if vector:
        return _np.linalg.solve(a, b[..., None])[..., 0]
    return _np.linalg.solve(a, b)


class Solve(_Op):
    name = "linalg_solve"
    formula = "dB = solve(A^T, dY) ; dA = -dB X^T   (X = A^-1 B)"

    @staticmethod
    def forward(ctx, A, B, vector):
        x = _lapack("solve", _solve_arrays, A._data, B._data, vector)
        ctx.save_for_backward(A, B, vector)
        ctx.save_output(x)
        return x

    def vjp(self, g):
        A, B, vector, x = self.saved_tensors
        gB = solve(A.mT, g) if not vector else O.squeeze(solve(A.mT, O.unsqueeze(g, -1)), -1)
        if vector:
            gA = -O.unsqueeze(gB, -1) * O.unsqueeze(x, -2)
        else:
            gA = -O.matmul(gB, x.mT)
        return O.sum_to(gA, A.shape), O.sum_to(gB, B.shape), None

    def jvp(self, tA, tB, _):
        A, B, vector = self.args
        x = self.out
        rhs = None
        if tB is not None:
            rhs = tB
        if tA is not None:
            ax = O.squeeze(O.matmul(tA, O.unsqueeze(x, -1)), -1) if vector else O.matmul(tA, x)
            rhs = -ax if rhs is None else rhs - ax
        return solve(A, rhs)


def solve(A, B, *, left=True, out=None):
    """``torch.linalg.solve``: ``X`` with ``A @ X = B`` (``B`` a matrix ``(..., n, k)`` or a vector
    ``(..., n)``; batch dims broadcast). ``left=False`` solves ``X @ A = B``."""
    A = _square(A, "solve")
    B = _float(check_tensor(B, "linalg.solve", "B"), "solve", "B")
    if not left:
        return solve(A.mT, B.mT).mT
    n = A.shape[-1]
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if (vector and B.shape[-1] != n) or (not vector and B.shape[-2] != n):
        raise ShapeError(f"linalg.solve: A is {fmt_shape(A.shape)} but B is {fmt_shape(B.shape)}; B must have "
                         f"{n} rows (shape (..., {n}, k) or (..., {n}))")
    if A.dtype != B.dtype:
        from ..errors import DTypeError
        raise DTypeError(f"linalg.solve: A is {A.dtype} but B is {B.dtype}; convert one so both match")
    if not vector:
        try:
            batch = _np.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2]))
        except ValueError:
            raise ShapeError(f"linalg.solve: the batch dims of A {fmt_shape(A.shape)} and B {fmt_shape(B.shape)} do not "
                             "broadcast (each pair of sizes must match or one be 1)") from None
        if tuple(A.shape[:-2]) != batch:
            A = O.broadcast_to(A, batch + tuple(A.shape[-2:]))
        if tuple(B.shape[:-2]) != batch:
            B = O.broadcast_to(B, batch + tuple(B.shape[-2:]))
    return Solve.apply(A, B, vector)


def _phi(X):
    """The lower triangle with the diagonal halved (the Cholesky rules' Phi)."""
    return O.tril(X, -1) + _diag_embed(O.diagonal(X, 0, -2, -1) * 0.5)


class Cholesky(_Op):
    name = "linalg_cholesky"
    formula = "dA = sym(L^-T Phi(L^T dL) L^-1)   (Phi: lower triangle, half diagonal)"

    @staticmethod
    def forward(ctx, A, upper):
        a = A._data
        a = (a + _np.swapaxes(a, -1, -2)) * 0.5
        L = _lapack("cholesky", _np.linalg.cholesky, a, what="the input is not positive-definite")
        ctx.upper = upper
        ctx.save_output(L)
        return _np.swapaxes(L, -1, -2).copy() if upper else L

    def vjp(self, g):
        (L,) = self.saved_tensors
        if self.upper:
            L, g = L.mT, g.mT
        Linv = inv(L)
        return (_sym(O.matmul(O.matmul(Linv.mT, _phi(O.matmul(L.mT, g))), Linv)), None)

    def jvp(self, t, _):
        L = self.out.mT if self.upper else self.out
        Linv = inv(L)
        dL = O.matmul(L, _phi(O.matmul(O.matmul(Linv, _sym(t)), Linv.mT)))
        return dL.mT if self.upper else dL


def cholesky(A, *, upper=False, out=None):
    """``torch.linalg.cholesky``: lower-triangular ``L`` with ``A = L L^T`` for a symmetric positive-definite
    ``A``. gradlab factors the symmetric part ``(A + A^T)/2`` (PyTorch reads only the lower triangle): the same
    for every symmetric input, and the gradient is PyTorch's symmetric one."""
    return Cholesky.apply(_square(A, "cholesky"), _c.flag(upper, "cholesky", "upper"))


class QR(_Op):
    name = "linalg_qr"
    formula = "dA = (dQ + Q copyltu(triu(dR R^T - Q^T dQ))) R^-T   (m >= n, reduced)"

    @staticmethod
    def forward(ctx, A, mode):
        q, r = _np.linalg.qr(A._data, mode=mode)
        ctx.mode = mode
        ctx.save_output(q)
        ctx.save_output(r)
        return q, r

    def vjp(self, gQ, gR):
        Q, R = self.saved_tensors
        m, n = Q.shape[-2], R.shape[-1]
        if m < n or (self.mode == "complete" and m > n):
            raise _GradError(f"linalg.qr backward: the gradient is defined for mode='reduced' with m >= n "
                             f"(A is {m}x{n}, mode={self.mode!r}), as in PyTorch; use mode='reduced' on a tall "
                             "or square matrix")
        M = O.matmul(gR, R.mT) - O.matmul(Q.mT, gQ)
        S = O.triu(M)
        S = S + S.mT - _diag_embed(O.diagonal(M, 0, -2, -1))
        B = O.matmul(Q, S) + gQ
        return (solve(R, B.mT).mT, None)


def qr(A, mode="reduced", *, out=None):
    """``torch.linalg.qr``: ``Q`` with orthonormal columns and upper-triangular ``R``, ``A = Q R``
    (``mode='reduced'`` or ``'complete'``; the gradient is defined for reduced, ``m >= n``)."""
    A = _matrix(A, "qr")
    if mode not in ("reduced", "complete"):
        raise _ArgumentError(f"linalg.qr: mode must be 'reduced' or 'complete' (gradlab has no 'r'), got {mode!r}")
    return _QRResult(*QR.apply(A, mode))


def _skew(X):
    return X - X.mT


class Eigh(_Op):
    name = "linalg_eigh"
    formula = "dA = V (diag(dL) + skew(V^T dV)/2 / (L_j - L_i)) V^T"

    @staticmethod
    def forward(ctx, A):
        a = A._data
        a = (a + _np.swapaxes(a, -1, -2)) * 0.5
        w, v = _lapack("eigh", _np.linalg.eigh, a, what="the eigenvalue algorithm did not converge")
        v = v * _column_signs(v)
        ctx.save_output(w)
        ctx.save_output(v)
        return w, v

    @staticmethod
    def _E(w):
        E = O.unsqueeze(w, -2) - O.unsqueeze(w, -1)  # E[i, j] = L_j - L_i
        from ..factories import eye
        return E + eye(w.shape[-1], dtype=w.dtype, device=w.device)  # 1 on the diagonal (a skew part has 0 there)

    def vjp(self, gL, gV):
        w, V = self.saved_tensors
        inner = _skew(O.matmul(V.mT, gV)) * 0.5 / self._E(w) + _diag_embed(gL)
        return (O.matmul(O.matmul(V, inner), V.mT),)

    def jvp(self, t):
        w, V = self.out
        P = O.matmul(O.matmul(V.mT, _sym(t)), V)
        dw = O.diagonal(P, 0, -2, -1)
        off = P - _diag_embed(dw)
        return dw, O.matmul(V, off / self._E(w))


def eigh(A, UPLO="L", *, out=None):
    """``torch.linalg.eigh``: eigenvalues (ascending) and orthonormal eigenvectors of a symmetric matrix, each
    eigenvector signed so that its largest-magnitude entry is positive (PyTorch leaves LAPACK's arbitrary sign).
    gradlab decomposes the symmetric part ``(A + A^T)/2`` (PyTorch reads one triangle, ``UPLO``): the same for
    every symmetric input. The eigenvectors' gradient needs distinct eigenvalues (it divides by their gaps)."""
    return _EighResult(*Eigh.apply(_square(A, "eigh")))


def eigvalsh(A, UPLO="L", *, out=None):
    """``torch.linalg.eigvalsh``: the eigenvalues of ``eigh``."""
    return eigh(A, UPLO).eigenvalues


class SVD(_Op):
    name = "linalg_svd"
    formula = "dA = U [(skew(U^T dU) S + S skew(V^T dV)) / (S_j^2 - S_i^2) + diag(dS)] V^T (+ the m != n terms)"

    @staticmethod
    def forward(ctx, A, full_matrices):
        u, s, vh = _lapack("svd", lambda a: _np.linalg.svd(a, full_matrices=full_matrices), A._data,
                           what="the SVD did not converge")
        signs = _column_signs(u[..., :s.shape[-1]])
        u = u.copy()
        u[..., :s.shape[-1]] *= signs
        vh = vh.copy()
        vh[..., :s.shape[-1], :] *= _np.swapaxes(signs, -1, -2)
        ctx.full = full_matrices
        ctx.save_output(u)
        ctx.save_output(s)
        ctx.save_output(vh)
        return u, s, vh

    def vjp(self, gU, gS, gVh):
        U, S, Vh = self.saved_tensors
        m, n = U.shape[-2], Vh.shape[-1]
        if self.full and m != n:
            raise _GradError(f"linalg.svd backward: with full_matrices=True the gradient of U and Vh is not "
                             f"defined for a {m}x{n} matrix (as in PyTorch); call linalg.svd(A, "
                             "full_matrices=False)")
        if not bool(O.any(gU != 0)) and not bool(O.any(gVh != 0)):
            return (O.matmul(U * O.unsqueeze(gS, -2), Vh), None)
        k = S.shape[-1]
        S2 = S * S
        from ..factories import eye
        E = O.unsqueeze(S2, -2) - O.unsqueeze(S2, -1) + eye(k, dtype=S.dtype, device=S.device)
        UhgU = _skew(O.matmul(U.mT, gU))
        VhgV = _skew(O.matmul(Vh, gVh.mT))
        gA = (UhgU * O.unsqueeze(S, -2) + O.unsqueeze(S, -1) * VhgV) / E + _diag_embed(gS)
        if m > n:
            gUSinv = gU / O.unsqueeze(S, -2)
            gA = O.matmul(U, gA) + gUSinv - O.matmul(U, O.matmul(U.mT, gUSinv))
            gA = O.matmul(gA, Vh)
        elif m < n:
            SinvgVh = gVh / O.unsqueeze(S, -1)
            gA = O.matmul(gA, Vh) + SinvgVh - O.matmul(O.matmul(SinvgVh, Vh.mT), Vh)
            gA = O.matmul(U, gA)
        else:
            gA = O.matmul(U, O.matmul(gA, Vh))
        return (gA, None)


def svd(A, full_matrices=True, *, driver=None, out=None):
    """``torch.linalg.svd``: ``A = U diag(S) Vh`` with singular values descending, each column of ``U`` signed so
    that its largest-magnitude entry is positive (and ``Vh``'s row with it; PyTorch leaves LAPACK's sign). The gradient through
    ``U``/``Vh`` needs distinct nonzero singular values, and ``full_matrices=False`` unless ``A`` is square."""
    return _SVDResult(*SVD.apply(_matrix(A, "svd"), bool(full_matrices)))


def svdvals(A, *, driver=None, out=None):
    """``torch.linalg.svdvals``: the singular values of ``A`` (descending)."""
    return SVD.apply(_matrix(A, "svdvals"), False)[1]


# ---------------------------------------------------------------- samples: well-conditioned matrices
def _batch(src):
    return src.choice([(), (2,)])


def _conditioned(src, shape, spread=(1.0, 3.0)):
    """A matrix with singular values spread over ``spread`` and well apart (so every gradient is defined)."""
    *batch, m, n = shape
    k = min(m, n)
    out = _np.empty(shape)
    for idx in _np.ndindex(*batch):
        qa, _ = _np.linalg.qr(src.rng.standard_normal((m, m)))
        qb, _ = _np.linalg.qr(src.rng.standard_normal((n, n)))
        s = _np.linspace(spread[0], spread[1], k) if k > 1 else _np.array([spread[1]])
        s = src.rng.permutation(s)
        d = _np.zeros((m, n))
        d[range(k), range(k)] = s
        out[idx] = qa @ d @ qb.T
    from .._tensor import Tensor
    return Tensor._make(out).requires_grad_(True)


def _spd(src, shape):
    *batch, n, _ = shape
    out = _np.empty(shape)
    for idx in _np.ndindex(*batch):
        q, _ = _np.linalg.qr(src.rng.standard_normal((n, n)))
        out[idx] = q @ _np.diag(_np.linspace(1.0, 3.0, n)) @ q.T
    from .._tensor import Tensor
    return Tensor._make(out).requires_grad_(True)


def _square_samples(src):
    n = src.integers(1, 4)
    yield _Sample((_conditioned(src, _batch(src) + (n, n)),), desc="square")


def _solve_samples(src):
    n = src.integers(1, 4)
    b = _batch(src)
    yield _Sample((_conditioned(src, b + (n, n)), src.tensor(b + (n, src.integers(1, 3)))), desc="matrix B")
    yield _Sample((_conditioned(src, (n, n)), src.tensor((n,))), desc="vector B")
    yield _Sample((_conditioned(src, (2, n, n)), src.tensor((n, 2))), desc="B broadcast over A's batch")


def _spd_samples(src):
    n = src.integers(1, 4)
    yield _Sample((_spd(src, _batch(src) + (n, n)),), desc="symmetric positive-definite")
    yield _Sample((_spd(src, (n, n)),), dict(upper=True), desc="upper")


def _eigh_samples(src):
    n = src.integers(1, 4)
    yield _Sample((_sym_distinct(src, _batch(src) + (n, n)),), desc="symmetric, distinct eigenvalues")


def _sym_distinct(src, shape):
    *batch, n, _ = shape
    out = _np.empty(shape)
    for idx in _np.ndindex(*batch):
        q, _ = _np.linalg.qr(src.rng.standard_normal((n, n)))
        out[idx] = q @ _np.diag(src.rng.permutation(_np.linspace(-2.0, 2.0, n))) @ q.T
    from .._tensor import Tensor
    return Tensor._make(out).requires_grad_(True)


def _tall_samples(src):
    n = src.integers(1, 3)
    m = n + src.integers(0, 2)
    yield _Sample((_conditioned(src, _batch(src) + (m, n)),), desc="tall or square")


def _svd_samples(src):
    n = src.integers(1, 3)
    m = n + src.integers(0, 2)
    shape = (m, n) if src.boolean() else (n, m)
    yield _Sample((_conditioned(src, _batch(src) + shape),), dict(full_matrices=False), desc="reduced")
    yield _Sample((_conditioned(src, (n, n)),), desc="square, full_matrices=True")


_register("inv", namespace="gradlab.linalg", op=Inv, samples=_square_samples,
          torch=lambda torch, A: torch.linalg.inv(A))(inv)
_register("det", namespace="gradlab.linalg", op=Det, samples=_square_samples,
          torch=lambda torch, A: torch.linalg.det(A))(det)
_register("slogdet", namespace="gradlab.linalg", samples=_square_samples, formula="dA = dlogabsdet * A^-T",
          torch=lambda torch, A: torch.linalg.slogdet(A).logabsdet)(lambda A: slogdet(A).logabsdet)
_register("solve", namespace="gradlab.linalg", op=Solve, samples=_solve_samples,
          torch=lambda torch, A, B: torch.linalg.solve(A, B))(solve)
_register("cholesky", namespace="gradlab.linalg", op=Cholesky, samples=_spd_samples,
          torch=lambda torch, A, **kw: torch.linalg.cholesky(A, **kw))(cholesky)
_register("qr", namespace="gradlab.linalg", op=QR, samples=_tall_samples, jvp=False,
          torch=lambda torch, A: torch.linalg.qr(A))(qr)
_register("eigh", namespace="gradlab.linalg", op=Eigh, samples=_eigh_samples,
          torch=lambda torch, A: torch.linalg.eigh(A))(eigh)
_register("eigvalsh", namespace="gradlab.linalg", samples=_eigh_samples, formula="dA = V diag(dL) V^T",
          torch=lambda torch, A: torch.linalg.eigvalsh(A))(eigvalsh)
# svd's U and Vh are unique only up to the signs of their columns, which LAPACK builds may choose differently:
# the registry compares the gauge-free svdvals with PyTorch; tests/test_linalg.py compares svd sign-aligned.
_register("svd", namespace="gradlab.linalg", op=SVD, samples=_svd_samples, jvp=False)(svd)
_register("svdvals", namespace="gradlab.linalg", samples=_svd_samples, formula="dA = U diag(dS) V^T",
          jvp=False, torch=lambda torch, A, **kw: torch.linalg.svdvals(A))(
    lambda A, full_matrices=False: svdvals(A))
