"""More losses of ``F``: ``l1_loss``, ``smooth_l1_loss``, ``huber_loss``, ``binary_cross_entropy``, ``kl_div``.

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

from .. import ops as O
from ..errors import ArgumentError, ShapeError, fmt_shape
from ..ops._util import check_tensor
from ..ops.registry import Sample, register
from ._losses import _REDUCTIONS, _float_input, _reduce, _reduction

NS = "gradlab.nn.functional"


def _diff(op, input, target, reduction, size_average, reduce):
    x = _float_input(op, input)
    red = _reduction(op, reduction, size_average, reduce)
    return x - target, red


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error ``|input - target|`` (``weight`` multiplies each term; mean then divides by its sum)."""
    d, red = _diff("l1_loss", input, target, reduction, size_average, reduce)
    loss = O.abs(d)
    if weight is not None:
        loss = loss * weight
        if red == "mean":
            return O.sum(loss) / O.sum(weight)
    return _reduce(loss, red)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5 d^2 / beta`` if ``|d| < beta`` else ``|d| - 0.5 beta`` (``d = input - target``); beta=0 is L1."""
    d, red = _diff("smooth_l1_loss", input, target, reduction, size_average, reduce)
    if beta < 0:
        raise ArgumentError(f"smooth_l1_loss: beta must be >= 0, got {beta}")
    a = O.abs(d)
    if beta == 0:
        return _reduce(a, red)
    return _reduce(O.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta), red)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5 d^2`` if ``|d| < delta`` else ``delta * (|d| - 0.5 delta)``."""
    d, red = _diff("huber_loss", input, target, reduction, None, None)
    if delta <= 0:
        raise ArgumentError(f"huber_loss: delta must be > 0, got {delta}")
    a = O.abs(d)
    loss = O.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, red)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """``-(t * log(p) + (1 - t) * log(1 - p))`` for probabilities ``p`` in [0, 1], each log clamped at -100."""
    op = "binary_cross_entropy"
    p = _float_input(op, input)
    red = _reduction(op, reduction, size_average, reduce)
    t = check_tensor(target, op, "target")
    if t.shape != p.shape:
        raise ShapeError(f"{op}: target has shape {fmt_shape(t.shape)} but input has {fmt_shape(p.shape)}; they "
                         "must be the same")
    data = p.data
    if data.size and ((data < 0) | (data > 1)).any():
        raise ArgumentError(f"{op}: input must hold probabilities in [0, 1] (got values from {float(data.min()):.4g} "
                            f"to {float(data.max()):.4g}); for raw scores use binary_cross_entropy_with_logits")
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
    if size_average is not None or reduce is not None:
        reduction = _reduction(op, "mean", size_average, reduce)
    if reduction not in _REDUCTIONS + ("batchmean",):
        raise ArgumentError(f"{op}: reduction must be 'none', 'batchmean', 'mean' or 'sum', got {reduction!r}")
    t = check_tensor(target, op, "target")
    if log_target:
        loss = O.exp(t) * (t - x)
    else:
        pos = t > 0
        loss = O.where(pos, t * O.log(O.where(pos, t, 1.0)), 0.0) - t * x
    if reduction == "batchmean":
        return O.sum(loss) / (x.shape[0] if x.ndim else 1)
    return _reduce(loss, reduction)


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
        gap = x.data - t.data
        x.data[abs(abs(gap) - kw.get(with_beta, 0.0)) < 0.05] += 0.2
        x.data[abs(x.data - t.data) < 0.05] += 0.2
        yield Sample((x, t), kw)
    return samples


def _bce_samples(src):
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


def _torch_f(name):
    return lambda torch, *a, **k: getattr(torch.nn.functional, name)(*a, **k)


for _fn, _samples, _formula in [
    (l1_loss, _pair_samples(), "dX = sign(X - T) * dY   (/ N for mean)"),
    (smooth_l1_loss, _pair_samples("beta"), "dX = dY * (d / beta if |d| < beta else sign(d))   (d = X - T)"),
    (huber_loss, _pair_samples("delta"), "dX = dY * (d if |d| < delta else delta * sign(d))   (d = X - T)"),
    (binary_cross_entropy, _bce_samples, "dP = dY * (P - T) / (P * (1 - P))   (times weight)"),
    (kl_div, _kl_samples, "dX = -T * dY ; dT = (log(T) + 1 - X) * dY"),
]:
    register(_fn.__name__, samples=_samples, formula=_formula, namespace=NS, torch=_torch_f(_fn.__name__))(_fn)
del _fn, _samples, _formula
