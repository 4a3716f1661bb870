"""``softmax`` and ``log_softmax``, the numerically stable way.

``exp(1000)`` overflows to ``inf``, so the naive ``exp(x) / exp(x).sum()`` is
``inf / inf = nan`` for large logits. Both ops first subtract the row's max:
softmax does not change when a constant is subtracted from every entry, and
after the shift the largest exponent is ``exp(0) = 1``, so nothing overflows.
``log_softmax`` goes further and never takes the log of a rounded-to-zero
probability: ``log_softmax(x) = (x - m) - log(sum(exp(x - m)))``.

Backward (``Y`` is the op's own output, ``S`` the sum along ``dim``), each one
op of its own (``softmax_backward``, ``log_softmax_backward``) whose VJP is in
turn written with gradlab ops, so second derivatives work::

    softmax:      dX = Y * (dY - S(dY * Y))
    log_softmax:  dX = dY - exp(Y) * S(dY)

Each rule is stated once, over a namespace (``OneRule``): on tensors the fused
node, on arrays (what the engine runs whenever backward is not itself recorded)
that node's kernel, where ``S(dY * Y)`` along the last dim is an ``einsum`` (no
full-size product array) and the result is the only full-size array made.
"""
from __future__ import annotations

import numpy as np

from .. import ops as O
from ..autograd.function import Op
from ..backend import dtypes as _dt, threads, xp_of
from ..errors import ArgumentError, DTypeError
from ._util import OneRule, check_tensor, method_spelling, one_dim
from .registry import Sample, export, register

top_level_softmax = export("softmax")(method_spelling("softmax", "``exp(x) / sum(exp(x))`` along ``dim`` (``x.softmax(dim)``, ``F.softmax``)."))
top_level_log_softmax = export("log_softmax")(method_spelling("log_softmax", "``log(softmax(x))`` along ``dim``, computed stably (``x.log_softmax(dim)``)."))
# (registered once, as ``functional.softmax``/``functional.log_softmax`` below: ALIASES lists these spellings)


def _acc(a):
    """16-bit floats are computed in float32 (PyTorch's accumulate type) and rounded once at the end."""
    return a.astype("float32") if a.dtype.itemsize < 4 else a


def _row_dot(a, b, dim):
    """``sum(a * b, dim, keepdims=True)``; along the last dim of 32/64-bit floats an ``einsum``, with no
    full-size temporary (16-bit floats keep the plain product and sum, as the op forms)."""
    if dim == a.ndim - 1 and a.dtype == b.dtype and a.dtype.itemsize >= 4:
        return xp_of(a).einsum("...i,...i->...", a, b)[..., None]
    return (a * b).sum(axis=dim, keepdims=True)


def _row_sum(a, dim):
    """``sum(a, dim, keepdims=True)``; along the last dim of 32/64-bit floats an ``einsum``, one pass,
    several times faster than NumPy's reduction over short rows. (Not BLAS's ``a @ ones``: on the
    2-D blocks of :func:`_by_rows` that is one tall matrix-vector product, which wakes BLAS's threads;
    with the other core busy it waited for one: 8 ms instead of 0.06 ms for (8192, 64).)"""
    if dim == a.ndim - 1 and a.dtype.itemsize >= 4:
        return xp_of(a).einsum("...i->...", a)[..., None]
    return a.sum(axis=dim, keepdims=True)


def _by_rows(fn, dim, *arrays):
    """``fn(*arrays, dim)`` for a function that reduces along ``dim`` only: for large host arrays
    along the last dim, blocks of rows across threads (``backend.threads``; each row is computed by
    the same NumPy calls whatever block it is in, so the bits are those of one call). Each block
    writes straight into the result (``fn``'s ``out=``), not into a block of its own then copied."""
    a = arrays[0]
    if dim != a.ndim - 1 or a.ndim < 2 or not threads.big(a) or any(b.shape != a.shape for b in arrays):
        return fn(*arrays, dim)
    n = a.shape[-1]
    flat = [b.reshape(-1, n) for b in arrays]
    dt = fn(*(f[:1] for f in flat), 1).dtype
    res = np.empty(flat[0].shape, dt)
    threads.map_rows(lambda *b, out: fn(*b, 1, out=out), res, *flat, axis_len=n)
    return res.reshape(a.shape)


def _out(a, out):
    """``out`` if the result computed from ``a`` can go there (the same dtype), else None (a new array)."""
    return out if out is not None and out.dtype == a.dtype else None


def _softmax_array(a, dim, out=None):
    """softmax of an array (16-bit floats computed in float32) along ``dim``, in ``a``'s dtype: the row
    max, ``x - max`` (the result's buffer, or ``out``), then ``exp``, the row sum and the divide in place."""
    c = _acc(a)
    e = _shifted(c, dim, _out(c, out))
    xp = xp_of(a)
    xp.exp(e, out=e)
    e *= 1.0 / _row_sum(e, dim)
    return e.astype(a.dtype, copy=False)


