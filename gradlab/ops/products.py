"""Matrix multiplication, the op that does nearly all of a network's work, and its family:
``matmul`` (``@``), ``mm``, ``bmm``, ``dot``, ``mv``, ``addmm``, ``outer``, ``tensordot``.

For ``Y = A @ B`` the VJP is two more matmuls::

    dA = dY @ B^T        dB = A^T @ dY

(summed over broadcast batch dims). 1-D operands are treated as a row (left) or a column (right)
vector and the added dimension is removed again, exactly as NumPy and PyTorch do. The other ops
here are written with ``matmul`` or ``einsum``.
"""
from __future__ import annotations

import math

import numpy as np

from .. import checks as _c, ops as O
from .._tensor import Tensor
from ..autograd.function import Op
from ..backend import threads
from ..backend.device import xp_of
from ..errors import ArgumentError, ShapeError, broadcast_failure, fmt_shape
from ._util import OneRule, arrays_for, check_tensor
from .contraction import _LETTERS, _eq, einsum
from .reduce import sum_to_in
from .registry import Sample, export, register


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)`` (what a linear layer computes, with ``input`` the bias)."""
    input = check_tensor(input, "addmm")
    _c.number(beta, "addmm", "beta"), _c.number(alpha, "addmm", "alpha")
    _c.same_dtype("addmm", input=input, mat1=mat1, mat2=mat2)
    out = O.mm(mat1, mat2)
    out = out if alpha == 1 else out * alpha
    return out + (input if beta == 1 else input * beta)


def mv(input, vec):
    """Matrix times vector: ``input (n, m) @ vec (m,)``."""
    a, v = check_tensor(input, "mv"), check_tensor(vec, "mv", "vec")
    if a.ndim != 2 or v.ndim != 1:  # (matmul would take a vector @ vector: PyTorch's mv refuses it)
        raise ShapeError(f"mv: expects a matrix and a vector, got input {fmt_shape(a.shape)} and vec "
                         f"{fmt_shape(v.shape)}; use dot for two vectors, matmul for batches")
    _c.same_dtype("mv", input=a, vec=v)
    return O.matmul(a, v)


register('addmm', method=True, samples=lambda src: [Sample((src.tensor((3,)), src.tensor((2, 4)), src.tensor((4, 3))), dict(beta=0.5, alpha=2.0))],
         formula="dI = beta sum_to(dY) ; dM1 = alpha dY M2^T ; dM2 = alpha M1^T dY", torch=lambda torch, i, a, b, **kw: torch.addmm(i, a, b, **kw))(addmm)


register('mv', method=True, samples=lambda src: [Sample((src.tensor((2, 3)), src.tensor((3,))))],
         formula="dA = outer(dY, v) ; dv = A^T dY", torch=lambda torch, a, v: torch.mv(a, v))(mv)


class MatMul(OneRule, Op):
    name = "matmul"
    formula = "dA = dY @ B^T ; dB = A^T @ dY"

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        x, y, _ = arrays_for("matmul", a, b)
        return matmul_arrays(x, y)

    def rule(self, ns, g, a, b):  # the VJP, on tensors and arrays alike (OneRule)
        ea, eb = self.next_functions
        return matmul_vjp(ns, g, a, b, ea is not None, eb is not None)

    def jvp(self, ta, tb):
        return matmul_jvp(*self.args, ta, tb)


class Linear(OneRule, Op):
    """``x @ W^T + b`` for a matrix ``x`` ``(N, in)``, ``W`` ``(out, in)``, ``b`` ``(out,)`` or None: one node,
    as PyTorch records ``nn.Linear`` as one ``addmm`` (``F.linear`` calls it; other shapes take the composite).
    Its derivative is matmul's: read on ``Y = X @ W^T`` for ``dX``, on ``Y^T = W @ X^T`` for ``dW = dY^T @ X``,
    and the bias's the batch sum."""
    name = "linear"
    formula = "dX = dY @ W ; dW = dY^T @ X ; db = sum(dY over the batch)"

    @staticmethod
    def forward(ctx, x, w, b=None):
        ctx.save_for_backward(x, w)
        X, W, _ = arrays_for("linear", x, w, ("input", "weight"))
        # (np.matmul itself, one call fewer than matmul_arrays: linear runs this node only for dtypes of 4 bytes
        # or more, whose product NumPy returns in their own dtype, so there is no bfloat16 result to cast back)
        out = np.matmul(blas_ready(X), blas_ready(W).T)
        if b is not None:
            out += b._data
        return out

    def rule(self, ns, g, x, w):  # the VJP, on tensors and arrays alike (OneRule)
        nf = self.next_functions
        # matmul's rule on Y = X @ B with B = W^T given as W (see matmul_vjp's ``b_as_t``): one call
        dx, dw = matmul_vjp(ns, g, x, w, nf[0] is not None, nf[1] is not None, True)  # b_as_t=True
        if len(nf) == 2:
            return dx, dw
        return dx, dw, (g.sum(0) if nf[2] is not None else None)

    def jvp(self, tx, tw, tb=None):
        x, w = self.args[:2]
        out = matmul_jvp(x, w.mT, tx, None if tw is None else tw.mT)
        return tb if out is None else out if tb is None else out + tb


