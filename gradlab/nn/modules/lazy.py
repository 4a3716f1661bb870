"""``torch.nn.modules.lazy``: gradlab's lazy layers share the base ``_LazyModule`` (``LazyModuleMixin`` by
PyTorch's name) in ``nn/coverage/modules/lazy_layers.py``."""
from ._layer_helpers import rest_from as _rest_from

__all__ = ["LazyModuleMixin"]
_find = _rest_from(__name__, "gradlab.nn.coverage.modules.lazy_layers")


def __getattr__(name):
    return _find("_LazyModule" if name == "LazyModuleMixin" else name)
