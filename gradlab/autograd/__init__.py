"""Layer 3: autograd -- graph nodes, the reverse-mode engine, grad modes, gradcheck,
forward mode (``forward_ad``), saved-tensor hooks and the saved-bytes report (``graph``),
in-place safety (``inplace``; what an index means for ``x[i]`` and ``x[i] = v``: ``indices``),
anomaly detection, backward-rule overrides, and which notebook cell made each node
(``cell_origin``, for the inspectors' "created at")."""
from .. import _tensor as _tensor_mod
from . import engine, function, grad_mode, hooks, inplace
from . import anomaly, forward_ad, functional, graph, overrides
from .anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .overrides import override_vjp, register_vjp
from .engine import backward, grad
from .function import AccumulateGrad, Function, Op, SavedTensor
from .once import once_differentiable
from .gradcheck import gradcheck, gradgradcheck
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled

_tensor_mod._autograd = engine
_tensor_mod._grad_state = grad_mode.state  # (Tensor._make marks tensors made in inference mode)
inplace.install()  # x.zero_(), x += y, x[i] = v ... (see inplace.py; an op's own x.exp_() comes from its registry entry)
hooks.install()  # x.register_hook(f), x.retain_grad() ... (see hooks.py)

__all__ = [
    "AccumulateGrad", "Function", "Op", "SavedTensor", "once_differentiable", "backward", "grad", "gradcheck", "gradgradcheck",
    "enable_grad", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "no_grad", "set_grad_enabled",
    "forward_ad", "functional", "graph", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "register_vjp",
    "override_vjp",
]
