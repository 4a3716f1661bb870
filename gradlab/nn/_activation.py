"""The activation functions of ``F``: ``relu``, ``silu``, ``leaky_relu`` (``gradlab.relu``... with PyTorch's
``inplace`` flag), ``logsigmoid``, ``elu``, ``celu``, ``selu``, ``hardtanh``, ``relu6``, ``hardsigmoid``,
``hardswish``, ``mish``, ``softsign``, ``softmin``, ``glu``, ``prelu``, ``threshold``, ``hardshrink``,
``softshrink``, ``tanhshrink`` and ``rrelu`` (a random slope in training). (``gelu``, ``sigmoid``,
``tanh``, ``softplus``, ``softmax`` are gradlab's own ops, re-exported by ``functional.py``.)

Apart from ``relu``/``silu``/``leaky_relu``, each is a short composite of gradlab ops.

Being composites, their graphs show the pieces and their gradients (of any
order) come from those pieces' rules. Two habits keep them safe:

* never let an unused ``where`` branch overflow (``exp(x)`` for large ``x``
  would be ``inf``, and ``0 * inf`` in backward is ``nan``): ``elu`` feeds
  ``exp`` only ``min(x, 0)``;
* use the exact stable form where one exists: ``logsigmoid(x) = -softplus(-x)``
  computed as ``-logaddexp(0, -x)``, finite for any ``x``.
"""
from __future__ import annotations

from .. import checks as _c, ops as O
from .._tensor import Tensor
from ..backend import dtypes as _dt, generator, xp_of
from ..errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from ..ops._util import check_tensor, floating_input, one_dim
from ..ops.activations import log1p_exp
from ..ops.registry import REGISTRY, Sample, register
from ..ops.samples import unary_samples
from ..ops.softmax_ops import softmax
from ._register import NS, register_table


# ---- activations with PyTorch's ``inplace`` flag. gradlab always returns a new tensor (an in-place
# activation would overwrite what backward needs); the flag is accepted so PyTorch code runs unchanged.
def relu(input, inplace=False):
    """``max(x, 0)`` (``gradlab.relu``); ``inplace`` is accepted and ignored."""
    return O.relu(input)


