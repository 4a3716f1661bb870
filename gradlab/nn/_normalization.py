"""Normalization functions of ``F``: ``layer_norm``, ``batch_norm``, ``instance_norm``, ``group_norm``,
``rms_norm`` and ``normalize`` (unit vectors), with their shared steps (``_standardize``,
``_channel_args``, ``_affine``, ``_update_running``).

``layer_norm`` normalizes over the last dims, then scales and shifts.

For each sample, over the trailing ``normalized_shape`` dims (``N`` values)::

    xhat = (x - mean) * rstd,   rstd = 1 / sqrt(var + eps)     (var is the biased variance)
    y    = xhat * weight + bias

``layer_norm`` is ONE op (``LayerNorm`` in ``gradlab/ops/layer_batch_norm.py``, one node in ``show_graph``), not the
eight small ops (mean, subtract, square, mean, add, sqrt, divide, multiply...)
the formula reads as. A transformer calls it twice per block on its whole
residual stream, and each small op would be a node, a Python dispatch and a fresh
full-size array. Fused, the forward makes one array (``y``) and keeps, as
PyTorch does, only the input and two numbers per row (``mean``, ``rstd``);
the backward rebuilds ``xhat`` from them and uses the classic closed form::

    dxhat = dy * weight
    dx    = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
    dw    = sum(dy * xhat over the leading dims),   db = sum(dy over the leading dims)

(the two means are why a single ``x`` moves every output of its row). That
backward is written twice: with gradlab ops in ``vjp`` (so second derivatives
work) and on arrays in ``vjp_arrays`` (the engine's fast path). The other norms
here are still composed of ops (``_standardize``): read them to see the steps.
``eps`` keeps the division finite for a constant row.

``batch_norm`` uses the batch's own statistics in training mode, and moves the running mean and
variance toward them (``momentum``); in eval mode it uses the running statistics. Training mode on
float32/float64 is one op too (``BatchNorm``), as PyTorch records it; 16-bit dtypes, mixed dtypes
and autocast keep the step-by-step form (``_standardize``), which shows every small op.
"""
from __future__ import annotations

import numpy as np

from .. import checks as _c, ops as O
from ..amp.state import state as _amp  # is autocast on (gradlab.amp)
from ..autograd.grad_mode import no_grad
from ..backend import dtypes as _dt
from ..backend.fperr import quiet as _fp_quiet
from ..errors import ArgumentError, ArgumentTypeError, DTypeError, IndexOutOfRange, ShapeError, fmt_shape
from ..ops._util import check_tensor
from ..ops.layer_batch_norm import BatchNorm, LayerNorm
from ..ops.registry import Sample, register
from ._register import NS, register_table


