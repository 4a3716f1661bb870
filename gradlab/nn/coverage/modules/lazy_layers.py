"""Lazy layers (``LazyLinear``, ``LazyConv2d``, ``LazyBatchNorm2d``...): the input size is read from the first batch.

``nn.LazyLinear(10)`` does not know its ``in_features`` yet, so it has no weight. Its first call
looks at the input (``in_features = x.shape[-1]``; for convolutions and norms the channel dim),
builds the parameters exactly as the ordinary layer would (same shapes, same initialisation), and
the module *becomes* that layer (``type(m)`` is ``Linear`` afterwards), as in PyTorch. Before that it
is already a kind of that layer (``isinstance(m, nn.Linear)``), also as in PyTorch.

So: run one batch through the model *before* creating the optimizer (``model(x_example)``),
or the optimizer is handed no parameters.
"""
from __future__ import annotations

from ...._tensor import Tensor
from ....backend import dtypes as _dt
from ....errors import ShapeError, fmt_shape
from ...module import Module
from ...modules.conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ...modules.linear import Linear
from ...modules.normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
)


class _LazyModule(Module):
    cls_to_become = None
    _batched_ndim = None  # the input rank with a batch dim (channels are dim 1, or dim 0 unbatched)

    _defaults = {}  # where a lazy layer's defaults differ from the real layer's (PyTorch's LazyInstanceNorm)

    def __init__(self, *args, device=None, dtype=None, **kwargs):
        Module.__init__(self)  # (not the real layer's __init__: its input size is not known yet)
        if self._defaults:
            names = ("eps", "momentum", "affine", "track_running_stats")
            kwargs = {**self._defaults, **dict(zip(names, args)), **kwargs}
            args = ()
        self._lazy_args, self._lazy_kwargs = args, kwargs
        self._lazy_device, self._lazy_dtype = device, dtype

    def has_uninitialized_params(self):
        """True until the first forward has created the parameters."""
        return True

    def _in_size(self, input):
        if self._batched_ndim is None:
            return input.shape[-1]
        if issubclass(self.cls_to_become, (BatchNorm1d, BatchNorm2d, BatchNorm3d)):  # always batched: (N, C, ...)
            if input.ndim < 2:
                raise ShapeError(f"{type(self).__name__}: expected an (N, C, ...) input, got {fmt_shape(input.shape)}")
            return input.shape[1]
        if input.ndim not in (self._batched_ndim, self._batched_ndim - 1):
            raise ShapeError(f"{type(self).__name__}: expected a {self._batched_ndim}-D (batched) or "
                             f"{self._batched_ndim - 1}-D input, got {fmt_shape(input.shape)}")
        return input.shape[1] if input.ndim == self._batched_ndim else input.shape[0]

    def initialize_parameters(self, input):
        """Build the real layer for ``input``'s size and turn this module into it."""
        if not isinstance(input, Tensor):
            raise ShapeError(f"{type(self).__name__}: the first input must be a Tensor, got {type(input).__name__}")
        device = self._lazy_device if self._lazy_device is not None else input.device
        real = self.cls_to_become(int(self._in_size(input)), *self._lazy_args, device=device,
                                  dtype=self._lazy_dtype, **self._lazy_kwargs)
        d = self.__dict__
        keep = {k: d[k] for k in ("training", "_forward_pre_hooks", "_forward_hooks")}
        d.clear()
        d.update(real.__dict__)
        d.update(keep)
        self.__class__ = self.cls_to_become
        Module._version[0] += 1

    def forward(self, input, *args, **kwargs):
        self.initialize_parameters(input)
        return self.forward(input, *args, **kwargs)

    # remember a dtype asked for before the parameters exist (they are created with it)
    def to(self, *args, dtype=None, device=None, non_blocking=False):
        for a in args:
            if isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, str) and a.split(":")[0] in ("cpu", "cuda"):
                device = a
            elif not isinstance(a, str) or a.startswith(("float", "bfloat")):
                try:
                    dtype = _dt.as_dtype(a)
                except Exception:  # a Device object
                    device = a
        if dtype is not None:
            self._lazy_dtype = dtype
        if device is not None:
            self._lazy_device = device
        return self

    def extra_repr(self):
        """The real layer's repr with the unknown input size shown as 0 (as PyTorch)."""
        try:
            probe = self.cls_to_become(self._lazy_kwargs.get("groups", 1), *self._lazy_args, **self._lazy_kwargs)
        except Exception:  # pragma: no cover - a repr must not fail
            return ""
        s = probe.extra_repr()
        if self.cls_to_become is Linear:
            return s.replace(f"in_features={probe.in_features}", "in_features=0", 1)
        head, _, rest = s.partition(", ")
        return "0, " + rest if head.isdigit() else s


