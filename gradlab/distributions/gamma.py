"""The gamma family: ``Gamma``, ``Beta`` and ``Dirichlet`` (Beta is the two-category Dirichlet, as in PyTorch).

Their samples are reparameterised: ``rsample`` draws with ``StandardGamma``, whose gradient is the implicit
one (``gradlab/ops/random_draws.py`` explains it); the rate enters as ``x / rate``, an ordinary
differentiable division, and Dirichlet samples are gamma samples divided by their sum, so their gradient
follows from the same rule.
"""
from __future__ import annotations

import numpy as np

from .. import ops as O
from .._tensor import Tensor
from ..errors import ArgumentError
from ..ops.random_draws import StandardGamma
from . import constraints
from .distribution import Distribution, _is_number, broadcast_all


class Gamma(Distribution):
    """The gamma distribution with shape ``concentration`` and inverse scale ``rate`` (mean concentration / rate)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        batch_shape = () if _is_number(concentration) and _is_number(rate) else tuple(self.concentration.shape)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = tuple(batch_shape)
        new.concentration, new.rate = self.concentration.expand(batch_shape), self.rate.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return StandardGamma.apply(self.concentration.expand(shape)) / self.rate.expand(shape)

    def log_prob(self, value):
        value = value if isinstance(value, Tensor) else O.full((), float(value), dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration, self.rate
        return O.xlogy(a, b) + O.xlogy(a - 1, value) - b * value - O.lgamma(a)

    def entropy(self):
        a = self.concentration
        return a - O.log(self.rate) + O.lgamma(a) + (1.0 - a) * O.digamma(a)


class Dirichlet(Distribution):
    """The distribution of probability vectors: ``concentration`` (> 0) along the last dim, one per category."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ArgumentError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(tuple(concentration.shape[:-1]), tuple(concentration.shape[-1:]), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = tuple(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        g = StandardGamma.apply(self.concentration.expand(self._extended_shape(sample_shape)))
        return g / g.sum(-1, keepdim=True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return O.xlogy(c - 1.0, value).sum(-1) + O.lgamma(c.sum(-1)) - O.lgamma(c).sum(-1)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def variance(self):
        c = self.concentration
        c0 = c.sum(-1, keepdim=True)
        return c * (c0 - c) / (c0.pow(2) * (c0 + 1))

    def entropy(self):
        c = self.concentration
        k, a0 = c.shape[-1], c.sum(-1)
        return (O.lgamma(c).sum(-1) - O.lgamma(a0) - (k - a0) * O.digamma(a0)
                - ((c - 1.0) * O.digamma(c)).sum(-1))


class Beta(Distribution):
    """The distribution of a probability: density proportional to ``x^(c1 - 1) (1 - x)^(c0 - 1)`` on [0, 1]."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        if _is_number(concentration1) and _is_number(concentration0):
            both = O.Tensor._make(np.array([float(concentration1), float(concentration0)], dtype=np.float32))
        else:
            c1, c0 = broadcast_all(concentration1, concentration0)
            both = O.stack([c1, c0], -1)
        self._dirichlet = Dirichlet(both, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        Distribution.__init__(new, tuple(batch_shape), validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(O.stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()
