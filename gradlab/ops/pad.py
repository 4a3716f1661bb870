"""``F.pad``: add (or, with negative amounts, remove) a border around a tensor.

``pad`` lists amounts from the *last* dimension backwards, PyTorch's order:
``(left, right)`` pads the last dim, ``(left, right, top, bottom)`` the last
two, and so on. A negative amount crops instead.

Constant padding is linear, and its VJP is padding again with the amounts
negated: the gradient of the border is dropped (cropped away), and a cropped
part gets a zero gradient (zero-padded back). The other modes copy existing
entries (``reflect``: mirror without repeating the edge, ``replicate``: repeat
the edge, ``circular``: wrap around); they are built from integer indexing,
so the gradients of entries copied several times add up.
"""
from __future__ import annotations

import numpy as np

from .. import checks as _c, ops as O
from ..autograd.function import Op
from ..backend import xp_of
from ..errors import ArgumentError, ArgumentTypeError, ShapeError, fmt_shape
from ._util import OneRule, apply_in, check_tensor
from .registry import Sample, register

NS = "gradlab.nn.functional"


def _pairs(pad, ndim):
    """Per-dim ``(before, after)`` amounts, first dim first."""
    amounts = [(0, 0)] * ndim
    for i in range(len(pad) // 2):
        amounts[ndim - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))
    return tuple(amounts)


class ConstantPad(OneRule, Op):
    name = "pad"
    formula = "dX = pad(dY, -pad)   (crop the border's gradient away)"

    @staticmethod
    def kernel(a, amounts, value):
        return _constant_pad(a, amounts, value)

    @staticmethod
    def forward(ctx, x, amounts, value):
        ctx.amounts = amounts
        return _constant_pad(x._data, amounts, value)

    def rule(self, ns, g):  # the VJP, on tensors and arrays alike (OneRule): the same op, cropping
        return apply_in(ns, ConstantPad, g, tuple((-lo, -hi) for lo, hi in self.amounts), 0), None, None

    def jvp(self, t, *_):
        return ConstantPad.apply(t, self.amounts, 0)


def _constant_pad(a, amounts, value):
    """Crop where an amount is negative (a view), then pad with ``value`` where it is positive."""
    crop = tuple(slice(max(-lo, 0), a.shape[i] - max(-hi, 0)) for i, (lo, hi) in enumerate(amounts))
    a = a[crop]
    widths = tuple((max(lo, 0), max(hi, 0)) for lo, hi in amounts)
    if any(w != (0, 0) for w in widths):
        a = xp_of(a).pad(a, widths, mode="constant", constant_values=value)
    return a


def _index(mode, n, lo, hi):
    j = np.arange(-lo, n + hi)
    if mode == "replicate":
        return np.clip(j, 0, n - 1)
    if mode == "circular":
        return j % n
    j = np.abs(j)  # reflect: mirror at 0 and at n-1, without repeating the edge
    return np.where(j > n - 1, 2 * (n - 1) - j, j)


def pad(input, pad, mode="constant", value=None):
    """Pad ``input`` by ``pad = (last_lo, last_hi, 2nd_last_lo, 2nd_last_hi, ...)``; negative amounts crop.

    ``mode`` is ``'constant'`` (with ``value``, default 0), ``'reflect'``, ``'replicate'`` or ``'circular'``.
    """
    x = check_tensor(input, "pad")
    if not isinstance(pad, (tuple, list)):
        raise ArgumentTypeError(f"pad: pad must be a tuple of ints, got {type(pad).__name__} {pad!r}")
    pad = _c.shape(pad, "pad", "pad", infer=None)
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise ArgumentError(f"pad: pad {pad} must have an even length of at most 2 * ndim = {2 * x.ndim} "
                            f"for input {fmt_shape(x.shape)}: (left, right) for the last dim, then the one before...")
    amounts = _pairs(pad, x.ndim)
    for i, (lo, hi) in enumerate(amounts):
        if x.shape[i] + lo + hi < 0:
            raise ShapeError(f"pad: padding {(lo, hi)} on dim {i} of input {fmt_shape(x.shape)} gives a negative "
                             f"size {x.shape[i] + lo + hi}")
    if mode == "constant":
        return ConstantPad.apply(x, amounts, 0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise ArgumentError(f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}")
    if value not in (None, 0):
        raise ArgumentError(f"pad: value= only applies to mode='constant', not {mode!r}")
    out = x
    for i, (lo, hi) in enumerate(amounts):
        if lo == hi == 0:
            continue
        n = x.shape[i]
        limit = n - 1 if mode == "reflect" else n
        if min(lo, hi) < 0 or max(lo, hi) > limit or n == 0:
            raise ShapeError(f"pad: {mode} padding {(lo, hi)} on dim {i} of input {fmt_shape(x.shape)} must be "
                             f"between 0 and {limit} (the {'size - 1' if mode == 'reflect' else 'size'} of that dim)")
        out = O.getitem(out, (slice(None),) * i + (_index(mode, n, lo, hi),))
    return out


def _pad_samples(src):
    shape = src.shape(1, 3, 1, 4)
    k = src.integers(1, len(shape))
    amounts = tuple(src.integers(-1 if shape[len(shape) - 1 - i // 2] > 1 else 0, 2) for i in range(2 * k))
    yield Sample((src.tensor(shape), amounts), dict(value=src.choice([None, 0.0, 1.5])),
                 desc="constant, negative amounts crop")
    yield Sample((src.tensor((1, 2, 4, 3)), (2, 1, 1, 3)), dict(mode="reflect"), desc="reflect")
    yield Sample((src.tensor((2, 3, 3)), (2, 0)), dict(mode="replicate"), desc="replicate")
    yield Sample((src.tensor((1, 2, 3, 3)), (1, 2, 3, 0)), dict(mode="circular"), desc="circular")


register("pad", op=ConstantPad, samples=_pad_samples, namespace=NS,
         torch=lambda torch, *a, **k: torch.nn.functional.pad(*a, **k))(pad)