def _lazy(name, real, ndim, doc, defaults=None):
    # Lazy linear and conv layers are kinds of the real layer too, as in PyTorch (``isinstance(nn.LazyLinear(4),
    # nn.Linear)`` is True); lazy norms are not (PyTorch's derive from the private _BatchNorm, not BatchNorm1d)
    bases = (_LazyModule,) if issubclass(real, _NORMS) else (_LazyModule, real)
    return type(name, bases, {"cls_to_become": real, "_batched_ndim": ndim, "__module__": __name__,
                                       "__doc__": doc, "_defaults": defaults or {}})


_NORMS = (BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d)


_TRACK = {"affine": True, "track_running_stats": True}  # LazyInstanceNorm's defaults in PyTorch


LazyLinear = _lazy("LazyLinear", Linear, None, "``Linear`` whose ``in_features`` is ``x.shape[-1]`` of the first "
                   "input: ``LazyLinear(out_features, bias=True)``.")
LazyConv1d = _lazy("LazyConv1d", Conv1d, 3, "``Conv1d`` whose ``in_channels`` comes from the first input.")
LazyConv2d = _lazy("LazyConv2d", Conv2d, 4, "``Conv2d`` whose ``in_channels`` comes from the first input: "
                   "``LazyConv2d(out_channels, kernel_size, stride=1, padding=0, ...)``.")
LazyConv3d = _lazy("LazyConv3d", Conv3d, 5, "``Conv3d`` whose ``in_channels`` comes from the first input.")
LazyConvTranspose3d = _lazy("LazyConvTranspose3d", ConvTranspose3d, 5,
                            "``ConvTranspose3d`` whose ``in_channels`` comes from the first input.")
LazyConvTranspose1d = _lazy("LazyConvTranspose1d", ConvTranspose1d, 3,
                            "``ConvTranspose1d`` whose ``in_channels`` comes from the first input.")
LazyConvTranspose2d = _lazy("LazyConvTranspose2d", ConvTranspose2d, 4,
                            "``ConvTranspose2d`` whose ``in_channels`` comes from the first input.")
LazyBatchNorm1d = _lazy("LazyBatchNorm1d", BatchNorm1d, 3,
                        "``BatchNorm1d`` whose ``num_features`` comes from the first input.")
LazyBatchNorm2d = _lazy("LazyBatchNorm2d", BatchNorm2d, 4,
                        "``BatchNorm2d`` whose ``num_features`` comes from the first input.")
LazyBatchNorm3d = _lazy("LazyBatchNorm3d", BatchNorm3d, 5,
                        "``BatchNorm3d`` whose ``num_features`` comes from the first input.")
LazyInstanceNorm1d = _lazy("LazyInstanceNorm1d", InstanceNorm1d, 3,
                           "``InstanceNorm1d`` whose ``num_features`` comes from the first input.", _TRACK)
LazyInstanceNorm2d = _lazy("LazyInstanceNorm2d", InstanceNorm2d, 4,
                           "``InstanceNorm2d`` whose ``num_features`` comes from the first input.", _TRACK)
LazyInstanceNorm3d = _lazy("LazyInstanceNorm3d", InstanceNorm3d, 5,
                           "``InstanceNorm3d`` whose ``num_features`` comes from the first input.", _TRACK)
