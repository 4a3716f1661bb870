"""``torch.nn.parallel``: ``DataParallel`` and ``DistributedDataParallel``, single-process pass-throughs in
gradlab (``model(x)`` unchanged, PyTorch's ``module.`` state_dict prefix); see ``nn/coverage/modules/parallel_layers.py``.
``gradlab.nn.parallel.distributed.DistributedDataParallel`` is the same class, at PyTorch's longer path."""
import sys as _sys
import types as _types

from .coverage.modules.parallel_layers import DataParallel, DistributedDataParallel  # noqa: F401

distributed = _types.ModuleType(__name__ + ".distributed", "torch.nn.parallel.distributed's DistributedDataParallel")
distributed.DistributedDataParallel = DistributedDataParallel
_sys.modules[distributed.__name__] = distributed

__all__ = ["DataParallel", "DistributedDataParallel"]
