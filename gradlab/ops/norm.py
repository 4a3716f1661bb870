"""``norm``: vector p-norms and the Frobenius norm, over all elements or some dims.

``norm(x)`` at ``x = 0`` has no derivative (the cone's tip); like PyTorch, gradlab returns 0 there
rather than ``nan``. The backward is written with gradlab ops (second derivatives work) and has an
array twin. (``torch.linalg``'s norms are in ``linalg.py``.)
"""
from __future__ import annotations

import math

import numpy as np

from .. import checks as _c, ops as O
from ..autograd.function import Op
from ..backend.arrays import as_array
from ..errors import ArgumentError, ArgumentTypeError
from ._util import check_tensor, norm_dim
from .reduce import _expand_back, _kept, _kept_array, _need_float
from .registry import Sample, register


class Norm(Op):
    name = "norm"
    formula = "p=2: dX = dY * X / Y (0 where Y == 0) ; p=1: dX = dY * sign(X) ; p: dY * sign(X) |X|^(p-1) / Y^(p-1)"

    @staticmethod
    def forward(ctx, x, p, axes, keepdim):
        ctx.p, ctx.axes, ctx.keepdim, ctx.in_shape = p, axes, keepdim, x.shape
        ctx.save_for_backward(x)
        a = np.abs(x._data)
        if a.dtype.itemsize < 4:  # float16/bfloat16: squares and sums in float32 (as PyTorch), rounded once
            a = a.astype(np.float32)
        kw = dict(axis=axes, keepdims=keepdim)
        if p == 2:
            y = np.sqrt(np.sum(a * a, **kw))
        elif p == 1:
            y = np.sum(a, **kw)
        elif p == math.inf:
            y = np.max(a, initial=0, **kw)
        elif p == -math.inf:
            y = np.min(a, **kw)
        elif p == 0:
            y = np.sum(a != 0, **kw)
        else:
            y = np.sum(a ** p, **kw) ** (1.0 / p)
        y = as_array(y, dtype=x.dtype)
        ctx.save_output(y)
        return y

    def _dydx(self, x, y):
        p = self.p
        yk = _kept(y, self.in_shape, self.axes, self.keepdim)
        if p == 1:
            return O.sign(x)
        if p == 0:
            return x * 0
        zero = yk == 0
        y_safe = O.where(zero, 1.0, yk)
        if p == 2:
            return O.where(zero, 0.0, x / y_safe)
        if p in (math.inf, -math.inf):
            hit = (O.abs(x) == yk.detach()).to(x.dtype)
            return O.sign(x) * hit / O.sum(hit, dim=self.axes, keepdim=True)
        return O.where(zero, 0.0, O.sign(x) * O.abs(x) ** (p - 1) / y_safe ** (p - 1))

    def vjp(self, g):
        x, y = self.saved_tensors
        return _expand_back(g, self.in_shape, self.axes, self.keepdim) * self._dydx(x, y), None, None, None

    def vjp_arrays(self, g):
        x, y = self.saved_arrays
        p = self.p
        yk = _kept_array(y, self.in_shape, self.axes, self.keepdim)
        if p == 1:
            d = np.sign(x)
        elif p == 0:
            d = x * 0
        else:
            zero = yk == 0
            y_safe = np.where(zero, 1.0, yk)
            if p == 2:
                d = np.where(zero, 0.0, x / y_safe)
            elif p in (math.inf, -math.inf):  # the gradient is shared among the entries that tie for the max
                hit = (np.abs(x) == yk).astype(x.dtype)
                d = np.sign(x) * hit / np.sum(hit, axis=self.axes, keepdims=True)
            else:
                d = np.where(zero, 0.0, np.sign(x) * np.abs(x) ** (p - 1) / y_safe ** (p - 1))
        return _kept_array(g, self.in_shape, self.axes, self.keepdim) * d, None, None, None

    def jvp(self, t, *_):
        return O.sum(t * self._dydx(self.args[0], self.out), dim=self.axes, keepdim=self.keepdim)


def _norm_samples(src):
    shape = src.shape(1, 3, 1, 4)
    kw = dict(away_from=0.0)
    yield Sample((src.tensor(shape),), desc="2-norm of everything (Frobenius)")
    yield Sample((src.tensor(shape, **kw),), dict(p=1, dim=src.dim(len(shape)), keepdim=src.boolean()), desc="p=1")
    yield Sample((src.tensor(shape),), dict(p=2, dim=src.dim(len(shape)), keepdim=src.boolean()), desc="p=2")
    yield Sample((src.tensor((3, 4)),), dict(p="fro", dim=(0, 1)), desc="fro over two dims")
    # distinct magnitudes: a tie for the largest |x| is a kink where finite differences disagree
    yield Sample((src.tensor(shape, distinct=True, low=0.2, high=2.0),), dict(p=math.inf), desc="max norm")
    yield Sample((src.tensor(shape, low=0.5, high=2),), dict(p=3, dim=0), desc="p=3")


@register(op=Norm, samples=_norm_samples,
          torch=lambda torch, x, p="fro", dim=None, keepdim=False: torch.norm(x, p=p, dim=dim, keepdim=keepdim))
def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """The ``p``-norm over ``dim`` (all elements by default), as ``torch.norm``.

    ``p``: ``'fro'`` (the default: sqrt of the sum of squares), ``2``, ``1``,
    ``inf``, ``-inf``, ``0`` (count of non-zeros) or any other number.
    The gradient of the 2-norm at an all-zero input is 0 (it is undefined there).
    """
    x = check_tensor(input, "norm")
    keepdim = _c.flag(keepdim, "norm", "keepdim")
    if dtype is not None:
        x = O.to(x, dtype)
    _need_float(x, "norm")
    if isinstance(p, str):
        if p != "fro":
            raise ArgumentError(f"norm: p={p!r} is not supported; use 'fro', or a number such as 1, 2 or inf")
        p = 2
    if not isinstance(p, (int, float, np.number)) or isinstance(p, bool):
        raise ArgumentTypeError(f"norm: p must be a number or 'fro', got {p!r}")
    axes = norm_dim(dim, x.ndim, "norm")
    return Norm.apply(x, float(p), axes, bool(keepdim))