def _standardize(x, dims, eps, with_stats=False):
    """``(x - mean) / sqrt(var + eps)`` over ``dims`` (biased variance), as gradlab ops.

    ``with_stats=True`` also returns ``mean`` and ``var`` (kept dims), for the running statistics.
    """
    mu = O.mean(x, dim=dims, keepdim=True)
    xc = x - mu
    var = O.mean(xc * xc, dim=dims, keepdim=True)
    y = xc / O.sqrt(var + eps)
    return (y, mu, var) if with_stats else y


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize ``input`` over its last ``len(normalized_shape)`` dims (which must equal ``normalized_shape``)."""
    x = check_tensor(input, "layer_norm")
    if not _dt.is_floating(x.dtype):
        raise DTypeError(f"layer_norm: input has dtype {_dt.dtype_name(x.dtype)}; it needs a floating tensor")
    eps = _c.arguments("layer_norm", eps=(eps, "number"))
    if not isinstance(normalized_shape, (tuple, list)):  # (as PyTorch's F.layer_norm; nn.LayerNorm(3) takes an int)
        raise ArgumentTypeError(f"layer_norm: normalized_shape must be a tuple of ints, got {type(normalized_shape).__name__}"
                                f" {normalized_shape!r}; write ({normalized_shape!r},) for the last dim")
    ns = _c.shape(normalized_shape, "layer_norm", "normalized_shape")
    k = len(ns)
    if k == 0 or x.ndim < k or tuple(x.shape[x.ndim - k:]) != ns:
        raise ShapeError(
            f"layer_norm: normalized_shape {fmt_shape(ns)} must match the last {k} dim(s) of input "
            f"{fmt_shape(x.shape)}" + (f", which are {fmt_shape(x.shape[x.ndim - k:])}" if x.ndim >= k else "")
            + "; e.g. for input (N, T, D) use normalized_shape=(D,)")
    affine = []
    for arg, t in (("weight", weight), ("bias", bias)):
        if t is not None:
            t = _c.param_dtype(check_tensor(t, "layer_norm", arg), x, "layer_norm", arg)
            if tuple(t.shape) != ns:
                raise ShapeError(f"layer_norm: {arg} has shape {fmt_shape(t.shape)} but normalized_shape is "
                                 f"{fmt_shape(ns)}; they must be equal")
        affine.append(t)
    return LayerNorm.apply(x, affine[0], affine[1], k, float(eps))


# ------------------------------------------------------ batch / instance / group
def _channel_args(op, input, weight, bias):
    x = check_tensor(input, op)
    if not _dt.is_floating(x.dtype):
        raise DTypeError(f"{op}: input has dtype {_dt.dtype_name(x.dtype)}; it needs a floating tensor")
    if x.ndim < 2:
        raise ShapeError(f"{op}: input must be (N, C, ...) with at least 2 dims, got {fmt_shape(x.shape)}")
    c = x.shape[1]
    for arg, t in (("weight", weight), ("bias", bias)):
        _c.param_dtype(t, x, op, arg)  # as PyTorch: "expected scalar type Double but found Float"
        if t is not None and tuple(check_tensor(t, op, arg).shape) != (c,):
            raise ShapeError(f"{op}: {arg} has shape {fmt_shape(t.shape)}; it needs one value per channel: "
                             f"({c},) for input {fmt_shape(x.shape)}")
    return x, (1, c) + (1,) * (x.ndim - 2)


def _affine(y, weight, bias, shape):
    if weight is not None:
        y = y * O.reshape(weight, shape)
    if bias is not None:
        y = y + O.reshape(bias, shape)
    return y


def _update_running(op, momentum, *pairs):
    """``running = (1 - momentum) * running + momentum * value`` for each ``(running, value)`` pair (a
    ``None`` running statistic is skipped), in place and outside the graph. Both statistics in one call:
    the checks first (so a bad one changes neither), then one ``no_grad``/quiet block, and the update
    written in place on the array (the same operations in the same order, so the same bits; for the
    WaveNet's small layers the fixed cost of each call was most of a running update)."""
    todo = [(check_tensor(r, op, "running stats"), v) for r, v in pairs if r is not None]
    for r, value in todo:
        if r.numel() != value.size:
            raise ShapeError(f"{op}: a running statistic has shape {fmt_shape(r.shape)}, but the input has "
                             f"{value.size} channels (dim 1); make running_mean and running_var of shape "
                             f"({value.size},)")
    with no_grad(), _fp_quiet():  # (raw arrays, outside any op: inf/nan quietly, as the ops)
        for r, value in todo:
            d = r._data
            d *= 1 - momentum
            d += momentum * value.reshape(r.shape).astype(r.dtype)
            r._version.value += 1


def _fused_batch_norm_ok(x, weight, bias):
    """The one-op form needs float32/float64 throughout (other dtypes keep the step-by-step form)."""
    dt = x.dtype
    return (dt.itemsize >= 4 and dt.kind == "f" and not _amp.enabled
            and all(t is None or t.dtype == dt for t in (weight, bias)))


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalize each channel (dim 1) over the batch and every other dim.

    ``training=True`` uses this batch's mean and (biased) variance and updates ``running_mean`` /
    ``running_var`` in place (the variance there is unbiased, as PyTorch); ``training=False``
    uses the running statistics instead.
    """
    op = "batch_norm"
    x, shape = _channel_args(op, input, weight, bias)
    momentum, eps, training = _c.arguments(op, momentum=(momentum, "number"), eps=(eps, "nonnegative"),
                                           training=(training, "flag"))
    if training and not eps > 0:  # PyTorch: "batch_norm eps must be positive during training"
        raise ArgumentError(f"{op}: eps must be > 0 when training, got {eps!r} (it keeps the division by "
                            f"sqrt(var + eps) finite for a constant channel)")
    for arg, t in (("running_mean", running_mean), ("running_var", running_var)):
        _c.param_dtype(t, x, op, arg)
    dims = (0,) + tuple(range(2, x.ndim))
    n = x.numel() // max(x.shape[1], 1)
    if training:
        if n == 0:  # an empty batch: an empty result, the running statistics untouched (as PyTorch)
            return _affine(x * 0.0, weight, bias, shape)
        if n == 1:
            raise ShapeError(f"{op}: expected more than 1 value per channel when training, got input "
                             f"{fmt_shape(x.shape)}; use a batch of at least 2 (or training=False)")
        if _fused_batch_norm_ok(x, weight, bias):
            stats = []
            y = BatchNorm.apply(x, weight, bias, dims, eps, stats)
            if running_mean is not None or running_var is not None:
                # the forward's mean and (biased) var, as a.mean(dims) and a.var(dims) up to rounding:
                # reuse them instead of two more passes over the batch
                m, v = stats[-1][0].reshape(-1), stats[-1][1].reshape(-1)
                _update_running(op, momentum, (running_mean, m), (running_var, v * n / (n - 1)))
            return y
        y = _standardize(x, dims, eps)
        if running_mean is not None or running_var is not None:
            a = x._data
            with _fp_quiet():
                m, v = a.mean(axis=dims), a.var(axis=dims) * n / (n - 1)
            _update_running(op, momentum, (running_mean, m), (running_var, v))
    else:
        if running_mean is None or running_var is None:
            raise ArgumentError(f"{op}: training=False needs running_mean and running_var (the statistics "
                                "gathered in training); pass them, or training=True to use the batch's own")
        rm, rv = check_tensor(running_mean, op, "running_mean"), check_tensor(running_var, op, "running_var")
        y = (x - O.reshape(rm, shape)) / O.sqrt(O.reshape(rv, shape) + eps)
    return _affine(y, weight, bias, shape)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalize each (sample, channel) over its own spatial dims (dims 2, 3, ...)."""
    op = "instance_norm"
    x, shape = _channel_args(op, input, weight, bias)
    momentum, eps = _c.arguments(op, momentum=(momentum, "number"), eps=(eps, "number"),
                                 running_mean=(running_mean, "tensor?"), running_var=(running_var, "tensor?"))[:2]
    dims = tuple(range(2, x.ndim))
    if x.shape[0] == 0 and (weight is not None or bias is not None):
        raise IndexOutOfRange(  # (PyTorch repeats weight and bias once per sample, then indexes the empty result)
            f"{op}: the batch is empty (input {fmt_shape(x.shape)}) and a weight or bias was given; PyTorch refuses "
            "this (an IndexError), so gradlab does too. Skip empty batches (if x.shape[0]: ...)")
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ArgumentError(f"{op}: use_input_stats=False needs running_mean and running_var")
        y = (x - O.reshape(running_mean, shape)) / O.sqrt(O.reshape(running_var, shape) + eps)
        return _affine(y, weight, bias, shape)
    n = max(int(np.prod(x.shape[2:])), 1)
    if n <= 1:
        raise ShapeError(f"{op}: expected more than 1 spatial element per channel, got input {fmt_shape(x.shape)}")
    y = _standardize(x, dims, eps)
    if running_mean is not None or running_var is not None:
        a = x._data
        with _fp_quiet():
            m, v = a.mean(axis=dims).mean(axis=0), (a.var(axis=dims) * n / (n - 1)).mean(axis=0)
        _update_running(op, momentum, (running_mean, m), (running_var, v))
    return _affine(y, weight, bias, shape)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Split the channels into ``num_groups`` groups; normalize each (sample, group) over its channels and
    spatial dims, then apply a per-channel ``weight`` and ``bias``."""
    op = "group_norm"
    x, shape = _channel_args(op, input, weight, bias)
    num_groups, eps = _c.arguments(op, num_groups=(num_groups, "int"), eps=(eps, "number"))
    c = x.shape[1]
    if num_groups < 1 or c % num_groups:
        raise ShapeError(f"{op}: num_groups={num_groups} must divide the {c} channels of input {fmt_shape(x.shape)}")
    g = O.reshape(x, (x.shape[0], num_groups, c // num_groups * int(np.prod(x.shape[2:]))))  # (no -1: the batch may be empty)
    y = O.reshape(_standardize(g, (2,), eps), x.shape)
    return _affine(y, weight, bias, shape)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the last dims (no centering, no bias); eps defaults to the
    dtype's machine epsilon, as PyTorch."""
    x = _c.floating(check_tensor(input, "rms_norm"), "rms_norm")
    eps = _c.arguments("rms_norm", weight=(weight, "tensor?"), eps=(eps, "number?"))[1]
    ns = _c.shape(normalized_shape, "rms_norm", "normalized_shape")
    k = len(ns)
    if k == 0 or x.ndim < k or tuple(x.shape[x.ndim - k:]) != ns:
        raise ShapeError(f"rms_norm: normalized_shape {fmt_shape(ns)} must match the last {k} dim(s) of input "
                         f"{fmt_shape(x.shape)}")
    if eps is None:
        eps = float(np.finfo(np.float32 if x.dtype.itemsize < 4 else x.dtype).eps)
    xc = O.to(x, _dt.float32) if x.dtype.itemsize < 4 else x  # 16-bit floats: squares in float32, as PyTorch
    y = xc / O.sqrt(O.mean(xc * xc, dim=tuple(range(-k, 0)), keepdim=True) + eps)
    y = y * weight if weight is not None else y
    return O.to(y, x.dtype) if xc is not x else y


# ---------------------------------------------------------- vector normalization
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``x / max(||x||_p, eps)`` along ``dim``: unit vectors (a zero vector stays zero)."""
    x = check_tensor(input, "normalize")
    _c.arguments("normalize", eps=(eps, "number"))  # (a bad p is refused by norm, a RuntimeError as PyTorch)
    return x / O.clamp(O.norm(x, p, dim=dim, keepdim=True), min=eps)


def _ln_samples(src):
    lead = src.shape(0, 2, 1, 3)
    ns = src.shape(1, 2, 2, 4)
    yield Sample((src.tensor(lead + ns), ns, src.tensor(ns), src.tensor(ns)), desc="weight and bias")
    d = src.integers(2, 5)
    yield Sample((src.tensor((2, d)), [d]), dict(eps=1e-3), desc="no affine")
    yield Sample((src.tensor((3, d)), (d,), src.tensor((d,))), desc="weight only")


layer_norm = register("layer_norm", samples=_ln_samples, namespace=NS, op=LayerNorm, autocast="float32",
                      torch=lambda torch, *a, **k: torch.nn.functional.layer_norm(*a, **k))(layer_norm)


def _bn_samples(src):
    n, c = src.integers(2, 3), src.integers(1, 3)
    spatial = src.shape(0, 2, 1, 3)
    shape = (n, c) + spatial
    rm, rv = src.tensor((c,), requires_grad=False), src.tensor((c,), 0.5, 2, requires_grad=False)
    yield Sample((src.tensor(shape), rm, rv, src.tensor((c,)), src.tensor((c,))), dict(training=True),
                 desc="training: batch statistics (running stats updated)")
    yield Sample((src.tensor(shape), rm, rv, src.tensor((c,))), dict(training=False, eps=1e-3),
                 desc="eval: running statistics")
    yield Sample((src.tensor((3, 2)), None, None), dict(training=True), desc="(N, C), no running stats")


register("batch_norm", samples=_bn_samples, namespace=NS,
         formula="dX = (dXhat - mean(dXhat) - Xhat * mean(dXhat * Xhat)) / sqrt(var + eps)   "
                 "(means over N and space, per channel; dXhat = dY * weight)",
         torch=lambda torch, *a, **k: torch.nn.functional.batch_norm(*a, **k))(batch_norm)


def _in_samples(src):
    shape = (src.integers(1, 2), src.integers(1, 3)) + src.shape(1, 2, 2, 3)
    yield Sample((src.tensor(shape),), dict(weight=src.tensor(shape[1:2]), bias=src.tensor(shape[1:2])))


def _gn_samples(src):
    g = src.integers(1, 2)
    c = g * src.integers(1, 2)
    shape = (src.integers(1, 2), c) + src.shape(1, 2, 1, 3)
    if int(np.prod(shape[1:])) // g < 2:
        shape = shape + (2,)
    yield Sample((src.tensor(shape), g, src.tensor((c,)), src.tensor((c,))))


def _rms_samples(src):
    ns = src.shape(1, 2, 1, 4)
    yield Sample((src.tensor(src.shape(0, 2, 1, 3) + ns), ns, src.tensor(ns)), desc="weight, default eps")
    yield Sample((src.tensor((2, 3)), [3]), dict(eps=1e-3), desc="no weight")


def _vec_samples(kind):
    def samples(src):
        shape = src.shape(1, 3, 1, 4)
        d = src.dim(len(shape))
        x = src.tensor(shape, 0.3, 2)  # away from zero vectors (the norm's kink)
        if kind == "normalize":
            yield Sample((x,), dict(p=src.choice([1.0, 2.0, 3.0]), dim=d))
        elif kind == "cosine":
            yield Sample((x, src.tensor(shape, -2, 2)), dict(dim=d))
        else:
            yield Sample((x, src.tensor(shape, -2, 2)), dict(p=src.choice([1.0, 2.0]), keepdim=src.boolean()))
    return samples


register_table([
    (instance_norm, _in_samples, "dX = layer-norm rule over each (n, c)'s spatial dims"),
    (group_norm, _gn_samples, "dX = layer-norm rule over each (n, group)'s channels and spatial dims"),
    (rms_norm, _rms_samples, "dX = (dZ - Xn * mean(dZ * Xn)) / rms   (Xn = X / rms, dZ = dY * weight)"),
    (normalize, _vec_samples("normalize"), "dX = (dY - U * sum(U^(p-1) * sign * dY)) / ||X||   (U = X / ||X||, p=2)"),
])
