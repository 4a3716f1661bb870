"""``gradlab.utils.data``: PyTorch's spelling of ``gradlab.data``'s loading classes.

Students write ``from torch.utils.data import DataLoader, TensorDataset``; with
``torch`` swapped for ``gradlab`` that line works unchanged. The classes live in
``gradlab/data/dataloader.py``.
"""
from ..data.dataloader import (  # noqa: F401
    ConcatDataset, DataLoader, Dataset, Subset, TensorDataset, default_collate, random_split,
)

__all__ = ["ConcatDataset", "DataLoader", "Dataset", "Subset", "TensorDataset", "default_collate", "random_split"]
