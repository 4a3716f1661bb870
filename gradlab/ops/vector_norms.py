"""``norm``: vector p-norms and the Frobenius norm, over all elements or some dims.

``norm(x)`` at ``x = 0`` has no derivative (the cone's tip); like PyTorch, gradlab returns 0 there
rather than ``nan``. The backward is one rule, run on tensors (gradlab ops: second derivatives work)
and on arrays (the engine's fast path). (``torch.linalg``'s norms are in ``linalg.py``.)
"""
from __future__ import annotations

import math

import numpy as np

from .. import checks as _c, ops as O
from ..autograd.function import Op
from ..backend.arrays import as_array
from ..errors import ArgumentError, ArgumentTypeError
from ._util import OneRule, check_tensor, norm_dim
from .reduce import _kept, _need_float
from .registry import Sample, register


class Norm(OneRule, Op):
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

    def _dydx(self, ns, x, y):
        """dY/dX on tensors (``ns = O``) or arrays: ``.sum(axis=, keepdims=)`` is the same call on both."""
        p = self.p
        yk = _kept(y, self.in_shape, self.axes, self.keepdim)
        if p == 1:
            return ns.sign(x)
        if p == 0:
            return x * 0
        zero = yk == 0
        y_safe = ns.where(zero, 1.0, yk)
        if p == 2:
            return ns.where(zero, 0.0, x / y_safe)
        if p in (math.inf, -math.inf):  # the gradient is shared among the entries that tie for the max
            hit = ns.abs(x) == yk
            hit = hit.to(x.dtype) if ns is O else hit.astype(x.dtype)
            return ns.sign(x) * hit / hit.sum(axis=self.axes, keepdims=True)
        return ns.where(zero, 0.0, ns.sign(x) * ns.abs(x) ** (p - 1) / y_safe ** (p - 1))

    def rule(self, ns, g, x, y):  # the VJP, on tensors and arrays alike (OneRule)
        return _kept(g, self.in_shape, self.axes, self.keepdim) * self._dydx(ns, x, y), None, None, None

    def jvp(self, t, *_):
        return O.sum(t * self._dydx(O, self.args[0], self.out), dim=self.axes, keepdim=self.keepdim)


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


@register(op=Norm, method=True, samples=_norm_samples,
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