def matmul_vjp(ns, g, a, b, need_a=True, need_b=True, b_as_t=False):
    """The VJP of ``Y = A @ B``, stated once for every rank: ``dA = dY @ B^T``, ``dB = A^T @ dY``.

    On tensors (``ns`` is gradlab's ops: a graph, differentiable again) or arrays (the engine's fast
    path: each gradient costs one BLAS matmul, none for an input that needs no gradient; a transpose
    is a view, no copy). A 1-D operand is lifted to a matrix (a row on the left, a column on the
    right) and the gradient put back in its shape; broadcast batch dims are summed away.

    ``b_as_t=True`` (a linear layer, ``Y = X @ W^T``): ``b`` is passed as ``W = B^T``, 2-D, and its
    gradient returned as ``dW = dB^T = dY^T @ A``, the same rule with both sides transposed. So
    ``dW`` comes out ``(out, in)`` and contiguous; as ``(A^T @ dY)^T`` it would be a transposed view,
    which the engine copies before storing it in ``.grad`` (a strided copy of the whole weight,
    0.4-0.5 ms of a 784-256-10 MLP's 1.2 ms step on one thread).
    """
    mm = O.matmul if ns is O else matmul_arrays
    if b_as_t:
        return (mm(g, b) if need_a else None), (mm(g.mT, a) if need_b else None)
    if a.ndim == 2 and b.ndim == 2:  # the common case, said plainly
        return (mm(g, b.mT) if need_a else None), (mm(a.mT, g) if need_b else None)
    if a.ndim == 1 and b.ndim == 1:  # a dot product: Y is a scalar
        return (g * b if need_a else None), (g * a if need_b else None)
    a2 = a[None] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    g2 = g[..., None, :] if a.ndim == 1 else g
    g2 = g2[..., None] if b.ndim == 1 else g2
    da = db = None
    if need_a:
        da = sum_to_in(ns, mm(g2, b2.mT), a2.shape).reshape(a.shape)
    if need_b:
        if b2.ndim == 2 and a2.ndim > 2:
            # the batch sum of A_i^T @ dY_i is one matmul over the stacked rows: (k, N) @ (N, m)
            db = mm(a2.reshape(-1, a2.shape[-1]).mT, g2.reshape(-1, g2.shape[-1]))
        else:
            db = sum_to_in(ns, mm(a2.mT, g2), b2.shape)
        db = db.reshape(b.shape)
    return da, db


def matmul_jvp(a, b, ta, tb):
    """The JVP of ``Y = A @ B`` (the product rule): ``dY = dA @ B + A @ dB``."""
    out = None if ta is None else O.matmul(ta, b)
    if tb is not None:
        out = O.matmul(a, tb) if out is None else out + O.matmul(a, tb)
    return out


