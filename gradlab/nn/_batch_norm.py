"""``batch_norm``: normalize each channel over the batch (and space), then scale and shift.

In training mode the statistics are the batch's own, and the running mean and
variance move toward them (``momentum``); in eval mode the running statistics
are used. Training mode on float32/float64 is one op (``BatchNorm``), as PyTorch
records it; 16-bit dtypes, mixed dtypes and autocast keep the step-by-step form
(``_standardize`` in ``_norm.py``), which shows every small op.
"""
from __future__ import annotations

import numpy as np

from .. import ops as O
from ..amp.state import state as _amp  # autocast (gradlab.amp) keeps the step-by-step form
from ..autograd.function import Op
from ..errors import ArgumentError, ShapeError, fmt_shape
from ..ops._util import check_tensor
from ..ops.registry import Sample, register
from ._norm import NS, _affine, _channel_args, _standardize, _update_running


def _normalized_over(x, dims, eps):
    """``(xhat, rstd)`` over ``dims`` (kept), as gradlab ops: the differentiable rules of ``BatchNorm``."""
    xc = x - O.mean(x, dim=dims, keepdim=True)
    rstd = 1 / O.sqrt(O.mean(xc * xc, dim=dims, keepdim=True) + eps)
    return xc * rstd, rstd


class BatchNorm(Op):
    """``batch_norm`` in training mode (the batch's own statistics) as one op, as PyTorch records it.

    The forward runs the very NumPy operations of the step-by-step form (``mean``, ``x - mean``,
    ``mean((x - mean)^2)``, ``/ sqrt(var + eps)``, ``* weight``, ``+ bias``), so its values are the
    same bit for bit; the backward is the closed form below, a few passes over the data instead
    of a dozen nodes' worth. It saves the input and two numbers per channel (mean and ``rstd``).
    ``stats`` (a list) receives ``(mean, var)`` for the running statistics.
    """

    name = "batch_norm"
    formula = ("dX = rstd * (dXhat - mean(dXhat) - Xhat * mean(dXhat * Xhat)) ; dW = sum(dY * Xhat) ; "
               "dB = sum(dY)   (dXhat = dY * W, means and sums over N and space, per channel)")

    @staticmethod
    def forward(ctx, x, weight, bias, dims, eps, stats):
        a = x.data
        shape = (1, a.shape[1]) + (1,) * (a.ndim - 2)
        ctx.dims, ctx.eps, ctx.shape = dims, eps, shape
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            mu = a.mean(axis=dims, keepdims=True)
            xc = a - mu
            var = (xc * xc).mean(axis=dims, keepdims=True)
            sd = np.sqrt(var + eps)
            y = xc / sd
        if weight is not None:
            y = y * weight.data.reshape(shape)
        if bias is not None:
            y = y + bias.data.reshape(shape)
        stats.append((mu, var))
        ctx.save_for_backward(x, weight, bias, mu, 1 / sd)
        return y

    def vjp(self, g):
        x, w, b = self.saved_tensors[:3]
        nf, dims, shape = self.next_functions, self.dims, self.shape
        xhat, rstd = _normalized_over(x, dims, self.eps)
        dw = None if nf[1] is None else O.reshape(O.sum(g * xhat, dim=dims), w.shape)
        db = None if nf[2] is None else O.reshape(O.sum(g, dim=dims), b.shape)
        dx = None
        if nf[0] is not None:
            d = g * O.reshape(w, shape) if w is not None else g
            dx = rstd * (d - O.mean(d, dim=dims, keepdim=True) - xhat * O.mean(d * xhat, dim=dims, keepdim=True))
        return dx, dw, db, None, None, None

    def vjp_arrays(self, g):
        x, w, b, mu, rstd = self.saved_arrays
        nf, dims = self.next_functions, self.dims
        n = g.size // max(g.shape[1], 1)
        with np.errstate(invalid="ignore", over="ignore"):
            db = g.sum(axis=dims, keepdims=True)
            if nf[0] is None and nf[1] is None:
                return None, None, None if nf[2] is None else db.reshape(b.shape), None, None, None
            xhat = x - mu
            xhat *= rstd                                      # recomputed (ours: reused below)
            dw = (g * xhat).sum(axis=dims, keepdims=True)     # sum(dY * Xhat) per channel
            dx = None
            if nf[0] is not None:                             # rstd * w * (dY - mean(dY) - Xhat * mean(dY * Xhat))
                scale = rstd if w is None else rstd * w.reshape(rstd.shape)
                xhat *= dw * (1.0 / n)
                dx = g - xhat
                dx -= db * (1.0 / n)
                dx *= scale
        return (dx, None if nf[1] is None else dw.reshape(w.shape), None if nf[2] is None else db.reshape(b.shape),
                None, None, None)

    def jvp(self, tx, tw, tb, *_):
        x, w, b = self.args[:3]
        dims, shape = self.dims, self.shape
        xhat, rstd = _normalized_over(x, dims, self.eps)
        out = None
        if tx is not None:
            out = rstd * (tx - O.mean(tx, dim=dims, keepdim=True) - xhat * O.mean(tx * xhat, dim=dims, keepdim=True))
            if w is not None:
                out = out * O.reshape(w, shape)
        if tw is not None:
            out = xhat * O.reshape(tw, shape) if out is None else out + xhat * O.reshape(tw, shape)
        if tb is not None:
            tb = O.reshape(tb, shape)
            out = O.broadcast_to(tb, x.shape) if out is None else out + tb
        return out


