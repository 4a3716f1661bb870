"""``torch.utils.data.distributed.DistributedSampler`` for gradlab's single process (``num_replicas=1``)."""
from ....data.sampler import DistributedSampler  # noqa: F401

__all__ = ["DistributedSampler"]
