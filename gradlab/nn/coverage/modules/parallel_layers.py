"""``DataParallel`` and ``DistributedDataParallel``: PyTorch's multi-GPU and multi-process wrappers, here
pass-throughs over one base ``_PassThrough`` (gradlab runs on one device, in one process).
"""
from __future__ import annotations

from ...module import Module


class _PassThrough(Module):
    """What both wrappers are here: ``wrapper(x)`` is ``module(x)``; ``module`` is registered as a child, so
    the state_dict keys carry PyTorch's ``module.`` prefix and load into a PyTorch wrapper unchanged."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids, self.output_device, self.dim = device_ids, output_device, dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


class DataParallel(_PassThrough):
    """PyTorch's multi-GPU wrapper, here a pass-through: ``DataParallel(model)(x)`` is ``model(x)``.

    gradlab runs on one device, so nothing is split or replicated; the wrapper exists so code written
    for several GPUs runs unchanged, with PyTorch's ``module.`` prefix in the state_dict.
    """


class DistributedDataParallel(_PassThrough):
    """PyTorch's multi-process wrapper, here a documented single-process pass-through:
    ``DistributedDataParallel(model)(x)`` is ``model(x)``, the gradients are the one process's own (an
    all-reduce over one process is the identity), ``no_sync()`` is a no-op context, and the state_dict
    carries PyTorch's ``module.`` prefix. Run under several processes (``torchrun``, ``WORLD_SIZE`` > 1) it
    refuses clearly: gradlab has no process groups.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, **kwargs):
        import os

        from ....errors import DeviceError
        world = int(os.environ.get("WORLD_SIZE", "1") or 1)
        if world > 1:
            raise DeviceError(f"DistributedDataParallel: WORLD_SIZE is {world}, but gradlab runs in one process "
                              "(no process groups); run the program as one process, without torchrun")
        super().__init__(module, device_ids, output_device, dim)

    def no_sync(self):
        import contextlib
        return contextlib.nullcontext()