def _fused_batch_norm_ok(x, weight, bias):
    """The one-op form needs float32/float64 throughout (other dtypes keep the step-by-step form)."""
    dt = x.dtype
    return (dt.itemsize >= 4 and dt.kind == "f" and not _amp.enabled
            and all(t is None or t.dtype == dt for t in (weight, bias)))


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalize each channel (dim 1) over the batch and every other dim.

    ``training=True`` uses this batch's mean and (biased) variance and updates ``running_mean`` /
    ``running_var`` in place (the variance there is unbiased, as PyTorch); ``training=False``
    uses the running statistics instead.
    """
    op = "batch_norm"
    x, shape = _channel_args(op, input, weight, bias)
    dims = (0,) + tuple(range(2, x.ndim))
    n = x.numel() // max(x.shape[1], 1)
    if training:
        if n <= 1:
            raise ShapeError(f"{op}: expected more than 1 value per channel when training, got input "
                             f"{fmt_shape(x.shape)}; use a batch of at least 2 (or training=False)")
        if _fused_batch_norm_ok(x, weight, bias):
            stats = []
            y = BatchNorm.apply(x, weight, bias, dims, eps, stats)
            if running_mean is not None or running_var is not None:
                # the forward's mean and var are NumPy's a.mean(dims) and a.var(dims) exactly (the same
                # operations on the same arrays): reuse them instead of two more passes over the batch
                m, v = stats[-1][0].reshape(-1), stats[-1][1].reshape(-1)
                _update_running(op, running_mean, m, momentum)
                _update_running(op, running_var, v * n / (n - 1), momentum)
            return y
        y = _standardize(x, dims, eps)
        if running_mean is not None or running_var is not None:
            a = x.data
            _update_running(op, running_mean, a.mean(axis=dims), momentum)
            _update_running(op, running_var, a.var(axis=dims) * n / (n - 1), momentum)
    else:
        if running_mean is None or running_var is None:
            raise ArgumentError(f"{op}: training=False needs running_mean and running_var (the statistics "
                                "gathered in training); pass them, or training=True to use the batch's own")
        rm, rv = check_tensor(running_mean, op, "running_mean"), check_tensor(running_var, op, "running_var")
        y = (x - O.reshape(rm, shape)) / O.sqrt(O.reshape(rv, shape) + eps)
    return _affine(y, weight, bias, shape)


def _bn_samples(src):
    n, c = src.integers(2, 3), src.integers(1, 3)
    spatial = src.shape(0, 2, 1, 3)
    shape = (n, c) + spatial
    rm, rv = src.tensor((c,), requires_grad=False), src.tensor((c,), 0.5, 2, requires_grad=False)
    yield Sample((src.tensor(shape), rm, rv, src.tensor((c,)), src.tensor((c,))), dict(training=True),
                 desc="training: batch statistics (running stats updated)")
    yield Sample((src.tensor(shape), rm, rv, src.tensor((c,))), dict(training=False, eps=1e-3),
                 desc="eval: running statistics")
    yield Sample((src.tensor((3, 2)), None, None), dict(training=True), desc="(N, C), no running stats")


register("batch_norm", samples=_bn_samples, namespace=NS,
         formula="dX = (dXhat - mean(dXhat) - Xhat * mean(dXhat * Xhat)) / sqrt(var + eps)   "
                 "(means over N and space, per channel; dXhat = dY * weight)",
         torch=lambda torch, *a, **k: torch.nn.functional.batch_norm(*a, **k))(batch_norm)
