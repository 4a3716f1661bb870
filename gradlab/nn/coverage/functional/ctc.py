"""``F.ctc_loss``: Connectionist Temporal Classification, written with gradlab ops (autograd differentiates it).

CTC scores an unsegmented label sequence (``"cat"``) against per-frame class log-probabilities,
summing over every alignment of the labels to the ``T`` frames. An alignment may repeat a label
over consecutive frames and put *blanks* (class ``blank``) between labels; a repeated label needs a
blank between its copies. The sum is the forward (alpha) recursion over the extended label
``[-, c, -, a, -, t, -]`` (``S = 2L + 1`` states), in log space:

    alpha_t(s) = logsumexp(alpha_{t-1}(s), alpha_{t-1}(s-1), alpha_{t-1}(s-2) [if allowed]) + log p_t(l'_s)
    loss = -logsumexp(alpha_{T-1}(S-1), alpha_{T-1}(S-2))

Unreachable states hold a very large negative number rather than ``-inf`` (so no ``nan`` appears
in backward); an impossible alignment (too few frames) gives ``inf``, or 0 with ``zero_infinity``.

Note for comparing with PyTorch: PyTorch's CTC backward returns ``exp(log_probs) - occupancy``,
the gradient *through a log_softmax*; gradlab returns the true gradient ``-occupancy`` with respect
to ``log_probs``. After ``log_softmax`` (the usual use) both give the same gradient of the logits.
"""
from __future__ import annotations

import numpy as np

from .... import checks as _c, ops as O
from ...._tensor import Tensor
from ....backend import xp_of
from ....backend.device import to_host
from ....backend.fperr import quiet as _fp_quiet
from ....errors import ArgumentError, ShapeError, fmt_shape
from ....ops._util import check_tensor
from ....ops.registry import Sample, register

_NEG = -1e30  # "log 0" that stays finite


