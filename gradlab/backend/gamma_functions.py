"""The gamma family on host arrays with NumPy alone: ``lgamma``, ``digamma`` and ``polygamma``.

Distributions need them (the log-density of a Gamma, Beta or Dirichlet has ``lgamma`` in its
normaliser, their entropies ``digamma``), and SciPy is not a dependency. All three compute in
float64 and round once to the input's floating dtype (an integer input gives the default float32,
as PyTorch's do).

* ``lgamma(x) = log |Gamma(x)|``: Lanczos' approximation (g = 7, nine terms; relative error near
  1e-15) for ``x >= 0.5``, and the reflection ``log(pi / |sin(pi x)|) - lgamma(1 - x)`` below, so the
  poles at 0, -1, -2, ... are ``+inf`` as in PyTorch.
* ``digamma(x) = d/dx lgamma(x)``: the recurrence ``psi(x) = psi(x + 1) - 1/x`` shifts every
  element to ``x >= 10``, where the asymptotic series ``log x - 1/(2x) - sum B_2k / (2k x^2k)`` is
  accurate to 1e-16; negative ``x`` go through the reflection ``psi(1 - x) - pi / tan(pi x)``.
  ``digamma(0) = -inf`` and NaN at the negative integers, as PyTorch's.
* ``polygamma(n, x)``, the n-th derivative of digamma (n >= 1): ``(-1)^(n+1) n! zeta(n + 1, x)``
  with the Hurwitz zeta function, shifted the same way (``x`` below 10 by the recurrence, term by
  term, which also serves negative non-integer ``x``) and finished by Euler-Maclaurin's tail.
"""
from __future__ import annotations

import math

import numpy as np

# Lanczos g = 7, n = 9 (the coefficients Numerical Recipes and Python's own early math.lgamma used)
_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# B_2k for k = 1..9 (the Bernoulli numbers of the asymptotic series)
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798)
_SHIFT_TO = 10.0


def _float64(a):
    a = np.asarray(a)
    out_dtype = a.dtype if a.dtype.kind == "f" else np.dtype(np.float32)
    return a.astype(np.float64), out_dtype


def _lanczos(x):
    """lgamma for x >= 0.5 (float64)."""
    z = x - 1.0
    s = np.full_like(z, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], start=1):
        s += c / (z + i)
    t = z + _G + 0.5
    return _HALF_LOG_2PI + (z + 0.5) * np.log(t) - t + np.log(s)


def lgamma(a):
    """``log |Gamma(a)|`` elementwise (see the module docstring)."""
    x, dt = _float64(a)
    with np.errstate(all="ignore"):
        small = x < 0.5
        out = _lanczos(np.where(small, 1.0 - x, x))
        # reflection: Gamma(x) Gamma(1 - x) = pi / sin(pi x); |sin(pi x)| from x's distance to the nearest
        # integer, which is exact (0 at the poles, full precision near them)
        s = np.abs(np.sin(math.pi * (x - np.round(x))))
        out = np.where(small, np.log(math.pi / s) - out, out)
        out = np.where(np.isposinf(x) | np.isneginf(x), np.inf, out)
    return out.astype(dt)


def _shift_sum(x, power):
    """Shift x (float64) up to >= 10 by steps of 1: (shifted x, sum over the steps of 1 / x_k^power)."""
    acc = np.zeros_like(x)
    x = x.copy()
    finite = np.isfinite(x)
    steps = int(np.max(np.ceil(_SHIFT_TO - x[finite]), initial=0))
    for _ in range(steps):
        low = finite & (x < _SHIFT_TO)
        acc += np.where(low, 1.0 / np.where(low, x, 1.0) ** power, 0.0)
        x = np.where(low, x + 1.0, x)
    return x, acc


def _digamma_large(w):
    """The asymptotic series of digamma for w >= 10."""
    r = 1.0 / (w * w)
    series = np.zeros_like(w)
    p = np.ones_like(w)
    for k, b in enumerate(_BERNOULLI[:7], start=1):
        p = p * r
        series += b / (2 * k) * p
    return np.log(w) - 0.5 / w - series


def digamma(a):
    """``d/dx lgamma(x)`` elementwise (see the module docstring)."""
    x, dt = _float64(a)
    with np.errstate(all="ignore"):
        neg = x < 0.5
        y = np.where(neg, 1.0 - x, x)
        w, acc = _shift_sum(y, 1)
        out = _digamma_large(w) - acc
        # reflection: psi(1 - x) - psi(x) = pi cot(pi x)
        refl = out - math.pi / np.tan(math.pi * (x - np.round(x)))  # (cot has period 1: x's distance to an integer)
        out = np.where(neg, refl, out)
        ints = neg & (x == np.floor(x))
        out = np.where(ints, np.where(x == 0, -np.inf, np.nan), out)
        out = np.where(np.isposinf(x), np.inf, np.where(np.isneginf(x), np.nan, out))
    return out.astype(dt)


def _hurwitz_tail(s, w):
    """Euler-Maclaurin's tail of the Hurwitz zeta sum from w on (w >= 10, s >= 2)."""
    out = w ** (1.0 - s) / (s - 1.0) + 0.5 * w ** (-s)
    rising = s            # s (s + 1) ... (s + 2j - 2)
    fact = 2.0            # (2j)!
    wp = w ** (-s - 1.0)  # w^(-s - 2j + 1)
    for j, b in enumerate(_BERNOULLI, start=1):
        out = out + b / fact * rising * wp
        rising *= (s + 2 * j - 1) * (s + 2 * j)
        fact *= (2 * j + 1) * (2 * j + 2)
        wp = wp / (w * w)
    return out


def polygamma(n, a):
    """The ``n``-th derivative of digamma elementwise; ``n = 0`` is digamma itself."""
    if n == 0:
        return digamma(a)
    x, dt = _float64(a)
    s = n + 1.0
    with np.errstate(all="ignore"):
        w, acc = _shift_sum(x, s)
        zeta = acc + _hurwitz_tail(s, w)
        out = (-1.0) ** (n + 1) * math.factorial(n) * zeta
        poles = (x <= 0) & (x == np.floor(x))
        out = np.where(poles, -np.inf if n % 2 == 0 else np.inf, out)  # (the signs PyTorch gives at 0)
        out = np.where(np.isposinf(x), 0.0, np.where(np.isneginf(x), np.nan, out))
    return out.astype(dt)
