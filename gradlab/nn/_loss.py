"""The everyday loss functions of ``F``: ``cross_entropy``, ``nll_loss``, ``mse_loss``, ``l1_loss``,
``smooth_l1_loss``, ``huber_loss``, ``binary_cross_entropy``, ``binary_cross_entropy_with_logits``, ``kl_div``,
and the shared steps of every loss (``_reduction``: the legacy ``size_average``/``reduce`` flags;
``_reduce``; ``_float_input``; ``_warn_broadcast``). The rarer losses are in ``nn/coverage/``.

``cross_entropy(x, y)`` is ``nll_loss(log_softmax(x, dim=1), y)``, and gradlab
builds it exactly that way, so ``show_graph(loss)`` shows both steps. Going
through ``log_softmax`` (never ``log(softmax(x))``) is what keeps it finite
for logits of any size. The gradient of the pair is the famous
``softmax(x) - one_hot(y)`` (divided by the batch size for ``mean``).

Class indices live in dim 1 (dim 0 for an unbatched 1-D input), so the same
function serves ``(N, C)`` logits and ``(N, C, d1, ...)`` ones (e.g. a
per-pixel or per-token loss) with ``(N, d1, ...)`` targets.

Composites of gradlab ops, with PyTorch's conventions:

* ``smooth_l1_loss`` (beta) is quadratic for ``|d| < beta`` and linear beyond,
  scaled so the linear part has slope 1; ``huber_loss`` (delta) is the same
  curve times ``delta`` -- they differ only by that factor.
* ``binary_cross_entropy`` takes *probabilities*; it clamps each log at -100
  (as PyTorch) so a probability of exactly 0 or 1 gives a large finite loss,
  not ``inf``. From logits, prefer ``binary_cross_entropy_with_logits``.
* ``kl_div(input, target)`` expects ``input`` as *log*-probabilities and
  computes ``target * (log(target) - input)`` (0 where ``target`` is 0);
  ``reduction='batchmean'`` divides the sum by the batch size, the true KL.
"""
from __future__ import annotations

import numpy as np

from .. import checks as _c, ops as O
from .._tensor import Tensor
from ..backend import dtypes as _dt, xp_of
from ..errors import ArgumentError, DTypeError, IndexOutOfRange, ShapeError, broadcast_failure, fmt_shape
from ..ops._util import check_tensor, device_mismatch
from ..ops.activations import log1p_exp
from ..ops.nll_loss import NLLLoss
from ..ops.registry import Sample, register
from ..ops.softmax_ops import log_softmax
from ._register import NS, register_table

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(op, reduction, size_average=None, reduce=None):
    """The ``reduction`` string, from the legacy ``size_average``/``reduce`` flags when given (as PyTorch)."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        return "none" if not reduce else ("mean" if size_average else "sum")
    if reduction not in _REDUCTIONS:
        raise ArgumentError(f"{op}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
    return reduction


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    return O.sum(loss) if reduction == "sum" else O.mean(loss)


def _class_dim(op, x):
    if x.ndim == 0:
        raise ShapeError(f"{op}: input is 0-d; it needs a class dimension: (C,), (N, C) or (N, C, d1, ...)")
    return 0 if x.ndim == 1 else 1


def _check_weight(op, weight, n_classes, x):
    """The per-class ``weight``: floating, of the input's dtype (as PyTorch), one entry per class."""
    if weight is None:
        return None
    w = _c.param_dtype(check_tensor(weight, op, "weight"), x, op, "weight")
    if w.shape != (n_classes,):
        raise ShapeError(f"{op}: weight has shape {fmt_shape(w.shape)} but input has {n_classes} classes; "
                         f"weight needs one entry per class: shape ({n_classes},)")
    return w._data


