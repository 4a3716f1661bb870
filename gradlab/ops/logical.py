"""Logical ops: ``logical_and``, ``logical_or``, ``logical_xor``, ``logical_not``.

Any dtype is read as true (nonzero) or false (zero); the result is a bool tensor with no gradient.
"""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from ._util import check_tensor
from .compare import _compare, _no_grad
from .registry import register
from .samples import unary_samples

logical_and = _compare("logical_and", np.logical_and)
logical_or = _compare("logical_or", np.logical_or)
logical_xor = _compare("logical_xor", np.logical_xor, method=False)


@register(method=True, samples=_no_grad(unary_samples()), differentiable=False, formula="(no gradient)",
          torch=lambda torch, x: torch.logical_not(x), kernel=("logical_not", "(!{0})"))
def logical_not(input):
    """``True`` where ``input`` is zero (False), for any dtype; ``~x`` is the bitwise not on integers."""
    x = check_tensor(input, "logical_not")
    return Tensor._make(np.logical_not(x._data))