def matmul_arrays(x, y):
    """``x @ y`` on arrays, read as BLAS wants them (:func:`blas_ready`), in the operands' dtype
    (NumPy's matmul of two bfloat16 arrays returns float32). A large stack of products is shared
    among threads (:func:`_stacked_matmul`)."""
    if not (x.ndim == 2 == y.ndim and 1 not in x.shape and 1 not in y.shape and x.flags.forc and y.flags.forc):
        x, y = blas_ready(x), blas_ready(y)  # (else blas_ready's usual case, tested here without its two calls)
        if (x.ndim > 2 or y.ndim > 2) and x.dtype == y.dtype and x.dtype in _SPLIT_DTYPES and threads.is_host(x) \
                and threads.is_host(y):
            return _stacked_matmul(x, y)
    out = np.matmul(x, y)
    # (``is`` first, a pointer test; ``==`` compares two dtypes in C, slower, kept for the rest)
    return out if out.dtype is x.dtype or out.dtype == x.dtype or x.dtype != y.dtype else out.astype(x.dtype)


#: stacks of products of these dtypes may be split across threads (see _stacked_matmul)
_SPLIT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
#: a stack of products is split across threads from this many multiply-adds (``batch * n * k * m``) on:
#: about 0.1 ms of one core's work, several times what handing half of it to the other thread costs
SPLIT_MACS = 1 << 22
#: ... when each product has at most this many (``n * k * m``): OpenBLAS runs a product this small on the
#: calling thread alone (its ``GEMM_MULTITHREAD_THRESHOLD`` 4 times 65536); a larger one it splits itself
SMALL_PRODUCT_MACS = 1 << 18


def _stacked_matmul(x, y):
    """``np.matmul(x, y)`` for a stack of products (an operand of 3 or more dimensions): a stack of small
    products is cut along its first batch dimension into pieces that run on gradlab's threads
    (``backend/threads.py``).

    Why: NumPy computes a stack one product at a time, each a BLAS call, and BLAS does not split a
    product as small as attention's (``(64, 32) @ (32, 64)`` for each of 32 x 4 heads), so the whole
    stack ran on one core: the GPT step's attention products, 24 calls, ~19 ms of a step. Measured on 2
    cores, that stack alone: 0.56-0.61 ms -> 0.48-0.50 ms. (Not 2x: the two cores together ran plain
    NumPy code in two threads 1.4-1.5x as fast as one.) Larger products are left to BLAS, which splits
    each of them itself (two ways of splitting at once would run four threads on two cores). Each
    product is the same BLAS call either way, so the result is the same bits for any thread count. Only
    operands with all of the result's dimensions are cut (one with fewer, or with 1 there, broadcasts:
    each piece reads all of it)."""
    if threads.get_num_threads() < 2 or x.ndim == 1 or y.ndim == 1:   # (the cheap tests first: every stack passes here)
        return np.matmul(x, y)
    n, k, m = x.shape[-2], x.shape[-1], y.shape[-1]
    if n * k * m > SMALL_PRODUCT_MACS:
        return np.matmul(x, y)
    batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    if batch[0] < 2 or math.prod(batch) * n * k * m < SPLIT_MACS:
        return np.matmul(x, y)
    out = np.empty(batch + (n, m), dtype=x.dtype)
    nd = out.ndim
    cut = [a.ndim == nd and a.shape[0] != 1 for a in (x, y)]

    def part(lo, hi):
        np.matmul(x[lo:hi] if cut[0] else x, y[lo:hi] if cut[1] else y, out=out[lo:hi])
    threads.parallel_for(part, batch[0], work=out.size * k)
    return out