def silu(input, inplace=False):
    """``x * sigmoid(x)`` (``gradlab.silu``); ``inplace`` is accepted and ignored."""
    return O.silu(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``x`` if ``x > 0`` else ``negative_slope * x`` (``gradlab.leaky_relu``); ``inplace`` is accepted and ignored."""
    return O.leaky_relu(input, negative_slope)


for fn in (relu, silu, leaky_relu):  # re-listed under F's namespace (their rules are gradlab.relu's)
    info = REGISTRY[fn.__name__]
    register(fn.__name__, samples=info.samples, formula=info.formula, namespace=NS,
             elementwise=True, torch=info.torch, atol=info.atol, rtol=info.rtol, eps=info.eps)(fn)
del fn, info


_SELU_ALPHA = 1.6732632423543772848170429916717


_SELU_SCALE = 1.0507009873554804934193349852946


def logsigmoid(input):
    """``log(sigmoid(x)) = -log(1 + exp(-x))``, finite for any ``x``."""
    return -log1p_exp(-floating_input(input, "logsigmoid"))


def elu(input, alpha=1.0, inplace=False):
    """``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    x = floating_input(input, "elu")
    _c.number(alpha, "elu", "alpha")
    return O.where(x > 0, x, alpha * (O.exp(O.clamp(x, max=0.0)) - 1))


def celu(input, alpha=1.0, inplace=False):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    x = floating_input(input, "celu")
    alpha = _c.arguments("celu", alpha=(alpha, "number"))
    if alpha == 0:
        raise ArgumentError("celu: alpha cannot be 0 (the negative side is alpha * (exp(x / alpha) - 1))")
    return O.where(x > 0, x, alpha * (O.exp(O.clamp(x, max=0.0) / alpha) - 1))


def selu(input, inplace=False):
    """``scale * elu(x, alpha)`` with the self-normalizing constants."""
    return _SELU_SCALE * elu(input, _SELU_ALPHA)


def _strict_clamp(x, lo, hi):
    """``clamp(x, lo, hi)`` whose slope is 1 only strictly inside (lo, hi): 0 at the corners, as PyTorch's
    hardtanh/relu6/hardsigmoid (``clamp`` itself passes the gradient at the corners too)."""
    inside = O.logical_and(x > lo, x < hi)
    return O.where(inside, x, O.clamp(x, min=lo, max=hi).detach())


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``clamp(x, min_val, max_val)``; the gradient is 1 strictly between the two, else 0."""
    _c.number(min_val, "hardtanh", "min_val"), _c.number(max_val, "hardtanh", "max_val")
    if min_val > max_val:
        raise ArgumentError(f"hardtanh: min_val ({min_val}) must be <= max_val ({max_val})")
    return _strict_clamp(check_tensor(input, "hardtanh"), min_val, max_val)


def relu6(input, inplace=False):
    """``min(max(x, 0), 6)``; the gradient is 1 strictly between 0 and 6, else 0."""
    return _strict_clamp(check_tensor(input, "relu6"), 0.0, 6.0)


def hardsigmoid(input, inplace=False):
    """``relu6(x + 3) / 6``: a piecewise-linear sigmoid (slope 1/6 strictly between -3 and 3)."""
    return _strict_clamp(floating_input(input, "hardsigmoid") + 3, 0.0, 6.0) / 6


def hardswish(input, inplace=False):
    """``x * relu6(x + 3) / 6``; as in PyTorch the slope is 0 at x = -3 and 1 at x = 3."""
    x = floating_input(input, "hardswish")
    mid = x * (x + 3) / 6
    return O.where(x <= -3, O.zeros_like(mid), O.where(x >= 3, x + mid * 0, mid))


def mish(input, inplace=False):
    """``x * tanh(softplus(x))``."""
    x = floating_input(input, "mish")
    return x * O.tanh(log1p_exp(x))


def softsign(input):
    """``x / (1 + |x|)``."""
    x = check_tensor(input, "softsign")
    return x / (1 + O.abs(x))


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``softmax(-x, dim)``: most weight on the smallest entries."""
    x = check_tensor(input, "softmin")
    if dtype is not None:
        x = x.to(dtype)
    _c.floating(x, "softmin")
    return softmax(-x, dim)


def glu(input, dim=-1):
    """Gated linear unit: split ``input`` in two halves ``a, b`` along ``dim``; return ``a * sigmoid(b)``."""
    x = floating_input(input, "glu")
    if x.ndim == 0:
        raise ShapeError("glu: the input is a 0-d tensor; glu halves a dimension, so it needs at least one")
    d = one_dim(dim, x.ndim, "glu")
    n = x.shape[d]
    if n % 2:
        raise ShapeError(f"glu: dim {dim} of input {fmt_shape(x.shape)} has odd size {n}; it must split in halves")
    a = O.getitem(x, (slice(None),) * d + (slice(0, n // 2),))
    b = O.getitem(x, (slice(None),) * d + (slice(n // 2, n),))
    return a * O.sigmoid(b)


def prelu(input, weight):
    """``x`` if ``x > 0`` else ``weight * x``, with a learned slope per channel (dim 1) or one shared slope."""
    x = floating_input(input, "prelu")
    w = floating_input(weight, "prelu", "weight")
    if w.dtype != x.dtype:  # PyTorch: "prelu: Type promoting not supported"
        raise DTypeError(f"prelu: weight has dtype {_dt.dtype_name(w.dtype)} but input has dtype "
                         f"{_dt.dtype_name(x.dtype)}; they must match: convert with weight.to(input.dtype)")
    if w.ndim != 1 or (w.shape[0] != 1 and (x.ndim < 2 or w.shape[0] != x.shape[1])):
        raise ShapeError(f"prelu: weight {fmt_shape(w.shape)} must hold 1 slope or one per channel (dim 1 of "
                         f"input {fmt_shape(x.shape)})")
    if w.shape[0] != 1:
        w = O.reshape(w, (1, -1) + (1,) * (x.ndim - 2))
    elif x.ndim == 0:
        w = O.reshape(w, ())
    return O.where(x > 0, x, w * x)


def threshold(input, threshold, value, inplace=False):
    """``x`` where ``x > threshold``, else ``value``."""
    x = check_tensor(input, "threshold")
    threshold, value = _c.arguments("threshold", threshold=(threshold, "number"), value=(value, "number"))
    return O.where(x > threshold, x, float(value))


def hardshrink(input, lambd=0.5):
    """``x`` where ``|x| > lambd``, else 0."""
    x = floating_input(input, "hardshrink")
    lambd = _c.arguments("hardshrink", lambd=(lambd, "number"))
    return O.where(O.abs(x) > lambd, x, 0.0)


def softshrink(input, lambd=0.5):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, 0 between (the proximal step of L1)."""
    x = floating_input(input, "softshrink")
    _c.nonnegative(lambd, "softshrink", "lambd")
    return O.where(x > lambd, x - lambd, O.where(x < -lambd, x + lambd, 0.0))


def tanhshrink(input):
    """``x - tanh(x)``."""
    x = check_tensor(input, "tanhshrink")
    return x - O.tanh(x)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky relu: slope ``U(lower, upper)`` per negative element in training, else the mean slope."""
    x = floating_input(input, "rrelu")
    lower, upper = _c.arguments("rrelu", lower=(lower, "number"), upper=(upper, "number"))
    if lower > upper:  # PyTorch: "Lower bound should be less than or equal to the upper bound"
        raise ArgumentError(f"rrelu: lower ({lower}) must be <= upper ({upper}); the slope is drawn from "
                            f"U(lower, upper)")
    if not training:
        return O.leaky_relu(x, (lower + upper) / 2)
    xp = xp_of(x._data)
    slope = Tensor._make(xp.asarray(generator().uniform(lower, upper, x.shape)).astype(x.dtype))
    return O.where(x >= 0, x, x * slope)


def _prelu_samples(src):
    shape = (src.integers(1, 3), src.integers(1, 3)) + src.shape(0, 2, 1, 3)
    yield Sample((src.tensor(shape, away_from=0.0), src.tensor((shape[1],), 0.05, 0.5)), desc="a slope per channel")
    yield Sample((src.tensor(src.shape(0, 3, 1, 3), away_from=0.0), src.tensor((1,), 0.05, 0.5)), desc="one slope")


def _shrink_samples(src):
    shape = src.shape(0, 3, 1, 4)
    x = src.tensor(shape, -2, 2)
    x._data[abs(abs(x._data) - 0.5) < 0.05] += 0.2  # away from the kinks at +-lambd
    yield Sample((x,), dict(lambd=0.5))


def _threshold_samples(src):
    yield Sample((src.tensor(src.shape(0, 3, 1, 4), away_from=0.1), 0.1, -1.0))


def _softmin_samples(src):
    shape = src.shape(1, 3, 1, 4)
    yield Sample((src.tensor(shape), src.dim(len(shape))))


def _glu_samples(src):
    shape = list(src.shape(1, 3, 1, 3))
    d = src.dim(len(shape))
    shape[d] *= 2
    yield Sample((src.tensor(tuple(shape)), d))


def _rrelu_samples(src):
    yield Sample((src.tensor(src.shape(0, 3, 1, 4), away_from=0.0),), dict(lower=0.1, upper=0.3),
                 desc="eval mode: the mean slope")


register_table([
    (logsigmoid, unary_samples(low=-30, high=30), "dX = dY * sigmoid(-X)"),
    (elu, unary_samples(away_from=0.0), "dX = dY * (1 if X > 0 else alpha * exp(X))"),
    (celu, unary_samples(away_from=0.0), "dX = dY * (1 if X > 0 else exp(X / alpha))"),
    (selu, unary_samples(away_from=0.0), "dX = dY * scale * (1 if X > 0 else alpha * exp(X))"),
    (hardtanh, unary_samples(low=-3, high=3, away_from=1.0), "dX = dY * [min_val < X < max_val]"),
    (relu6, unary_samples(low=-2, high=8, away_from=0.0), "dX = dY * [0 < X < 6]"),
    (hardsigmoid, unary_samples(low=-5, high=5, away_from=3.0), "dX = dY / 6 * [-3 < X < 3]"),
    (hardswish, unary_samples(low=-5, high=5, away_from=3.0), "dX = dY * (relu6(X + 3) + X * [-3 < X < 3]) / 6"),
    (mish, unary_samples(), "dX = dY * (tanh(sp) + X * sigmoid(X) * (1 - tanh(sp)^2))   (sp = softplus(X))"),
    (softsign, unary_samples(), "dX = dY / (1 + |X|)^2"),
    (threshold, _threshold_samples, "dX = dY * [X > threshold]"),
    (hardshrink, _shrink_samples, "dX = dY * [|X| > lambd]"),
    (softshrink, _shrink_samples, "dX = dY * [|X| > lambd]"),
    (tanhshrink, unary_samples(), "dX = dY * tanh(X)^2"),
], elementwise=True)
register_table([
    (softmin, _softmin_samples, "dX = -S * (dY - sum(dY * S, dim))   (S = softmin(X))"),
    (glu, _glu_samples, "dA = dY * sigmoid(B) ; dB = dY * A * sigmoid(B) * (1 - sigmoid(B))"),
    (prelu, _prelu_samples, "dX = dY * (1 if X > 0 else W) ; dW = sum(dY * X * [X <= 0]) per channel"),
    (rrelu, _rrelu_samples, "dx = dy where x >= 0, else slope * dy"),
])
