"""``layer_norm``: normalize over the last dims, then scale and shift.

For each sample, over the trailing ``normalized_shape`` dims::

    y = (x - mean) / sqrt(var + eps) * weight + bias      (var is the biased variance)

It is composed of gradlab ops (mean, subtract, multiply, sqrt, divide), so
``show_graph`` shows every step and the gradient (and its gradient) come from
those ops' rules. ``eps`` keeps the division finite for a constant row.
"""
from __future__ import annotations

from .. import ops as O
from ..amp.state import autocast_args as _autocast_args, state as _amp  # autocast policy (gradlab.amp)
from ..backend import dtypes as _dt
from ..errors import DTypeError, ShapeError, fmt_shape
from ..ops._util import check_tensor
from ..ops.registry import Sample, register

NS = "gradlab.nn.functional"


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize ``input`` over its last ``len(normalized_shape)`` dims (which must equal ``normalized_shape``)."""
    if _amp.enabled:
        input, weight, bias = _autocast_args("layer_norm", input, weight, bias)
    x = check_tensor(input, "layer_norm")
    if not _dt.is_floating(x.dtype):
        raise DTypeError(f"layer_norm: input has dtype {_dt.dtype_name(x.dtype)}; it needs a floating tensor")
    ns = (int(normalized_shape),) if isinstance(normalized_shape, int) else tuple(int(s) for s in normalized_shape)
    k = len(ns)
    if k == 0 or x.ndim < k or tuple(x.shape[x.ndim - k:]) != ns:
        raise ShapeError(
            f"layer_norm: normalized_shape {fmt_shape(ns)} must match the last {k} dim(s) of input "
            f"{fmt_shape(x.shape)}" + (f", which are {fmt_shape(x.shape[x.ndim - k:])}" if x.ndim >= k else "")
            + "; e.g. for input (N, T, D) use normalized_shape=(D,)")
    for arg, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(check_tensor(t, "layer_norm", arg).shape) != ns:
            raise ShapeError(f"layer_norm: {arg} has shape {fmt_shape(t.shape)} but normalized_shape is "
                             f"{fmt_shape(ns)}; they must be equal")
    dims = tuple(range(-k, 0))
    mu = O.mean(x, dim=dims, keepdim=True)
    xc = x - mu
    var = O.mean(xc * xc, dim=dims, keepdim=True)
    y = xc / O.sqrt(var + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def _ln_samples(src):
    lead = src.shape(0, 2, 1, 3)
    ns = src.shape(1, 2, 2, 4)
    yield Sample((src.tensor(lead + ns), ns, src.tensor(ns), src.tensor(ns)), desc="weight and bias")
    d = src.integers(2, 5)
    yield Sample((src.tensor((2, d)), [d]), dict(eps=1e-3), desc="no affine")
    yield Sample((src.tensor((3, d)), (d,), src.tensor((d,))), desc="weight only")


register("layer_norm", samples=_ln_samples, namespace=NS,
         formula="dX = (dXhat - mean(dXhat) - Xhat * mean(dXhat * Xhat)) / sqrt(var + eps)   (dXhat = dY * weight)",
         torch=lambda torch, *a, **k: torch.nn.functional.layer_norm(*a, **k))(layer_norm)