def blas_ready(x):
    """``x``, or a contiguous copy of it when BLAS cannot read its matrices as they are.

    BLAS needs each matrix's rows (or columns) evenly spaced with unit steps inside them.
    A broadcast gradient (``y.sum()``'s backward hands every entry the same 1: stride 0)
    or a flipped view is not; NumPy's matmul then silently falls back to a plain triple
    loop, several times slower than copying first. Transposes and slices need no copy.
    """
    shape = x.shape
    n = len(shape)
    if n < 2:
        return x
    # (the usual case first, without slicing the shape: a contiguous matrix, or a C-contiguous
    # stack of them (a stack in Fortran order has no unit step inside its matrices); a 1-wide side's
    # stride is not checked by the flags. About a third fewer instructions; a GRU step makes 104 calls.)
    if shape[-1] > 1 and shape[-2] > 1 and (x.flags.forc if n == 2 else x.flags.c_contiguous):
        return x
    r, c = shape[-2:]
    s0, s1 = x.strides[-2:]
    it = x.itemsize
    if (s1 == it and s0 % it == 0 and s0 >= c * it) or (s0 == it and s1 % it == 0 and s1 >= r * it):
        return x
    if r * c <= 1:
        return x
    return xp_of(x).ascontiguousarray(x)


def _check(a, b, op="matmul", names=("input", "other")):
    if a.dtype != b.dtype:  # PyTorch does not promote in matrix products: "expected m1 and m2 to have the same dtype"
        _c.same_dtype(op, **{names[0]: a, names[1]: b})
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


@register(op=MatMul, method=True, samples=_matmul_samples, torch=lambda torch, a, b: torch.matmul(a, b), autocast="lower")
def matmul(input, other):
    """Matrix product with NumPy/PyTorch rules: 1-D, 2-D and batched (batch dims broadcast)."""
    if type(input) is not Tensor and hasattr(input, "_sparse_mm"):  # a sparse COO matrix (gradlab/sparse/)
        return input._sparse_mm(other, "matmul")
    a, b = check_tensor(input, "matmul", "input"), check_tensor(other, "matmul", "other")
    _check(a, b)
    return MatMul.apply(a, b)


@export(method=True)
def mm(input, mat2):
    """2-D matrix product (``matmul`` restricted to matrices)."""
    if type(input) is not Tensor and hasattr(input, "_sparse_mm"):  # a sparse COO matrix (gradlab/sparse/)
        return input._sparse_mm(mat2, "mm")
    a, b = check_tensor(input, "mm", "input"), check_tensor(mat2, "mm", "mat2")
    if a.ndim != 2 or b.ndim != 2:
        raise ShapeError(f"mm: expects two matrices, got {fmt_shape(a.shape)} and {fmt_shape(b.shape)}; use matmul for other ranks")
    _c.same_dtype("mm", input=a, mat2=b)
    return matmul(a, b)


@export(method=True)
def dot(input, other):
    a, b = check_tensor(input, "dot", "input"), check_tensor(other, "dot", "other")
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"dot: expects two 1-D tensors, got {fmt_shape(a.shape)} and {fmt_shape(b.shape)}")
    return matmul(a, b)


# ------------------------------------------------------- outer, tensordot, bmm
@register(method=True, samples=lambda src: [Sample((src.tensor((src.integers(0, 3),)), src.tensor((src.integers(1, 3),))))],
          formula="dA = dY @ B ; dB = dY^T @ A   (as the einsum 'i,j->ij')",
          torch=lambda torch, a, b: torch.outer(a, b))
def outer(input, vec2):
    """``out[i, j] = input[i] * vec2[j]`` for two 1-D tensors."""
    a, b = check_tensor(input, "outer", "input"), check_tensor(vec2, "outer", "vec2")
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"outer: expects two 1-D tensors, got input {fmt_shape(a.shape)} and vec2 "
                         f"{fmt_shape(b.shape)}; flatten them first, or use einsum")
    return einsum("i,j->ij", a, b)


def _tensordot_samples(src):
    t = src.tensor
    yield Sample((t((2, 3, 4)), t((3, 4, 2))), desc="dims=2 (default)")
    yield Sample((t((2, 3)), t((3, 2)), 1), desc="dims=1: matmul")
    yield Sample((t((2, 3)), t((4,)), 0), desc="dims=0: outer product")
    yield Sample((t((2, 3, 4)), t((4, 2, 3))), dict(dims=([1, 2], [2, 0])), desc="pair of lists")