def _check_index_target(op, x, target, cdim, ignore_index):
    """Class-index targets: an integer tensor shaped like the input without its class dim, values in [0, C)."""
    t = check_tensor(target, op, "target")
    if type(t._data) is not type(x._data) and t.device != x.device:  # same device (PyTorch)
        raise device_mismatch(op, x, t, ("input", "target"))
    expected = x.shape[:cdim] + x.shape[cdim + 1:]
    if _dt.category(t.dtype) != 1:
        raise DTypeError(
            f"{op}: target has dtype {_dt.dtype_name(t.dtype)} but class indices must be integers "
            f"(input {fmt_shape(x.shape)} expects an integer target of shape {fmt_shape(expected)}); use "
            "target.long(). For class probabilities pass a float target shaped like the input")
    if t.dtype not in (_dt.int64, _dt.uint8):  # PyTorch: "expected target dtype to be Long or Byte"
        raise DTypeError(
            f"{op}: target has dtype {_dt.dtype_name(t.dtype)} but class indices must be int64 (long) or uint8 "
            f"(input {fmt_shape(x.shape)}, target {fmt_shape(t.shape)}); convert with target.long()")
    if t.shape != expected:
        raise ShapeError(f"{op}: target has shape {fmt_shape(t.shape)} but input {fmt_shape(x.shape)} needs a "
                         f"target of shape {fmt_shape(expected)} (the input's shape without the class dim {cdim})")
    c = x.shape[cdim]
    data = t._data
    if not data.size or (data.min() >= 0 and data.max() < c):
        return data  # every class in range (two reductions; the mask below only when one is not)
    bad = (data != ignore_index) & ((data < 0) | (data >= c))
    if bad.any():
        v = int(data[bad].reshape(-1)[0])
        raise IndexOutOfRange(f"{op}: target holds class {v}, outside [0, {c}) for input {fmt_shape(x.shape)} "
                              f"with {c} classes in dim {cdim}" + (f" (ignore_index is {ignore_index})"
                                                                   if ignore_index != -100 else ""))
    return data


def _float_target_pair(op, input, target):
    """``input`` and ``target`` of a regression loss: tensors whose common dtype is floating (PyTorch promotes
    an integer input with a float target, and refuses two integer tensors)."""
    x = check_tensor(input, op)
    _c.common_floating(op, input=x, target=check_tensor(target, op, "target"))
    return x


