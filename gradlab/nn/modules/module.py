"""``torch.nn.modules.module``'s ``Module`` (gradlab keeps it in ``gradlab/nn/module.py``)."""
from ..module import Module  # noqa: F401

__all__ = ["Module"]