def _log_softmax_array(a, dim, out=None):
    """log_softmax of an array (16-bit floats computed in float32) along ``dim``, in ``a``'s dtype."""
    xp = xp_of(a)
    c = _acc(a)
    z = _shifted(c, dim, _out(c, out))
    z -= xp.log(_row_sum(xp.exp(z), dim))
    return z.astype(a.dtype, copy=False)


def _softmax_grad(g, y, dim):
    """``Y * (dY - sum(dY * Y))`` on arrays, making one full-size array (the result)."""
    out = g - _row_dot(g, y, dim)
    out *= y
    return out


def _log_softmax_grad(g, y, dim, out=None):
    """``dY - exp(Y) * sum(dY)`` on arrays, making one full-size array (the result, or ``out``)."""
    xp = xp_of(g)
    out = xp.exp(y, out=_out(y, out))
    out *= _row_sum(g, dim)
    xp.subtract(g, out, out=out)
    return out


def _shifted(a, dim, out=None):
    """``a - max(a, dim)`` (into ``out`` if given)."""
    xp = xp_of(a)
    m = xp.max(a, axis=dim, keepdims=True) if a.size else xp.zeros_like(a)
    # a row of -inf stays -inf (and gives nan); a +inf in a row gives inf - inf = nan for the whole row,
    # both as in PyTorch
    m = xp.where(m == -xp.inf, 0, m)
    return xp.subtract(a, m, out=out)


# Each derivative below is stated once, as a rule over a namespace ``ns`` (OneRule): gradlab's ops
# (a graph, differentiable again) or the array module (the engine's fast path). The helpers say what
# "the softmax VJP" and "a row sum" are in each: on tensors the fused node, on arrays its kernel.
def _softmax_vjp(ns, g, y, dim):
    """``Y * (dY - sum(dY * Y))``: one ``softmax_backward`` node on tensors, its kernel on arrays.

    The kernel runs on the calling thread: two passes and a row dot product, bound by memory, and
    split across 2 threads it was slower (attention's (32, 4, 64, 64) float32: 0.59 ms in one call
    vs 0.99 ms split, best of 40, a second process running)."""
    return SoftmaxBackward.apply(g, y, dim) if ns is O else _softmax_grad(g, y, dim)


def _log_softmax_vjp(ns, g, y, dim):
    """``dY - exp(Y) * sum(dY)``: one ``log_softmax_backward`` node on tensors, its kernel on arrays."""
    return LogSoftmaxBackward.apply(g, y, dim) if ns is O else _by_rows(_log_softmax_grad, dim, g, y)


def _rsum(ns, a, dim, b=None):
    """``sum(a * b, dim, keepdim=True)`` (``sum(a, ...)`` without ``b``) in the rule's namespace."""
    if ns is O:
        return O.sum(a if b is None else a * b, dim=dim, keepdim=True)
    return a.sum(axis=dim, keepdims=True) if b is None else _row_dot(a, b, dim)


class Softmax(OneRule, Op):
    name = "softmax"
    formula = "dX = Y * (dY - sum(dY * Y, dim))   (Y = softmax(X))"

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        y = _by_rows(_softmax_array, dim, x._data)
        ctx.save_output(y)
        return y

    def rule(self, ns, g, y):  # the VJP, on tensors and arrays alike (OneRule)
        return _softmax_vjp(ns, g, y, self.dim), None

    def jvp(self, t, _):  # softmax's Jacobian diag(Y) - Y Y^T is symmetric: the JVP is the VJP's map
        return _softmax_vjp(O, t, self.out, self.dim)


class SoftmaxBackward(OneRule, Op):
    """``Y * (dY - sum(dY * Y))`` in one op (as PyTorch's ``_softmax_backward_data``)."""

    name = "softmax_backward"
    formula = "dG = Y * (dZ - sum(dZ * Y)) ; dY = dZ * (G - sum(G * Y)) - G * sum(dZ * Y)"

    @staticmethod
    def forward(ctx, g, y, dim):
        ctx.dim = dim
        ctx.save_for_backward(g, y)
        return _softmax_grad(g._data, y._data, dim)

    def rule(self, ns, gz, g, y):  # the VJP, on tensors and arrays alike (OneRule)
        d, nf = self.dim, self.next_functions
        dg = None if nf[0] is None else _softmax_vjp(ns, gz, y, d)  # linear in G: the op itself
        dy = None if nf[1] is None else gz * (g - _rsum(ns, g, d, y)) - g * _rsum(ns, gz, d, y)
        return dg, dy, None

    def jvp(self, tg, ty, _):
        g, y = self.args[:2]
        d = self.dim
        out = None if tg is None else _softmax_vjp(O, tg, y, d)
        if ty is not None:
            part = ty * (g - _rsum(O, g, d, y)) - y * _rsum(O, g, d, ty)
            out = part if out is None else out + part
        return out


