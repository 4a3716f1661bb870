"""Samplers (PyTorch's ``torch.utils.data.sampler``): what order a ``DataLoader`` visits a dataset in.

A sampler is an iterable of dataset indices; a batch sampler is an iterable of *lists* of indices. Every one
here draws lazily, while it is iterated: an endless sampler (or one of 10^10 samples) yields its first batch
at once. The random ones draw from their ``generator`` (a ``gradlab.Generator`` or a NumPy generator), else from
the generator ``gradlab.manual_seed`` seeds, anew on each ``iter()`` (each epoch).
"""
from __future__ import annotations

import numbers

import numpy as np

from .._tensor import Tensor
from ..backend import random as _random
from ..errors import ArgumentError, ArgumentTypeError


class Sampler:
    """Base class: subclasses implement ``__iter__`` (indices) and, when they can, ``__len__``."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):  # pragma: no cover - abstract
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


def _count(name, value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ArgumentError(f"{name}: {what} should be a positive integer value, but got {what}={value!r}")
    return int(value)


class RandomSampler(Sampler):
    """A random permutation of the indices each epoch; with ``replacement=True``, ``num_samples`` independent
    draws (``num_samples`` may exceed the dataset then, or be given without replacement to repeat permutations)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        if not isinstance(replacement, bool):
            raise ArgumentTypeError(f"RandomSampler: replacement should be a boolean value, but got "
                                    f"replacement={replacement!r}")
        self.data_source, self.replacement, self._num_samples = data_source, replacement, num_samples
        self.generator = generator
        if num_samples is not None:
            _count("RandomSampler", num_samples, "num_samples")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, rng = len(self.data_source), _random.generator(self.generator)
        if self.replacement:
            left = self.num_samples
            while left > 0:  # 32 at a time, as PyTorch
                k = min(32, left)
                yield from rng.integers(0, n, size=k).tolist()
                left -= k
            return
        for _ in range(self.num_samples // n):
            yield from rng.permutation(n).tolist()
        if self.num_samples % n:
            yield from rng.permutation(n)[: self.num_samples % n].tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order each epoch."""

    def __init__(self, indices, generator=None):
        self.indices = indices.tolist() if isinstance(indices, Tensor) else indices
        self.generator = generator

    def __iter__(self):
        for i in _random.generator(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights`` (a class-balancing sampler)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        _count("WeightedRandomSampler", num_samples, "num_samples")
        if not isinstance(replacement, bool):
            raise ArgumentTypeError(f"WeightedRandomSampler: replacement should be a boolean value, but got "
                                    f"replacement={replacement!r}")
        w = np.asarray(weights.detach().cpu().numpy() if isinstance(weights, Tensor) else weights, dtype=np.float64)
        if w.ndim != 1:
            raise ArgumentError(f"WeightedRandomSampler: weights should be a 1-D sequence, got shape {w.shape}")
        if (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
            raise ArgumentError("WeightedRandomSampler: weights must be finite, non-negative and not all zero")
        if not replacement and num_samples > int((w > 0).sum()):
            raise ArgumentError(f"WeightedRandomSampler: cannot draw {num_samples} samples without replacement "
                                f"from {int((w > 0).sum())} nonzero weights; pass replacement=True")
        self.weights, self.num_samples, self.replacement, self.generator = w, int(num_samples), replacement, generator

    def __iter__(self):
        rng = _random.generator(self.generator)
        yield from rng.choice(len(self.weights), size=self.num_samples, replace=self.replacement,
                              p=self.weights / self.weights.sum()).tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size`` (the last one shorter unless
    ``drop_last``), lazily: ``list(BatchSampler(SequentialSampler(range(10)), 3, False))`` is
    ``[[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]``."""

    def __init__(self, sampler, batch_size, drop_last):
        _count("BatchSampler", batch_size, "batch_size")
        if not isinstance(drop_last, bool):
            raise ArgumentTypeError(f"BatchSampler: drop_last should be a boolean value, but got "
                                    f"drop_last={drop_last!r}")
        self.sampler, self.batch_size, self.drop_last = sampler, int(batch_size), drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class DistributedSampler(Sampler):
    """``torch.utils.data.distributed.DistributedSampler`` for the one process gradlab runs in: with
    ``num_replicas=1, rank=0`` (the defaults here, since ``gradlab.distributed`` is never initialised) it is the
    whole dataset, shuffled each epoch from ``seed + epoch`` when ``shuffle`` (call ``set_epoch(e)``)."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        num_replicas = 1 if num_replicas is None else int(num_replicas)
        rank = 0 if rank is None else int(rank)
        if not 0 <= rank < num_replicas:
            raise ArgumentError(f"DistributedSampler: invalid rank {rank}, rank should be in [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, int(seed), drop_last, 0
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = n // num_replicas
        else:
            self.num_samples = -(-n // num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        idx = (np.random.default_rng(self.seed + self.epoch).permutation(n).tolist() if self.shuffle
               else list(range(n)))
        if not self.drop_last:
            pad = self.total_size - len(idx)
            idx += (idx * (pad // max(len(idx), 1) + 1))[:pad]
        else:
            idx = idx[:self.total_size]
        return iter(idx[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        self.epoch = int(epoch)
