"""Dropout layers: ``Dropout``, ``Dropout1d/2d/3d`` (whole channels), ``AlphaDropout`` and
``FeatureAlphaDropout`` (for SELU networks), all over one base ``_DropoutNd``.

Each zeroes entries with probability ``p`` in training (scaling the rest by ``1/(1-p)``) and is
the identity in ``eval()`` mode, which is why evaluation code must call ``model.eval()``.
``_fn`` names the ``F`` function, looked up at each call.
"""
from __future__ import annotations

from ... import checks as _c
from ...errors import ArgumentError
from .. import functional as F
from ..module import Module


class _DropoutNd(Module):
    """``p`` and ``inplace`` (accepted; gradlab always returns a new tensor), then ``F.<_fn>(input, p, training)``."""
    _fn = "dropout"

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0.0 <= _c.number(p, type(self).__name__, "p") <= 1.0:
            raise ArgumentError(f"{type(self).__name__}: probability p has to be between 0 and 1, but got {p}")
        self.p, self.inplace = float(p), inplace

    def forward(self, input):
        return getattr(F, self._fn)(input, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p`` in training (scaling the rest by ``1/(1-p)``).

    In ``eval()`` mode it is the identity, which is why evaluation code must
    call ``model.eval()``.
    """
    _fn = "dropout"


class Dropout1d(_DropoutNd):
    """Zero whole channels of ``(N, C, L)`` with probability ``p`` in training (neighbouring positions are
    correlated, so dropping single elements regularizes little)."""
    _fn = "dropout1d"


class Dropout2d(_DropoutNd):
    """Zero whole feature maps of ``(N, C, H, W)`` with probability ``p`` in training."""
    _fn = "dropout2d"


class Dropout3d(_DropoutNd):
    """Zero whole channels of ``(N, C, D, H, W)`` with probability ``p`` in training."""
    _fn = "dropout3d"


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks: keeps inputs of mean 0 and variance 1 at mean 0 and variance 1 in training
    (dropped units take SELU's negative saturation value, then an affine correction)."""
    _fn = "alpha_dropout"


class FeatureAlphaDropout(_DropoutNd):
    """``AlphaDropout`` that drops whole channels (for SELU convolutional networks)."""
    _fn = "feature_alpha_dropout"