def _ints(v, name):
    if isinstance(v, Tensor):
        return to_host(v._data).astype(np.int64).reshape(-1)
    return np.asarray(v, dtype=np.int64).reshape(-1)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """CTC loss of ``log_probs`` ``(T, N, C)`` (or ``(T, C)``) against ``targets`` (``(N, S)`` padded, or all
    targets concatenated in 1-D), with each sample's ``input_lengths`` and ``target_lengths``.

    ``reduction='mean'`` divides each loss by its target length, then averages over the batch (PyTorch's rule).
    """
    op = "ctc_loss"
    lp = _c.floating(check_tensor(log_probs, op, "log_probs"), op, "log_probs")
    blank = _c.arguments(op, blank=(blank, "size"))
    if lp.ndim not in (2, 3):
        raise ShapeError(f"{op}: log_probs must be (T, N, C) or unbatched (T, C), got {fmt_shape(lp.shape)}")
    if reduction not in ("none", "mean", "sum"):
        raise ArgumentError(f"{op}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
    unbatched = lp.ndim == 2
    if unbatched:
        lp = O.unsqueeze(lp, 1)
    T, N, C = lp.shape
    if blank >= C:
        raise ArgumentError(f"{op}: blank={blank} must be a class of log_probs {fmt_shape(log_probs.shape)}, in "
                            f"[0, {C})")
    tgt = _ints(targets, "targets")
    in_len, tl = _ints(input_lengths, "input_lengths"), _ints(target_lengths, "target_lengths")
    if len(in_len) != N or len(tl) != N:
        raise ShapeError(f"{op}: input_lengths ({len(in_len)}) and target_lengths ({len(tl)}) need one entry per "
                         f"sample ({N}, from log_probs {fmt_shape(log_probs.shape)})")
    if in_len.max(initial=0) > T or in_len.min(initial=1) < 1:
        raise ArgumentError(f"{op}: input_lengths {in_len.tolist()} must be between 1 and T = {T}")
    if tl.min(initial=0) < 0:
        raise ArgumentError(f"{op}: target_lengths {tl.tolist()} must be >= 0")
    t2 = np.asarray(to_host(targets._data) if isinstance(targets, Tensor) else targets)
    if t2.ndim == 2 and tl.max(initial=0) > t2.shape[1]:
        raise ShapeError(f"{op}: target_lengths {tl.tolist()} ask for up to {tl.max()} labels, but the padded "
                         f"targets {fmt_shape(t2.shape)} hold {t2.shape[1]} per sample; a length cannot exceed "
                         f"the targets' width")
    if t2.ndim == 2:
        rows = [t2[n, :tl[n]] for n in range(N)]
    else:
        if tl.sum() > tgt.size:
            raise ShapeError(f"{op}: target_lengths sum to {tl.sum()} but the 1-D targets hold {tgt.size} labels")
        starts = np.concatenate([[0], np.cumsum(tl)[:-1]])
        rows = [tgt[s:s + n] for s, n in zip(starts, tl)]
    for n, r in enumerate(rows):
        if r.size and (r.min() < 0 or r.max() >= C or (r == blank).any()):
            raise ArgumentError(f"{op}: the labels of sample {n} ({r.tolist()}) must be classes in [0, {C}) other "
                                f"than blank={blank}")
    S = 2 * int(tl.max(initial=0)) + 1
    ext = np.full((N, S), blank, dtype=np.int64)
    skip = np.zeros((N, S), dtype=bool)                      # may state s come from s - 2?
    for n, r in enumerate(rows):
        ext[n, 1:2 * len(r):2] = r
        for i in range(1, len(r)):
            skip[n, 2 * i + 1] = r[i] != r[i - 1]
    xp = xp_of(lp._data)
    idx = Tensor._make(xp.asarray(np.broadcast_to(ext, (T, N, S)).copy()))
    emit = O.gather(lp, 2, idx)                              # (T, N, S): log p_t of each state's label
    with _fp_quiet():  # (-1e30 is -inf in float16, quietly)
        neg = Tensor._make(xp.full((N, 1), _NEG, dtype=lp.dtype))
        neg2 = Tensor._make(xp.full((N, 2), _NEG, dtype=lp.dtype))
    start = np.full((N, S), _NEG)
    start[:, 0] = 0.0
    start[:, 1] = np.where(tl > 0, 0.0, _NEG) if S > 1 else 0.0
    with _fp_quiet():  # (-1e30 is -inf in float16, quietly)
        alpha = Tensor._make(xp.asarray(start.astype(lp.dtype))) + emit[0]
    skip_t = Tensor._make(xp.asarray(skip))
    for t in range(1, T):
        s1 = O.cat([neg, alpha[:, :-1]], 1)
        s2 = O.where(skip_t, O.cat([neg2, alpha[:, :-2]], 1), _NEG) if S > 2 else None
        parts = [alpha, s1] + ([s2] if s2 is not None else [])
        new = O.logsumexp(O.stack(parts, 0), dim=0) + emit[t]
        active = Tensor._make(xp.asarray((t < in_len)[:, None]))
        alpha = O.where(active, new, alpha)                  # a finished sample keeps its last alpha
    last = np.stack([2 * tl, np.maximum(2 * tl - 1, 0)], 1)  # the states S_n - 1 and S_n - 2
    ends = O.gather(alpha, 1, Tensor._make(xp.asarray(last)))
    ends = O.where(Tensor._make(xp.asarray(np.stack([tl >= 0, tl > 0], 1))), ends, _NEG)
    loss = -O.logsumexp(ends, dim=1)                         # (N,)
    with _fp_quiet():
        impossible = Tensor._make(xp.asarray(to_host(loss._data) > -_NEG / 2))
    if zero_infinity:
        loss = O.where(impossible, 0.0, loss)
    else:
        loss = O.where(impossible, float("inf"), loss)
    if reduction == "none":
        return O.squeeze(loss, 0) if unbatched else loss
    if reduction == "sum":
        return O.sum(loss)
    return O.mean(loss / Tensor._make(xp.asarray(np.maximum(tl, 1).astype(lp.dtype))))


def _ctc_samples(src):
    T, N, C = src.integers(3, 5), src.integers(1, 2), 3
    lens = [src.integers(1, 2) for _ in range(N)]
    targets = np.ones((N, 2), dtype=np.int64)
    for n in range(N):
        targets[n, :lens[n]] = [src.integers(1, C - 1) for _ in range(lens[n])]
    logits = src.values((T, N, C))
    lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    t = Tensor._make(lp)
    t.requires_grad_(True)
    yield Sample((t, Tensor._make(targets), [T] * N, lens), dict(reduction=src.choice(["none", "mean", "sum"])))


register("ctc_loss", samples=_ctc_samples, namespace="gradlab.nn.functional",
         formula="dlog_probs[t, n, c] = -(sum of alpha_t(s) beta_t(s) over states s labelled c) / p(l | x)")(ctc_loss)
