"""The rarer losses of ``F``: ``margin_ranking_loss``, ``hinge_embedding_loss``, ``soft_margin_loss``,
``multilabel_soft_margin_loss``, ``cosine_embedding_loss``, ``triplet_margin_loss``,
``triplet_margin_with_distance_loss``, ``poisson_nll_loss``, ``gaussian_nll_loss``, ``multi_margin_loss``
and ``multilabel_margin_loss``.

Composites of gradlab ops with PyTorch's conventions, over the shared steps of ``nn/_loss.py``
(``_reduction``, ``_reduce``, ``_float_input``). ``gaussian_nll_loss`` is the negative log-likelihood
of ``target`` under ``N(input, var)``, ``0.5 * (log var + (input - target)^2 / var)``; ``var`` is
clamped at ``eps`` without stopping its gradient, as PyTorch does.
"""
from __future__ import annotations

import math

import numpy as np

from .... import checks as _c, ops as O
from ...._tensor import Tensor
from ....backend import xp_of
from ....backend.device import to_host
from ....errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from ....factories import tensor as _tensor
from ....ops._util import check_tensor
from ....ops.activations import log1p_exp
from ....ops.registry import Sample
from ..._distance import pairwise_distance
from ..._loss import _REDUCTIONS, _float_input, _reduce, _reduction
from ..._pooling import _on
from ..._register import register_table


def _index_target(op, target):
    """A class-index target: an int64 tensor (PyTorch: "expected scalar type Long but found Double")."""
    from ....backend import dtypes as _dt
    if target.dtype != _dt.int64:
        raise DTypeError(f"{op}: target has dtype {_dt.dtype_name(target.dtype)} but holds class indices, which "
                         f"must be int64 (long); convert with target.long()")
    return target


