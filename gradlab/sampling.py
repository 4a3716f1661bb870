"""Drawing samples from distributions a tensor describes: ``multinomial``, ``bernoulli``, ``normal``.

``gradlab.multinomial(probs, 1)`` is how a language model picks its next token; ``bernoulli`` is
the coin flip behind dropout. Draws come from the generator ``gradlab.manual_seed`` controls (or the
``generator=`` given); like PyTorch's, they are not differentiable.
"""
from __future__ import annotations

import numpy as np

from . import checks as _c
from ._tensor import Tensor
from .backend import dtypes as _dt, random as _random
from .backend.device import xp_for
from .errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError, fmt_shape


def _host(t, op, arg="input"):
    if not isinstance(t, Tensor):
        raise ArgumentTypeError(f"{op}: {arg} must be a Tensor, got {type(t).__name__}")
    return np.asarray(t.cpu()._data, dtype=np.float64)


def _on(arr, like):
    return Tensor._make(xp_for(like.device).asarray(arr))


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """``num_samples`` category indices per row, drawn with probability proportional to ``input``.

    ``input`` holds non-negative weights (1-D, or one row per distribution); they need not sum to 1.
    Without ``replacement`` an index is drawn at most once per row."""
    w = _host(input, "multinomial")
    if w.ndim not in (1, 2):
        raise ShapeError(f"multinomial: input must be 1-D or 2-D (one distribution per row), "
                         f"got {fmt_shape(w.shape)}")
    if not isinstance(num_samples, (int, np.integer)) or num_samples <= 0:
        raise ArgumentError(f"multinomial: num_samples must be a positive int, got {num_samples!r}")
    rows = w.reshape(-1, w.shape[-1])
    if not np.isfinite(rows).all() or (rows < 0).any():
        raise ArgumentError("multinomial: input must hold finite, non-negative weights (probabilities)")
    totals = rows.sum(axis=1)
    if (totals <= 0).any():
        raise ArgumentError("multinomial: every row of input needs a positive total weight")
    if not replacement and ((rows > 0).sum(axis=1) < num_samples).any():
        raise ArgumentError(f"multinomial: cannot draw {num_samples} samples without replacement from a row "
                            "with fewer non-zero weights; pass replacement=True or draw fewer")
    rng = _random.generator(generator)
    out = np.stack([rng.choice(len(r), size=num_samples, replace=replacement, p=r / t)
                    for r, t in zip(rows, totals)]).astype(np.int64)
    return _on(out.reshape(w.shape[:-1] + (num_samples,)), input)


def bernoulli(input, p=None, *, generator=None):
    """1 with probability ``input`` (or ``p``) and 0 otherwise, elementwise, in ``input``'s dtype."""
    probs = _host(input, "bernoulli")
    if not _dt.is_floating(input.dtype):
        raise DTypeError(f"bernoulli: input must be a floating tensor of probabilities, got dtype {input.dtype}")
    if p is not None:
        probs = np.full(probs.shape, float(p))
    if (probs < 0).any() or (probs > 1).any() or np.isnan(probs).any():
        raise ArgumentError("bernoulli: probabilities must be in [0, 1]")
    draw = _random.generator(generator).random(probs.shape) < probs
    return _on(draw.astype(input.dtype), input)


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None):
    """Samples from N(mean, std^2): ``mean``/``std`` tensors (broadcast) or numbers with a ``size``."""
    rng = _random.generator(generator)
    like = mean if isinstance(mean, Tensor) else std if isinstance(std, Tensor) else None
    if like is None:
        _c.number(mean, "normal", "mean")
        _c.nonnegative(std, "normal", "std")
        if size is None:
            raise ArgumentTypeError("normal: with numbers for mean and std, give size= (the output shape)")
        from .factories import randn
        return randn(*((size,) if isinstance(size, int) else size), generator=generator, dtype=dtype,
                     device=device) * float(std) + float(mean)
    m, s = (_host(t, "normal") if isinstance(t, Tensor) else np.asarray(float(_c.number(t, "normal", n)))
            for t, n in ((mean, "mean"), (std, "std")))
    if (s < 0).any():
        raise ArgumentError("normal: std must be >= 0")
    shape = np.broadcast_shapes(m.shape, s.shape)
    out = m + s * rng.standard_normal(shape)
    return _on(out.astype(dtype or like.dtype), like)


for _name, _fn in (("multinomial", multinomial), ("bernoulli", bernoulli)):  # x.multinomial(1), x.bernoulli()
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _fn)
