"""Small 2-D classification sets, generated (nothing is downloaded).

Each returns ``(X, y)``: ``X`` float32 of shape ``(n, 2)``, ``y`` int64 class
labels. They are drawn from their own generator seeded with ``seed``, so the
same call always gives the same data (and does not disturb ``manual_seed``);
``random_state=`` is accepted as scikit-learn's name for it.

* ``moons`` -- two interleaving half circles (needs a curved boundary);
* ``spirals`` -- ``n_classes`` interleaved spiral arms (hard for a linear model,
  easy for a small MLP: the classic first "deep learning" picture);
* ``blobs`` -- Gaussian clusters (linearly separable when well spread).
"""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from .dataloader import TensorDataset


def _out(X, y, as_dataset):
    X = Tensor._make(np.ascontiguousarray(X, dtype=np.float32))
    y = Tensor._make(np.asarray(y, dtype=np.int64))
    return TensorDataset(X, y) if as_dataset else (X, y)


def moons(n_samples=200, noise=0.1, seed=0, as_dataset=False, random_state=None):
    rng = np.random.default_rng(seed if random_state is None else random_state)
    n_out = n_samples // 2
    n_in = n_samples - n_out
    t_out = np.linspace(0, np.pi, n_out)
    t_in = np.linspace(0, np.pi, n_in)
    X = np.concatenate([np.stack([np.cos(t_out), np.sin(t_out)], 1),
                        np.stack([1 - np.cos(t_in), 1 - np.sin(t_in) - 0.5], 1)])
    y = np.concatenate([np.zeros(n_out), np.ones(n_in)])
    X = X + rng.normal(0, noise, X.shape)
    perm = rng.permutation(n_samples)
    return _out(X[perm], y[perm], as_dataset)


def spirals(n_samples=300, n_classes=3, noise=0.2, turns=1.0, seed=0, as_dataset=False, random_state=None):
    """``n_classes`` spiral arms (``n_samples`` points in total), CS231n style."""
    rng = np.random.default_rng(seed if random_state is None else random_state)
    per = n_samples // n_classes
    X, y = [], []
    for c in range(n_classes):
        r = np.linspace(0.0, 1.0, per)
        t = np.linspace(c * 2 * np.pi / n_classes, c * 2 * np.pi / n_classes + turns * 2 * np.pi, per)
        t = t + rng.normal(0, noise, per)
        X.append(np.stack([r * np.sin(t), r * np.cos(t)], 1))
        y.append(np.full(per, c))
    X, y = np.concatenate(X), np.concatenate(y)
    perm = rng.permutation(len(y))
    return _out(X[perm], y[perm], as_dataset)


def blobs(n_samples=200, centers=3, cluster_std=1.0, center_box=(-6.0, 6.0), seed=0, as_dataset=False,
          random_state=None):
    rng = np.random.default_rng(seed if random_state is None else random_state)
    if isinstance(centers, int):
        centers = rng.uniform(center_box[0], center_box[1], size=(centers, 2))
    centers = np.asarray(centers, dtype=np.float64)
    k = len(centers)
    y = np.arange(n_samples) % k
    X = centers[y] + rng.normal(0, cluster_std, (n_samples, centers.shape[1]))
    perm = rng.permutation(n_samples)
    return _out(X[perm], y[perm], as_dataset)


make_moons, make_spirals, make_blobs = moons, spirals, blobs
