"""``EmbeddingBag``, ``LocalResponseNorm``, ``ChannelShuffle``, ``RReLU`` and ``LPPool1d/2d`` (PyTorch's names)."""
from __future__ import annotations

from ...errors import ArgumentError, ShapeError, fmt_shape
from ..parameter import Parameter
from .. import functional as F
from .. import init
from ..module import Module
from ._util import new_param


class EmbeddingBag(Module):
    """An ``Embedding`` followed by a reduction (``mode`` ``'mean'``, ``'sum'`` or ``'max'``) over each bag of ids.

    ``bag(ids, offsets)`` with a 1-D ``ids`` and the start of each bag in ``offsets``, or ``bag(ids_2d)`` with one
    bag per row: the model of a bag-of-words text classifier. Init ``N(0, 1)`` (the ``padding_idx`` row 0).
    """

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                 mode="mean", sparse=False, _weight=None, include_last_offset=False, padding_idx=None, device=None,
                 dtype=None):
        super().__init__()
        if mode not in ("sum", "mean", "max"):
            raise ArgumentError(f"EmbeddingBag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        if padding_idx is not None:
            if not -self.num_embeddings <= padding_idx < self.num_embeddings:
                raise ArgumentError(f"EmbeddingBag: padding_idx {padding_idx} must be within num_embeddings "
                                    f"{self.num_embeddings}")
            padding_idx %= self.num_embeddings
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        self.mode, self.sparse, self.include_last_offset, self.padding_idx = mode, sparse, include_last_offset, \
            padding_idx
        if _weight is None:
            self.weight = new_param(self.num_embeddings, self.embedding_dim, dtype=dtype, device=device)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (self.num_embeddings, self.embedding_dim):
                raise ShapeError(f"EmbeddingBag: _weight {fmt_shape(_weight.shape)} must have shape "
                                 f"({self.num_embeddings}, {self.embedding_dim})")
            self.weight = Parameter(_weight)

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.data[self.padding_idx] = 0

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                               self.mode, self.sparse, per_sample_weights, self.include_last_offset,
                               self.padding_idx)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                        mode="mean", sparse=False, include_last_offset=False, padding_idx=None):
        """A bag over a given ``(num_embeddings, embedding_dim)`` matrix (frozen unless ``freeze=False``)."""
        if embeddings.ndim != 2:
            raise ShapeError(f"EmbeddingBag.from_pretrained: embeddings must be 2-D, got {fmt_shape(embeddings.shape)}")
        bag = cls(embeddings.shape[0], embeddings.shape[1], max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                  embeddings, include_last_offset, padding_idx)
        bag.weight.requires_grad = not freeze
        return bag

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s


class LocalResponseNorm(Module):
    """Divide each activation by ``(k + alpha * mean of the squares of `size` neighbouring channels)^beta``."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class ChannelShuffle(Module):
    """Interleave the channels of ``groups`` groups, so grouped convolutions exchange information (ShuffleNet)."""

    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


class RReLU(Module):
    """Leaky relu with a random negative slope ``U(lower, upper)`` in training, ``(lower + upper) / 2`` in eval."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class _LPPool(Module):
    _fn = None

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input):
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPool):
    """``(sum over each window of x^p)^(1/p)`` along the last dim (``norm_type`` = p)."""
    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPool):
    """``(sum over each window of x^p)^(1/p)`` over the last two dims (``norm_type`` = p)."""
    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPool):
    """``(sum over each window of x^p)^(1/p)`` over the last three dims (``norm_type`` = p)."""
    _fn = staticmethod(F.lp_pool3d)


class DataParallel(Module):
    """PyTorch's multi-GPU wrapper, here a pass-through: ``DataParallel(model)(x)`` is ``model(x)``.

    gradlab runs on one device, so nothing is split or replicated; the wrapper exists so code written
    for several GPUs runs unchanged, with PyTorch's ``module.`` prefix in the state_dict.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids, self.output_device, self.dim = device_ids, output_device, dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
