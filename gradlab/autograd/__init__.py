"""Layer 3: autograd -- graph nodes, the reverse-mode engine, grad modes, gradcheck."""
from .. import _tensor as _tensor_mod
from . import engine, function, grad_mode
from .engine import backward, grad
from .function import AccumulateGrad, Function, Op, SavedTensor
from .gradcheck import gradcheck, gradgradcheck
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled

_tensor_mod._autograd = engine

__all__ = [
    "AccumulateGrad", "Function", "Op", "SavedTensor", "backward", "grad", "gradcheck", "gradgradcheck",
    "enable_grad", "inference_mode", "is_grad_enabled", "no_grad", "set_grad_enabled",
]
