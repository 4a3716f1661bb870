"""Special functions on arrays with NumPy alone: ``erf``, ``erfc`` and the normal CDF, fast and to the input's precision.

SciPy is not a dependency (``pip install gradlab`` brings none), and these kernels are faster
than SciPy's anyway: measured on 4M elements, 2-core machine, one thread, SciPy 1.17
``scipy.special.erf`` 78-118 ms (float32) and 69-147 ms (float64), these 24-50 ms and 89-138 ms (the
spread is the shared machine's load), because NumPy's ufuncs are vectorised and the work runs
in cache-sized chunks (and across threads, ``backend.threads``).

* **float64**: the rational approximations of FreeBSD/fdlibm's ``s_erf.c`` (W. J. Cody's
  method; coefficients below, "Copyright (C) 1993 by Sun Microsystems, Inc. ... Permission to
  use, copy, modify, and distribute this software is freely granted, provided that this notice is
  preserved"): ``x + x R(x^2)`` on ``|x| < 0.84375``, ``erx + P(s)/Q(s)`` with ``s = |x| - 1`` up to
  1.25, ``1 - exp(-x^2 - 0.5625 + R(1/x^2)/S(1/x^2)) / |x|`` up to 6 (two fits), 1 beyond. Error
  below 4e-16 (3 ulp), checked against SciPy and ``math.erf`` in ``tests/test_erf.py``.
* **float32 / float16 / bfloat16**: two float32 polynomials, evaluated in float32 (16-bit inputs:
  in float32, rounded once). On ``|x| < 0.921875``, ``erf(x) = x + x Q(x^2)`` with ``Q`` of degree 5
  (relative error below 1e-7, ~1 ulp); beyond, ``|erf(x)| = 1 - exp(L(|x|))`` with ``L`` of degree 5
  (``L`` approximates ``log erfc``; it falls from ``L(3.92) = -17.36`` on, below float32's half ulp of 1,
  to ``L(inf) = -inf``, so no clamp is needed), the sign put back from ``x``'s sign bit. Error below
  9.3e-8 everywhere (1.6 ulp near erf = 1; 8.1e-8 with ``L`` of degree 6 plus a clamp), tested at
  1.5e-7 on a dense grid with tails and subnormals; odd bit for bit, monotonic. The coefficients were
  fitted for this module with NumPy: minimax in float64 by Lawson's iteratively reweighted least
  squares on Chebyshev-spaced points (``Q``: weighted for erf's relative error; ``L``: weighted by
  ``erfc(t)``, i.e. erf's absolute error), then rounded to float32 one coefficient at a time from the
  lowest order up, refitting the higher ones after each rounding. Cost: the branch most of a block's
  elements take runs over the whole block, the other over the rest only (by index), so GELU's
  inputs (81% below the split) pay for ~12 passes plus a fifth of the tail's 15; an evaluation in
  float64 or an erfc-based tail would be 2.4-3.6x slower. (Before: Eigen's float32 rational, 4.5e-7.)
* ``erfc``: computed as itself, not ``1 - erf`` (which keeps no relative precision once
  ``erf`` rounds to 1: ``erfc(5) = 1.5e-12``, ``erfc(10) = 2e-45``). float64: fdlibm's ``erfc``
  (the same fits; ``exp(-x^2)`` as ``exp(-z^2) exp((z - x)(z + x))`` with ``z`` = ``x`` cut to 21 bits, so
  ``x^2`` is not rounded), relative error below 1e-15 up to x = 26 and 0 beyond 27.3 (underflow);
  float32: ``t exp(-x^2 + S(t))``, ``t = 1 / (1 + x/2)`` (the Chebyshev fit of Numerical Recipes'
  ``erfcc``, relative error 1.2e-7) for ``|x| >= 0.5``, ``1 - erf`` below (erfc is 0.48-1.52 there),
  ``erfc(-x) = 2 - erfc(x)``, ``exp(-x^2)`` split as in float64 (``z`` 12 bits): relative error below 6e-7 (abs 2.5e-7).
* ``ncdf_block``: the standard normal CDF ``Phi(a) = 0.5 (1 + erf(a / sqrt 2))``, exact GELU's weight
  (``a Phi(a)``): float32 from the same two fits with the scalings folded into the coefficients
  (fewer NumPy calls a block, absolute error below 1e-7); float64 through fdlibm's erf.
* NaN stays NaN, ``erf(+-inf) = +-1``, ``erfc(+inf) = 0``, ``erfc(-inf) = 2``; the result has the input's dtype.
"""
from __future__ import annotations

import numpy as np

from . import threads

# fdlibm s_erf.c (see the module docstring)
_ERX = 8.45062911510467529297e-01
_PP = (1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
       -5.77027029648944159157e-03, -2.37630166566501626084e-05)