def _float_input(op, input):
    x = check_tensor(input, op)
    if not _dt.is_floating(x.dtype):
        raise DTypeError(f"{op}: input has dtype {_dt.dtype_name(x.dtype)}; it needs floating-point "
                         "scores/log-probabilities (use .float())")
    return x


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood of class indices, given log-probabilities ``input`` (class dim 1).

    ``loss_i = -weight[t_i] * input[i, t_i]``; targets equal to ``ignore_index``
    count for nothing; ``mean`` divides by the sum of the weights used.
    """
    x = _float_input("nll_loss", input)
    ignore_index = _c.arguments("nll_loss", ignore_index=(ignore_index, "int"))
    red = _reduction("nll_loss", reduction, size_average, reduce)
    cdim = _class_dim("nll_loss", x)
    t = _check_index_target("nll_loss", x, target, cdim, ignore_index)
    w = _check_weight("nll_loss", weight, x.shape[cdim], x)
    return NLLLoss.apply(x, t, w, int(ignore_index), red, cdim)


# ------------------------------------------------------------- cross_entropy
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """``nll_loss(log_softmax(input, dim=1), target)`` for class indices, or ``-sum(p * log_softmax)``
    for class probabilities (a float ``target`` shaped like ``input``).

    ``label_smoothing=e`` mixes the one-hot target with the uniform one:
    ``(1 - e) * nll + e * mean over classes of -log_softmax`` (as PyTorch).
    """
    op = "cross_entropy"
    x = _float_input(op, input)
    ignore_index, label_smoothing = _c.arguments(op, ignore_index=(ignore_index, "int"),
                                                 label_smoothing=(label_smoothing, "probability"))
    red = _reduction(op, reduction, size_average, reduce)
    cdim = _class_dim(op, x)
    c = x.shape[cdim]
    w = _check_weight(op, weight, c, x)
    wshape = tuple(c if i == cdim else 1 for i in range(x.ndim))
    tt = target if isinstance(target, Tensor) else check_tensor(target, op, "target")
    logp = log_softmax(x, cdim)
    if _dt.is_floating(tt.dtype):
        return _cross_entropy_probs(x, tt, logp, w, wshape, red, cdim, label_smoothing)
    t = _check_index_target(op, x, tt, cdim, ignore_index)
    nll = NLLLoss.apply(logp, t, w, int(ignore_index), red, cdim)
    if not label_smoothing:
        return nll
    # the uniform part: -sum_c w_c * logp_c, zero at ignored positions
    valid = Tensor._make(t != ignore_index)
    smooth = -O.sum(logp * Tensor._make(w.reshape(wshape)) if w is not None else logp, dim=cdim)
    smooth = O.where(valid, smooth, 0.0)
    if red == "mean":
        keep = t != ignore_index
        denom = float((w[xp_of(t).where(keep, t, 0)] * keep).sum() if w is not None else keep.sum())
        smooth = O.sum(smooth) / denom if denom else O.sum(smooth) * float("nan")
    elif red == "sum":
        smooth = O.sum(smooth)
    return (1 - label_smoothing) * nll + smooth * (label_smoothing / c)


def _cross_entropy_probs(x, target, logp, w, wshape, red, cdim, label_smoothing):
    op = "cross_entropy"
    if target.shape != x.shape:
        raise ShapeError(f"{op}: a float target means class probabilities and must have the input's shape "
                         f"{fmt_shape(x.shape)}, got {fmt_shape(target.shape)}; for class indices pass an "
                         "integer tensor (target.long())")
    c = x.shape[cdim]
    if label_smoothing:
        target = target * (1 - label_smoothing) + label_smoothing / c
    prod = logp * target
    if w is not None:
        prod = prod * Tensor._make(w.reshape(wshape))
    loss = -O.sum(prod, dim=cdim)
    if red == "mean":
        n = x._data.size // c if c else 0
        return O.sum(loss) / n if n else O.sum(loss) * float("nan")
    return _reduce(loss, red)


# ----------------------------------------------------------------- mse_loss
def _warn_broadcast(op, x, target, stacklevel=3):
    """PyTorch's warning (same category, UserWarning) when a regression target broadcasts against the input:
    a (N,) prediction minus a (N, 1) target is an (N, N) matrix, and the loss is silently wrong."""
    if isinstance(target, Tensor) and tuple(target.shape) != tuple(x.shape):
        try:
            both = np.broadcast_shapes(tuple(x.shape), tuple(target.shape))
        except ValueError:  # they do not broadcast at all: say so in the loss's name
            raise broadcast_failure(op, [x.shape, target.shape], ["input", "target"]) from None
        import warnings
        warnings.warn(
            f"{op}: target has shape {fmt_shape(target.shape)} but input has {fmt_shape(x.shape)}; they broadcast "
            f"to {fmt_shape(both)}, which is likely a bug (squeeze the model's output or reshape the target "
            f"so the shapes match)", UserWarning, stacklevel=stacklevel)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error ``(input - target)^2`` (broadcasting, as PyTorch), reduced by ``reduction``."""
    op = "mse_loss"
    x = _float_target_pair(op, input, target)
    red = _reduction(op, reduction, size_average, reduce)
    _warn_broadcast(op, x, target)
    d = x - target
    sq = d * d
    if weight is not None:
        w = check_tensor(weight, op, "weight")
        if w.shape != x.shape:
            raise ShapeError(f"{op}: weight has shape {fmt_shape(w.shape)} but input has {fmt_shape(x.shape)}; "
                             "they must be the same")
        sq = sq * w
        if red == "mean":
            return O.sum(sq) / O.sum(w)
    return _reduce(sq, red)


def _softplus_neg(x):
    """``log(1 + exp(-x)) = -log(sigmoid(x))``, stably."""
    return log1p_exp(-x)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """``-[p * t * log(sigmoid(x)) + (1 - t) * log(1 - sigmoid(x))]`` from logits ``x``, computed stably.

    With ``log(sigmoid(x)) = -softplus(-x)`` and ``log(1 - sigmoid(x)) = -x - softplus(-x)``
    the loss is ``(1 - t) * x + (1 + (p - 1) * t) * softplus(-x)``: no ``log(0)``, no overflow.
    """
    op = "binary_cross_entropy_with_logits"
    x = _float_input(op, input)
    _c.arguments(op, weight=(weight, "tensor?"), pos_weight=(pos_weight, "tensor?"))
    red = _reduction(op, reduction, size_average, reduce)
    t = check_tensor(target, op, "target")
    if not _dt.is_floating(t.dtype):  # PyTorch refuses integer and bool targets here too
        raise DTypeError(f"{op}: target has dtype {_dt.dtype_name(t.dtype)} but must be a floating-point tensor "
                         f"of 0s and 1s (or probabilities) shaped like the input {fmt_shape(x.shape)}; use "
                         "target.float()")
    if t.shape != x.shape:
        raise ShapeError(f"{op}: target has shape {fmt_shape(t.shape)} but input has {fmt_shape(x.shape)}; "
                         "they must be the same")
    sp = _softplus_neg(x)
    if pos_weight is not None:
        lw = 1 + (pos_weight - 1) * t
        loss = (1 - t) * x + lw * sp
    else:
        loss = (1 - t) * x + sp
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, red)


