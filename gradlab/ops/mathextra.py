"""More of PyTorch's functions, written with the ops gradlab already has.

* top-level spellings of Tensor methods (``gradlab.sort(x)`` is ``x.sort()``, ``gradlab.softmax(x, 1)``...);
* elementwise functions that are short formulas of other ops (``log2(x) = log(x) / log(2)``,
  ``sinh(x) = (e^x - e^-x) / 2``...): their gradients come from the ops they are made of, so they
  need no backward formula of their own. Each is registered: the generic suite gradchecks it and
  compares it with PyTorch.
"""
from __future__ import annotations

import math

import numpy as np

from .. import ops as O
from ..backend import dtypes as _dt
from .._tensor import Tensor
from ._util import check_broadcast, check_tensor
from .registry import Sample, register
from .samples import binary_samples, unary_samples


# ------------------------------------------------- top-level spellings of methods
def _method(name, doc):
    def fn(input, *args, **kwargs):
        return getattr(check_tensor(input, name), name)(*args, **kwargs)
    fn.__name__, fn.__doc__ = name, doc
    return fn


sort = _method("sort", "``(values, indices)`` of ``input`` sorted along ``dim`` (``x.sort(...)``).")
argsort = _method("argsort", "The indices that sort ``input`` along ``dim`` (``x.argsort(...)``).")
topk = _method("topk", "The ``k`` largest entries along ``dim`` and their indices (``x.topk(k, ...)``).")
softmax = _method("softmax", "``exp(x) / sum(exp(x))`` along ``dim`` (``x.softmax(dim)``, ``F.softmax``).")
log_softmax = _method("log_softmax", "``log(softmax(x))`` along ``dim``, computed stably (``x.log_softmax(dim)``).")
unbind = _method("unbind", "A tuple of the slices along ``dim`` (``x.unbind(dim)``).")
narrow = _method("narrow", "``length`` entries along ``dim`` from ``start`` (``x.narrow(...)``).")
movedim = moveaxis = _method("movedim", "Move dim(s) ``source`` to ``destination`` (``x.movedim(...)``).")
nonzero = _method("nonzero", "The indices of the nonzero entries (``x.nonzero()``).")
unflatten = _method("unflatten", "Split dim ``dim`` into ``sizes`` (``x.unflatten(dim, sizes)``).")
ravel = _method("ravel", "The elements as a 1-D tensor (``x.ravel()``).")


# ------------------------------------------------- short formulas of other ops
_LN2, _LN10 = math.log(2.0), math.log(10.0)


def _unary(name, formula, low=-2.0, high=2.0, away_from=None):
    def deco(fn):
        fn.__name__ = name
        return register(name, samples=unary_samples(low=low, high=high, away_from=away_from), formula=formula,
                        elementwise=True, torch=lambda torch, x: getattr(torch, name)(x))(fn)
    return deco


def _float(x, name):
    """Integer and bool inputs are computed in the default float dtype, as PyTorch does."""
    x = check_tensor(x, name)
    return x if _dt.is_floating(x.dtype) else O.to(x, _dt.get_default_dtype())


@_unary("log2", "dX = dY / (X ln 2)", low=0.2, high=3.0)
def log2(input):
    """Base-2 logarithm: ``log(x) / ln 2``."""
    return O.log(_float(input, "log2")) / _LN2


@_unary("log10", "dX = dY / (X ln 10)", low=0.2, high=3.0)
def log10(input):
    """Base-10 logarithm: ``log(x) / ln 10``."""
    return O.log(_float(input, "log10")) / _LN10


@_unary("exp2", "dX = dY * 2^X ln 2")
def exp2(input):
    """``2 ** x``, as ``exp(x ln 2)``."""
    return O.exp(_float(input, "exp2") * _LN2)


@_unary("rsqrt", "dX = -dY / (2 X^1.5)", low=0.2, high=3.0)
def rsqrt(input):
    """``1 / sqrt(x)``."""
    return O.reciprocal(O.sqrt(_float(input, "rsqrt")))


@_unary("sinh", "dX = dY cosh(X)")
def sinh(input):
    """``(e^x - e^-x) / 2``."""
    x = _float(input, "sinh")
    return (O.exp(x) - O.exp(-x)) * 0.5


