"""The everyday loss modules (PyTorch's names and arguments), thin wrappers over the ``F`` losses:
``CrossEntropyLoss``, ``NLLLoss``, ``MSELoss``, ``BCEWithLogitsLoss``, ``BCELoss``, ``L1Loss``,
``SmoothL1Loss``, ``HuberLoss``, ``KLDivLoss``, and the bases ``_Loss`` / ``_WeightedLoss``.
(The rarer losses are in ``nn/coverage/modules/loss_layers.py``.)

A loss module only stores its options; ``loss(input, target)`` calls the function. ``reduction``
says how the per-element losses become one number: ``'mean'`` (default), ``'sum'`` or ``'none'``
(keep them all, e.g. to weight or inspect them). The old ``size_average`` / ``reduce`` flags are
turned into ``reduction`` at construction, as PyTorch does.
"""
from __future__ import annotations

from ... import checks as _c
from ...errors import ArgumentError
from .. import functional as F
from ..module import Module


class CrossEntropyLoss(Module):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                 label_smoothing=0.0):
        super().__init__()
        self.register_buffer("weight", weight)  # a buffer, as in PyTorch: .to(device) and .double() carry it
        self.ignore_index, self.label_smoothing = _c.arguments(
            "CrossEntropyLoss", ignore_index=(ignore_index, "int"), label_smoothing=(label_smoothing, "probability"))
        self.reduction = reduction

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(Module):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        super().__init__()
        self.register_buffer("weight", weight)
        self.ignore_index, self.reduction = ignore_index, reduction

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class MSELoss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class BCEWithLogitsLoss(Module):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
        super().__init__()
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)
        self.reduction = reduction

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, weight=self.weight, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


def _legacy_reduction(size_average, reduce):
    """PyTorch's mapping of the deprecated ``size_average``/``reduce`` pair to a ``reduction`` string."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


class _Loss(Module):
    _reductions = ("none", "mean", "sum")

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = _legacy_reduction(size_average, reduce)
        if reduction not in self._reductions:
            raise ArgumentError(f"{type(self).__name__}: reduction must be one of "
                                f"{', '.join(repr(r) for r in self._reductions)}, got {reduction!r}")
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)  # a buffer, as PyTorch: .to() and .double() carry it


class L1Loss(_Loss):
    """Mean absolute error ``|input - target|``: robust to outliers, gradient ``sign(input - target)``."""

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Squared error for ``|d| < beta`` (divided by ``beta``), absolute error beyond: L2 near 0, L1 far away."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = _c.nonnegative(beta, "SmoothL1Loss", "beta")

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """``0.5 d^2`` for ``|d| < delta``, else ``delta * (|d| - 0.5 delta)`` (SmoothL1Loss times ``delta``)."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction)
        self.delta = _c.positive(delta, "HuberLoss", "delta")

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of *probabilities* ``input`` in [0, 1] against ``target``.

    Prefer ``BCEWithLogitsLoss`` on raw scores: it fuses the sigmoid and is stable for large scores.
    """

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class KLDivLoss(_Loss):
    """``target * (log target - input)`` with ``input`` given as *log*-probabilities.

    Use ``reduction='batchmean'`` for the true KL divergence per sample ('mean' divides by every element).
    """
    _reductions = ("none", "batchmean", "mean", "sum")

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


# the rest of torch.nn.modules.loss's names (kept in coverage.modules.loss_layers), found on first use
from ._layer_helpers import rest_from as _rest_from  # noqa: E402

__getattr__ = _rest_from(__name__, "gradlab.nn.coverage.modules.loss_layers")
