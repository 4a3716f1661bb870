"""``Module.state_dict`` / ``load_state_dict``: a model's tensors by dotted name.

A state dict holds *only tensors* (parameters and persistent buffers), keyed
by their path in the module tree (``"blocks.0.attn.in_proj_weight"``): the
model's code is not saved, so loading needs a model built the same way, and
a mismatch is reported by name and shape.
"""
from __future__ import annotations

from collections import OrderedDict, namedtuple

import numpy as np

from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..errors import ShapeError, fmt_shape

_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


def state_dict(module, destination=None, prefix: str = "", keep_vars: bool = False):
    """An ordered dict ``dotted_name -> tensor`` of parameters and persistent buffers.

    The tensors share memory with the module (detached unless ``keep_vars``).
    """
    if destination is None:
        destination = OrderedDict()
    for name, p in module._parameters.items():
        if p is not None:
            destination[prefix + name] = p if keep_vars else p.detach()
    for name, b in module._buffers.items():
        if b is not None and name not in module._non_persistent_buffers:
            destination[prefix + name] = b if keep_vars else b.detach()
    for name, m in module._modules.items():
        if m is not None:
            m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
    return destination


def load_state_dict(module, state_dict, strict: bool = True, assign: bool = False):
    """Copy values from ``state_dict`` into this module's tensors (in place).

    With ``strict=True`` every key must match; the error lists the missing
    and unexpected keys and any shape differences. Returns
    ``(missing_keys, unexpected_keys)``.
    """
    own = module.state_dict(keep_vars=True)
    missing = [k for k in own if k not in state_dict]
    unexpected = [k for k in state_dict if k not in own]
    mismatched = []
    for k, t in own.items():
        if k in state_dict:
            v = state_dict[k]
            shape = tuple(v.shape) if hasattr(v, "shape") else ()
            if shape != tuple(t.shape):
                mismatched.append(f"'{k}': checkpoint has shape {fmt_shape(shape)}, "
                                  f"the model has {fmt_shape(t.shape)}")
    problems = []
    if strict and missing:
        problems.append("missing keys (in the model, not in the state_dict): " + ", ".join(f"'{k}'" for k in missing))
    if strict and unexpected:
        problems.append("unexpected keys (in the state_dict, not in the model): "
                        + ", ".join(f"'{k}'" for k in unexpected))
    if mismatched:
        problems.append("shape mismatch: " + "; ".join(mismatched))
    if problems:
        raise ShapeError(
            f"load_state_dict for {type(module).__name__}: " + ". ".join(problems)
            + ". Check that the model is built with the same sizes as the one saved"
            + ("" if not (missing or unexpected) or not strict else ", or pass strict=False to load the matching keys only")
        )
    with no_grad():
        for k, t in own.items():
            if k not in state_dict:
                continue
            v = state_dict[k]
            arr = v._data if isinstance(v, Tensor) else v
            if assign:
                t._data = arr
            else:
                xp_arr = _as_array_like(arr, t._data)
                t._data[...] = xp_arr
            t._version.value += 1
    return _IncompatibleKeys(missing, unexpected)


def _as_array_like(arr, target):
    """``arr`` as an array on ``target``'s device and dtype."""
    from ..backend.device import device_of_array, to_device_array
    if not hasattr(arr, "shape"):
        arr = np.asarray(arr)
    arr = to_device_array(arr, device_of_array(target))  # an explicit copy when the devices differ
    return arr.astype(target.dtype, copy=False)