# ------------------------------------------------------------ margin losses
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``: ``target = 1`` wants ``input1`` ranked higher."""
    op = "margin_ranking_loss"
    input1, input2, target, margin = _c.arguments(op, input1=(input1, "tensor"), input2=(input2, "tensor"),
                                                  target=(target, "tensor"), margin=(margin, "number"))
    red = _reduction(op, reduction, size_average, reduce)
    return _reduce(O.relu(-target * (input1 - input2) + margin), red)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """``x`` where ``target == 1``, ``max(0, margin - x)`` where ``target == -1``."""
    x = _float_input("hinge_embedding_loss", input)
    margin = _c.arguments("hinge_embedding_loss", margin=(margin, "number"))
    red = _reduction("hinge_embedding_loss", reduction, size_average, reduce)
    t = check_tensor(target, "hinge_embedding_loss", "target")
    loss = O.where(t != 1, O.relu(margin - x), 0.0) + O.where(t != -1, x, 0.0)
    return _reduce(loss, red)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-target * input))`` for targets +-1 (the logistic loss)."""
    x = _float_input("soft_margin_loss", input)
    target = _c.arguments("soft_margin_loss", target=(target, "tensor"))
    red = _reduction("soft_margin_loss", reduction, size_average, reduce)
    return _reduce(log1p_exp(-target * x), red)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Binary cross-entropy from logits for each of C labels, averaged over the labels (last dim)."""
    x = _float_input("multilabel_soft_margin_loss", input)
    _c.arguments("multilabel_soft_margin_loss", target=(target, "tensor"), weight=(weight, "tensor?"))
    red = _reduction("multilabel_soft_margin_loss", reduction, size_average, reduce)
    loss = -(target * -log1p_exp(-x) + (1 - target) * -log1p_exp(x))
    if weight is not None:
        loss = loss * weight
    return _reduce(O.mean(loss, dim=-1), red)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``1 - cos(x1, x2)`` where ``target == 1``; ``max(0, cos(x1, x2) - margin)`` where ``target == -1``."""
    margin = _c.arguments("cosine_embedding_loss", margin=(margin, "number"))
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
    op = "triplet_margin_loss"
    _c.arguments(op, anchor=(anchor, "tensor"), positive=(positive, "tensor"), negative=(negative, "tensor"),
                 margin=(margin, "positive"), p=(p, "number"), eps=(eps, "number"), swap=(swap, "flag"))
    red = _reduction(op, reduction, size_average, reduce)
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_an = O.minimum(d_an, pairwise_distance(positive, negative, p, eps))
    return _reduce(O.relu(margin + d_ap - d_an), red)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """Poisson negative log-likelihood: ``exp(x) - t * x`` for a log-rate ``x`` (``log_input=True``), else
    ``x - t * log(x + eps)``; ``full`` adds Stirling's term ``t log t - t + log(2 pi t) / 2`` (for t > 1)."""
    op = "poisson_nll_loss"
    # an integer input is promoted (as PyTorch: exp of an integer tensor is a float tensor)
    x, t, _, log_input, full = _c.arguments(op, input=(input, "tensor"), target=(target, "tensor"), eps=(eps, "number"),
                                            log_input=(log_input, "flag"), full=(full, "flag"))
    x, t = check_tensor(x, op), check_tensor(t, op, "target")
    red = _reduction(op, reduction, size_average, reduce)
    loss = O.exp(x) - t * x if log_input else x - t * O.log(x + eps)
    if full:
        big = t > 1
        safe = O.where(big, t, 2.0)
        loss = loss + O.where(big, safe * O.log(safe) - safe + 0.5 * O.log(2 * np.pi * safe), 0.0)
    return _reduce(loss, red)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """``0.5 * (log(var) + (input - target)^2 / var)`` (+ ``0.5 log(2 pi)`` with ``full``): regression that
    also predicts its own uncertainty ``var`` (same shape as input, or one per sample)."""
    op = "gaussian_nll_loss"
    x = check_tensor(input, op)
    eps = _c.arguments(op, target=(target, "tensor"), eps=(eps, "number?"))[1]
    if eps is None:  # (PyTorch: "torch.clamp: At least one of 'min' or 'max' must not be None", a RuntimeError)
        raise ArgumentError(f"{op}: eps must be a number (the smallest variance used), got None")
    if not isinstance(var, Tensor):
        var = O.full_like(x, float(_c.number(var, op, "var", tensor_ok=False)))
    _c.floating(var, op, "var")  # PyTorch: "result type Float can't be cast to the desired output type long"
    if tuple(var.shape) != tuple(x.shape):
        if tuple(x.shape[:-1]) == tuple(var.shape):
            var = O.unsqueeze(var, -1)
        elif not (tuple(x.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ShapeError(f"{op}: var {fmt_shape(var.shape)} must have the shape of input {fmt_shape(x.shape)}, "
                             "or that shape with the last dim 1 or dropped (one variance per sample)")
    if reduction not in _REDUCTIONS:
        raise ArgumentError(f"{op}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
    if bool(to_host(var._data < 0).any()):
        raise ArgumentError(f"{op}: var has negative entries; a variance must be >= 0")
    v = var + (O.clamp(var, min=eps) - var).detach()   # clamp the value, keep the gradient (as PyTorch)
    loss = 0.5 * (O.log(v) + (x - target) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """Multi-class hinge loss: ``sum_{i != y} max(0, margin - x[y] + x[i])^p / C`` per sample (times
    ``weight[y]``), ``p`` 1 or 2. The correct class must win by ``margin`` to cost nothing."""
    op = "multi_margin_loss"
    x, target, p, margin = _c.arguments(op, input=(input, "floating"), target=(target, "tensor"), p=(p, "int"),
                                        margin=(margin, "number"))
    x = check_tensor(x, op)
    _c.param_dtype(weight, x, op, "weight")
    red = _reduction(op, reduction, size_average, reduce)
    if p not in (1, 2):
        raise ArgumentError(f"{op}: only p == 1 and p == 2 are supported, got {p}")
    _index_target(op, target)
    unbatched = x.ndim == 1
    if unbatched:
        x = O.unsqueeze(x, 0)
    t = target if isinstance(target, Tensor) else _tensor(np.asarray(target))
    t = O.reshape(t, (-1,))
    if x.ndim != 2 or t.shape[0] != x.shape[0]:
        raise ShapeError(f"{op}: input must be (N, C) or (C,) and target (N,), got input {fmt_shape(input.shape)} "
                         f"and target {fmt_shape(target.shape)}")
    c = x.shape[1]
    ti = to_host(t._data).astype(np.int64)
    xp = xp_of(x._data)
    if ti.size and (ti.min() < 0 or ti.max() >= c):
        raise ArgumentError(f"{op}: target values must be class indices in [0, {c}), got {ti.tolist()}")
    idx = Tensor._make(xp.asarray(ti[:, None]))
    xy = O.gather(x, 1, idx)                                                 # (N, 1)
    m = O.relu(margin - xy + x)
    if p == 2:
        m = m * m
    if weight is not None:
        m = m * O.reshape(check_tensor(weight, op, "weight")[_on(x, ti)], (-1, 1))
    others = Tensor._make(xp.asarray((np.arange(c)[None, :] != ti[:, None]).astype(x.dtype)))  # drop i == y
    loss = O.sum(m * others, dim=1) / c
    if unbatched:
        loss = O.squeeze(loss, 0)
    return _reduce(loss, red)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-label hinge loss: every labelled class ``j`` should beat every other class ``i`` by 1;
    ``sum max(0, 1 - (x[j] - x[i])) / C``. ``target`` lists the labels, ended by -1 (as PyTorch)."""
    op = "multilabel_margin_loss"
    x = check_tensor(_c.arguments(op, input=(input, "floating")), op)
    _index_target(op, _c.arguments(op, target=(target, "tensor")))
    red = _reduction(op, reduction, size_average, reduce)
    t = (to_host(target._data) if isinstance(target, Tensor) else np.asarray(target)).astype(np.int64)
    if t.shape != tuple(x.shape) or x.ndim not in (1, 2):
        raise ShapeError(f"{op}: input (N, C) or (C,) and target of the same shape expected, got input "
                         f"{fmt_shape(x.shape)} and target {fmt_shape(t.shape)}")
    unbatched = x.ndim == 1
    if unbatched:
        x, t = O.unsqueeze(x, 0), t[None]
    n, c = x.shape
    is_t = np.zeros((n, c), dtype=bool)
    for r in range(n):
        for v in t[r]:
            if v < 0:
                break
            if v >= c:
                raise ArgumentError(f"{op}: target label {v} is out of range for {c} classes")
            is_t[r, v] = True
    pairs = Tensor._make(xp_of(x._data).asarray((is_t[:, :, None] & ~is_t[:, None, :]).astype(x.dtype)))
    m = O.relu(1 - O.unsqueeze(x, 2) + O.unsqueeze(x, 1))                  # (N, j, i)
    loss = O.sum(m * pairs, dim=(1, 2)) / c
    return _reduce(O.squeeze(loss, 0) if unbatched else loss, red)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with any ``distance_function`` (default ``pairwise_distance``)."""
    op = "triplet_margin_with_distance_loss"
    _c.arguments(op, anchor=(anchor, "tensor"), positive=(positive, "tensor"), negative=(negative, "tensor"),
                 margin=(margin, "positive"))
    if reduction not in _REDUCTIONS:
        raise ArgumentError(f"{op}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
    d = distance_function if distance_function is not None else pairwise_distance
    dp, dn = d(anchor, positive), d(anchor, negative)
    if swap:
        dn = O.minimum(dn, d(positive, negative))
    return _reduce(O.clamp(dp - dn + margin, min=0), reduction)


def _signs(src, shape):
    return Tensor._make(np.where(src.rng.random(shape) < 0.5, -1.0, 1.0))


def _ranking_samples(src):
    n = src.integers(1, 5)
    x1, x2, t = src.tensor((n,)), src.tensor((n,)), _signs(src, (n,))
    x1._data[abs(-t._data * (x1._data - x2._data) + 0.1) < 0.05] += 0.2  # away from the hinge
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
    pos = Tensor._make(a._data + src.rng.uniform(0.1, 0.3, (n, d))).requires_grad_()
    neg = Tensor._make(a._data + src.rng.uniform(0.5, 1.0, (n, d))).requires_grad_()
    yield Sample((a, pos, neg), dict(margin=5.0, swap=src.boolean(), reduction=src.choice(_REDUCTIONS)),
                 desc="a large margin keeps every triplet active")


def _poisson_samples(src):
    shape = src.shape(1, 2, 1, 4)
    t = Tensor._make(src.rng.integers(0, 5, shape).astype(np.float64))
    yield Sample((src.tensor(shape), t), dict(full=src.boolean(), reduction=src.choice(_REDUCTIONS)), desc="log rate")
    yield Sample((src.tensor(shape, 0.5, 3), t), dict(log_input=False), desc="rate")


def _gauss_samples(src):
    shape = (src.integers(1, 3), src.integers(1, 3))
    red = src.choice(_REDUCTIONS)
    yield Sample((src.tensor(shape), src.tensor(shape), src.tensor(shape, 0.2, 2)),
                 dict(reduction=red, full=src.boolean()))
    yield Sample((src.tensor(shape), src.tensor(shape), src.tensor(shape[:1], 0.2, 2)), desc="one var per sample")


def _margin_samples(src):
    n, c = src.integers(1, 3), src.integers(2, 4)
    t = Tensor._make(np.array([src.integers(0, c - 1) for _ in range(n)], dtype=np.int64))
    yield Sample((src.tensor((n, c)), t), dict(p=src.choice([1, 2]), margin=src.choice([0.7, 1.3]),
                                                reduction=src.choice(_REDUCTIONS)))
    yield Sample((src.tensor((n, c)), t), dict(weight=src.tensor((c,), 0.5, 2, requires_grad=False)), desc="weight")


def _mlm_samples(src):
    n, c = src.integers(1, 3), src.integers(2, 4)
    t = np.full((n, c), -1, dtype=np.int64)
    for r in range(n):
        labels = sorted({src.integers(0, c - 1) for _ in range(src.integers(1, c))})
        t[r, :len(labels)] = labels
    yield Sample((src.tensor((n, c), -0.4, 0.4), Tensor._make(t)), dict(reduction=src.choice(_REDUCTIONS)))


def _twd_samples(src):
    shape = (src.integers(1, 3), src.integers(1, 3))
    yield Sample((src.tensor(shape), src.tensor(shape), src.tensor(shape)),
                 dict(margin=src.choice([0.5, 2.0]), swap=src.boolean(), reduction=src.choice(_REDUCTIONS)))


register_table([
    (margin_ranking_loss, _ranking_samples, "dX1 = -T * [loss > 0] * dY ; dX2 = -dX1"),
    (hinge_embedding_loss, _hinge_samples, "dX = dY where T = 1 ; -dY * [margin - X > 0] where T = -1"),
    (soft_margin_loss, _soft_margin_samples, "dX = -T * sigmoid(-T * X) * dY"),
    (multilabel_soft_margin_loss, _multilabel_samples, "dX = (sigmoid(X) - T) * weight * dY / C"),
    (cosine_embedding_loss, _cos_emb_samples, "dX1 = -d cos/dX1 * dY where T = 1 ; +d cos/dX1 * [cos > margin] * dY else"),
    (triplet_margin_loss, _triplet_samples, "dA = (dD_ap/dA - dD_an/dA) * [loss > 0] * dY ; likewise dP, dN"),
    (poisson_nll_loss, _poisson_samples, "dX = (exp(X) - T) * dY   (log_input) ; (1 - T / (X + eps)) * dY otherwise"),
    (gaussian_nll_loss, _gauss_samples, "dinput = (input - target) / var ; dvar = 0.5 (1/var - d^2/var^2)"),
    (multi_margin_loss, _margin_samples, "dx_i = p m_i^(p-1) [m_i > 0] / C ; dx_y = -sum_i dx_i"),
    (multilabel_margin_loss, _mlm_samples, "dx_j -= [m > 0] / C ; dx_i += [m > 0] / C for each (label j, other i)"),
    (triplet_margin_with_distance_loss, _twd_samples, "dL = [L > 0] (d d(a,p) - d d(a,n))"),
])
