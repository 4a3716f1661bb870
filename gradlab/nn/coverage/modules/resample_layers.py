"""Resampling layers: ``Upsample``, ``UpsamplingNearest2d``, ``UpsamplingBilinear2d`` (``F.interpolate``),
``PixelShuffle``, ``PixelUnshuffle`` and ``ChannelShuffle``.
"""
from __future__ import annotations

from .... import checks as _c
from ....errors import ArgumentError
from ... import functional as F
from ...module import Module


class Upsample(Module):
    """Resize ``(N, C, L)`` or ``(N, C, H, W)`` to ``size`` or by ``scale_factor`` (``F.interpolate``)."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        if (size is None) == (scale_factor is None):
            raise ArgumentError("Upsample: give exactly one of size and scale_factor")
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, (tuple, list)):
            self.scale_factor = tuple(float(_c.positive(f, "Upsample", "scale_factor")) for f in scale_factor)
        else:
            self.scale_factor = float(_c.positive(scale_factor, "Upsample", "scale_factor")) \
                if scale_factor is not None else None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """``Upsample(mode='nearest')`` for images."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample(mode='bilinear', align_corners=True)`` for images."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """``(N, C*r*r, H, W) -> (N, C, H*r, W*r)``: move channels into space (sub-pixel upsampling)."""

    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """``(N, C, H*r, W*r) -> (N, C*r*r, H, W)``: the inverse of ``PixelShuffle``."""

    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Interleave the channels of ``groups`` groups, so grouped convolutions exchange information (ShuffleNet)."""

    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
