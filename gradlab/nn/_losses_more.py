"""More losses of ``F``: ``l1_loss``, ``smooth_l1_loss``, ``huber_loss``, ``binary_cross_entropy``, ``kl_div``.

Composites of gradlab ops, with PyTorch's conventions:

* ``smooth_l1_loss`` (beta) is quadratic for ``|d| < beta`` and linear beyond,
  scaled so the linear part has slope 1; ``huber_loss`` (delta) is the same
  curve times ``delta`` -- they differ only by that factor.
* ``binary_cross_entropy`` takes *probabilities*; it clamps each log at -100
  (as PyTorch) so a probability of exactly 0 or 1 gives a large finite loss,
  not ``inf``. From logits, prefer ``binary_cross_entropy_with_logits``.
* ``kl_div(input, target)`` expects ``input`` as *log*-probabilities and
  computes ``target * (log(target) - input)`` (0 where ``target`` is 0);
  ``reduction='batchmean'`` divides the sum by the batch size, the true KL.
"""
from __future__ import annotations

import numpy as np

from .. import ops as O
from ..backend import dtypes as _dt
from ..errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from .._tensor import Tensor
from ..ops._util import check_tensor
from ..ops.registry import Sample, register, torch_functional as _torch_f
from ._losses import _REDUCTIONS, _float_input, _reduce, _reduction, _Softplus, _warn_broadcast

NS = "gradlab.nn.functional"


def _diff(op, input, target, reduction, size_average, reduce):
    x = _float_input(op, input)
    red = _reduction(op, reduction, size_average, reduce)
    _warn_broadcast(op, x, target, stacklevel=4)
    return x - target, red


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error ``|input - target|`` (``weight`` multiplies each term; mean then divides by its sum)."""
    d, red = _diff("l1_loss", input, target, reduction, size_average, reduce)
    loss = O.abs(d)
    if weight is not None:
        loss = loss * weight
        if red == "mean":
            return O.sum(loss) / O.sum(weight)
    return _reduce(loss, red)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5 d^2 / beta`` if ``|d| < beta`` else ``|d| - 0.5 beta`` (``d = input - target``); beta=0 is L1."""
    d, red = _diff("smooth_l1_loss", input, target, reduction, size_average, reduce)
    if beta < 0:
        raise ArgumentError(f"smooth_l1_loss: beta must be >= 0, got {beta}")
    a = O.abs(d)
    if beta == 0:
        return _reduce(a, red)
    return _reduce(O.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta), red)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5 d^2`` if ``|d| < delta`` else ``delta * (|d| - 0.5 delta)``."""
    d, red = _diff("huber_loss", input, target, reduction, None, None)
    if delta <= 0:
        raise ArgumentError(f"huber_loss: delta must be > 0, got {delta}")
    a = O.abs(d)
    loss = O.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, red)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """``-(t * log(p) + (1 - t) * log(1 - p))`` for probabilities ``p`` in [0, 1], each log clamped at -100."""
    op = "binary_cross_entropy"
    p = _float_input(op, input)
    red = _reduction(op, reduction, size_average, reduce)
    t = check_tensor(target, op, "target")
    if t.dtype != p.dtype:  # PyTorch: "Found dtype Long but expected Float"
        raise DTypeError(f"{op}: target has dtype {_dt.dtype_name(t.dtype)} but input has dtype "
                         f"{_dt.dtype_name(p.dtype)} (shapes {fmt_shape(t.shape)} and {fmt_shape(p.shape)}); they "
                         f"must match: use target.float() (or target.to(input.dtype))")
    if t.shape != p.shape:
        raise ShapeError(f"{op}: target has shape {fmt_shape(t.shape)} but input has {fmt_shape(p.shape)}; they "
                         "must be the same")
    data = p.data
    if data.size and ((data < 0) | (data > 1)).any():
        raise ArgumentError(f"{op}: input must hold probabilities in [0, 1] (got values from {float(data.min()):.4g} "
                            f"to {float(data.max()):.4g}); for raw scores use binary_cross_entropy_with_logits")
    loss = -(t * O.clamp(O.log(p), min=-100.0) + (1 - t) * O.clamp(O.log(1 - p), min=-100.0))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, red)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Pointwise KL ``target * (log(target) - input)`` with ``input`` given as log-probabilities.

    ``reduction='batchmean'`` (sum / batch size) gives the mathematical KL divergence; ``'mean'``
    averages over *every* element, as PyTorch does.
    """
    op = "kl_div"
    x = _float_input(op, input)
    if size_average is not None or reduce is not None:
        reduction = _reduction(op, "mean", size_average, reduce)
    if reduction not in _REDUCTIONS + ("batchmean",):
        raise ArgumentError(f"{op}: reduction must be 'none', 'batchmean', 'mean' or 'sum', got {reduction!r}")
    t = check_tensor(target, op, "target")
    if log_target:
        loss = O.exp(t) * (t - x)
    else:
        pos = t > 0
        loss = O.where(pos, t * O.log(O.where(pos, t, 1.0)), 0.0) - t * x
    if reduction == "batchmean":
        return O.sum(loss) / (x.shape[0] if x.ndim else 1)
    return _reduce(loss, reduction)


