"""SparseAdam: PyTorch's Adam for *sparse* gradients (``nn.Embedding(..., sparse=True)``).

gradlab has no sparse tensors: every gradient is dense, and PyTorch's SparseAdam refuses dense gradients.
So ``SparseAdam`` is refused here with what to write instead: ``optim.Adam`` (the same moments, updated for
every row rather than only the rows a batch touched).
"""
from __future__ import annotations

from ..errors import ArgumentError


class SparseAdam:
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        raise ArgumentError(
            "SparseAdam: gradlab has no sparse gradients (every gradient is a dense array, and PyTorch's "
            "SparseAdam refuses dense ones); use gradlab.optim.Adam(params, lr=...) instead, and build "
            "nn.Embedding without sparse=True")
