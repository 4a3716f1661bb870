"""Parameter initialisation (``gradlab.nn.init``), with PyTorch's rules.

Why initialisation matters: with weights too large, activations and gradients
grow layer after layer; too small, they shrink to nothing. The schemes below
pick the spread from the layer's *fan* (how many inputs feed each output, or
outputs each input feeds) so that the variance stays roughly constant:

* Xavier/Glorot: ``std = gain * sqrt(2 / (fan_in + fan_out))`` (tanh/sigmoid nets);
* Kaiming/He: ``std = gain / sqrt(fan)`` with ``gain = sqrt(2)`` for ReLU.

Every function fills the tensor in place (without recording a graph), draws
from the generator that ``gradlab.manual_seed`` seeds, and returns the tensor.
"""
from __future__ import annotations

import math

import numpy as np

from .. import checks as _c
from .._tensor import Tensor
from ..backend import random as _random
from ..backend.device import xp_of
from ..errors import ArgumentError, ShapeError, fmt_shape


def _fill(tensor: Tensor, values) -> Tensor:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init: expected a Tensor, got {type(tensor).__name__}")
    xp = xp_of(tensor._data)
    tensor._data[...] = xp.asarray(np.asarray(values).astype(tensor.dtype, copy=False))
    tensor._version.value += 1
    return tensor


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1  # an int, as PyTorch returns
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ArgumentError(f"calculate_gain: negative_slope {param!r} is not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ArgumentError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}; use one of "
                        "linear, conv2d, sigmoid, tanh, relu, leaky_relu, selu")


def _calculate_fan_in_and_fan_out(tensor: Tensor):
    if tensor.ndim < 2:
        raise ShapeError(
            f"nn.init: fan in and fan out cannot be computed for a tensor of shape {fmt_shape(tensor.shape)} "
            "(fewer than 2 dimensions); use uniform_/normal_ with explicit bounds for biases"
        )
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ArgumentError(f"nn.init: mode {mode!r} not supported, use 'fan_in' or 'fan_out'")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with values drawn uniformly from ``[a, b)``."""
    g = generator or _random.generator()
    return _fill(tensor, g.uniform(a, b, size=tensor.shape))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with values drawn from ``N(mean, std^2)``."""
    if _c.number(std, "normal_", "std") < 0:  # (a RuntimeError as PyTorch's "normal expects std >= 0.0")
        raise ArgumentError(f"normal_: std must be >= 0, got {std!r}")
    g = generator or _random.generator()
    return _fill(tensor, g.normal(mean, std, size=tensor.shape))


def trunc_normal_(tensor: Tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None) -> Tensor:
    """Normal values redrawn until they fall in ``[a, b]``."""
    if _c.number(std, "trunc_normal_", "std") < 0:
        raise ArgumentError(f"trunc_normal_: std must be >= 0, got {std!r}")
    g = generator or _random.generator()
    out = g.normal(mean, std, size=tensor.shape)
    bad = (out < a) | (out > b)
    while bad.any():
        out[bad] = g.normal(mean, std, size=int(bad.sum()))
        bad = (out < a) | (out > b)
    return _fill(tensor, out)


def constant_(tensor: Tensor, val: float) -> Tensor:
    return _fill(tensor, np.full(tensor.shape, val))


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def eye_(tensor: Tensor) -> Tensor:
    if tensor.ndim != 2:
        raise ShapeError(f"eye_: only 2-D tensors are supported, got shape {fmt_shape(tensor.shape)}")
    return _fill(tensor, np.eye(*tensor.shape))


def _xavier_std(tensor, gain):
    """Glorot's spread, ``gain * sqrt(2 / (fan_in + fan_out))``: a compromise between keeping the variance of
    the activations (which wants ``1 / fan_in``) and of the gradients (``1 / fan_out``) constant."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return gain * math.sqrt(2.0 / float(fan_in + fan_out))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot uniform: ``U(-a, a)`` with ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    a = math.sqrt(3.0) * _xavier_std(tensor, gain)  # U(-a, a) has std a / sqrt(3)
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot normal: ``N(0, std^2)`` with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    return normal_(tensor, 0.0, _xavier_std(tensor, gain), generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    """He's spread, ``gain / sqrt(fan)``: it keeps the variance of the activations (``mode='fan_in'``) or of
    the gradients (``'fan_out'``) constant through a layer followed by ``nonlinearity``."""
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator=None) -> Tensor:
    """He uniform: ``U(-bound, bound)``, ``bound = gain * sqrt(3 / fan)``."""
    if 0 in tensor.shape:
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)  # U(-b, b) has std b / sqrt(3)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator=None) -> Tensor:
    """He normal: ``N(0, std^2)``, ``std = gain / sqrt(fan)``."""
    if 0 in tensor.shape:
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix from the QR decomposition of a normal matrix."""
    if tensor.ndim < 2:
        raise ShapeError("orthogonal_: only tensors with 2 or more dimensions are supported")
    g = generator or _random.generator()
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = g.normal(0.0, 1.0, size=(rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, gain * q.reshape(tensor.shape))


# PyTorch's deprecated names without the trailing underscore
uniform, normal, constant, xavier_uniform, xavier_normal, kaiming_uniform, kaiming_normal = (
    uniform_, normal_, constant_, xavier_uniform_, xavier_normal_, kaiming_uniform_, kaiming_normal_)


def _accept_arrays(fn):
    """An initialiser also fills a NumPy/CuPy array in place (``nn.init.normal_(w.numpy(), 0, 0.02)``), through a
    tensor sharing its memory. (``nn.init.normal_(m.weight.data, 0, 0.02)``, DCGAN's ``weights_init``, passes
    PyTorch's ``.data``, a Tensor: it fills the weight the same way, invisible to autograd's version checks.)"""
    import functools

    @functools.wraps(fn)
    def init(tensor, *args, **kwargs):
        if isinstance(tensor, np.ndarray) or (not isinstance(tensor, Tensor) and hasattr(tensor, "__cuda_array_interface__")):
            fn(Tensor._make(tensor), *args, **kwargs)
            return tensor
        return fn(tensor, *args, **kwargs)
    return init


for _name in ("uniform_", "normal_", "trunc_normal_", "constant_", "zeros_", "ones_", "eye_", "xavier_uniform_",
              "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "dirac_", "sparse_"):
    if _name in globals():
        globals()[_name] = _accept_arrays(globals()[_name])
del _name