# ------------------------------------------------------------ margin losses
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``: ``target = 1`` wants ``input1`` ranked higher."""
    red = _reduction("margin_ranking_loss", reduction, size_average, reduce)
    return _reduce(O.relu(-target * (input1 - input2) + margin), red)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """``x`` where ``target == 1``, ``max(0, margin - x)`` where ``target == -1``."""
    x = _float_input("hinge_embedding_loss", input)
    red = _reduction("hinge_embedding_loss", reduction, size_average, reduce)
    t = check_tensor(target, "hinge_embedding_loss", "target")
    loss = O.where(t != 1, O.relu(margin - x), 0.0) + O.where(t != -1, x, 0.0)
    return _reduce(loss, red)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-target * input))`` for targets +-1 (the logistic loss)."""
    x = _float_input("soft_margin_loss", input)
    red = _reduction("soft_margin_loss", reduction, size_average, reduce)
    return _reduce(_Softplus.apply(-target * x), red)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Binary cross-entropy from logits for each of C labels, averaged over the labels (last dim)."""
    x = _float_input("multilabel_soft_margin_loss", input)
    red = _reduction("multilabel_soft_margin_loss", reduction, size_average, reduce)
    loss = -(target * -_Softplus.apply(-x) + (1 - target) * -_Softplus.apply(x))
    if weight is not None:
        loss = loss * weight
    return _reduce(O.mean(loss, dim=-1), red)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``1 - cos(x1, x2)`` where ``target == 1``; ``max(0, cos(x1, x2) - margin)`` where ``target == -1``."""
    red = _reduction("cosine_embedding_loss", reduction, size_average, reduce)
    a = check_tensor(input1, "cosine_embedding_loss", "input1")
    b = check_tensor(input2, "cosine_embedding_loss", "input2")
    eps = 1e-12  # PyTorch's: added to each squared norm
    d = a.ndim - 1
    cos = O.sum(a * b, dim=d) / O.sqrt((O.sum(a * a, dim=d) + eps) * (O.sum(b * b, dim=d) + eps))
    t = check_tensor(target, "cosine_embedding_loss", "target")
    loss = O.where(t == 1, 1 - cos, 0.0) + O.where(t == -1, O.relu(cos - margin), 0.0)
    return _reduce(loss, red)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with ``d`` the pairwise p-distance."""
    from ._norm import pairwise_distance
    red = _reduction("triplet_margin_loss", reduction, size_average, reduce)
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_an = O.minimum(d_an, pairwise_distance(positive, negative, p, eps))
    return _reduce(O.relu(margin + d_ap - d_an), red)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """Poisson negative log-likelihood: ``exp(x) - t * x`` for a log-rate ``x`` (``log_input=True``), else
    ``x - t * log(x + eps)``; ``full`` adds Stirling's term ``t log t - t + log(2 pi t) / 2`` (for t > 1)."""
    x = _float_input("poisson_nll_loss", input)
    red = _reduction("poisson_nll_loss", reduction, size_average, reduce)
    t = check_tensor(target, "poisson_nll_loss", "target")
    loss = O.exp(x) - t * x if log_input else x - t * O.log(x + eps)
    if full:
        big = t > 1
        safe = O.where(big, t, 2.0)
        loss = loss + O.where(big, safe * O.log(safe) - safe + 0.5 * O.log(2 * np.pi * safe), 0.0)
    return _reduce(loss, red)


# ------------------------------------------------------------- registry entries
def _pair_samples(with_beta=None):
    def samples(src):
        shape = src.shape(0, 3, 1, 4)
        red = src.choice(_REDUCTIONS)
        kw = dict(reduction=red)
        if with_beta:
            kw[with_beta] = src.choice([0.5, 1.0, 2.0])
        x = src.tensor(shape, -3, 3)
        t = src.tensor(shape, -3, 3, requires_grad=src.boolean())
        # keep |x - t| away from the kinks at 0 and at beta/delta
        gap = x.data - t.data
        x.data[abs(abs(gap) - kw.get(with_beta, 0.0)) < 0.05] += 0.2
        x.data[abs(x.data - t.data) < 0.05] += 0.2
        yield Sample((x, t), kw)
    return samples


def _bce_samples(src):
    shape = src.shape(0, 3, 1, 4)
    yield Sample((src.tensor(shape, 0.05, 0.95), src.tensor(shape, 0, 1)),
                 dict(reduction=src.choice(_REDUCTIONS)), desc="probabilities")
    yield Sample((src.tensor((2, 3), 0.05, 0.95), src.tensor((2, 3), 0, 1, requires_grad=False)),
                 dict(weight=src.tensor((3,), 0.5, 2, requires_grad=False)), desc="weight broadcasts")


