"""Normalization: ``layer_norm``, ``batch_norm``, ``group_norm``, ``instance_norm``, ``rms_norm``, ``normalize``.

``layer_norm`` normalizes over the last dims, then scales and shifts.

For each sample, over the trailing ``normalized_shape`` dims (``N`` values)::

    xhat = (x - mean) * rstd,   rstd = 1 / sqrt(var + eps)     (var is the biased variance)
    y    = xhat * weight + bias

``layer_norm`` is ONE op (``LayerNorm``, one node in ``show_graph``), not the
eight small ops (mean, subtract, square, mean, add, sqrt, divide, multiply...)
the formula reads as. A transformer calls it twice per block on its whole
residual stream, and each small op would be a node, a Python dispatch and a fresh
full-size array. Fused, the forward makes one array (``y``) and keeps, as
PyTorch does, only the input and two numbers per row (``mean``, ``rstd``);
the backward rebuilds ``xhat`` from them and uses the classic closed form::

    dxhat = dy * weight
    dx    = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
    dw    = sum(dy * xhat over the leading dims),   db = sum(dy over the leading dims)

(the two means are why a single ``x`` moves every output of its row). That
backward is written twice: with gradlab ops in ``vjp`` (so second derivatives
work) and on arrays in ``vjp_arrays`` (the engine's fast path). The other norms
here are still composed of ops (``_standardize``): read them to see the steps.
``eps`` keeps the division finite for a constant row.
"""
from __future__ import annotations

import numpy as np

from .. import ops as O
from ..amp.state import autocast_args as _autocast_args, state as _amp  # autocast policy (gradlab.amp)
from ..backend import dtypes as _dt
from ..autograd.function import Op
from ..autograd.grad_mode import no_grad
from ..backend import xp_of
from ..errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from ..ops._util import check_tensor
from ..ops.registry import Sample, register, torch_functional as _torch_f

NS = "gradlab.nn.functional"


def _standardize(x, dims, eps, with_stats=False):
    """``(x - mean) / sqrt(var + eps)`` over ``dims`` (biased variance), as gradlab ops.

    ``with_stats=True`` also returns ``mean`` and ``var`` (kept dims), for the running statistics.
    """
    mu = O.mean(x, dim=dims, keepdim=True)
    xc = x - mu
    var = O.mean(xc * xc, dim=dims, keepdim=True)
    y = xc / O.sqrt(var + eps)
    return (y, mu, var) if with_stats else y


def _normalized(x, k, eps):
    """``(xhat, rstd)`` over the last ``k`` dims, as gradlab ops (for the differentiable rules)."""
    dims = tuple(range(-k, 0))
    xc = x - O.mean(x, dim=dims, keepdim=True)
    rstd = 1 / O.sqrt(O.mean(xc * xc, dim=dims, keepdim=True) + eps)
    return xc * rstd, rstd


