"""Constraints: the set a distribution's parameter or sample must lie in, as ``torch.distributions.constraints``.

Holds the ``Constraint`` base class and PyTorch's constraint objects and factories used by the
distributions here: ``real``, ``real_vector``, ``positive``, ``nonnegative``, ``unit_interval``,
``boolean``, ``simplex``, ``one_hot``, ``nonnegative_integer``, ``positive_definite``,
``lower_cholesky``, ``dependent`` / ``dependent_property``, and the factories ``interval``,
``half_open_interval``, ``greater_than``, ``greater_than_eq``, ``less_than``, ``integer_interval``,
``independent``.

A constraint's ``check(value)`` returns a bool tensor of the batch shape (an event of several numbers
is valid only when all of them are: ``event_dim`` says how many rightmost dims make one event).
Checks run without recording a graph: they only read values.
"""
from __future__ import annotations

from .. import ops as O
from ..autograd.grad_mode import no_grad


class Constraint:
    """A set of values: ``check(value)`` says elementwise (per event) whether ``value`` is in it."""

    is_discrete = False
    event_dim = 0

    def check(self, value):
        raise NotImplementedError

    def __repr__(self):
        return self.__class__.__name__[1:] + "()"


def _events(ok, event_dim):
    """All of the rightmost ``event_dim`` dims of a bool tensor (one verdict per event)."""
    for _ in range(event_dim):
        ok = ok.all(-1)
    return ok


class _Real(Constraint):
    def check(self, value):
        return value == value  # False only at NaN


class _IndependentConstraint(Constraint):
    """``base`` on each element, with ``reinterpreted_batch_ndims`` more dims making one event."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        return _events(self.base_constraint.check(value), self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value):
        with no_grad():
            return ((value == 0) | (value == 1)).all(-1) & (value.sum(-1) == 1)


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self):
        return f"IntegerInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self):
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return self.lower_bound < value

    def __repr__(self):
        return f"GreaterThan(lower_bound={self.lower_bound})"


class _GreaterThanEq(_GreaterThan):
    def check(self, value):
        return self.lower_bound <= value

    def __repr__(self):
        return f"GreaterThanEq(lower_bound={self.lower_bound})"


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return value < self.upper_bound

    def __repr__(self):
        return f"LessThan(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self):
        return f"Interval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(_Interval):
    def check(self, value):
        return (self.lower_bound <= value) & (value < self.upper_bound)

    def __repr__(self):
        return f"HalfOpenInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _Simplex(Constraint):
    """Non-negative vectors summing to 1 (to 1e-6, as PyTorch)."""

    event_dim = 1

    def check(self, value):
        with no_grad():
            return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _LowerCholesky(Constraint):
    """Lower-triangular square matrices with a positive diagonal."""

    event_dim = 2

    def check(self, value):
        with no_grad():
            lower = (O.tril(value) == value).all(-1).all(-1)
            return lower & (O.diagonal(value, dim1=-2, dim2=-1) > 0).all(-1)


class _PositiveDefinite(Constraint):
    """Symmetric matrices whose eigenvalues are all positive (checked by a Cholesky factorisation, as PyTorch)."""

    event_dim = 2

    def check(self, value):
        import numpy as np
        with no_grad():
            a = np.asarray(value.detach().cpu().numpy(), dtype=np.float64)
            sym = np.all(np.isclose(a, np.swapaxes(a, -1, -2), atol=1e-6), axis=(-1, -2))
            flat = a.reshape((-1,) + a.shape[-2:])
            ok = np.empty(len(flat), dtype=bool)
            for i, m in enumerate(flat):
                try:
                    np.linalg.cholesky(m)
                    ok[i] = True
                except np.linalg.LinAlgError:
                    ok[i] = False
            return O.Tensor._make(sym & ok.reshape(a.shape[:-2]))


class _Dependent(Constraint):
    """A placeholder for a constraint that depends on other parameters: never checked when a distribution is
    made (PyTorch's ``constraints.dependent``)."""

    def __init__(self, *, is_discrete=False, event_dim=0):
        self.is_discrete, self.event_dim = is_discrete, event_dim

    def __call__(self, *, is_discrete=False, event_dim=0):
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, value):
        raise ValueError("Cannot determine validity of dependent constraint")


class _DependentProperty(property, _Dependent):
    """A property whose value is a constraint computed from the instance (``Uniform.support`` is
    ``interval(low, high)``); on the class it reads as a dependent constraint."""

    def __init__(self, fn=None, *, is_discrete=False, event_dim=0):
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self.is_discrete, event_dim=self.event_dim)


def is_dependent(constraint):
    """Whether ``constraint`` is one that is not checked (it depends on other parameters)."""
    return isinstance(constraint, _Dependent)


def dependent_property(fn=None, *, is_discrete=False, event_dim=0):
    """Decorator: a property returning a constraint (see ``_DependentProperty``)."""
    if fn is None:
        return _DependentProperty(is_discrete=is_discrete, event_dim=event_dim)
    return _DependentProperty(fn, is_discrete=is_discrete, event_dim=event_dim)


dependent = _Dependent()
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = _IndependentConstraint(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_cholesky = _LowerCholesky()
positive_definite = _PositiveDefinite()
independent = _IndependentConstraint