def _kl_samples(src):
    shape = src.shape(1, 3, 1, 4)
    red = src.choice(("none", "batchmean", "mean", "sum"))
    yield Sample((src.tensor(shape, -3, 0), src.tensor(shape, 0.05, 1)), dict(reduction=red), desc="probabilities")
    yield Sample((src.tensor(shape, -3, 0), src.tensor(shape, -3, 0)), dict(reduction=red, log_target=True),
                 desc="log_target")


def _signs(src, shape):
    return Tensor._make(np.where(src.rng.random(shape) < 0.5, -1.0, 1.0))


def _ranking_samples(src):
    n = src.integers(1, 5)
    x1, x2, t = src.tensor((n,)), src.tensor((n,)), _signs(src, (n,))
    x1.data[abs(-t.data * (x1.data - x2.data) + 0.1) < 0.05] += 0.2  # away from the hinge
    yield Sample((x1, x2, t), dict(margin=0.1, reduction=src.choice(_REDUCTIONS)))


def _hinge_samples(src):
    shape = src.shape(1, 2, 1, 4)
    yield Sample((src.tensor(shape, -3, 3, away_from=1.0), _signs(src, shape)),
                 dict(reduction=src.choice(_REDUCTIONS)))


def _soft_margin_samples(src):
    shape = src.shape(1, 2, 1, 4)
    yield Sample((src.tensor(shape), _signs(src, shape)), dict(reduction=src.choice(_REDUCTIONS)))


def _multilabel_samples(src):
    n, c = src.integers(1, 3), src.integers(1, 4)
    t = Tensor._make((src.rng.random((n, c)) < 0.5).astype(np.float64))
    yield Sample((src.tensor((n, c)), t), dict(weight=src.tensor((c,), 0.5, 2, requires_grad=False),
                                               reduction=src.choice(_REDUCTIONS)))


def _cos_emb_samples(src):
    n, d = src.integers(1, 3), src.integers(2, 4)
    a, b = src.tensor((n, d), 0.2, 2), src.tensor((n, d), -2, 2)
    yield Sample((a, b, _signs(src, (n,))), dict(margin=-0.99, reduction=src.choice(_REDUCTIONS)),
                 desc="margin below every cosine: no hinge kink")


def _triplet_samples(src):
    n, d = src.integers(1, 3), src.integers(1, 3)
    a = src.tensor((n, d))
    pos = Tensor._make(a.data + src.rng.uniform(0.1, 0.3, (n, d))).requires_grad_()
    neg = Tensor._make(a.data + src.rng.uniform(0.5, 1.0, (n, d))).requires_grad_()
    yield Sample((a, pos, neg), dict(margin=5.0, swap=src.boolean(), reduction=src.choice(_REDUCTIONS)),
                 desc="a large margin keeps every triplet active")


def _poisson_samples(src):
    shape = src.shape(1, 2, 1, 4)
    t = Tensor._make(src.rng.integers(0, 5, shape).astype(np.float64))
    yield Sample((src.tensor(shape), t), dict(full=src.boolean(), reduction=src.choice(_REDUCTIONS)), desc="log rate")
    yield Sample((src.tensor(shape, 0.5, 3), t), dict(log_input=False), desc="rate")


for _fn, _samples, _formula in [
    (l1_loss, _pair_samples(), "dX = sign(X - T) * dY   (/ N for mean)"),
    (smooth_l1_loss, _pair_samples("beta"), "dX = dY * (d / beta if |d| < beta else sign(d))   (d = X - T)"),
    (huber_loss, _pair_samples("delta"), "dX = dY * (d if |d| < delta else delta * sign(d))   (d = X - T)"),
    (binary_cross_entropy, _bce_samples, "dP = dY * (P - T) / (P * (1 - P))   (times weight)"),
    (kl_div, _kl_samples, "dX = -T * dY ; dT = (log(T) + 1 - X) * dY"),
    (margin_ranking_loss, _ranking_samples, "dX1 = -T * [loss > 0] * dY ; dX2 = -dX1"),
    (hinge_embedding_loss, _hinge_samples, "dX = dY where T = 1 ; -dY * [margin - X > 0] where T = -1"),
    (soft_margin_loss, _soft_margin_samples, "dX = -T * sigmoid(-T * X) * dY"),
    (multilabel_soft_margin_loss, _multilabel_samples, "dX = (sigmoid(X) - T) * weight * dY / C"),
    (cosine_embedding_loss, _cos_emb_samples, "dX1 = -d cos/dX1 * dY where T = 1 ; +d cos/dX1 * [cos > margin] * dY else"),
    (triplet_margin_loss, _triplet_samples, "dA = (dD_ap/dA - dD_an/dA) * [loss > 0] * dY ; likewise dP, dN"),
    (poisson_nll_loss, _poisson_samples, "dX = (exp(X) - T) * dY   (log_input) ; (1 - T / (X + eps)) * dY otherwise"),
]:
    register(_fn.__name__, samples=_samples, formula=_formula, namespace=NS, torch=_torch_f(_fn.__name__))(_fn)
del _fn, _samples, _formula
