"""Activation layers (PyTorch's names, arguments and reprs), each a thin wrapper over ``F``: ``ReLU``,
``GELU``, ``Tanh``, ``Sigmoid``, ``SiLU``, ``Softmax``, ``LogSoftmax``, ``LeakyReLU``, ``ELU``, ``CELU``,
``SELU``, ``Mish``, ``ReLU6``, ``Hardswish``, ``Hardsigmoid``, ``Hardtanh``, ``Softplus``, ``LogSigmoid``,
``Softsign``, ``Tanhshrink``, ``Hardshrink``, ``Softshrink``, ``Threshold``, ``GLU``, ``Softmin``,
``Softmax2d``, ``PReLU`` and ``RReLU``.

An activation layer holds no state (except ``PReLU``'s learnable slope): it exists so a
network can be written as a ``Sequential`` of layers. ``inplace=True`` is accepted so PyTorch
code runs unchanged, but gradlab always returns a new tensor: overwriting the input in place
would destroy values that backward may still need.
"""
from __future__ import annotations

from ... import checks as _c, ops as O
from ...errors import ArgumentError, ShapeError, fmt_shape
from .. import functional as F, init
from ..module import Module
from ._layer_helpers import new_param


class _InplaceOnly(Module):
    """An activation whose only argument is ``inplace`` (accepted, and shown in the repr); ``_fn`` is the function."""
    _fn = None

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class ReLU(_InplaceOnly):
    """``max(x, 0)``: gradient 1 where the input was positive, 0 elsewhere."""
    _fn = staticmethod(O.relu)


class GELU(Module):
    """``x * Phi(x)`` (``approximate='tanh'`` for GPT-2's tanh formula)."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ArgumentError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    def forward(self, input):
        return O.tanh(input)


class Sigmoid(Module):
    def forward(self, input):
        return O.sigmoid(input)


class SiLU(Module):
    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input)


class _AlongDim(Module):
    """A normalisation along one ``dim`` (Softmax, LogSoftmax, Softmin): the same argument and repr.

    A private base, not ``Softmax`` itself: as in PyTorch, ``isinstance(nn.LogSoftmax(), nn.Softmax)``
    is False (code that finds a model's softmax layers by type must not find the others)."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_AlongDim):
    """``exp(x) / sum(exp(x))`` along ``dim``: entries that are positive and sum to 1."""

    def forward(self, input):
        return F.softmax(input, dim=self.dim)


class LogSoftmax(_AlongDim):
    """``log(softmax(x))`` along ``dim``, computed stably (what ``NLLLoss`` expects)."""

    def forward(self, input):
        return F.log_softmax(input, dim=self.dim)


def _inplace(module):
    return ", inplace=True" if module.inplace else ""


class LeakyReLU(Module):
    """``x`` for ``x > 0``, else ``negative_slope * x``: a small slope keeps "dead" units learning."""

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False):
        super().__init__()
        _c.number(negative_slope, "LeakyReLU", "negative_slope")
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}{_inplace(self)}"


class _WithAlpha(Module):
    """ELU and CELU: the same arguments (``alpha``, ``inplace``) and repr. A private base, so that, as in
    PyTorch, a CELU is not a kind of ELU (``isinstance(nn.CELU(), nn.ELU)`` is False)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        _c.number(alpha, type(self).__name__, "alpha")
        self.alpha, self.inplace = alpha, inplace

    def extra_repr(self):
        return f"alpha={self.alpha}{_inplace(self)}"


class ELU(_WithAlpha):
    """``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)``: smooth, with negative outputs down to ``-alpha``."""

    def forward(self, input):
        return F.elu(input, self.alpha)


class CELU(_WithAlpha):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``: ELU made continuously differentiable for any alpha."""

    def forward(self, input):
        return F.celu(input, self.alpha)


class SELU(_InplaceOnly):
    """``scale * elu(x, alpha)`` with fixed constants that keep activations self-normalizing."""
    _fn = staticmethod(F.selu)


class Mish(_InplaceOnly):
    """``x * tanh(softplus(x))``: a smooth, non-monotonic relu-like curve."""
    _fn = staticmethod(F.mish)