@_unary("cosh", "dX = dY sinh(X)")
def cosh(input):
    """``(e^x + e^-x) / 2``."""
    x = _float(input, "cosh")
    return (O.exp(x) + O.exp(-x)) * 0.5


@_unary("tan", "dX = dY / cos(X)^2", low=-1.2, high=1.2)
def tan(input):
    """``sin(x) / cos(x)``."""
    x = _float(input, "tan")
    return O.sin(x) / O.cos(x)


@_unary("erfc", "dX = -dY 2/sqrt(pi) exp(-X^2)")
def erfc(input):
    """``1 - erf(x)``."""
    return 1.0 - O.erf(_float(input, "erfc"))


@_unary("logit", "dX = dY / (X (1 - X))", low=0.05, high=0.95)
def logit(input, eps=None):
    """``log(p / (1 - p))``, the inverse of the sigmoid; ``eps`` clamps ``p`` to ``[eps, 1 - eps]`` first."""
    p = _float(input, "logit")
    if eps is not None:
        p = O.clamp(p, eps, 1.0 - eps)
    return O.log(p / (1.0 - p))


@_unary("frac", "dX = dY", away_from=0.0)
def frac(input):
    """The fractional part ``x - trunc(x)`` (with the sign of ``x``)."""
    x = check_tensor(input, "frac")
    return x - O.trunc(x)


def _pairs(src):
    """Tensor pairs (broadcasting both ways, and same shapes) from the binary samples."""
    return [s for s in binary_samples("pairs")(src) if all(isinstance(a, Tensor) for a in s.args)]


@register(samples=lambda src: [Sample(s.args + (w,), desc=s.desc) for s, w in zip(_pairs(src), (0.3, -0.5, 1.5, 0.0))],
          formula="dA = dY (1 - W) ; dB = dY W", elementwise=True,
          torch=lambda torch, a, b, w: torch.lerp(a, b, w))
def lerp(input, end, weight):
    """``input + weight * (end - input)``: a straight line from ``input`` (weight 0) to ``end`` (weight 1)."""
    return check_tensor(input, "lerp") + weight * (end - input)


@register(samples=_pairs, formula="dA = dY sigmoid(A - B) ; dB = dY sigmoid(B - A)", elementwise=True,
          torch=lambda torch, a, b: torch.logaddexp(a, b))
def logaddexp(input, other):
    """``log(e^a + e^b)`` computed stably as ``m + log(e^(a-m) + e^(b-m))`` with ``m = max(a, b)``."""
    a, b = check_tensor(input, "logaddexp"), check_tensor(other, "logaddexp", "other")
    m = O.maximum(a, b).detach()
    m = O.where(O.isfinite(m), m, 0.0)  # a pair of infinities must not give inf - inf
    return m + O.log(O.exp(a - m) + O.exp(b - m))


def fmod(input, other):
    """The remainder of C's ``fmod``: ``a - b * trunc(a / b)``, with the sign of ``a`` (``remainder``,
    Python's ``%``, takes the sign of ``b``)."""
    a = check_tensor(input, "fmod") if isinstance(input, Tensor) else input
    if isinstance(a, Tensor) and a.dtype.kind in "iu" and not (isinstance(other, float)
                                                              or getattr(other, "dtype", a.dtype).kind == "f"):
        q = O.div(a, other, rounding_mode="trunc")
        return a - q * other
    return a - other * O.trunc(a / other)


def count_nonzero(input, dim=None):
    """How many entries are not zero (over all, or along ``dim``)."""
    return O.sum(O.ne(check_tensor(input, "count_nonzero"), 0), dim=dim)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|a - b| <= atol + rtol * |b|`` as a bool tensor (no gradient)."""
    a, b = check_tensor(input, "isclose"), check_tensor(other, "isclose", "other")
    check_broadcast("isclose", a, b)
    return Tensor._make(np.isclose(a.data, b.data, rtol=rtol, atol=atol, equal_nan=equal_nan))


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)`` (what a linear layer computes, with ``input`` the bias)."""
    out = O.mm(mat1, mat2)
    out = out if alpha == 1 else out * alpha
    return out + (input if beta == 1 else input * beta)


def mv(input, vec):
    """Matrix times vector: ``input (n, m) @ vec (m,)``."""
    return O.matmul(check_tensor(input, "mv"), check_tensor(vec, "mv", "vec"))


