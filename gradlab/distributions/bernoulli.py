"""``Bernoulli``: 1 with probability ``probs`` (or ``sigmoid(logits)``), else 0.

``log_prob`` and ``entropy`` go through ``binary_cross_entropy_with_logits``, which stays finite
where ``log(p)`` of a saturated sigmoid would be ``-inf``.
"""
from __future__ import annotations

import math

from .. import ops as O
from ..autograd.grad_mode import no_grad
from ..errors import ArgumentError
from ..factories import arange
from ..nn.functional import binary_cross_entropy_with_logits
from ..sampling import bernoulli as _bernoulli
from . import constraints
from .distribution import Distribution, _is_number, broadcast_all, lazy_property, logits_to_probs, probs_to_logits


def _bce_with_logits(logits, target):
    """``-(target log sigmoid(z) + (1 - target) log(1 - sigmoid(z)))``, elementwise and stable."""
    return binary_cross_entropy_with_logits(logits, target, reduction="none")


def one_of(probs, logits):
    """The check every distribution given ``probs=`` or ``logits=`` makes: exactly one of them."""
    if (probs is None) == (logits is None):
        raise ArgumentError("Either `probs` or `logits` must be specified, but not both.")


class Bernoulli(Distribution):
    """A coin: 1 with probability ``probs`` (or ``sigmoid(logits)``), 0 otherwise."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        one_of(probs, logits)
        given = probs if probs is not None else logits
        (param,) = broadcast_all(given)
        if probs is not None:
            self.probs = param
        else:
            self.logits = param
        self._param = param
        super().__init__(() if _is_number(given) else tuple(param.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Bernoulli, _instance)
        batch_shape = tuple(batch_shape)
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(batch_shape))
                new._param = new.__dict__[name]
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return tuple(self._param.shape)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return O.where(self.probs == 0.5, math.nan, mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        with no_grad():
            return _bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_bce_with_logits(logits, value)

    def entropy(self):
        return _bce_with_logits(self.logits, self.probs)

    def enumerate_support(self, expand=True):
        values = arange(2, dtype=self._param.dtype).view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values
