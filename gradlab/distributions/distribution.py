"""The ``Distribution`` base class and the helpers every distribution shares (as ``torch.distributions``).

Holds ``Distribution`` (batch and event shapes, argument and sample validation, ``sample`` through
``rsample`` without a graph, ``stddev``, ``perplexity``, ``expand``'s checked instance, the repr),
``lazy_property`` (a parameter computed from another on first use: ``Categorical.probs`` from its
logits), ``broadcast_all``, ``logits_to_probs`` / ``probs_to_logits`` / ``clamp_probs``,
``sum_rightmost`` and ``standard_normal``/``uniform_draw`` (the noise of reparameterised samples).

Shapes: a sample has shape ``sample_shape + batch_shape + event_shape``. ``batch_shape`` indexes
independent distributions with different parameters; ``event_shape`` is the shape of one draw
(``()`` for a scalar distribution, ``(k,)`` for a k-dimensional normal). ``log_prob`` returns one
number per event, so its shape is ``sample_shape + batch_shape``.

Validation follows PyTorch: on by default (off under ``python -O``), switched for all distributions
by ``Distribution.set_default_validate_args`` and for one by ``validate_args=``; a parameter outside
its constraint, or a value outside the support given to ``log_prob``, is a ``ValueError``
(gradlab's ``ArgumentError``), naming the parameter, its shape and the constraint.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import ops as O
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad, no_grad
from ..backend import dtypes as _dt, random as _random
from ..backend.device import to_device_array
from ..backend.dtypes import finfo  # (the distributions read it from here)
from ..errors import ArgumentError
from . import constraints


def _shape(s, what="sample_shape"):
    if isinstance(s, int):
        return (s,)
    try:
        return tuple(int(v) for v in s)
    except TypeError:
        raise ArgumentError(f"{what} must be a tuple of ints (torch.Size), got {s!r}") from None


class Distribution:
    """The abstract base class of probability distributions (PyTorch's ``torch.distributions.Distribution``)."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value):
        """Switch argument validation on or off for every distribution made from now on."""
        if value not in [True, False]:
            raise ArgumentError(f"set_default_validate_args: value must be True or False, got {value!r}")
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = tuple(batch_shape)
        self._event_shape = tuple(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set `arg_constraints = {{}}` "
                              "or initialize the distribution with `validate_args=False` to turn off validation.",
                              stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # a constraint that depends on other parameters is not checked here
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue  # a parameter not given (computed lazily from the other one)
                value = getattr(self, param)
                if not bool(constraint.check(value).all()):
                    raise ArgumentError(
                        f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) of "
                        f"distribution {self!r} to satisfy the constraint {constraint!r}, but found invalid "
                        f"values:\n{value}")

    def expand(self, batch_shape, _instance=None):
        """A new distribution with parameters expanded (not copied) to ``batch_shape``."""
        raise NotImplementedError(f"{type(self).__name__}.expand is not implemented")

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def arg_constraints(self):
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement variance")

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        """A sample (no graph: its gradient is not defined); use ``rsample`` for a differentiable one."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """A reparameterised sample: a differentiable function of the parameters and of fixed noise."""
        raise NotImplementedError(f"{type(self).__name__} has no reparameterised sampler (has_rsample is False); "
                                  "use sample(), or a score-function estimator with log_prob()")

    def sample_n(self, n):
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.", FutureWarning, stacklevel=2)
        return self.sample((n,))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError(f"{type(self).__name__} does not implement cdf")

    def icdf(self, value):
        raise NotImplementedError(f"{type(self).__name__} does not implement icdf")

    def enumerate_support(self, expand=True):
        raise NotImplementedError(f"{type(self).__name__} has no enumerable support")

    def entropy(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement entropy")

    def perplexity(self):
        return O.exp(self.entropy())

    def _extended_shape(self, sample_shape=()):
        return _shape(sample_shape) + self._batch_shape + self._event_shape

    def _validate_sample(self, value):
        """The checks PyTorch makes on a value given to ``log_prob``/``cdf``: a tensor, the event shape at the
        right, broadcastable with the batch shape, inside the support."""
        if not isinstance(value, Tensor):
            raise ArgumentError("The value argument to log_prob must be a Tensor")
        shape = tuple(value.shape)
        start = len(shape) - len(self._event_shape)
        if shape[start:] != self._event_shape:
            raise ArgumentError(f"The right-most size of value must match event_shape: {shape} vs {self._event_shape}.")
        expected = self._batch_shape + self._event_shape
        for i, j in zip(reversed(shape), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ArgumentError(f"Value is not broadcastable with batch_shape+event_shape: {shape} vs {expected}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please initialize "
                          "the distribution with `validate_args=False` to turn off validation.", stacklevel=2)
            return
        if not bool(support.check(value).all()):
            raise ArgumentError(
                f"Expected value argument ({type(value).__name__} of shape {shape}) to be within the support "
                f"({support!r}) of the distribution {self!r}, but found invalid values:\n{value}")

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else tuple(self.__dict__[p].shape)}"
                         for p in names)
        return f"{type(self).__name__}({args})"


class lazy_property:  # noqa: N801 - PyTorch's name
    """A parameter computed from another the first time it is read, then stored on the instance (so
    ``Categorical(logits=z).probs`` is ``softmax(z)``, made once, with its graph)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def _is_number(v):
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def broadcast_all(*values):
    """Tensors and numbers to tensors of one broadcast shape (numbers take the first tensor's dtype, else the
    default dtype), keeping each tensor's graph."""
    if not all(isinstance(v, Tensor) or _is_number(v) for v in values):
        raise ArgumentError("Input arguments must all be instances of Number, torch.Tensor or objects implementing "
                            f"__torch_function__; got {', '.join(type(v).__name__ for v in values)}")
    like = next((v for v in values if isinstance(v, Tensor)), None)
    dtype = like.dtype if like is not None else _dt.get_default_dtype()
    ts = [v if isinstance(v, Tensor) else O.full((), float(v), dtype=dtype, device=like.device if like is not None
                                                 else None) for v in values]
    shape = np.broadcast_shapes(*(tuple(t.shape) for t in ts))
    return tuple(t if tuple(t.shape) == shape else O.broadcast_to(t, shape) for t in ts)


def sum_rightmost(value, dim):
    """Sum the rightmost ``dim`` dims of ``value`` (one number per event)."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def clamp_probs(probs):
    eps = float(finfo(probs.dtype).eps)
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary=False):
    return O.sigmoid(logits) if is_binary else O.softmax(logits, dim=-1)


def probs_to_logits(probs, is_binary=False):
    p = clamp_probs(probs)
    return O.log(p) - O.log1p(-p) if is_binary else O.log(p)


def _noise(draw, shape, like):
    arr = np.asarray(draw(_random.generator(), shape), dtype=np.float64).astype(like.dtype)
    return Tensor._make(arr if like.device.type == "cpu" else to_device_array(arr, like.device))


def standard_normal(shape, like):
    """Standard normal noise of ``shape`` in ``like``'s dtype (from the global generator: ``manual_seed``)."""
    return _noise(lambda rng, s: rng.standard_normal(s), shape, like)


def uniform_draw(shape, like):
    """Uniform noise on [0, 1) of ``shape`` in ``like``'s dtype."""
    return _noise(lambda rng, s: rng.random(s), shape, like)


euler_constant = 0.5772156649015329
HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