METHODS = ("log2", "log10", "exp2", "rsqrt", "sinh", "cosh", "tan", "erfc", "logit", "frac", "lerp", "logaddexp",
           "fmod", "count_nonzero", "isclose", "addmm", "mv")


# ------------------------------------------------- registry entries for the functions above
def _t(src, shape, **kw):
    return src.tensor(shape, **kw)


_ENTRIES = {  # name: (samples, formula or None for no gradient, torch reference)
    "sort": (lambda src: [Sample((_t(src, (3, 4), distinct=True),), dict(dim=src.dim(2), descending=src.boolean()))],
             "dX = scatter dY back to where each sorted value came from", lambda torch, x, **kw: torch.sort(x, **kw)),
    "argsort": (lambda src: [Sample((_t(src, (3, 4), distinct=True),), dict(dim=src.dim(2)))], None,
                lambda torch, x, **kw: torch.argsort(x, **kw)),
    "topk": (lambda src: [Sample((_t(src, (3, 4), distinct=True), 2), dict(dim=-1, largest=src.boolean()))],
             "dX = scatter dY back to the k picked entries", lambda torch, x, k, **kw: torch.topk(x, k, **kw)),
    "log_softmax": (lambda src: [Sample((_t(src, (3, 4)),), dict(dim=src.dim(2)))], "dX = dY - softmax(X) sum(dY)",
                    lambda torch, x, dim: torch.log_softmax(x, dim)),
    "unbind": (lambda src: [Sample((_t(src, (2, 3)),), dict(dim=src.dim(2)))], "dX = stack(dY_i)",
               lambda torch, x, dim=0: torch.unbind(x, dim)),
    "narrow": (lambda src: [Sample((_t(src, (3, 4)), 1, 1, 2))], "dX = dY in the narrowed slice, 0 elsewhere",
               lambda torch, x, *a: torch.narrow(x, *a)),
    "movedim": (lambda src: [Sample((_t(src, (2, 3, 4)), 0, -1)), Sample((_t(src, (2, 3, 4)), (0, 1), (2, 0)))],
                "dX = movedim(dY) back", lambda torch, x, s, d: torch.movedim(x, s, d)),
    "nonzero": (lambda src: [Sample((_t(src, (3, 4)),))], None, lambda torch, x: torch.nonzero(x)),
    "unflatten": (lambda src: [Sample((_t(src, (3, 4)), 1, (2, 2)))], "dX = reshape(dY, X.shape)",
                  lambda torch, x, d, s: torch.unflatten(x, d, s)),
    "ravel": (lambda src: [Sample((_t(src, (2, 3)),))], "dX = reshape(dY, X.shape)", lambda torch, x: torch.ravel(x)),
    "addmm": (lambda src: [Sample((_t(src, (3,)), _t(src, (2, 4)), _t(src, (4, 3))), dict(beta=0.5, alpha=2.0))],
              "dI = beta sum_to(dY) ; dM1 = alpha dY M2^T ; dM2 = alpha M1^T dY",
              lambda torch, i, a, b, **kw: torch.addmm(i, a, b, **kw)),
    "mv": (lambda src: [Sample((_t(src, (2, 3)), _t(src, (3,))))], "dA = outer(dY, v) ; dv = A^T dY",
           lambda torch, a, v: torch.mv(a, v)),
    "fmod": (lambda src: [Sample((_t(src, (3, 4), low=0.1, high=1.4), 1.5)),
                          Sample((_t(src, (3, 4), low=0.1, high=1.4), _t(src, (4,), low=1.5, high=2.0)))],
             "dA = dY ; dB = -dY trunc(A / B)", lambda torch, a, b: torch.fmod(a, b)),
    "count_nonzero": (lambda src: [Sample((_t(src, (3, 4)),), dict(dim=src.dim(2)))], None,
                      lambda torch, x, **kw: torch.count_nonzero(x, **kw)),
    "isclose": (lambda src: [Sample((_t(src, (3, 4)), _t(src, (3, 4))))], None,
                lambda torch, a, b: torch.isclose(a, b)),
}
for _name, (_samples, _formula, _ref) in _ENTRIES.items():
    register(_name, samples=_samples, formula=_formula or "(no gradient)", torch=_ref,
             differentiable=_formula is not None)(globals()[_name])
