"""The normal distributions: ``Normal`` (one number per draw) and ``MultivariateNormal`` (a vector).

Both are reparameterised: ``rsample`` is ``loc + scale * eps`` (``loc + L eps`` with ``L`` the lower
Cholesky factor of the covariance) with ``eps`` standard normal noise, so gradients flow to the
parameters through the sample -- the trick a VAE trains with.
"""
from __future__ import annotations

import math

import numpy as np

from .. import ops as O
from ..autograd.grad_mode import no_grad
from ..errors import ArgumentError
from . import constraints
from .distribution import HALF_LOG_2PI, Distribution, _is_number, broadcast_all, lazy_property, standard_normal


class Normal(Distribution):
    """The normal (Gaussian) distribution with mean ``loc`` and standard deviation ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        batch_shape = () if _is_number(loc) and _is_number(scale) else tuple(self.loc.shape)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Normal, _instance)
        batch_shape = tuple(batch_shape)
        new.loc, new.scale = self.loc.expand(batch_shape), self.scale.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def sample(self, sample_shape=()):
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        eps = standard_normal(self._extended_shape(sample_shape), self.loc)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -((value - self.loc) ** 2) / (2 * self.scale ** 2) - O.log(self.scale) - HALF_LOG_2PI

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + O.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def entropy(self):
        return 0.5 + HALF_LOG_2PI + O.log(self.scale)


def _broadcast_shapes(*shapes):
    return tuple(np.broadcast_shapes(*shapes))


def _batch_mv(bmat, bvec):
    return O.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(L, x):
    """``x^T (L L^T)^-1 x`` for each batch: the squared length of ``L^-1 x`` (a solve, never an inverse)."""
    shape = _broadcast_shapes(tuple(L.shape[:-2]), tuple(x.shape[:-1]))
    n = x.shape[-1]
    Lb = O.broadcast_to(L, shape + (n, n))
    xb = O.broadcast_to(x, shape + (n,))
    return (O.linalg.solve(Lb, xb.unsqueeze(-1)).squeeze(-1) ** 2).sum(-1)


class MultivariateNormal(Distribution):
    """The normal distribution of a vector: mean ``loc`` and one of ``covariance_matrix``, ``precision_matrix``
    or ``scale_tril`` (the lower Cholesky factor ``L`` of the covariance ``L L^T``)."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.dim() < 1:
            raise ArgumentError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ArgumentError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        given = next((n, m) for n, m in (("scale_tril", scale_tril), ("covariance_matrix", covariance_matrix),
                                         ("precision_matrix", precision_matrix)) if m is not None)
        name, matrix = given
        if matrix.dim() < 2:
            what = "scale_tril matrix" if name == "scale_tril" else name
            raise ArgumentError(f"{what} must be at least two-dimensional, with optional leading batch dimensions")
        batch_shape = _broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
        setattr(self, name, matrix.expand(batch_shape + (-1, -1)))
        self.loc = loc.expand(batch_shape + (-1,))
        super().__init__(batch_shape, tuple(self.loc.shape[-1:]), validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = O.linalg.cholesky(matrix)
        else:  # L with L L^T = P^-1
            self._unbroadcasted_scale_tril = O.linalg.cholesky(O.linalg.inv(matrix))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = tuple(batch_shape)
        cov_shape = batch_shape + self.event_shape + self.event_shape
        new.loc = self.loc.expand(batch_shape + self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return O.matmul(L, L.mT).expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        return O.linalg.inv(O.matmul(L, L.mT)).expand(self._batch_shape + self._event_shape + self._event_shape)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=()):
        eps = standard_normal(self._extended_shape(sample_shape), self.loc)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self):
        return O.diagonal(self._unbroadcasted_scale_tril, dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - self._half_log_det()

    def entropy(self):
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return H if len(self._batch_shape) == 0 else H.expand(self._batch_shape)
