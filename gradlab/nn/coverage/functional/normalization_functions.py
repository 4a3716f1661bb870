"""``local_response_norm`` (AlexNet): each activation divided by
``(k + alpha/size * sum of squares of its `size` neighbouring channels)^beta``.
"""
from __future__ import annotations

from .... import checks as _c
from ....errors import ShapeError, fmt_shape
from ....ops._util import check_tensor
from ....ops.pad import pad as _pad
from ....ops.registry import Sample
from ..._register import register_table


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """``x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta`` (channels are dim 1)."""
    op = "local_response_norm"
    x = _c.floating(check_tensor(input, op), op)  # PyTorch averages integer squares with truncation: refused
    size, alpha, beta, k = _c.arguments(op, size=(size, "count"), alpha=(alpha, "number"), beta=(beta, "number"),
                                        k=(k, "number"))
    if x.ndim < 3:
        raise ShapeError(f"local_response_norm: expected a 3-D or higher input (N, C, ...), got {fmt_shape(x.shape)}")
    if x.numel() == 0:
        return x
    c = x.shape[1]
    sq = _pad(x * x, (0, 0) * (x.ndim - 2) + (size // 2, (size - 1) // 2))
    total = sq[:, 0:c]
    for j in range(1, size):
        total = total + sq[:, j:j + c]
    return x / (total * (alpha / size) + k) ** beta


# ------------------------------------------------------------- registry entries
def _lrn_samples(src):
    yield Sample((src.tensor((src.integers(1, 2), src.integers(1, 5), src.integers(1, 3))), src.integers(1, 4)),
                 dict(alpha=0.5, beta=0.75, k=1.0))
    yield Sample((src.tensor((1, 4, 2, 2)), 3), desc="4-D")


register_table([
    (local_response_norm, _lrn_samples, "y = x / D^beta, D = k + alpha/size * window_sum(x^2): dx via the chain rule"),
])