class LogSoftmax(OneRule, Op):
    name = "log_softmax"
    formula = "dX = dY - exp(Y) * sum(dY, dim)   (Y = log_softmax(X))"

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        y = _by_rows(_log_softmax_array, dim, x._data)
        ctx.save_output(y)
        return y

    def rule(self, ns, g, y):  # the VJP, on tensors and arrays alike (OneRule)
        return _log_softmax_vjp(ns, g, y, self.dim), None

    def jvp(self, t, _):  # the Jacobian's other side: dY = dX - sum(exp(Y) * dX)
        return t - _rsum(O, O.exp(self.out), self.dim, t)


class LogSoftmaxBackward(OneRule, Op):
    """``dY - exp(Y) * sum(dY)`` in one op (PyTorch's ``_log_softmax_backward_data``)."""

    name = "log_softmax_backward"
    formula = "dG = dZ - sum(dZ * exp(Y)) ; dY = -dZ * exp(Y) * sum(G)"

    @staticmethod
    def forward(ctx, g, y, dim):
        ctx.dim = dim
        ctx.save_for_backward(g, y)
        return _by_rows(_log_softmax_grad, dim, g._data, y._data)

    def rule(self, ns, gz, g, y):  # the VJP, on tensors and arrays alike (OneRule)
        d, nf = self.dim, self.next_functions
        e = ns.exp(y)
        dg = None if nf[0] is None else gz - _rsum(ns, gz, d, e)
        dy = None if nf[1] is None else -gz * e * _rsum(ns, g, d)
        return dg, dy, None

    def jvp(self, tg, ty, _):
        g, y = self.args[:2]
        d = self.dim
        e = O.exp(y)
        out = None
        if tg is not None:
            out = tg - e * _rsum(O, tg, d)
        if ty is not None:
            part = -ty * e * _rsum(O, g, d)
            out = part if out is None else out + part
        return out


def _prepare(op, input, dim, dtype):
    x = check_tensor(input, op)
    if dim is None:
        raise ArgumentError(
            f"{op}: pass dim= explicitly (the dimension that should sum to one, e.g. dim=-1 for the last); "
            f"input has shape {tuple(x.shape)}. PyTorch's implicit choice of dim is deprecated")
    if dtype is not None:
        if not _dt.is_floating(_dt.as_dtype(dtype)):
            raise DTypeError(f"{op}: dtype={dtype} is not floating; softmax computes probabilities, so pass a float "
                             f"dtype (float32, float64)")
        x = x.to(dtype)
    elif not _dt.is_floating(x.dtype):
        raise DTypeError(f"{op}: input has dtype {_dt.dtype_name(x.dtype)}; {op} needs a floating tensor "
                        "(use x.float() or pass dtype=)")
    return x, (one_dim(dim, x.ndim, op) if x.ndim else None)


def _samples(src):
    shape = src.shape(1, 3, 1, 4)
    yield Sample((src.tensor(shape), src.dim(len(shape))), desc="any dim")
    yield Sample((src.tensor((2, 5), low=-4, high=4),), dict(dim=-1), desc="rows")
    yield Sample((src.tensor((3, 0)),), dict(dim=0), desc="empty")
    yield Sample((src.tensor(()), 0), desc="0-d")


@register(op=Softmax, samples=_samples, namespace="gradlab.nn.functional",
          torch=lambda torch, x, dim=None, dtype=None: torch.nn.functional.softmax(x, dim=dim, dtype=dtype), autocast="float32")
def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x) / sum(exp(x), dim)``: turns scores into probabilities along ``dim`` (stable: the max is subtracted)."""
    x, d = _prepare("softmax", input, dim, dtype)
    if d is None:  # a 0-d input: one entry, probability 1
        return Softmax.apply(O.reshape(x, (1,)), 0).reshape(())
    return Softmax.apply(x, d)


@register(op=LogSoftmax, samples=_samples, namespace="gradlab.nn.functional",
          torch=lambda torch, x, dim=None, dtype=None: torch.nn.functional.log_softmax(x, dim=dim, dtype=dtype),
          autocast="float32")
def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``x - logsumexp(x, dim)``: log-probabilities, computed without ever forming a tiny probability."""
    x, d = _prepare("log_softmax", input, dim, dtype)
    if d is None:
        return LogSoftmax.apply(O.reshape(x, (1,)), 0).reshape(())
    return LogSoftmax.apply(x, d)
