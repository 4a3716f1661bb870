"""``gradlab.nn.utils``: gradient clipping (``clip_grad_norm_``, ``clip_grad_value_``), parameters as one
vector (``parameters_to_vector``, ``vector_to_parameters``), and, re-exported, ``weight_norm`` /
``spectral_norm`` (``nn/_weight_norm.py``) and ``gradlab.nn.utils.rnn`` (``nn/_rnn_utils.py``).

Clipping by norm rescales *all* gradients together when their combined L2 norm
exceeds ``max_norm``, which keeps the update's direction and bounds its size:
the usual cure for the occasional exploding step in RNNs and transformers.
"""
from __future__ import annotations

import math
import sys as _sys

from .._tensor import Tensor
from ..backend.device import xp_of
from ..errors import ArgumentError, GradError
from . import _rnn_utils as rnn
from ._weight_norm import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm  # noqa: F401


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None) -> Tensor:
    """Scale gradients in place so their total ``norm_type``-norm is at most ``max_norm``.

    Returns the total norm *before* clipping (a 0-d tensor), as PyTorch does:
    log it to watch for gradient explosions.
    """
    grads = _grads(parameters)
    try:
        max_norm, norm_type = float(max_norm), float(norm_type)
    except (TypeError, ValueError):
        raise ArgumentError(f"clip_grad_norm_: max_norm and norm_type must be numbers (norm_type may be 'inf'), "
                            f"got max_norm={max_norm!r}, norm_type={norm_type!r}") from None
    if not grads:
        from ..factories import tensor
        return tensor(0.0)
    xp = xp_of(grads[0]._data)
    if norm_type == math.inf:
        norms = [xp.abs(g._data).max() if g._data.size else xp.asarray(0.0, dtype=g.dtype) for g in grads]
        total = xp.max(xp.stack([xp.asarray(n, dtype=xp.float64) for n in norms]))
    else:
        parts = [xp.sum(xp.abs(g._data.astype(xp.float64)) ** norm_type) if norm_type != 2.0
                 else xp.vdot(g._data.ravel().astype(xp.float64), g._data.ravel().astype(xp.float64))
                 for g in grads]
        total = xp.sum(xp.stack([xp.asarray(p) for p in parts])) ** (1.0 / norm_type)
    total_f = float(total)
    if error_if_nonfinite and not math.isfinite(total_f):
        raise GradError(
            f"clip_grad_norm_: the total {norm_type}-norm of the gradients is {total_f}, so they cannot be "
            "clipped; a NaN/inf gradient means something upstream overflowed (use anomaly detection to find it), "
            "or pass error_if_nonfinite=False"
        )
    coef = max_norm / (total_f + 1e-6)
    if coef < 1.0:
        for g in grads:  # new arrays: a gradient array may be a read-only or shared view
            g._data = g._data * g._data.dtype.type(coef)
            g._version.value += 1
    return Tensor._make(xp.asarray(total, dtype=grads[0]._data.dtype))


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient element into ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    for g in _grads(parameters):
        xp = xp_of(g._data)
        g._data = xp.clip(g._data, -clip_value, clip_value)
        g._version.value += 1


def parameters_to_vector(parameters) -> Tensor:
    from .. import ops
    return ops.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters) -> None:
    i = 0
    for p in parameters:
        n = p.numel()
        p._data[...] = vec._data[i:i + n].reshape(p.shape)
        p._version.value += 1
        i += n


# ``gradlab.nn.utils.rnn`` (pad_sequence, pack_padded_sequence, ...), importable as torch.nn.utils.rnn is.
_sys.modules[__name__ + ".rnn"] = rnn