def _diff(op, input, target, reduction, size_average, reduce, promote=True):
    """``input - target`` and the reduction; ``promote``: an integer input with a float target is promoted
    (l1, smooth_l1), else the input itself must be floating (huber_loss, as PyTorch)."""
    x = _float_target_pair(op, input, target) if promote else _float_input(op, input)
    target = check_tensor(target, op, "target")  # (``x - target`` below is the operator, which takes an array)
    red = _reduction(op, reduction, size_average, reduce)
    _warn_broadcast(op, x, target, stacklevel=4)
    return x - target, red


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error ``|input - target|`` (``weight`` multiplies each term; mean then divides by its sum)."""
    _c.arguments("l1_loss", weight=(weight, "tensor?"))
    d, red = _diff("l1_loss", input, target, reduction, size_average, reduce)
    loss = O.abs(d)
    if weight is not None:
        loss = loss * weight
        if red == "mean":
            return O.sum(loss) / O.sum(weight)
    return _reduce(loss, red)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5 d^2 / beta`` if ``|d| < beta`` else ``|d| - 0.5 beta`` (``d = input - target``); beta=0 is L1."""
    beta = _c.arguments("smooth_l1_loss", beta=(beta, "nonnegative"))
    d, red = _diff("smooth_l1_loss", input, target, reduction, size_average, reduce)
    a = O.abs(d)
    if beta == 0:
        return _reduce(a, red)
    return _reduce(O.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta), red)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5 d^2`` if ``|d| < delta`` else ``delta * (|d| - 0.5 delta)``."""
    delta = _c.arguments("huber_loss", delta=(delta, "positive"), weight=(weight, "tensor?"))[0]
    d, red = _diff("huber_loss", input, target, reduction, None, None, promote=False)
    a = O.abs(d)
    loss = O.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, red)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """``-(t * log(p) + (1 - t) * log(1 - p))`` for probabilities ``p`` in [0, 1], each log clamped at -100."""
    op = "binary_cross_entropy"
    p = _float_input(op, input)
    _c.arguments(op, weight=(weight, "tensor?"))
    red = _reduction(op, reduction, size_average, reduce)
    t = check_tensor(target, op, "target")
    if t.dtype != p.dtype:  # PyTorch: "Found dtype Long but expected Float"
        raise DTypeError(f"{op}: target has dtype {_dt.dtype_name(t.dtype)} but input has dtype "
                         f"{_dt.dtype_name(p.dtype)} (shapes {fmt_shape(t.shape)} and {fmt_shape(p.shape)}); they "
                         f"must match: use target.float() (or target.to(input.dtype))")
    if t.shape != p.shape:
        raise ShapeError(f"{op}: target has shape {fmt_shape(t.shape)} but input has {fmt_shape(p.shape)}; they "
                         "must be the same")
    data = p._data
    if data.size and not ((data >= 0) & (data <= 1)).all():  # (NaN fails both tests: refused, as PyTorch)
        num = data[~np.isnan(data)]
        seen = f"values from {float(num.min()):.4g} to {float(num.max()):.4g}" if num.size else "only NaN"
        raise ArgumentError(f"{op}: input must hold probabilities in [0, 1] (got {seen}"
                            f"{', and NaN' if num.size < data.size and num.size else ''}); for raw "
                            "scores use binary_cross_entropy_with_logits")
    td = t._data
    if td.size and ((td < 0) | (td > 1)).any():
        raise ArgumentError(f"{op}: target must hold values in [0, 1] (got values from {float(td.min()):.4g} to "
                            f"{float(td.max()):.4g}); they are the probabilities of class 1")
    loss = -(t * O.clamp(O.log(p), min=-100.0) + (1 - t) * O.clamp(O.log(1 - p), min=-100.0))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, red)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Pointwise KL ``target * (log(target) - input)`` with ``input`` given as log-probabilities.

    ``reduction='batchmean'`` (sum / batch size) gives the mathematical KL divergence; ``'mean'``
    averages over *every* element, as PyTorch does.
    """
    op = "kl_div"
    x = _float_input(op, input)
    log_target = _c.flag(log_target, op, "log_target")
    if size_average is not None or reduce is not None:
        reduction = _reduction(op, "mean", size_average, reduce)
    if reduction not in _REDUCTIONS + ("batchmean",):
        raise ArgumentError(f"{op}: reduction must be 'none', 'batchmean', 'mean' or 'sum', got {reduction!r}")
    t = _c.arguments(op, target=(target, "floating"))  # PyTorch: "kl_div: Integral inputs not supported"
    if log_target:
        loss = O.exp(t) * (t - x)
    else:  # xlogy(t, t) - t * x, as PyTorch: 0 where t is 0, nan where t < 0 (not a probability)
        loss = O.xlogy(t, t) - t * x
    if reduction == "batchmean":
        return O.sum(loss) / (x.shape[0] if x.ndim else 1)
    return _reduce(loss, reduction)


