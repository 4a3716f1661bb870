"""``torch.nn.modules.instancenorm``'s names (gradlab keeps them in ``normalization.py``)."""
from ._layer_helpers import rest_from as _rest_from
from .normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, _InstanceNorm  # noqa: F401

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d"]
__getattr__ = _rest_from(__name__, "gradlab.nn.coverage.modules.lazy_layers")
