"""The ``NLLLoss`` op (an ``Op``, not the ``nn.NLLLoss`` layer) and its backward op ``NLLBackward``.

``nll_loss`` is linear in ``logp``, so its gradient is a constant ``M`` (``-w[t] / denominator`` at each
target class) times ``dY``: ``_row_coeff`` (the per-row coefficient), ``_scatter`` (write it at the target
classes) and ``_pick`` (apply ``M`` forwards) are the three pieces. The functions that call it are in ``nn/_loss.py``.
"""
from __future__ import annotations

from .. import ops as O  # (read at call time: the package imports this file)
from .._tensor import Tensor
from ..autograd.function import Op
from ..backend import xp_of
from ._util import OneRule, apply_in


# ------------------------------------------------------------------ nll_loss
class NLLLoss(OneRule, Op):
    """Pick ``-logp[i, target[i]]`` (times the class weight), skipping ignored targets.

    The loss is linear in ``logp``: its gradient is a constant tensor ``M``
    (``-w[t] / denominator`` at each target class, 0 elsewhere) times ``dY``.
    """

    name = "nll_loss"
    formula = "dX[i, t_i] = -w[t_i] * dY[i] / (sum of w[t_i] if mean)   (0 at other classes and ignored rows)"

    @staticmethod
    def forward(ctx, logp, target, weight, ignore_index, reduction, cdim):
        xp = xp_of(logp._data)
        valid = target != ignore_index
        safe = xp.where(valid, target, 0)
        idx = safe.reshape(safe.shape[:cdim] + (1,) + safe.shape[cdim:])  # (expand_dims, without its checks)
        picked = xp.take_along_axis(logp._data, idx, axis=cdim).squeeze(cdim)
        # each row's weight, 0 where ignored (no class weights: the mask itself, as 1.0 / 0.0)
        wt = (weight[safe] * valid).astype(logp.dtype, copy=False) if weight is not None else valid.astype(logp.dtype)
        loss = -picked * wt
        denom = wt.sum(dtype="float32" if wt.dtype.itemsize < 4 else wt.dtype) if reduction == "mean" else 1.0
        ctx.info = (idx, wt, denom, cdim, reduction, logp.shape, logp.dtype)
        if reduction == "none":
            return loss
        acc = "float32" if loss.dtype.itemsize < 4 else loss.dtype  # 16-bit floats sum in float32
        total = loss.sum(dtype=acc)
        out = total / denom if reduction == "mean" else total
        return xp.asarray(out, dtype=logp.dtype)

    def rule(self, ns, g):  # the VJP, on tensors and arrays alike (OneRule): dY * M, one op
        return (apply_in(ns, NLLBackward, g, self.info),) + (None,) * 5

    def jvp(self, t, *_):
        return _pick(O, t, self.info)


def _row_coeff(info):
    """Per row: ``-w[t] / denominator`` (0 at ignored rows, even when every row is ignored)."""
    _, wt, denom = info[:3]
    return xp_of(wt).where(wt == 0, 0, -wt / denom)


def _scatter(coef, info):
    """A zero tensor of the input's shape with ``coef`` (one value per row) at each row's target class."""
    idx, _, _, cdim, _, shape, dtype = info
    xp = xp_of(idx)
    coef = xp.expand_dims(coef, cdim).astype(dtype)
    if hasattr(xp, "put_along_axis"):
        m = xp.zeros(shape, dtype=dtype)
        xp.put_along_axis(m, idx, coef, axis=cdim)
        return m
    classes = xp.arange(shape[cdim]).reshape((-1,) + (1,) * (len(shape) - cdim - 1))  # no put_along_axis (CuPy)
    return xp.where(idx == classes, coef, 0).astype(dtype)


def _pick(ns, t, info):
    """``sum(t * M)`` over the class dim (then over everything unless reduction is 'none'): M applied
    forwards, on a tensor (``ns = O``) or an array."""
    cdim, reduction = info[3], info[4]
    m = _scatter(_row_coeff(info), info)
    prod = t * (Tensor._make(m) if ns is O else m)
    return prod.sum(axis=cdim) if reduction == "none" else prod.sum()


class NLLBackward(OneRule, Op):
    """nll_loss's VJP in one op: write ``dY * M`` straight into a zero tensor (no dense multiply)."""

    name = "nll_loss_backward"
    formula = "dG = sum(dZ * M)   (M = the constant from nll_loss: -w[t]/denominator at the target classes)"

    @staticmethod
    def kernel(g, info):
        return _scatter(_row_coeff(info) * g, info)  # 'none': one dY per row; else dY is a scalar

    @staticmethod
    def forward(ctx, g, info):
        ctx.info = info
        return NLLBackward.kernel(g._data, info)

    def rule(self, ns, gz):  # the VJP, on tensors and arrays alike (OneRule): M applied forwards
        return _pick(ns, gz, self.info), None

    def jvp(self, t, _):
        return NLLBackward.apply(t, self.info)