class Hardswish(_InplaceOnly):
    """``x * relu6(x + 3) / 6``: a cheap piecewise approximation of ``SiLU``."""
    _fn = staticmethod(F.hardswish)

    def extra_repr(self):
        return ""


class Hardsigmoid(_InplaceOnly):
    """``relu6(x + 3) / 6``: a cheap piecewise approximation of the sigmoid."""
    _fn = staticmethod(F.hardsigmoid)

    def extra_repr(self):
        return ""


class Hardtanh(Module):
    """``clamp(x, min_val, max_val)``: gradient 1 inside the interval, 0 outside."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False, min_value=None,
                 max_value=None):
        super().__init__()
        if min_value is not None:
            min_val = min_value
        if max_value is not None:
            max_val = max_value
        _c.number(min_val, "Hardtanh", "min_val"), _c.number(max_val, "Hardtanh", "max_val")
        if max_val <= min_val:
            raise ArgumentError(f"Hardtanh: max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace(self)}"


class ReLU6(Hardtanh):
    """``min(max(x, 0), 6)``: a relu capped at 6, used by mobile networks; a ``Hardtanh(0, 6)``, as in PyTorch."""

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def forward(self, input):
        return F.relu6(input)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``: a smooth relu (``x`` itself where ``beta * x > threshold``)."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        _c.arguments("Softplus", beta=(beta, "number"), threshold=(threshold, "number"))
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class _NoArgs(Module):
    _fn = None

    def forward(self, input):
        return type(self)._fn(input)


class LogSigmoid(_NoArgs):
    """``log(sigmoid(x)) = -softplus(-x)``, computed without overflow."""
    _fn = staticmethod(F.logsigmoid)


class Softsign(_NoArgs):
    """``x / (1 + |x|)``: like tanh, but approaching +-1 polynomially rather than exponentially."""
    _fn = staticmethod(F.softsign)


class Tanhshrink(_NoArgs):
    """``x - tanh(x)``."""
    _fn = staticmethod(F.tanhshrink)


class _Shrink(Module):
    _fn = None

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        _c.number(lambd, type(self).__name__, "lambd")
        self.lambd = lambd

    def forward(self, input):
        return type(self)._fn(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Hardshrink(_Shrink):
    """``x`` where ``|x| > lambd``, else 0."""
    _fn = staticmethod(F.hardshrink)


class Softshrink(_Shrink):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0 (the proximal step of L1)."""
    _fn = staticmethod(F.softshrink)


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        _c.arguments("Threshold", threshold=(threshold, "number"), value=(value, "number"))
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}{_inplace(self)}"


class GLU(Module):
    """Gated linear unit: split ``dim`` in halves ``a, b`` and return ``a * sigmoid(b)``."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmin(_AlongDim):
    """``softmax(-x)`` along ``dim``: the smallest entries get the most weight."""

    def forward(self, input):
        return F.softmin(input, self.dim)


class Softmax2d(Module):
    """Softmax over the channels at every pixel of a ``(N, C, H, W)`` or ``(C, H, W)`` input."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ShapeError(f"Softmax2d: expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got "
                             f"{fmt_shape(input.shape)}")
        return F.softmax(input, dim=-3)


class PReLU(Module):
    """Leaky relu whose negative slope ``weight`` is learned: one slope, or one per channel (dim 1).

    ``weight`` has shape ``(num_parameters,)``, initialised to ``init`` (0.25).
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = _c.arguments("PReLU", num_parameters=(num_parameters, "count"),
                                                      init=(init, "number"))
        self.weight = new_param(self.num_parameters, dtype=dtype, device=device)
        self.reset_parameters()

    def reset_parameters(self):
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Leaky relu with a random negative slope ``U(lower, upper)`` in training, ``(lower + upper) / 2`` in eval."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        _c.arguments("RReLU", lower=(lower, "number"), upper=(upper, "number"))
        if lower > upper:
            raise ArgumentError(f"RReLU: lower ({lower}) must be <= upper ({upper}); the slope is drawn from "
                                f"U(lower, upper)")
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}{_inplace(self)}"


# the rest of torch.nn.modules.activation's names (kept in modules.attention), found on first use
from ._layer_helpers import rest_from as _rest_from  # noqa: E402

__getattr__ = _rest_from(__name__, "gradlab.nn.modules.attention")
