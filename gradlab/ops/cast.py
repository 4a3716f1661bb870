"""Dtype and device conversion, and copies: ``to``, ``float()``, ``clone``...

A cast is differentiable between floating dtypes: its VJP casts the gradient
back, so a float16 activation still sends its parameter a float32 gradient.
"""
from __future__ import annotations

import numpy as np

from .. import checks as _c
from .._tensor import Tensor
from ..autograd.function import Op
from ..backend import dtypes as _dt
from ..backend.device import Device, as_device, check_dtype_for, to_device_array
from ..errors import DeviceError
from ._util import OneRule, apply_in, check_tensor
from .registry import Sample, export, register


class Cast(OneRule, Op):
    name = "to"
    formula = "dX = dY.to(X.dtype)"

    @staticmethod
    def kernel(a, dtype):
        return a.astype(dtype)

    @staticmethod
    def forward(ctx, x, dtype):
        ctx.in_dtype = x.dtype
        if type(x._data) is not np.ndarray:
            check_dtype_for(dtype, x.device)  # no bfloat16 on a GPU
        return Cast.kernel(x._data, dtype)

    def rule(self, ns, g):  # the VJP, on tensors and arrays alike (OneRule): cast back
        return apply_in(ns, Cast, g, self.in_dtype), None

    def jvp(self, t, _):
        return Cast.apply(t, self.out.dtype)


class ToDevice(OneRule, Op):
    name = "to_device"
    formula = "dX = dY.to(X.device)"

    @staticmethod
    def kernel(a, device):
        return _to_device(a, device)

    @staticmethod
    def forward(ctx, x, device):
        ctx.in_device = x.device
        return _to_device(x._data, device)

    def rule(self, ns, g):  # the VJP, on tensors and arrays alike (OneRule): back to the input's device
        return apply_in(ns, ToDevice, g, self.in_device), None

    def jvp(self, t, _):
        return ToDevice.apply(t, self.out.device)


def _to_device(a, device):
    if device.type == "cpu":
        return a.get() if hasattr(a, "get") else a.copy()
    return to_device_array(a, device)  # an explicit host -> device (or device -> device) copy


def _to_samples(src):
    yield Sample((src.tensor(src.shape(0, 3, 1, 4)), _dt.float32), desc="down-cast and back")


def _to_torch(torch, x, d):
    """The oracle: ``x.to(torch.<the same dtype>)``; a string goes to PyTorch as it is (which reads it as a
    device and refuses ``'float32'``, as gradlab does)."""
    return x.to(d if isinstance(d, str) else getattr(torch, _dt.dtype_name(d)))


@register(op=Cast, method=True, samples=_to_samples, torch=_to_torch, eps=1e-3, atol=1e-4)
def to(input, *args, dtype=None, device=None, copy=False, non_blocking=False):
    """``x.to(dtype)``, ``x.to(device)``, ``x.to(other_tensor)`` or ``x.to(device, dtype)``.

    ``non_blocking`` is accepted for PyTorch code and ignored: copies are synchronous here.
    """
    x = check_tensor(input, "to")
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, Device) or (isinstance(a, str) and a.split(":")[0] in ("cpu", "cuda")):
            device = a
        elif isinstance(a, str):  # a string is a device, as in PyTorch (a dtype is gradlab.float32)
            raise DeviceError(f"to: invalid device string {a!r}; devices are 'cpu', 'cuda', 'cuda:N'"
                              + (f", and the dtype is written gradlab.{a}, not a string" if a in _dt._NAMES else ""))
        else:
            dtype = a
    dtype = _c.dtype(dtype, "to")
    out = x
    if device is not None:
        dev = as_device(device)
        if dev != x.device:
            out = ToDevice.apply(out, dev)
    if dtype is not None:
        d = _dt.as_dtype(dtype)
        if d != out.dtype:
            out = Cast.apply(out, d)  # an integer result records no node (no gradient)
    if copy and out is x:
        out = clone(x)
    return out


def _cast_method(dtype, name, public=True):
    """``x.float()`` and its function ``gradlab.float(x)``: ``x.to(float32)`` (``public=False``: the method only)."""
    def f(input):
        return to(input, dtype)
    f.__name__ = name
    f.__doc__ = f"``x.to({_dt.dtype_name(dtype)})``"
    return export(name, method=True)(f) if public else f


float = _cast_method(_dt.float32, "float")  # noqa: A001 - Tensor.float() etc.
double = _cast_method(_dt.float64, "double")
half = _cast_method(_dt.float16, "half")
bfloat16 = _cast_method(_dt.bfloat16, "bfloat16")
long = _cast_method(_dt.int64, "long")
int = _cast_method(_dt.int32, "int")  # noqa: A001
bool = _cast_method(_dt.bool_, "bool")  # noqa: A001
# Tensor methods only (gradlab.short is the dtype, as torch.short): x.byte(), x.short(), x.char()
_METHOD_ONLY_CASTS = {"byte": _cast_method(_dt.uint8, "byte", False), "short": _cast_method(_dt.int16, "short", False),
                      "char": _cast_method(_dt.int8, "char", False)}


@export(method=True)
def type_as(input, other):
    """``input`` converted to ``other``'s dtype."""
    return to(input, check_tensor(other, "type_as", "other").dtype)


@export(method=True)
def cpu(input):
    return to(input, "cpu")


@export(method=True)
def cuda(input, device=None, non_blocking=False):
    return to(input, device or "cuda")


class Clone(Op):
    name = "clone"
    formula = "dX = dY"

    @staticmethod
    def forward(ctx, x):
        return x._data.copy()  # on x's device

    def vjp(self, g):
        return (g,)

    vjp_arrays = vjp  # (g,) on an array too: one rule

    def jvp(self, t):
        return t


@register(op=Clone, method=True, samples=lambda src: [Sample((src.tensor(src.shape(0, 3, 0, 3)),))], torch=lambda torch, x: x.clone())
def clone(input):
    """A copy with its own memory that stays in the graph (unlike ``detach``)."""
    return Clone.apply(check_tensor(input, "clone"))
