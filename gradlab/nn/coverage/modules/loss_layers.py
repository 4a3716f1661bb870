"""The rarer loss modules of ``torch.nn``: ``MarginRankingLoss``, ``HingeEmbeddingLoss``, ``SoftMarginLoss``,
``MultiLabelSoftMarginLoss``, ``CosineEmbeddingLoss``, ``TripletMarginLoss``, ``PoissonNLLLoss``,
``GaussianNLLLoss``, ``MultiMarginLoss``, ``MultiLabelMarginLoss``, ``TripletMarginWithDistanceLoss`` and
``CTCLoss``, over ``_Loss`` / ``_WeightedLoss`` (``nn/modules/loss.py``); ``MarginRankingLoss`` and
``CosineEmbeddingLoss`` share ``_PairMarginLoss``.
"""
from __future__ import annotations

from .... import checks as _c
from ....errors import ArgumentError
from ... import functional as F
from ...modules.loss import _Loss, _WeightedLoss


class _PairMarginLoss(_Loss):
    """A loss of two inputs and a target of +-1 (same pair or not, which ranks higher) with a ``margin``:
    ``MarginRankingLoss`` and ``CosineEmbeddingLoss``. ``_fn`` is the ``F`` function."""
    _fn = None

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = _c.number(margin, type(self).__name__, "margin")

    def forward(self, input1, input2, target):
        return type(self)._fn(input1, input2, target, margin=self.margin, reduction=self.reduction)


class MarginRankingLoss(_PairMarginLoss):
    """``max(0, -target * (input1 - input2) + margin)``: ``target = 1`` means input1 should rank higher."""
    _fn = staticmethod(F.margin_ranking_loss)


class HingeEmbeddingLoss(_Loss):
    """``x`` where ``target = 1``, ``max(0, margin - x)`` where ``target = -1``."""

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = _c.number(margin, "HingeEmbeddingLoss", "margin")

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """``log(1 + exp(-target * input))`` for labels ``target`` in {-1, 1}."""

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Per-class binary cross-entropy on logits, averaged over the classes (multi-label classification)."""

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class CosineEmbeddingLoss(_PairMarginLoss):
    """``1 - cos(x1, x2)`` where ``target = 1``, ``max(0, cos(x1, x2) - margin)`` where ``target = -1``."""
    _fn = staticmethod(F.cosine_embedding_loss)


class TripletMarginLoss(_Loss):
    """``max(d(a, p) - d(a, n) + margin, 0)``: pull the positive closer to the anchor than the negative."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                 size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        _c.arguments("TripletMarginLoss", margin=(margin, "positive"), p=(p, "number"), eps=(eps, "number"))
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
                                     swap=self.swap, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """Negative log-likelihood of counts ``target`` under a Poisson with rate ``exp(input)`` (``log_input``)."""

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None, eps: float = 1e-8,
                 reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, _c.number(eps, "PoissonNLLLoss", "eps")

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Negative log-likelihood of ``target`` under ``N(input, var)``: ``loss(input, target, var)``.

    A regression model that also predicts its variance learns where it is unsure.
    """

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        super().__init__(reduction=reduction)
        self.full, self.eps = full, _c.number(eps, "GaussianNLLLoss", "eps")

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss (an SVM's): each wrong class costs ``max(0, margin - x[y] + x[i])^p``."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight=None, size_average=None, reduce=None,
                 reduction: str = "mean"):
        _c.arguments("MultiMarginLoss", p=(p, "int"), margin=(margin, "number"))
        if p not in (1, 2):
            raise ArgumentError(f"MultiMarginLoss: only p == 1 and p == 2 are supported, got {p}")
        super().__init__(weight, size_average, reduce, reduction)
        self.p, self.margin = p, margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss; ``target`` lists each sample's labels, ended by -1 (``[3, 0, -1, ...]``)."""

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with any ``distance_function(x1, x2)`` (default: Euclidean)."""

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False, reduction: str = "mean"):
        super().__init__(reduction=reduction)
        _c.positive(margin, "TripletMarginWithDistanceLoss", "margin")
        self.distance_function, self.margin, self.swap = distance_function, margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(anchor, positive, negative,
                                                   distance_function=self.distance_function, margin=self.margin,
                                                   swap=self.swap, reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist Temporal Classification: ``loss(log_probs, targets, input_lengths, target_lengths)``.

    ``log_probs`` ``(T, N, C)`` from ``log_softmax``; label sequences shorter than ``T`` are scored by
    summing over all their alignments with blanks (speech recognition, handwriting/OCR).
    """

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = _c.size(blank, "CTCLoss", "blank"), zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)