_QQ = (1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
       1.32494738004321644526e-04, -3.96022827877536812320e-06)
_PA = (-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
       3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
       -2.16637559486879084300e-03)
_QA = (1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
       1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02)
_RA = (-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
       -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
       -8.12874355063065934246e+01, -9.81432934416914548592e+00)
_SA = (1.0, 1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02,
       6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02,
       6.57024977031928170135e+00, -6.04244152148580987438e-02)
_RB = (-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
       -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
       -4.83519191608651397019e+02)
_SB = (1.0, 3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
       3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
       -2.24409524465858183362e+01)


def _horner(z, cs):
    """``cs[0] + cs[1] z + ... `` (a fresh float64 array)."""
    p = np.multiply(z, cs[-1])
    for c in cs[-2:0:-1]:
        p += c
        p *= z
    p += cs[0]
    return p


def _erf64(x, out):
    """fdlibm's erf of the float64 1-D block ``x`` into ``out`` (any float dtype)."""
    ax = np.abs(x)
    small = ax < 0.84375
    if small.all():
        z = x * x
        r = _horner(z, _PP)
        r /= _horner(z, _QQ)
        r *= x
        r += x
        out[...] = r
        return
    res = np.empty_like(x)
    i = np.flatnonzero(small)
    if i.size:
        xs = x[i]
        z = xs * xs
        r = _horner(z, _PP)
        r /= _horner(z, _QQ)
        r *= xs
        r += xs
        res[i] = r
    mid = ax < 1.25
    mid &= ~small
    i = np.flatnonzero(mid)
    if i.size:
        s = ax[i]
        s -= 1
        p = _horner(s, _PA)
        p /= _horner(s, _QA)
        p += _ERX
        res[i] = p
    for lo, hi, rc, sc in ((1.25, 1 / 0.35, _RA, _SA), (1 / 0.35, np.inf, _RB, _SB)):
        m = ax >= lo
        m &= ax < hi if hi != np.inf else True
        i = np.flatnonzero(m)
        if i.size:
            a = np.minimum(ax[i], 6.0)       # erf(6) is 1 in float64; beyond, the same
            s = np.multiply(a, a)
            np.reciprocal(s, out=s)
            r = _horner(s, rc)
            r /= _horner(s, sc)
            r -= a * a
            r -= 0.5625
            np.exp(r, out=r)
            r /= a
            np.subtract(1.0, r, out=r)       # erf = 1 - erfc (erfc < 0.08 here: no digits lost)
            res[i] = r
    np.negative(res, out=res, where=(x < 0) & ~small)  # the tails were computed on |x|
    nan = np.isnan(x)
    if nan.any():
        res[nan] = np.nan
    out[...] = res


# float32 erf, two float32 polynomials (fitted for this module, see the module docstring):
# |x| < 0.921875: erf(x) = x + x Q(x^2); beyond, |erf(x)| = 1 - exp(L(|x|))
_SPLIT32 = 0.921875
_Q32 = (0.12837915122509003, -0.3761249780654907, 0.11281843483448029, -0.026767348870635033,
        0.00499403802677989, -0.0005994504899717867)
_L32 = (-0.002034706063568592, -1.1196314096450806, -0.6515336036682129, -0.090581014752388,
        0.015404412522912025, -0.0012290703598409891)
_Q32F = tuple(np.float32(c) for c in _Q32)
_L32F = tuple(np.float32(c) for c in _L32)


def _erf32_small(x, s):
    """``x + x Q(s)`` (``s = x^2``) in float32: erf on ``|x| < 0.921875`` (a fresh array). The form
    rounds the last step only where ``x`` is added (not ``2/sqrt(pi)``'s float32 rounding times ``x``):
    relative error ~1 ulp."""
    p = _horner(s, _Q32F)
    p *= x
    p += x
    return p


_SIGN32 = np.int32(-2 ** 31)


def _erf32_large(x):
    """``copysign(1 - exp(L(|x|)), x)`` in float32: erf on ``|x| >= 0.921875`` (a fresh array). ``L`` falls
    from ``L(3.92) = -17.36`` on (its leading coefficient is negative), so ``1 - exp(L)`` rounds to 1 from
    there to ``L(inf) = -inf``, with no clamp; NaN stays NaN."""
    t = np.abs(x)
    p = _horner(t, _L32F)
    np.exp(p, out=p)
    np.subtract(np.float32(1), p, out=p)
    sign = t.view(np.int32)         # (t is free again: its bits take x's sign bit)
    np.bitwise_and(x.view(np.int32), _SIGN32, out=sign)
    np.bitwise_or(p.view(np.int32), sign, out=p.view(np.int32))   # the sign of x (copysign is 7x slower)
    return p


