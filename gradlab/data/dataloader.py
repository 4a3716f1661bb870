"""``Dataset``, ``IterableDataset``, ``TensorDataset``, ``Subset``, ``random_split`` and ``DataLoader``
(PyTorch's names; the samplers are in ``sampler.py``).

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
from ..errors import ArgumentError, ArgumentTypeError, ShapeError, fmt_shape
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler


class Dataset:
    """Base class: subclasses implement ``__getitem__`` and ``__len__``."""

    def __getitem__(self, index):  # pragma: no cover - abstract
        raise NotImplementedError

    def __len__(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset read as a stream: subclasses implement ``__iter__`` (a ``DataLoader`` cuts it into batches
    in the order it yields; no sampler, no shuffle)."""

    def __iter__(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def __getitem__(self, index):
        raise ArgumentTypeError(f"{type(self).__name__} is an IterableDataset: it is read by iterating "
                                "(for x in ds), not by index")

    def __add__(self, other):
        return ChainDataset([self, other])


class ChainDataset(IterableDataset):
    """Several iterable datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)

    def __iter__(self):
        for d in self.datasets:
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


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
        return tuple(Tensor._make(t._data[index]) for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The items of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices.tolist() if isinstance(indices, Tensor) else list(indices)

    def __getitem__(self, i):
        if isinstance(i, list):
            return [self.dataset[self.indices[j]] for j in i]
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
        return Tensor._make(np.stack([b._data for b in batch]))
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


class _InfiniteConstantSampler(Sampler):
    """What an ``IterableDataset``'s loader iterates: ``None`` forever (the dataset decides what comes next)."""

    def __iter__(self):
        while True:
            yield None


def _index(i):
    """A sampler's index as the dataset gets it: ints stay ints, 0-d tensors and NumPy ints become ints."""
    if isinstance(i, (Tensor, np.integer)):
        return int(i)
    return i


def get_worker_info():
    """``None``: gradlab's loaders run in the main process (as PyTorch's with ``num_workers=0``)."""
    return None


class DataLoader:
    """Iterate over ``dataset`` in mini-batches (PyTorch's ``DataLoader``).

    ``DataLoader(ds, batch_size=32, shuffle=True, sampler=None, batch_sampler=None, drop_last=False,
    collate_fn=None, generator=None, seed=None)``. The order comes from ``sampler`` (default: a
    ``RandomSampler`` when ``shuffle``, a new permutation each epoch, else a ``SequentialSampler``), grouped by
    ``batch_sampler`` (default: a ``BatchSampler`` of ``batch_size``), both iterated lazily, one batch at a time.
    Random orders come from ``generator`` (a ``gradlab.Generator`` or ``numpy.random.Generator``), else a
    generator seeded with ``seed`` (gradlab's), else gradlab's global generator. ``IterableDataset`` s are read
    in order and cut into batches. ``num_workers``, ``pin_memory``, ``prefetch_factor``... are accepted and
    ignored: loading runs in this process.
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True, seed=None):
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                       or batch_size <= 0):
            raise ArgumentError(f"DataLoader: batch_size must be a positive int, got {batch_size!r}")
        self.dataset, self.num_workers, self.pin_memory, self.timeout = dataset, num_workers, pin_memory, timeout
        self.generator = generator if generator is not None else (
            np.random.default_rng(seed) if seed is not None else None)
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (None, False):
                raise ArgumentError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                    f"shuffle={shuffle}; an iterable dataset decides its own order")
            if sampler is not None or batch_sampler is not None:
                raise ArgumentError("DataLoader with IterableDataset: expected unspecified sampler and batch_sampler "
                                    "options; an iterable dataset decides its own order")
        if sampler is not None and shuffle:
            raise ArgumentError("DataLoader: sampler option is mutually exclusive with shuffle; shuffle in the "
                                "sampler (RandomSampler, SubsetRandomSampler) and leave shuffle unset")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ArgumentError("DataLoader: batch_sampler option is mutually exclusive with batch_size, "
                                    "shuffle, sampler, and drop_last; the batch sampler decides all of them")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ArgumentError("DataLoader: batch_size=None option disables auto-batching and is mutually "
                                "exclusive with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=self.generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, bool(drop_last))
        self.batch_size, self.drop_last, self.sampler, self.batch_sampler = batch_size, bool(drop_last), sampler, \
            batch_sampler
        self.shuffle = bool(shuffle)
        self.collate_fn = collate_fn or default_collate
        self._user_collate = collate_fn
        self._fast = isinstance(dataset, TensorDataset) and collate_fn is None

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    def _batch(self, indices):
        if self._fast:  # index the whole batch at once (a list of tensors, as default_collate gives)
            chunk = np.fromiter((int(i) for i in indices), np.int64)
            return [Tensor._make(t._data[chunk]) for t in self.dataset.tensors]
        return self.collate_fn([self.dataset[_index(i)] for i in indices])

    def __iter__(self):
        if self._iterable:
            yield from self._iter_iterable()
            return
        if not self._auto_collation:  # batch_size=None: one sample at a time (collate_fn, if given, per sample)
            for i in self.sampler:
                sample = self.dataset[_index(i)]
                yield sample if self._user_collate is None else self._user_collate(sample)
            return
        for indices in self.batch_sampler:
            yield self._batch(indices)

    def _iter_iterable(self):
        it = iter(self.dataset)
        if self.batch_size is None:
            for sample in it:
                yield sample if self._user_collate is None else self._user_collate(sample)
            return
        batch = []
        for sample in it:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)  # a TypeError for iterable datasets without __len__, as in PyTorch
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler) if self._auto_collation else len(self.sampler)
