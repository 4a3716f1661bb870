"""``Identity``, ``Linear`` (``y = x W^T + b``), ``Bilinear`` (``y = x1^T W x2 + b``) and ``LoRALinear``
(a frozen ``Linear`` plus a trainable low-rank update).
"""
from __future__ import annotations

import math

from ... import checks as _c
from ...errors import ArgumentError
from .. import functional as F, init
from ..module import Module
from ._layer_helpers import new_param, reset_weight_and_bias


class Identity(Module):
    """Returns its input unchanged (a placeholder, e.g. to switch a layer off)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x @ weight.T + bias`` with ``weight`` of shape ``(out_features, in_features)``.

    Default init (PyTorch's): ``kaiming_uniform_(weight, a=sqrt(5))``, which
    amounts to ``U(-1/sqrt(in), 1/sqrt(in))``, and the same bound for ``bias``.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.in_features = _c.size(in_features, "Linear", "in_features")
        self.out_features = _c.size(out_features, "Linear", "out_features")
        self.weight = new_param(self.out_features, self.in_features, dtype=dtype, device=device)
        if bias:
            self.bias = new_param(self.out_features, dtype=dtype, device=device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        reset_weight_and_bias(self.weight, self.bias)  # (shared with the convolutions: _layer_helpers.py)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """``y[o] = x1 @ weight[o] @ x2 + bias[o]``: a learned interaction between two inputs.

    ``weight`` ``(out_features, in1_features, in2_features)``; init ``U(-1/sqrt(in1), 1/sqrt(in1))`` for both.
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = new_param(out_features, in1_features, in2_features, dtype=dtype, device=device)
        if bias:
            self.bias = new_param(out_features, dtype=dtype, device=device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LoRALinear(Module):
    """A frozen ``Linear`` plus a trainable low-rank update (LoRA)::

        y = base(x) + (alpha / r) * x @ A.T @ B.T      A: (r, in), B: (out, r)

    Only ``A`` and ``B`` are trained: ``r * (in + out)`` numbers instead of
    ``in * out``, and the optimizer keeps state for those alone, which is the
    memory lesson. ``B`` starts at zero, so at first the layer equals ``base``.

    ``LoRALinear(linear, r=4, alpha=8)`` wraps an existing layer;
    ``LoRALinear(in_features, out_features, r=...)`` builds a fresh base.
    """

    def __init__(self, base_or_in, out_features=None, r: int = 4, alpha: float = 8.0, dropout: float = 0.0,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        if isinstance(base_or_in, Linear):
            base = base_or_in
        else:
            if out_features is None:
                raise ArgumentError("LoRALinear: pass a Linear to wrap, or in_features and out_features")
            base = Linear(base_or_in, out_features, bias=bias, device=device, dtype=dtype)
        if r <= 0:
            raise ArgumentError(f"LoRALinear: rank r must be positive, got {r}")
        self.base = base
        base.requires_grad_(False)
        self.r, self.alpha = int(r), float(alpha)
        self.scaling = self.alpha / self.r
        self.in_features, self.out_features = base.in_features, base.out_features
        self.lora_A = new_param(self.r, self.in_features, dtype=base.weight.dtype)
        self.lora_B = new_param(self.out_features, self.r, dtype=base.weight.dtype)
        self.lora_dropout = float(dropout)
        self.reset_lora_parameters()

    def reset_lora_parameters(self):
        init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        init.zeros_(self.lora_B)

    def forward(self, input):
        h = input
        if self.lora_dropout > 0:
            h = F.dropout(h, self.lora_dropout, self.training)
        delta = F.linear(F.linear(h, self.lora_A), self.lora_B)
        return self.base(input) + delta * self.scaling

    def merged_weight(self):
        """``W + (alpha/r) B A``: the single matrix this layer is equivalent to."""
        return self.base.weight.detach() + (self.lora_B.detach() @ self.lora_A.detach()) * self.scaling

    def merge(self) -> Linear:
        """A plain ``Linear`` with the update folded in (for inference)."""
        out = Linear(self.in_features, self.out_features, bias=self.base.bias is not None,
                     dtype=self.base.weight.dtype)
        out.weight._data[...] = self.merged_weight()._data
        if self.base.bias is not None:
            out.bias._data[...] = self.base.bias._data
        return out

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, r={self.r}, alpha={self.alpha}"


# the rest of torch.nn.modules.linear's names (kept in coverage.modules.lazy_layers), found on first use
from ._layer_helpers import rest_from as _rest_from  # noqa: E402

__getattr__ = _rest_from(__name__, "gradlab.nn.coverage.modules.lazy_layers")