@register(samples=_tensordot_samples, formula="dA, dB: einsums of dY with the other operand",
          torch=lambda torch, a, b, dims=2: torch.tensordot(a, b, dims=dims))
def tensordot(a, b, dims=2):
    """Sum products over ``dims``: an int ``n`` pairs ``a``'s last ``n`` dims with ``b``'s first ``n``;
    a pair of lists ``([1, 2], [2, 0])`` names them. The result keeps the rest of ``a``, then of ``b``."""
    a, b = check_tensor(a, "tensordot", "a"), check_tensor(b, "tensordot", "b")
    _c.same_dtype("tensordot", a=a, b=b)
    if isinstance(dims, (int, np.integer)):
        if dims < 0 or dims > min(a.ndim, b.ndim):
            raise ArgumentError(f"tensordot: dims={dims} is out of range for a {fmt_shape(a.shape)} and "
                                f"b {fmt_shape(b.shape)}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        if isinstance(dims, Tensor):
            dims = dims._data.tolist()
        try:
            da, db = ([int(d) for d in (x if isinstance(x, (list, tuple)) else [x])] for x in dims)
        except (TypeError, ValueError):
            raise ArgumentError(f"tensordot: dims must be an int or a pair of lists of dims, got {dims!r}") from None
        if len(da) != len(db):
            raise ArgumentError(f"tensordot: dims names {len(da)} dims of a but {len(db)} of b; pair them one to one")
        da = [d % a.ndim if -a.ndim <= d < a.ndim else _bad_dim(d, "a", a) for d in da]
        db = [d % b.ndim if -b.ndim <= d < b.ndim else _bad_dim(d, "b", b) for d in db]
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise ShapeError(f"tensordot: dim {i} of a {fmt_shape(a.shape)} has size {a.shape[i]} but dim {j} of "
                             f"b {fmt_shape(b.shape)} has size {b.shape[j]}; contracted dims must match")
    la = list(_LETTERS[:a.ndim])
    lb = list(_LETTERS[a.ndim:a.ndim + b.ndim])
    for i, j in zip(da, db):
        lb[j] = la[i]
    out = [c for i, c in enumerate(la) if i not in da] + [c for j, c in enumerate(lb) if j not in db]
    return einsum(_eq([la, lb], out), a, b)


def _bad_dim(d, name, t):
    raise ArgumentError(f"tensordot: dim {d} is out of range for {name} with shape {fmt_shape(t.shape)}")


def _bmm_samples(src):
    b, n, k, m = (src.integers(1, 3) for _ in range(4))
    yield Sample((src.tensor((b, n, k)), src.tensor((b, k, m))))


@register(method=True, samples=_bmm_samples, formula="dA = dY @ B^T ; dB = A^T @ dY   (per batch)",
          torch=lambda torch, a, b: torch.bmm(a, b))
def bmm(input, mat2):
    """Batched matrix product of ``(b, n, k)`` and ``(b, k, m)``: no broadcasting (use matmul for that)."""
    a, b = check_tensor(input, "bmm", "input"), check_tensor(mat2, "bmm", "mat2")
    if a.ndim != 3 or b.ndim != 3:
        raise ShapeError(f"bmm: expects two 3-D tensors (batch, n, k) and (batch, k, m), got input "
                         f"{fmt_shape(a.shape)} and mat2 {fmt_shape(b.shape)}; use matmul for other ranks")
    if a.shape[0] != b.shape[0]:
        raise ShapeError(f"bmm: batch sizes differ: input {fmt_shape(a.shape)} and mat2 {fmt_shape(b.shape)}; "
                         "bmm does not broadcast (matmul does)")
    _c.same_dtype("bmm", input=a, mat2=b)
    if a.shape[2] != b.shape[1]:
        raise ShapeError(f"bmm: cannot multiply {fmt_shape(a.shape)} by {fmt_shape(b.shape)}: inner dimensions "
                         f"{a.shape[2]} and {b.shape[1]} differ")
    return O.matmul(a, b)