def _erf32(x):
    """erf of the float32 1-D block ``x``, in float32 (NaN propagates): a fresh array.

    The branch most elements take runs over the whole block; the other only over its elements
    (gathered by index, computed, scattered back). Each element gets the same operations either
    way, so the bits do not depend on how an array is split into blocks."""
    with np.errstate(over="ignore", invalid="ignore"):   # x^2 (and L(|x|)) overflow for huge |x|: harmless
        s = np.multiply(x, x)
        big = s >= np.float32(_SPLIT32 * _SPLIT32)       # NaN: False (the small branch keeps it NaN)
        return _by_branch(x, s, big, _erf32_small, _erf32_large)


def _by_branch(x, s, big, small, large):
    """``large(x)`` where ``big``, ``small(x, s)`` elsewhere (``s = x * x``), as a fresh array: the branch
    most elements take runs over the whole block, the other only over its elements (gathered by index,
    computed, scattered back), so each element gets the same operations however the array is cut into
    blocks. (One home for :func:`_erf32`'s and :func:`_ncdf32`'s split.)"""
    i = np.flatnonzero(big)
    if 2 * i.size <= x.size:
        r = small(x, s)
        if i.size:
            r[i] = large(x.take(i))
        return r
    r = large(x)
    if i.size < x.size:
        i = np.flatnonzero(~big)
        r[i] = small(x.take(i), s.take(i))
    return r


def erf_block(x):
    """erf of a contiguous 1-D block of at most a few :data:`threads.GRAIN` elements, as a fresh array
    of ``x``'s dtype (float64: fdlibm's; float32: the float32 polynomials). For fused kernels (GELU)."""
    if x.dtype == np.float64:
        out = np.empty_like(x)
        _erf64(x, out)
        return out
    return _erf32(x)


# The standard normal CDF Phi(a) = 0.5 (1 + erf(a / sqrt 2)), for exact GELU (a Phi(a)) and its slope, from the
# same two float32 fits as erf, with the scalings folded in where they round nothing that matters:
# near 0, Phi(a) = 0.5 + a H(a^2) with H(s) = (0.5 + 0.5 Q(s / 2)) / sqrt 2 (Q's coefficients times 2^-k, exact;
# then one rounding each: Phi is 0.16-0.84 there, so ~1 ulp of Phi); in the tails 0.5 + 0.5 erf(a / sqrt 2) with
# erf's tail branch. Absolute error below 9.1e-8 (tested on a dense grid against math.erfc), as
# 0.5 (1 + erf) in float32 (PyTorch's form) has (a tiny Phi far in the left tail is not relatively precise).
_H32F = tuple(np.float32((0.5 * c / 2 ** k + (0.5 if k == 0 else 0.0)) / np.sqrt(2.0)) for k, c in enumerate(_Q32))
_SPLIT32_SQ_A = np.float32(2 * _SPLIT32 * _SPLIT32)    # a^2 beyond it: |a / sqrt 2| >= the split
_INV_SQRT2_32 = np.float32(1 / np.sqrt(2.0))


def _ncdf32(a):
    """Phi of the float32 1-D block ``a`` in float32 (a fresh array), split by :func:`_by_branch` as :func:`_erf32`.

    Why not ``0.5 (1 + erf(a / sqrt 2))`` on :func:`_erf32`: exact GELU's cost is this function, and on
    32K-element blocks NumPy's per-call overhead (~1.3 us a call) is a third of it; folding the scalings
    into the coefficients leaves 16 calls over the block where that took 21. (a^2 overflows for huge |a|: harmless; see :func:`ncdf_block` on warnings.)"""
    s = np.multiply(a, a)
    big = s >= _SPLIT32_SQ_A                    # NaN: False (the small branch keeps it NaN)
    return _by_branch(a, s, big, _ncdf32_near, _ncdf32_tail)


def _ncdf32_near(a, s):
    """Phi near 0 in float32, ``0.5 + a H(a^2)`` (``s = a * a``): a fresh array."""
    r = _horner(s, _H32F)
    r *= a
    r += np.float32(0.5)
    return r


def _ncdf32_tail(a):
    """Phi on ``|a| >= 0.921875 sqrt 2`` in float32: ``0.5 + 0.5 erf(a / sqrt 2)`` with erf's tail branch (its
    sign-bit copy is the cheap way to both sides: a ``where=`` ufunc, masked, takes twice as long)."""
    r = _erf32_large(a * _INV_SQRT2_32)
    r *= np.float32(0.5)
    r += np.float32(0.5)
    return r


