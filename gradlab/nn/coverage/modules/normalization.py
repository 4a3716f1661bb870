"""``LocalResponseNorm`` (AlexNet's normalization across neighbouring channels).
"""
from __future__ import annotations

from ... import functional as F
from ...module import Module


class LocalResponseNorm(Module):
    """Divide each activation by ``(k + alpha * mean of the squares of `size` neighbouring channels)^beta``."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
