"""Fake quantization, for the quantization lesson.

Quantizing to int8 maps a real ``x`` to an integer code and back::

    q = clamp(round(x / scale) + zero_point, quant_min, quant_max)      (the int8 code)
    y = (q - zero_point) * scale                                          (what the network sees)

"Fake" quantization does both steps in floating point, so a network can be
trained while *feeling* the rounding error it will have after conversion.

Rounding has zero derivative almost everywhere, which would stop all learning.
The **straight-through estimator** (STE) pretends the rounding was the
identity: ``dX = dY`` where ``x`` landed inside ``[quant_min, quant_max]``, and
``dX = 0`` where it was clamped. That gradient is a deliberate lie (it is not
the derivative), so gradcheck cannot check it; the tests compare it with
PyTorch's ``torch.fake_quantize_per_tensor_affine`` instead.
"""
from __future__ import annotations

import numpy as np

from .. import checks as _c
from .._tensor import Tensor
from ..autograd.function import Op
from ..backend import dtypes as _dt, xp_of
from ..errors import ArgumentError, DTypeError
from ._util import OneRule, check_tensor
from .registry import Sample, export, register


class FakeQuantize(OneRule, Op):
    name = "fake_quantize"
    formula = "dX = dY * [quant_min <= round(X / scale) + zero_point <= quant_max]   (straight-through estimator)"

    @staticmethod
    def forward(ctx, x, scale, zero_point, qmin, qmax):
        xp = xp_of(x._data)
        # as PyTorch's kernel: multiply by a float32 1/scale, round half to even, then shift
        inv = float(np.float32(1.0) / np.float32(scale))
        q = xp.rint(x._data * inv) + zero_point
        mask = (q >= qmin) & (q <= qmax)
        ctx.mask = Tensor._make(mask)
        ctx.save_for_backward(ctx.mask)
        # (PyTorch's kernel forms the output in float32, whatever the input dtype; so does gradlab)
        out = (xp.clip(q, qmin, qmax) - zero_point).astype(np.float32) * np.float32(scale)
        return out.astype(x.dtype, copy=False)

    def rule(self, ns, g, mask):  # the straight-through VJP, on tensors and arrays alike (OneRule)
        return g * mask, None, None, None, None

    def jvp(self, t, *_):
        return t * self.mask


def _number(v, arg, kind):
    if isinstance(v, Tensor):
        if v.numel() != 1:
            raise ArgumentError(f"fake_quantize: {arg} must be a single number, got a tensor of shape {v.shape}")
        v = v.item()
    return kind(_c.number(v, "fake_quantize_per_tensor_affine", arg, integer=kind is int))


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):
    """Round ``input`` to the int grid ``(q - zero_point) * scale`` with ``q`` in ``[quant_min, quant_max]``,
    staying in floating point; the gradient is the straight-through estimator (as PyTorch)."""
    x = check_tensor(input, "fake_quantize")
    if not _dt.is_floating(x.dtype):
        raise DTypeError(f"fake_quantize: input has dtype {_dt.dtype_name(x.dtype)}; it needs a floating tensor")
    scale = _number(scale, "scale", float)
    zero_point = _number(zero_point, "zero_point", int)
    quant_min = _c.size(quant_min, "fake_quantize_per_tensor_affine", "quant_min", None)
    quant_max = _c.size(quant_max, "fake_quantize_per_tensor_affine", "quant_max", None)
    if not scale > 0:
        raise ArgumentError(f"fake_quantize: scale must be > 0, got {scale}")
    if quant_min > quant_max:
        raise ArgumentError(f"fake_quantize: quant_min {quant_min} is larger than quant_max {quant_max}")
    if not quant_min <= zero_point <= quant_max:
        raise ArgumentError(f"fake_quantize: zero_point {zero_point} must lie in [quant_min, quant_max] = "
                            f"[{quant_min}, {quant_max}]")
    return FakeQuantize.apply(x, scale, zero_point, quant_min, quant_max)


@export()
def fake_quantize(input, scale, zero_point=0, quant_min=-128, quant_max=127):
    """:func:`fake_quantize_per_tensor_affine` with int8 defaults (``[-128, 127]``, zero point 0)."""
    return fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max)


def _fq_samples(src):
    shape = src.shape(0, 3, 1, 5)
    yield Sample((src.tensor(shape, -3, 3), 0.05, src.integers(-5, 5), -128, 127), desc="int8")
    yield Sample((src.tensor(shape, -3, 3), 0.1, 0, -8, 7), desc="int4: values clamp")
    yield Sample((src.tensor(shape, 0, 2), 0.02, 3, 0, 255), desc="uint8")


# The STE gradient is not a derivative: listed as non-differentiable so gradcheck skips it
# (tests/test_functional.py checks the gradient against PyTorch).
register("fake_quantize_per_tensor_affine", op=FakeQuantize, samples=_fq_samples, differentiable=False, jvp=False,
         torch=lambda torch, *a: torch.fake_quantize_per_tensor_affine(*a))(fake_quantize_per_tensor_affine)
