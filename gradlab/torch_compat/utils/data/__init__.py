"""``gradlab.utils.data``: PyTorch's ``torch.utils.data``, at the same import paths.

Students write ``from torch.utils.data import DataLoader, TensorDataset`` (or
``from torch.utils.data.sampler import SubsetRandomSampler``, ``torch.utils.data.dataset.Subset``); with
``torch`` swapped for ``gradlab`` those lines work unchanged, and ``import gradlab`` makes
``gradlab.utils.data`` reachable as ``import torch`` does. The classes live in ``gradlab/data/``
(``dataloader.py``: datasets and the loader; ``sampler.py``: the samplers).
"""
from ....data.dataloader import (  # noqa: F401
    ChainDataset, ConcatDataset, DataLoader, Dataset, IterableDataset, Subset, TensorDataset, default_collate,
    get_worker_info, random_split,
)
from ....data.sampler import (  # noqa: F401
    BatchSampler, DistributedSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
    WeightedRandomSampler,
)
from . import dataloader, dataset, distributed, sampler  # noqa: F401,E402

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
    "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "Subset", "SubsetRandomSampler",
    "TensorDataset", "WeightedRandomSampler", "default_collate", "get_worker_info", "random_split",
]
