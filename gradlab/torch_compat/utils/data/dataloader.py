"""``torch.utils.data.dataloader``'s names (``DataLoader``, ``default_collate``, ``get_worker_info``)."""
from ....data.dataloader import DataLoader, default_collate, get_worker_info  # noqa: F401

__all__ = ["DataLoader", "default_collate", "get_worker_info"]