class LayerNorm(Op):
    """``layer_norm`` as one op: forward and backward each a few passes over the data (see the module doc).

    Like PyTorch it saves the input and two numbers per row (``mean`` and ``rstd``), and the
    backward recomputes ``xhat`` from them: the forward then makes one full-size array (the
    output) and the backward two (``xhat`` and ``dx``). Row sums are matrix-vector products
    (``x @ ones``) and row dot products ``einsum``: no temporary arrays. 16-bit inputs are
    computed in float32 (as PyTorch).
    """

    name = "layer_norm"
    formula = ("dX = rstd * (dXhat - mean(dXhat) - Xhat * mean(dXhat * Xhat)) ; dW = sum(dY * Xhat) ; "
               "dB = sum(dY)   (dXhat = dY * W, means over the normalized dims)")

    @staticmethod
    def forward(ctx, x, weight, bias, k, eps):
        a = x.data
        xp = xp_of(a)
        out_dt = _dt.result_type(*(t for t in (x, weight, bias) if t is not None))
        ct = np.dtype("float32") if out_dt.itemsize < 4 else out_dt  # 16-bit floats compute in float32
        m, n = int(np.prod(a.shape[:a.ndim - k])), int(np.prod(a.shape[a.ndim - k:]))
        ctx.k, ctx.eps, ctx.rows = k, eps, (m, n)
        a2 = a.reshape(m, n).astype(ct, copy=False)
        inv_n = 1.0 / n if n else 0.0
        mu = (a2 @ xp.full(n, inv_n, dtype=ct))[:, None]    # row means as one matrix-vector product
        y = a2 - mu                                           # the only full-size array: becomes the output
        var = xp.einsum("ij,ij->i", y, y)[:, None]
        var *= inv_n
        var += eps
        with np.errstate(divide="ignore", invalid="ignore"):  # eps=0 and a constant row: inf/nan, quietly
            rstd = 1.0 / xp.sqrt(var)
            y *= rstd
        if weight is not None:
            y *= weight.data.reshape(n)
        if bias is not None:
            y += bias.data.reshape(n)
        ctx.save_for_backward(x, weight, bias, mu, rstd)
        return y.reshape(a.shape).astype(out_dt, copy=False)

    def vjp(self, g):
        x, w, b = self.saved_tensors[:3]
        k, nf = self.k, self.next_functions
        dt = x.dtype
        if dt.itemsize < 4:  # as the forward: 16-bit floats in float32
            x, g = x.to("float32"), g.to("float32")
        xhat, rstd = _normalized(x, k, self.eps)
        lead = tuple(range(x.ndim - k))
        dims = tuple(range(-k, 0))
        # (no leading dims: nothing to sum -- dim=() would mean every dim, as in PyTorch)
        dw = None if nf[1] is None else (O.sum(g * xhat, dim=lead) if lead else g * xhat).to(w.dtype)
        db = None if nf[2] is None else (O.sum(g, dim=lead) if lead else g).to(b.dtype)
        dx = None
        if nf[0] is not None:
            d = g * w if w is not None else g
            dx = rstd * (d - O.mean(d, dim=dims, keepdim=True) - xhat * O.mean(d * xhat, dim=dims, keepdim=True))
            dx = dx.to(dt)
        return dx, dw, db, None, None

    def vjp_arrays(self, g):
        with np.errstate(invalid="ignore", over="ignore"):  # (an infinite rstd from eps=0, as the forward)
            return self._grads(g)

    def _grads(self, g):
        x, w, b, mu, rstd = self.saved_arrays
        nf = self.next_functions
        xp = xp_of(g)
        m, n = self.rows
        ct = rstd.dtype
        g2 = g.reshape(m, n).astype(ct, copy=False)
        db = None if nf[2] is None else (xp.ones(m, dtype=ct) @ g2).reshape(b.shape).astype(b.dtype, copy=False)
        if nf[0] is None and nf[1] is None:
            return None, None, db, None, None
        xhat = x.reshape(m, n).astype(ct, copy=False) - mu   # recomputed (ours: changed in place below)
        xhat *= rstd
        dw = None if nf[1] is None else xp.einsum("ij,ij->j", g2, xhat).reshape(w.shape).astype(w.dtype, copy=False)
        dx = None
        if nf[0] is not None:
            inv_n = 1.0 / n if n else 0.0
            if w is not None:
                wv = w.reshape(n).astype(ct, copy=False)
                c1 = g2 @ wv                                  # sum(dXhat) per row, dXhat = dY * W
                dx = xp.multiply(g2, wv)                      # dXhat, turned into dX in place
            else:
                c1 = g2 @ xp.ones(n, dtype=ct)
                dx = g2.copy()
            c2 = xp.einsum("ij,ij->i", dx, xhat)              # sum(dXhat * Xhat) per row
            c1 *= inv_n
            c2 *= inv_n
            dx -= c1[:, None]
            xhat *= c2[:, None]
            dx -= xhat
            dx *= rstd
            dx = dx.reshape(x.shape).astype(x.dtype, copy=False)
        return dx, dw, db, None, None

    def jvp(self, tx, tw, tb, *_):
        x, w, b = self.args[:3]
        k = self.k
        if x.dtype.itemsize < 4:
            x = x.to("float32")
        xhat, rstd = _normalized(x, k, self.eps)
        dims = tuple(range(-k, 0))
        out = None
        if tx is not None:
            out = rstd * (tx - O.mean(tx, dim=dims, keepdim=True) - xhat * O.mean(tx * xhat, dim=dims, keepdim=True))
            if w is not None:
                out = out * w
        if tw is not None:
            out = xhat * tw if out is None else out + xhat * tw
        if tb is not None:
            out = O.broadcast_to(tb, x.shape) if out is None else out + tb
        return None if out is None else out.to(self.out.dtype)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize ``input`` over its last ``len(normalized_shape)`` dims (which must equal ``normalized_shape``)."""
    if _amp.enabled:
        input, weight, bias = _autocast_args("layer_norm", input, weight, bias)
    x = check_tensor(input, "layer_norm")
    if not _dt.is_floating(x.dtype):
        raise DTypeError(f"layer_norm: input has dtype {_dt.dtype_name(x.dtype)}; it needs a floating tensor")
    ns = (int(normalized_shape),) if isinstance(normalized_shape, int) else tuple(int(s) for s in normalized_shape)
    k = len(ns)
    if k == 0 or x.ndim < k or tuple(x.shape[x.ndim - k:]) != ns:
        raise ShapeError(
            f"layer_norm: normalized_shape {fmt_shape(ns)} must match the last {k} dim(s) of input "
            f"{fmt_shape(x.shape)}" + (f", which are {fmt_shape(x.shape[x.ndim - k:])}" if x.ndim >= k else "")
            + "; e.g. for input (N, T, D) use normalized_shape=(D,)")
    affine = []
    for arg, t in (("weight", weight), ("bias", bias)):
        if t is not None:
            t = check_tensor(t, "layer_norm", arg)
            if tuple(t.shape) != ns:
                raise ShapeError(f"layer_norm: {arg} has shape {fmt_shape(t.shape)} but normalized_shape is "
                                 f"{fmt_shape(ns)}; they must be equal")
        affine.append(t)
    return LayerNorm.apply(x, affine[0], affine[1], k, float(eps))


# ------------------------------------------------------ batch / instance / group
def _channel_args(op, input, weight, bias):
    x = check_tensor(input, op)
    if not _dt.is_floating(x.dtype):
        raise DTypeError(f"{op}: input has dtype {_dt.dtype_name(x.dtype)}; it needs a floating tensor")
    if x.ndim < 2:
        raise ShapeError(f"{op}: input must be (N, C, ...) with at least 2 dims, got {fmt_shape(x.shape)}")
    c = x.shape[1]
    for arg, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(check_tensor(t, op, arg).shape) != (c,):
            raise ShapeError(f"{op}: {arg} has shape {fmt_shape(t.shape)}; it needs one value per channel: "
                             f"({c},) for input {fmt_shape(x.shape)}")
    return x, (1, c) + (1,) * (x.ndim - 2)


def _affine(y, weight, bias, shape):
    if weight is not None:
        y = y * O.reshape(weight, shape)
    if bias is not None:
        y = y + O.reshape(bias, shape)
    return y


def _update_running(op, running, value, momentum):
    """``running = (1 - momentum) * running + momentum * value``, in place and outside the graph."""
    if running is None:
        return
    r = check_tensor(running, op, "running stats")
    if r.numel() != value.size:
        raise ShapeError(f"{op}: a running statistic has shape {fmt_shape(r.shape)}, but the input has "
                         f"{value.size} channels (dim 1); make running_mean and running_var of shape ({value.size},)")
    with no_grad():
        r.data[...] = (1 - momentum) * r.data + momentum * value.reshape(r.shape).astype(r.dtype)
        r._version.value += 1


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalize each (sample, channel) over its own spatial dims (dims 2, 3, ...)."""
    op = "instance_norm"
    x, shape = _channel_args(op, input, weight, bias)
    dims = tuple(range(2, x.ndim))
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ArgumentError(f"{op}: use_input_stats=False needs running_mean and running_var")
        y = (x - O.reshape(running_mean, shape)) / O.sqrt(O.reshape(running_var, shape) + eps)
        return _affine(y, weight, bias, shape)
    n = max(int(np.prod(x.shape[2:])), 1)
    if n <= 1:
        raise ShapeError(f"{op}: expected more than 1 spatial element per channel, got input {fmt_shape(x.shape)}")
    y = _standardize(x, dims, eps)
    if running_mean is not None or running_var is not None:
        a = x.data
        _update_running(op, running_mean, a.mean(axis=dims).mean(axis=0), momentum)
        _update_running(op, running_var, (a.var(axis=dims) * n / (n - 1)).mean(axis=0), momentum)
    return _affine(y, weight, bias, shape)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Split the channels into ``num_groups`` groups; normalize each (sample, group) over its channels and
    spatial dims, then apply a per-channel ``weight`` and ``bias``."""
    op = "group_norm"
    x, shape = _channel_args(op, input, weight, bias)
    c = x.shape[1]
    if num_groups < 1 or c % num_groups:
        raise ShapeError(f"{op}: num_groups={num_groups} must divide the {c} channels of input {fmt_shape(x.shape)}")
    g = O.reshape(x, (x.shape[0], num_groups, -1))
    y = O.reshape(_standardize(g, (2,), eps), x.shape)
    return _affine(y, weight, bias, shape)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the last dims (no centering, no bias); eps defaults to the
    dtype's machine epsilon, as PyTorch."""
    x = check_tensor(input, "rms_norm")
    ns = (int(normalized_shape),) if isinstance(normalized_shape, int) else tuple(int(s) for s in normalized_shape)
    k = len(ns)
    if k == 0 or x.ndim < k or tuple(x.shape[x.ndim - k:]) != ns:
        raise ShapeError(f"rms_norm: normalized_shape {fmt_shape(ns)} must match the last {k} dim(s) of input "
                         f"{fmt_shape(x.shape)}")
    if eps is None:
        eps = float(np.finfo(np.float32 if x.dtype.itemsize < 4 else x.dtype).eps)
    y = x / O.sqrt(O.mean(x * x, dim=tuple(range(-k, 0)), keepdim=True) + eps)
    return y * weight if weight is not None else y


