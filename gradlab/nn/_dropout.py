"""Dropout functions of ``F``: ``dropout``, ``dropout1d/2d/3d`` (whole channels), ``alpha_dropout`` and
``feature_alpha_dropout`` (for SELU networks).

``dropout`` zeroes each entry with probability ``p`` and scales the survivors by ``1 / (1 - p)``, so the
expected value is unchanged and evaluation (``training=False``) needs no rescaling. The mask is drawn
from gradlab's one seeded generator: ``gradlab.manual_seed(n)`` makes it reproducible. The channel
versions draw one value per (sample, channel); the multiply is the ``Dropout`` op (``gradlab/ops/dropout.py``).
"""
from __future__ import annotations

import warnings

from .. import checks as _c
from .._tensor import Tensor
from ..backend import dtypes as _dt, generator, xp_of
from ..errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from ..ops._util import check_tensor
from ..ops.dropout import Dropout
from ..ops.registry import Sample, register
from ._register import NS, register_table


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each entry with probability ``p`` (scaling the rest by ``1/(1-p)``) when ``training``; else identity.

    ``inplace`` is accepted for PyTorch compatibility; gradlab always returns a new tensor.
    """
    x = check_tensor(input, "dropout")
    training = _c.flag(training, "dropout", "training")
    if not 0.0 <= _c.number(p, "dropout", "p") <= 1.0:
        raise ArgumentError(f"dropout: p is the probability of zeroing an entry and must be in [0, 1], got {p}")
    if not training or p == 0:
        return x
    if not _dt.is_floating(x.dtype):
        raise DTypeError(f"dropout: input has dtype {_dt.dtype_name(x.dtype)}; dropout needs a floating tensor")
    xp = xp_of(x._data)
    if p == 1:
        m = xp.zeros(x.shape, dtype=x.dtype)
    else:
        keep = generator().random(x.shape) >= p
        m = xp.asarray(keep).astype(x.dtype) * x.dtype.type(1.0 / (1.0 - p))
    return Dropout.apply(x, Tensor._make(m))


def _channel_dropout(name, input, p, training, mask_shape):
    """Zero whole channels: one draw per entry of ``mask_shape`` (1 along the spatial dims it shares)."""
    x = check_tensor(input, name)
    p, training = _c.arguments(name, p=(p, "probability"), training=(training, "flag"))
    shape = mask_shape(tuple(x.shape))
    if not training or p == 0:
        return x
    xp = xp_of(x._data)
    if p == 1:
        m = xp.zeros(shape, dtype=x.dtype)
    else:
        m = xp.asarray(generator().random(shape) >= p).astype(x.dtype) * x.dtype.type(1.0 / (1.0 - p))
    return Dropout.apply(x, Tensor._make(m))


def _feature_mask(name, shape, batch_dims=0):
    """PyTorch's feature dropout: dim 0 is the batch and dim 1 the channel, whatever follows is shared.
    ``batch_dims=1`` reads an input as unbatched (a leading batch of 1 is put in front, as dropout3d does)."""
    if len(shape) + batch_dims < 2:
        raise ShapeError(f"{name}: Feature dropout requires at least 2 dimensions in the input, got shape "
                         f"{fmt_shape(shape)}")
    full = (1,) * batch_dims + shape
    return (full[:2] + (1,) * (len(full) - 2))[batch_dims:]


def _deprecated_rank(name, ndim, spatial):
    """PyTorch 2.13's warning for a channel dropout given an input of an unexpected rank (it still runs)."""
    warnings.warn(
        f"{name}: Received a {ndim}-D input to {name}, which is deprecated and will result in an error in a "
        "future release. To retain the behavior and silence this warning, please use dropout instead. Note "
        f"that {name} exists to provide channel-wise dropout on inputs with {spatial} spatial dimensions, a "
        f"channel dimension, and an optional batch dimension (i.e. {spatial + 1}D or {spatial + 2}D inputs).",
        stacklevel=3)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero entire channels of ``(N, C, L)`` (or unbatched ``(C, L)``) with probability ``p`` (survivors scaled
    by ``1/(1-p)``)."""
    x = check_tensor(input, "dropout1d")
    if x.ndim not in (2, 3):
        raise ShapeError(f"dropout1d: Expected 2D or 3D input, but received a {x.ndim}D input (shape "
                         f"{fmt_shape(x.shape)}). Note that dropout1d exists to provide channel-wise dropout on inputs "
                         "with 1 spatial dimension, a channel dimension, and an optional batch dimension "
                         "(i.e. 2D or 3D inputs).")
    return _channel_dropout("dropout1d", x, p, training, lambda s: s[:-1] + (1,))


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero entire channels (feature maps) of ``(N, C, H, W)`` with probability ``p``.

    As PyTorch 2.13: any other rank warns and still runs as feature dropout (dim 0 the batch, dim 1 the
    channel), so a 2-D ``(N, C)`` input is dropped elementwise and a 3-D input is read as ``(N, C, L)``, with
    PyTorch's warning that this will change to ``(C, H, W)``.
    """
    x = check_tensor(input, "dropout2d")
    if x.ndim not in (3, 4):
        _deprecated_rank("dropout2d", x.ndim, 2)
    if x.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is "
            "desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior will "
            "change in a future release to interpret the input as one without a batch dimension, i.e. shape "
            "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using dropout1d "
            "instead.", stacklevel=2)
    return _channel_dropout("dropout2d", x, p, training, lambda s: _feature_mask("dropout2d", s))


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero entire channels of ``(N, C, D, H, W)`` (or unbatched ``(C, D, H, W)``) with probability ``p``.

    As PyTorch 2.13: any rank but 5 is read as unbatched (one draw per entry of dim 0); a rank other than 4
    or 5 also warns that it is deprecated.
    """
    x = check_tensor(input, "dropout3d")
    if x.ndim not in (4, 5):
        _deprecated_rank("dropout3d", x.ndim, 3)
    unbatched = 0 if x.ndim == 5 else 1
    return _channel_dropout("dropout3d", x, p, training, lambda s: _feature_mask("dropout3d", s, unbatched))


def _alpha_dropout(name, input, p, training, per_channel):
    """What ``alpha_dropout`` and ``feature_alpha_dropout`` share; they differ only in the mask's shape.

    A dropped unit is set to SELU's negative saturation value ``alpha`` (not 0: for SELU, 0 is not "no
    signal"), then ``a * x + b`` restores mean 0 and variance 1, with ``a`` and ``b`` computed from ``p``.
    ``per_channel`` draws one mask value per (sample, channel) of an ``(N, C, ...)`` input.
    """
    x = check_tensor(input, name)
    p, training = _c.arguments(name, p=(p, "probability"), training=(training, "flag"))
    if not training or p == 0:
        return x
    if p == 1:
        return x * 0.0
    alpha = -1.7580993408473766
    a = ((1 - p) * (1 + p * alpha ** 2)) ** -0.5
    b = -a * alpha * p
    shape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2) if per_channel and x.ndim >= 2 else tuple(x.shape)
    keep = Tensor._make(xp_of(x._data).asarray(generator().random(shape) >= p).astype(x.dtype))  # gradlab.manual_seed
    return (x * keep + alpha * (1 - keep)) * a + b


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: dropped units are set to SELU's negative saturation value and the result
    is scaled and shifted so inputs of mean 0, variance 1 keep them. The identity unless ``training``."""
    return _alpha_dropout("alpha_dropout", input, p, training, per_channel=False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """``alpha_dropout`` that drops whole channels (one draw per sample and channel, dim 1)."""
    return _alpha_dropout("feature_alpha_dropout", input, p, training, per_channel=True)


def _dropout_samples(src):
    shape = src.shape(0, 3, 0, 4)
    yield Sample((src.tensor(shape),), dict(p=0.5, training=False), desc="eval mode: identity")
    yield Sample((src.tensor(shape),), dict(p=0.0), desc="p=0")
    yield Sample((src.tensor(shape), 1.0), desc="p=1: all zero")


register("dropout", samples=_dropout_samples, namespace=NS, op=Dropout,
         torch=lambda torch, *a, **k: torch.nn.functional.dropout(*a, **k))(dropout)


def _channel_dropout_samples(k):
    def samples(src):
        shape = (src.integers(1, 2), src.integers(1, 3)) + (2,) * k
        yield Sample((src.tensor(shape),), dict(p=0.5, training=False), desc="eval mode: identity")
        yield Sample((src.tensor(shape), 1.0), desc="p=1: all zero")
    return samples


def _alpha_samples(src):
    yield Sample((src.tensor(src.shape(0, 3, 1, 4)),), dict(p=0.5, training=False), desc="eval mode: identity")


for _k, _fn in ((1, dropout1d), (2, dropout2d), (3, dropout3d)):
    register(_fn.__name__, samples=_channel_dropout_samples(_k), namespace=NS, op=Dropout,
             torch=(lambda name: lambda torch, *a, **kw: getattr(torch.nn.functional, name)(*a, **kw))(_fn.__name__))(_fn)
del _k, _fn
register_table([
    (alpha_dropout, _alpha_samples, "dX = a * mask * dY"),
    (feature_alpha_dropout, _alpha_samples, "dX = a * mask * dY   (one mask value per channel)"),
])
