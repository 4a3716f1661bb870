"""``DataParallel``: PyTorch's multi-GPU wrapper, here a pass-through (gradlab runs on one device).
"""
from __future__ import annotations

from ...module import Module


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