# ---------------------------------------------------------- vector normalization
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``x / max(||x||_p, eps)`` along ``dim``: unit vectors (a zero vector stays zero)."""
    x = check_tensor(input, "normalize")
    return x / O.clamp(O.norm(x, p, dim=dim, keepdim=True), min=eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``<x1, x2> / (||x1|| * ||x2||)`` along ``dim`` (each norm at least ``eps``); the inputs broadcast."""
    a, b = check_tensor(x1, "cosine_similarity", "x1"), check_tensor(x2, "cosine_similarity", "x2")
    try:
        shape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ShapeError(f"cosine_similarity: x1 {fmt_shape(a.shape)} and x2 {fmt_shape(b.shape)} do not "
                         "broadcast") from None
    a, b = O.broadcast_to(a, shape), O.broadcast_to(b, shape)
    na = O.clamp(O.norm(a, 2, dim=dim, keepdim=True), min=eps)
    nb = O.clamp(O.norm(b, 2, dim=dim, keepdim=True), min=eps)
    return O.sum((a / na) * (b / nb), dim=dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``||x1 - x2 + eps||_p`` over the last dim (eps avoids the norm's kink at zero)."""
    a, b = check_tensor(x1, "pairwise_distance", "x1"), check_tensor(x2, "pairwise_distance", "x2")
    return O.norm(a - b + eps, p, dim=-1, keepdim=keepdim)


def _ln_samples(src):
    lead = src.shape(0, 2, 1, 3)
    ns = src.shape(1, 2, 2, 4)
    yield Sample((src.tensor(lead + ns), ns, src.tensor(ns), src.tensor(ns)), desc="weight and bias")
    d = src.integers(2, 5)
    yield Sample((src.tensor((2, d)), [d]), dict(eps=1e-3), desc="no affine")
    yield Sample((src.tensor((3, d)), (d,), src.tensor((d,))), desc="weight only")


register("layer_norm", samples=_ln_samples, namespace=NS, op=LayerNorm,
         torch=lambda torch, *a, **k: torch.nn.functional.layer_norm(*a, **k))(layer_norm)


def _in_samples(src):
    shape = (src.integers(1, 2), src.integers(1, 3)) + src.shape(1, 2, 2, 3)
    yield Sample((src.tensor(shape),), dict(weight=src.tensor(shape[1:2]), bias=src.tensor(shape[1:2])))


def _gn_samples(src):
    g = src.integers(1, 2)
    c = g * src.integers(1, 2)
    shape = (src.integers(1, 2), c) + src.shape(1, 2, 1, 3)
    if int(np.prod(shape[1:])) // g < 2:
        shape = shape + (2,)
    yield Sample((src.tensor(shape), g, src.tensor((c,)), src.tensor((c,))))


def _rms_samples(src):
    ns = src.shape(1, 2, 1, 4)
    yield Sample((src.tensor(src.shape(0, 2, 1, 3) + ns), ns, src.tensor(ns)), desc="weight, default eps")
    yield Sample((src.tensor((2, 3)), [3]), dict(eps=1e-3), desc="no weight")


def _vec_samples(kind):
    def samples(src):
        shape = src.shape(1, 3, 1, 4)
        d = src.dim(len(shape))
        x = src.tensor(shape, 0.3, 2)  # away from zero vectors (the norm's kink)
        if kind == "normalize":
            yield Sample((x,), dict(p=src.choice([1.0, 2.0, 3.0]), dim=d))
        elif kind == "cosine":
            yield Sample((x, src.tensor(shape, -2, 2)), dict(dim=d))
        else:
            yield Sample((x, src.tensor(shape, -2, 2)), dict(p=src.choice([1.0, 2.0]), keepdim=src.boolean()))
    return samples


for _fn, _samples, _formula in [
    (instance_norm, _in_samples, "dX = layer-norm rule over each (n, c)'s spatial dims"),
    (group_norm, _gn_samples, "dX = layer-norm rule over each (n, group)'s channels and spatial dims"),
    (rms_norm, _rms_samples, "dX = (dZ - Xn * mean(dZ * Xn)) / rms   (Xn = X / rms, dZ = dY * weight)"),
    (normalize, _vec_samples("normalize"), "dX = (dY - U * sum(U^(p-1) * sign * dY)) / ||X||   (U = X / ||X||, p=2)"),
    (cosine_similarity, _vec_samples("cosine"), "dX1 = (X2 / (|X1||X2|) - cos * X1 / |X1|^2) * dY"),
    (pairwise_distance, _vec_samples("pairwise"), "dX1 = d||D||_p/dD * dY ; dX2 = -dX1   (D = X1 - X2 + eps)"),
]:
    register(_fn.__name__, samples=_samples, formula=_formula, namespace=NS, torch=_torch_f(_fn.__name__))(_fn)
del _fn, _samples, _formula

from ._batch_norm import batch_norm  # noqa: E402,F401 - (it builds on the helpers above)
