"""``kl_divergence(p, q)`` and ``register_kl``: the KL divergence ``E_p[log p - log q]`` in closed form for the
common pairs (the same table and dispatch as PyTorch: the most specific registered pair of classes wins).

Pairs: Bernoulli, Beta, Categorical, Dirichlet, Gamma, Normal, MultivariateNormal, OneHotCategorical,
Uniform with themselves; Independent with Independent (the base pair, summed); Uniform || Normal.
"""
from __future__ import annotations

import math

from .. import ops as O
from ..errors import ArgumentTypeError
from ..nn.functional import softplus
from .bernoulli import Bernoulli
from .categorical import Categorical, OneHotCategorical
from .distribution import Distribution, sum_rightmost
from .gamma import Beta, Dirichlet, Gamma
from .independent import Independent
from .normal import MultivariateNormal, Normal, _batch_mahalanobis
from .uniform import Uniform

_KL_REGISTRY: dict = {}
_KL_MEMOIZE: dict = {}
_INF = math.inf


def register_kl(type_p, type_q):
    """Decorator: ``fn(p, q)`` computes KL(p || q) for ``p`` of class ``type_p`` and ``q`` of ``type_q``."""
    for name, t in (("type_p", type_p), ("type_q", type_q)):
        if not (isinstance(t, type) and issubclass(t, Distribution)):
            raise ArgumentTypeError(f"register_kl: expected {name} to be a Distribution subclass but got {t!r}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun
    return decorator


def _dispatch(type_p, type_q):
    """The registered pair nearest to (type_p, type_q) in both classes' method resolution orders."""
    best = None
    for (sp, sq), fun in _KL_REGISTRY.items():
        if issubclass(type_p, sp) and issubclass(type_q, sq):
            rank = (type_p.__mro__.index(sp), type_q.__mro__.index(sq))
            if best is None or rank < best[0]:
                best = (rank, fun)
    return NotImplemented if best is None else best[1]


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(x) - log q(x)], one number per batch element."""
    key = (type(p), type(q))
    if key not in _KL_MEMOIZE:
        _KL_MEMOIZE[key] = _dispatch(*key)
    fun = _KL_MEMOIZE[key]
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
                                  f"{type(q).__name__}")
    return fun(p, q)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = O.where(p.probs == 0, 0.0, O.where(q.probs == 0, _INF, t1))
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = O.where(p.probs == 1, 0.0, O.where(q.probs == 1, _INF, t2))
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sp = p.concentration1 + p.concentration0
    sq = q.concentration1 + q.concentration0
    t1 = O.lgamma(q.concentration1) + O.lgamma(q.concentration0) + O.lgamma(sp)
    t2 = O.lgamma(p.concentration1) + O.lgamma(p.concentration0) + O.lgamma(sq)
    t3 = (p.concentration1 - q.concentration1) * O.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * O.digamma(p.concentration0)
    t5 = (sq - sp) * O.digamma(sp)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = O.where(p.probs == 0, 0.0, O.where(q.probs == 0, _INF, t))
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = O.lgamma(sum_p) - O.lgamma(sum_q)
    t2 = (O.lgamma(p.concentration) - O.lgamma(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = O.digamma(p.concentration) - O.digamma(sum_p).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * O.log(p.rate / q.rate)
    t2 = O.lgamma(q.concentration) - O.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * O.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - O.log(var_ratio))


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot be "
                         "computed")
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = q._half_log_det() - p._half_log_det()
    n = p.event_shape[0]
    import numpy as np
    shape = tuple(np.broadcast_shapes(tuple(Lq.shape[:-2]), tuple(Lp.shape[:-2]))) + (n, n)
    # tr(Sigma_q^-1 Sigma_p) = ||Lq^-1 Lp||_F^2
    term2 = (O.linalg.solve(O.broadcast_to(Lq, shape), O.broadcast_to(Lp, shape)) ** 2).sum(-1).sum(-1)
    term3 = _batch_mahalanobis(Lq, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = O.log((q.high - q.low) / (p.high - p.low))
    return O.where((q.low > p.low) | (q.high < p.high), _INF, result)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    width = p.high - p.low
    t1 = O.log(math.sqrt(math.pi * 2) * q.scale / width)
    t2 = width.pow(2) / 12
    t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return t1 + 0.5 * (t2 + t3) / q.scale.pow(2)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("kl_divergence: Independent distributions with different "
                                  "reinterpreted_batch_ndims")
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)