def ncdf_block(a):
    """The standard normal CDF Phi of a contiguous 1-D float32/float64 block (as :func:`erf_block`), a fresh
    array; float64 as ``0.5 (1 + erf(a / sqrt 2))`` with fdlibm's erf. For ops, which run with NumPy's
    floating-point warnings off (``backend/fperr.py``): no ``np.errstate`` per block (one costs ~2 us)."""
    if a.dtype == np.float64:
        r = np.empty_like(a)
        _erf64(a * (1 / np.sqrt(2.0)), r)
        r += 1
        r *= 0.5
        return r
    return _ncdf32(a)


# float32 erfc tail: Numerical Recipes' erfcc, erfc(x) = t exp(-x^2 + S(t)), t = 1 / (1 + x/2), x >= 0
_NR = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398, 1.48851587,
       -0.82215223, 0.17087277)
_NRF = tuple(np.float32(c) for c in _NR)


def _erfc64(x, out):
    """fdlibm's erfc of the float64 1-D block ``x`` into ``out``."""
    ax = np.abs(x)
    res = np.empty_like(x)
    small = ax < 0.84375
    i = np.flatnonzero(small)
    if i.size:
        xs = x[i]
        r = np.empty_like(xs)
        _erf64(xs, r)
        res[i] = 1.0 - r                                    # erfc is 0.23-1.77 here: no digits lost
    mid = (ax >= 0.84375) & (ax < 1.25)
    i = np.flatnonzero(mid)
    if i.size:
        s = ax[i] - 1
        p = _horner(s, _PA)
        p /= _horner(s, _QA)
        res[i] = np.where(x[i] > 0, (1 - _ERX) - p, (1 + _ERX) + p)
    for lo, hi, rc, sc in ((1.25, 1 / 0.35, _RA, _SA), (1 / 0.35, np.inf, _RB, _SB)):
        m = ax >= lo
        m &= ax < hi if hi != np.inf else True
        i = np.flatnonzero(m)
        if i.size:
            a = np.minimum(ax[i], 28.0)                     # erfc(28) underflows to 0 (and 2 - it is 2)
            s = np.reciprocal(a * a)
            r = _horner(s, rc)
            r /= _horner(s, sc)
            z = (a.view(np.int64) & ~np.int64(0xFFFFFFFF)).view(np.float64)   # a cut to 21 bits: z*z exact
            with np.errstate(under="ignore"):
                r += (z - a) * (z + a)
                np.exp(r, out=r)
                r *= np.exp(-z * z - 0.5625)
                r /= a
            res[i] = np.where(x[i] > 0, r, 2.0 - r)
    nan = np.isnan(x)
    if nan.any():
        res[nan] = np.nan
    out[...] = res


def _erfc32(x):
    """erfc of the float32 1-D block ``x``, in float32 (a fresh array)."""
    a = np.minimum(np.abs(x), np.float32(11))                # erfc(11) underflows to 0 in float32 (NaN stays)
    t = a * np.float32(0.5)
    t += np.float32(1)
    np.reciprocal(t, out=t)
    r = _horner(t, _NRF)
    z = (a.view(np.int32) & np.int32(~0xFFF)).view(np.float32)   # a cut to 12 bits: z*z is exact
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):
        r += (z - a) * (z + a)                              # exp(-a^2) = exp(-z^2) exp((z - a)(z + a))
        np.exp(r, out=r)
        r *= np.exp(-(z * z))
        r *= t
    neg = x < 0
    np.subtract(np.float32(2), r, out=r, where=neg)
    small = a < np.float32(0.5)
    if small.any():
        r[small] = np.float32(1) - _erf32(x[small])
    return r


def erfc_block(x):
    """erfc of a contiguous 1-D block (as :func:`erf_block`)."""
    if x.dtype == np.float64:
        out = np.empty_like(x)
        _erfc64(x, out)
        return out
    return _erfc32(x)


def _elementwise(block, a):
    """``block`` over a NumPy array in ``a``'s float dtype (an integer array as float64), split across
    threads for large arrays (float64 computed in float64, other floats in float32)."""
    a = np.asarray(a)
    if a.dtype.kind != "f" and a.dtype.name != "bfloat16":
        a = a.astype(np.float64)
    work = np.float64 if a.dtype == np.float64 else np.float32
    return threads.map_blocks(lambda b: block(b.astype(work, copy=False)), a, dtype=a.dtype)


def erfc(a):
    """``erfc = 1 - erf`` of a NumPy array, computed as itself (relative precision in the tail, see the module doc)."""
    return _elementwise(erfc_block, a)


def erf(a):
    """``erf`` of a NumPy array, elementwise, in ``a``'s float dtype (float64 kept ~1e-16, others ~1e-7)."""
    return _elementwise(erf_block, a)