# ------------------------------------------------------------- registry entries
def _targets(src, shape, c, ignore=None):
    t = src.index_tensor(shape, c)
    if ignore is not None and t._data.size:
        t._data[src.rng.random(shape) < 0.3] = ignore
    return t


def _nll_samples(src):
    n, c = src.integers(1, 4), src.integers(2, 4)
    red = src.choice(_REDUCTIONS)
    yield Sample((src.tensor((n, c)), _targets(src, (n,), c)), dict(reduction=red), desc="(N, C)")
    d = src.integers(1, 3)
    yield Sample((src.tensor((n, c, d)), _targets(src, (n, d), c, ignore=-100)),
                 dict(weight=src.tensor((c,), 0.5, 2.0, requires_grad=False), reduction=red),
                 desc="(N, C, d) with weight and ignored targets")
    yield Sample((src.tensor((c,)), _targets(src, (), c)), desc="unbatched (C,)")
    yield Sample((src.tensor((3, 3)), Tensor._make(np.array([0, 2, 1]))), dict(ignore_index=2), desc="ignore a class")


def _ce_samples(src):
    n, c = src.integers(1, 4), src.integers(2, 4)
    red = src.choice(_REDUCTIONS)
    yield Sample((src.tensor((n, c), -3, 3), _targets(src, (n,), c)), dict(reduction=red), desc="(N, C)")
    d = src.integers(1, 3)
    yield Sample((src.tensor((n, c, d)), _targets(src, (n, d), c, ignore=-100)),
                 dict(weight=src.tensor((c,), 0.5, 2.0, requires_grad=False), reduction=red,
                      label_smoothing=src.choice([0.0, 0.1, 0.3])), desc="(N, C, d), weight, smoothing, ignored")
    yield Sample((src.tensor((n, c)), _targets(src, (n,), c)), dict(label_smoothing=0.2, reduction=red),
                 desc="label smoothing")
    probs = src.tensor((n, c), 0.05, 1.0, requires_grad=False)
    probs = Tensor._make(probs._data / probs._data.sum(1, keepdims=True)).requires_grad_()
    yield Sample((src.tensor((n, c)), probs), dict(reduction=red, label_smoothing=src.choice([0.0, 0.2])),
                 desc="class probabilities")
    yield Sample((src.tensor((c,)), _targets(src, (), c)), desc="unbatched (C,)")


def _mse_samples(src):
    shape = src.shape(0, 3, 1, 4)
    red = src.choice(_REDUCTIONS)
    yield Sample((src.tensor(shape), src.tensor(shape)), dict(reduction=red))
    yield Sample((src.tensor((2, 3)), src.tensor((2, 3))),
                 dict(weight=src.tensor((2, 3), 0.5, 2, requires_grad=False), reduction=red), desc="weighted")


