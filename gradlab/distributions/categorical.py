"""``Categorical`` (an index in ``0..K-1``) and ``OneHotCategorical`` (the same draw as a one-hot vector).

A policy network's ``Categorical(probs).sample()`` picks an action and ``log_prob(action)`` is the
score REINFORCE multiplies by the return. ``probs`` are normalised to sum to 1 along the last dim;
``logits`` are normalised by subtracting their ``logsumexp`` (so ``probs == softmax(logits)``).
"""
from __future__ import annotations

import math

import numpy as np

from .. import ops as O
from ..autograd.grad_mode import no_grad
from ..backend import dtypes as _dt
from ..errors import ArgumentError
from ..factories import arange, eye
from ..nn.functional import one_hot as _one_hot
from ..sampling import multinomial
from . import constraints
from .bernoulli import one_of
from .distribution import Distribution, _shape, finfo, lazy_property, logits_to_probs, probs_to_logits


class Categorical(Distribution):
    """A draw of one of ``K`` categories with probabilities ``probs`` (or ``softmax(logits)``) along the last dim."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        one_of(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ArgumentError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ArgumentError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        batch_shape = tuple(self._param.shape[:-1]) if self._param.ndim > 1 else ()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = tuple(batch_shape)
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(batch_shape + (self._num_events,)))
                new._param = new.__dict__[name]
        new._num_events = self._num_events
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return tuple(self._param.shape)

    @property
    def mean(self):
        return O.full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    @property
    def variance(self):
        return O.full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    def sample(self, sample_shape=()):
        sample_shape = _shape(sample_shape)
        n = 1
        for s in sample_shape:
            n *= s
        with no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            samples_2d = multinomial(probs_2d, n, True).T if n else O.zeros(0, probs_2d.shape[0], dtype=_dt.int64)
            return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        shape = tuple(np.broadcast_shapes(tuple(value.shape), tuple(self.logits.shape)))
        value = O.broadcast_to(value, shape)[..., :1]
        return O.broadcast_to(self.logits, shape).gather(-1, value).squeeze(-1)

    def entropy(self):
        logits = O.clamp(self.logits, min=float(finfo(self.logits.dtype).min))
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = arange(self._num_events, dtype=_dt.int64).view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values


class OneHotCategorical(Distribution):
    """A ``Categorical`` draw written as a one-hot vector of length ``K`` (the event shape is ``(K,)``)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(OneHotCategorical, _instance)
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, tuple(batch_shape), self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def _param(self):
        return self._categorical._param

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def mean(self):
        return self._categorical.probs

    @property
    def mode(self):
        probs = self._categorical.probs
        return _one_hot(probs.argmax(dim=-1), num_classes=probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self):
        return self._categorical.probs * (1 - self._categorical.probs)

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=()):
        indices = self._categorical.sample(sample_shape)
        return _one_hot(indices, self._categorical._num_events).to(self._categorical.probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self.event_shape[0]
        values = eye(n, dtype=self._param.dtype).view((n,) + (1,) * len(self.batch_shape) + (n,))
        return values.expand((n,) + self.batch_shape + (n,)) if expand else values
