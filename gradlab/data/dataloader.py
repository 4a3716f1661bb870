"""``Dataset``, ``TensorDataset`` and a minimal ``DataLoader`` (PyTorch's names).

A dataset is anything with ``__len__`` and ``__getitem__(i)``. A loader turns
it into mini-batches: it (optionally) shuffles the indices once per epoch,
cuts them into groups of ``batch_size`` and *collates* each group, stacking
tensors into one batch tensor (tuples and dicts are collated field by field).

Shuffling draws from the generator ``gradlab.manual_seed`` seeds, or from the
loader's own ``generator``/``seed``, so the order is reproducible.
"""
from __future__ import annotations

import numbers

import numpy as np

from .._tensor import Tensor
from ..backend import random as _random
from ..errors import ArgumentError, ShapeError, fmt_shape


class Dataset:
    """Base class: subclasses implement ``__getitem__`` and ``__len__``."""

    def __getitem__(self, index):  # pragma: no cover - abstract
        raise NotImplementedError

    def __len__(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def __add__(self, other):
        return ConcatDataset([self, other])


class ConcatDataset(Dataset):
    """The datasets one after another: item ``i`` comes from whichever dataset holds position ``i``."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ArgumentError("ConcatDataset: datasets should not be an empty iterable; pass at least one dataset")
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]).tolist())

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        n = len(self)
        if idx < 0:
            if -idx > n:
                raise ArgumentError(f"ConcatDataset: absolute value of index {idx} should not exceed dataset "
                                    f"length {n}")
            idx += n
        k = int(np.searchsorted(self.cumulative_sizes, idx, side="right"))
        start = 0 if k == 0 else self.cumulative_sizes[k - 1]
        return self.datasets[k][idx - start]


class TensorDataset(Dataset):
    """Item ``i`` is ``(t[i] for t in tensors)``; all tensors share their first dim."""

    def __init__(self, *tensors):
        if not tensors:
            raise ArgumentError("TensorDataset needs at least one tensor")
        n = tensors[0].shape[0]
        for i, t in enumerate(tensors):
            if t.shape[0] != n:
                raise ShapeError(f"TensorDataset: tensor 0 has {n} rows but tensor {i} has {t.shape[0]} "
                                 f"(shape {fmt_shape(t.shape)}); all must have the same first dimension")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(Tensor._make(t.data[index]) for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, i):
        return self.dataset[self.indices[i]]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split into non-overlapping subsets of the given lengths (or fractions summing to 1)."""
    n = len(dataset)
    if all(isinstance(x, float) for x in lengths) and abs(sum(lengths) - 1) < 1e-9:
        counts = [int(np.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ArgumentError(f"random_split: lengths sum to {sum(lengths)} but the dataset has {n} items")
    perm = (generator or _random.generator()).permutation(n).tolist()
    out, start = [], 0
    for k in lengths:
        out.append(Subset(dataset, perm[start:start + k]))
        start += k
    return out


def default_collate(batch):
    """Stack a list of samples into a batch: tensors/arrays/numbers are stacked, tuples and dicts per field."""
    first = batch[0]
    if isinstance(first, Tensor):
        return Tensor._make(np.stack([b.data for b in batch]))
    if isinstance(first, np.ndarray):
        return Tensor._make(np.stack(batch))
    if isinstance(first, bool):
        return Tensor._make(np.asarray(batch, dtype=np.bool_))
    if isinstance(first, numbers.Integral):
        return Tensor._make(np.asarray(batch, dtype=np.int64))
    if isinstance(first, numbers.Real):  # Python floats batch as float64, as in PyTorch
        return Tensor._make(np.asarray(batch, dtype=np.float64))
    if isinstance(first, str):
        return list(batch)
    if isinstance(first, dict):
        return {k: default_collate([b[k] for b in batch]) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(first, (tuple, list)):
        sizes = {len(b) for b in batch}
        if len(sizes) != 1:
            raise ShapeError("default_collate: samples in a batch have different numbers of fields")
        return [default_collate(list(s)) for s in zip(*batch)]  # a list for tuples too, as PyTorch
    raise TypeError(f"default_collate: cannot batch samples of type {type(first).__name__}; pass collate_fn=")


class DataLoader:
    """Iterate over ``dataset`` in mini-batches.

    ``DataLoader(ds, batch_size=32, shuffle=True, drop_last=False, collate_fn=None, generator=None, seed=None)``.
    With ``shuffle=True`` each epoch (each ``iter(loader)``) uses a new
    permutation from ``generator`` (a ``numpy.random.Generator``), else from a
    generator seeded with ``seed``, else from gradlab's global generator.
    """

    def __init__(self, dataset, batch_size=1, shuffle=False, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, generator=None, *, seed=None):
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size <= 0):
            raise ArgumentError(f"DataLoader: batch_size must be a positive int, got {batch_size!r}")
        self.dataset, self.batch_size, self.shuffle = dataset, batch_size, bool(shuffle)
        self.drop_last = bool(drop_last)
        self.collate_fn = collate_fn or default_collate
        self._user_collate = collate_fn
        self.sampler = sampler
        self.generator = generator if generator is not None else (
            np.random.default_rng(seed) if seed is not None else None)
        self._fast = isinstance(dataset, TensorDataset) and collate_fn is None

    def _indices(self):
        n = len(self.dataset)
        if self.sampler is not None:
            return np.asarray(list(iter(self.sampler)))
        if self.shuffle:
            return (self.generator or _random.generator()).permutation(n)
        return np.arange(n)

    def __iter__(self):
        idx = self._indices()
        bs = self.batch_size
        if bs is None:  # batch_size=None: no batching, one sample at a time (collate_fn, if given, per sample)
            for i in idx:
                sample = self.dataset[int(i)]
                yield sample if self._user_collate is None else self._user_collate(sample)
            return
        n = len(idx)
        stop = n - n % bs if self.drop_last else n
        for start in range(0, stop, bs):
            chunk = idx[start:start + bs]
            if self._fast:  # index the whole batch at once (a list of tensors, as default_collate gives)
                yield [Tensor._make(t.data[chunk]) for t in self.dataset.tensors]
            else:
                yield self.collate_fn([self.dataset[int(i)] for i in chunk])

    def __len__(self):
        n = len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
