"""``torch.nn.modules.batchnorm``'s names: gradlab keeps batch norm in ``normalization.py`` (with the other
norms); this file is the import path PyTorch programs use (``from torch.nn.modules.batchnorm import _BatchNorm``)."""
from ._layer_helpers import rest_from as _rest_from
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm, _NormBase  # noqa: F401

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "SyncBatchNorm"]
__getattr__ = _rest_from(__name__, "gradlab.nn.coverage.modules.lazy_layers", "gradlab.nn.coverage.modules.normalization_layers")