def _bce_samples(src):
    shape = src.shape(1, 3, 1, 4)
    red = src.choice(_REDUCTIONS)
    yield Sample((src.tensor(shape, -4, 4), src.tensor(shape, 0, 1)), dict(reduction=red))
    last = shape[-1]
    yield Sample((src.tensor(shape), src.tensor(shape, 0, 1, requires_grad=False)),
                 dict(pos_weight=src.tensor((last,), 0.5, 3, requires_grad=False), weight=src.tensor(shape, 0.5, 2, requires_grad=False),
                      reduction=red), desc="pos_weight and weight")
    yield Sample((src.tensor((3,), 0, 0), src.tensor((3,), 0, 1)), desc="zero logits (a fresh head)")


register("nll_loss", samples=_nll_samples, namespace=NS, op=NLLLoss,
         torch=lambda torch, *a, **k: torch.nn.functional.nll_loss(*a, **k))(nll_loss)


cross_entropy = register(
    "cross_entropy", samples=_ce_samples, namespace=NS, autocast="float32",
    formula="dX = softmax(X) - onehot(target)   (times weights, / N for mean; smoothing mixes in 1/C)",
    torch=lambda torch, *a, **k: torch.nn.functional.cross_entropy(*a, **k))(cross_entropy)


mse_loss = register("mse_loss", samples=_mse_samples, namespace=NS, formula="dX = 2 * (X - T) * dY   (/ N for mean)",
                    autocast="float32", torch=lambda torch, *a, **k: torch.nn.functional.mse_loss(*a, **k))(mse_loss)


register("binary_cross_entropy_with_logits", samples=_bce_samples, namespace=NS,
         formula="dX = (1 + (p - 1) * T) * sigmoid(X) - p * T   (= sigmoid(X) - T without pos_weight)",
         torch=lambda torch, *a, **k: torch.nn.functional.binary_cross_entropy_with_logits(*a, **k))(
    binary_cross_entropy_with_logits)


# ------------------------------------------------------------- registry entries
def _pair_samples(with_beta=None):
    def samples(src):
        shape = src.shape(0, 3, 1, 4)
        red = src.choice(_REDUCTIONS)
        kw = dict(reduction=red)
        if with_beta:
            kw[with_beta] = src.choice([0.5, 1.0, 2.0])
        x = src.tensor(shape, -3, 3)
        t = src.tensor(shape, -3, 3, requires_grad=src.boolean())
        # keep |x - t| away from the kinks at 0 and at beta/delta
        gap = x._data - t._data
        x._data[abs(abs(gap) - kw.get(with_beta, 0.0)) < 0.05] += 0.2
        x._data[abs(x._data - t._data) < 0.05] += 0.2
        yield Sample((x, t), kw)
    return samples


def _bce_prob_samples(src):
    shape = src.shape(0, 3, 1, 4)
    yield Sample((src.tensor(shape, 0.05, 0.95), src.tensor(shape, 0, 1)),
                 dict(reduction=src.choice(_REDUCTIONS)), desc="probabilities")
    yield Sample((src.tensor((2, 3), 0.05, 0.95), src.tensor((2, 3), 0, 1, requires_grad=False)),
                 dict(weight=src.tensor((3,), 0.5, 2, requires_grad=False)), desc="weight broadcasts")


def _kl_samples(src):
    shape = src.shape(1, 3, 1, 4)
    red = src.choice(("none", "batchmean", "mean", "sum"))
    yield Sample((src.tensor(shape, -3, 0), src.tensor(shape, 0.05, 1)), dict(reduction=red), desc="probabilities")
    yield Sample((src.tensor(shape, -3, 0), src.tensor(shape, -3, 0)), dict(reduction=red, log_target=True),
                 desc="log_target")


register_table([
    (l1_loss, _pair_samples(), "dX = sign(X - T) * dY   (/ N for mean)"),
    (smooth_l1_loss, _pair_samples("beta"), "dX = dY * (d / beta if |d| < beta else sign(d))   (d = X - T)"),
    (huber_loss, _pair_samples("delta"), "dX = dY * (d if |d| < delta else delta * sign(d))   (d = X - T)"),
    (binary_cross_entropy, _bce_prob_samples, "dP = dY * (P - T) / (P * (1 - P))   (times weight)"),
    (kl_div, _kl_samples, "dX = -T * dY ; dT = (log(T) + 1 - X) * dY"),
])
