"""``Flatten`` and ``Unflatten``: reshape layers between convolutional and linear parts of a network.
"""
from __future__ import annotations

from ... import checks as _c, ops as O
from ...errors import ArgumentTypeError, ShapeError, fmt_shape
from ...ops._util import check_tensor
from ..module import Module


class Flatten(Module):
    """Flatten dims ``start_dim..end_dim`` into one (default: all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return O.flatten(input, self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size`` (the inverse of ``Flatten``): ``(N, 12) -> (N, 3, 4)``."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise ArgumentTypeError(f"Unflatten: unflattened_size must be a tuple or list of ints, got "
                                    f"{unflattened_size!r}")
        _c.shape(unflattened_size, "Unflatten", "unflattened_size", infer=True)
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input):
        input = check_tensor(input, "Unflatten")
        d = self.dim + input.ndim if self.dim < 0 else self.dim
        if not 0 <= d < input.ndim:
            raise ShapeError(f"Unflatten: dim {self.dim} is out of range for input {fmt_shape(input.shape)}")
        sizes = tuple(self.unflattened_size)
        known = 1
        for s in sizes:
            known *= s if s != -1 else 1
        n = input.shape[d]
        if (-1 not in sizes and known != n) or (-1 in sizes and (known == 0 or n % known)):
            raise ShapeError(f"Unflatten: cannot split dim {self.dim} of size {n} (input {fmt_shape(input.shape)}) "
                             f"into {sizes}: their product must be {n}")
        return O.reshape(input, tuple(input.shape[:d]) + sizes + tuple(input.shape[d + 1:]))

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
