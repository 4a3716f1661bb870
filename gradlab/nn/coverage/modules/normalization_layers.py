"""``LocalResponseNorm`` (AlexNet's normalization across neighbouring channels) and ``SyncBatchNorm``
(batch norm across processes: with one process, batch norm).
"""
from __future__ import annotations

from .... import checks as _c
from ... import functional as F
from ...module import Module


class LocalResponseNorm(Module):
    """Divide each activation by ``(k + alpha * mean of the squares of `size` neighbouring channels)^beta``."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        _c.arguments("LocalResponseNorm", size=(size, "count"), alpha=(alpha, "number"), beta=(beta, "number"),
                     k=(k, "number"))
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


def _sync_batchnorm():
    from ...modules.normalization import _BatchNorm

    class SyncBatchNorm(_BatchNorm):
        """PyTorch's batch norm synchronised across processes; gradlab has one process, so it is batch norm
        over the batch it sees (a documented pass-through). ``convert_sync_batchnorm(model)`` returns
        ``model`` unchanged."""

        def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                     process_group=None, device=None, dtype=None):
            super().__init__(num_features, eps, momentum, affine, track_running_stats, device=device, dtype=dtype)

        _ndims = (2, 3, 4, 5)

        @classmethod
        def convert_sync_batchnorm(cls, module, process_group=None):
            return module
    return SyncBatchNorm


SyncBatchNorm = _sync_batchnorm()
