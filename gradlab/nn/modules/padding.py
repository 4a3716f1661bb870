"""Padding layers: ``ConstantPad1d/2d/3d``, ``ZeroPad1d/2d/3d``, ``ReflectionPad1d/2d/3d``,
``ReplicationPad1d/2d/3d`` and ``CircularPad1d/2d/3d``, each ``F.pad`` with a fixed mode.

``_PadNd`` holds the logic (``_n`` padded dims, ``_mode``); ``_pad_class`` makes the fifteen
named classes from it, so each is one line.
"""
from __future__ import annotations

from ...checks import sizes as ntuple
from ...errors import ShapeError, fmt_shape
from ...ops._util import check_tensor
from .. import functional as F
from ..module import Module


class _PadNd(Module):
    _n, _mode = 1, "constant"

    def __init__(self, padding, value=0.0):
        super().__init__()
        k = 2 * self._n
        self.padding = ntuple(padding, k, type(self).__name__, "padding")
        if self._mode == "constant":
            self.value = value

    def forward(self, input):
        input = check_tensor(input, type(self).__name__)
        if input.ndim not in (self._n + 1, self._n + 2):
            raise ShapeError(f"{type(self).__name__}: expected a {self._n + 1}-D or {self._n + 2}-D input, got "
                             f"{fmt_shape(input.shape)}")
        if self._mode == "constant":
            return F.pad(input, self.padding, mode="constant", value=self.value)
        return F.pad(input, self.padding, mode=self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPad(_PadNd):
    def __init__(self, padding, value: float):
        super().__init__(padding, value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class _ZeroPad(_PadNd):
    """``ConstantPadNd`` with ``value=0``: each ``ZeroPadNd`` is made a subclass of its ``ConstantPadNd``, as in
    PyTorch (put before it, so this ``__init__`` and repr are the ones used)."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


def _pad_class(name, n, mode, base, doc):
    return type(name, base if isinstance(base, tuple) else (base,), {"_n": n, "_mode": mode, "__doc__": doc, "__module__": __name__})


ConstantPad1d = _pad_class("ConstantPad1d", 1, "constant", _ConstantPad, "Pad the last dim with ``value``.")
ConstantPad2d = _pad_class("ConstantPad2d", 2, "constant", _ConstantPad, "Pad the last 2 dims with ``value``.")
ZeroPad1d = _pad_class("ZeroPad1d", 1, "constant", (_ZeroPad, ConstantPad1d), "Pad the last dim with zeros.")
ZeroPad2d = _pad_class("ZeroPad2d", 2, "constant", (_ZeroPad, ConstantPad2d),
                       "Pad the last 2 dims with zeros: ``padding = (left, right, top, bottom)`` or one int.")
ReflectionPad1d = _pad_class("ReflectionPad1d", 1, "reflect", _PadNd, "Pad the last dim by mirroring (no edge repeat).")
ReflectionPad2d = _pad_class("ReflectionPad2d", 2, "reflect", _PadNd, "Pad the last 2 dims by mirroring.")
ReplicationPad1d = _pad_class("ReplicationPad1d", 1, "replicate", _PadNd, "Pad the last dim by repeating the edge.")
ReplicationPad2d = _pad_class("ReplicationPad2d", 2, "replicate", _PadNd, "Pad the last 2 dims by repeating the edge.")
CircularPad1d = _pad_class("CircularPad1d", 1, "circular", _PadNd, "Pad the last dim by wrapping around.")
CircularPad2d = _pad_class("CircularPad2d", 2, "circular", _PadNd, "Pad the last 2 dims by wrapping around.")
ConstantPad3d = _pad_class("ConstantPad3d", 3, "constant", _ConstantPad, "Pad the last 3 dims with ``value``.")
ZeroPad3d = _pad_class("ZeroPad3d", 3, "constant", (_ZeroPad, ConstantPad3d), "Pad the last 3 dims with zeros.")
ReflectionPad3d = _pad_class("ReflectionPad3d", 3, "reflect", _PadNd, "Pad the last 3 dims by mirroring.")
ReplicationPad3d = _pad_class("ReplicationPad3d", 3, "replicate", _PadNd, "Pad the last 3 dims by repeating the edge.")
CircularPad3d = _pad_class("CircularPad3d", 3, "circular", _PadNd, "Pad the last 3 dims by wrapping around.")
