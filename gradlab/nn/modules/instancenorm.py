"""``torch.nn.modules.instancenorm``'s names (gradlab keeps them in ``normalization.py``)."""
from .normalization import _InstanceNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: F401
from ._util import rest_from as _rest_from

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d"]
__getattr__ = _rest_from(__name__, "gradlab.nn.coverage.modules.lazy")
