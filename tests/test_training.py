"""End-to-end training targets: an MLP on spirals, a small GPT on 2-digit addition (fast budget)."""
from __future__ import annotations

import time

import numpy as np
import pytest

import gradlab
from gradlab import nn, optim
from gradlab.nn import functional as F


@pytest.fixture(autouse=True)
def _one_blas_thread():
    """One BLAS thread: fastest for these small matrices, and immune to the thread oversubscription that
    slows multi-threaded OpenBLAS down many times on a busy 2-core machine."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(1):
        yield


def test_mlp_learns_spirals_to_97_percent_quickly():
    # budgets are CPU seconds of this process (one BLAS thread), so a busy machine does not fail them
    t0 = time.process_time()
    gradlab.manual_seed(0)
    X, y = gradlab.data.spirals(300, n_classes=3, noise=0.2, seed=0)
    model = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 3))
    opt = optim.Adam(model.parameters(), lr=0.01)
    for _ in range(250):
        loss = F.cross_entropy(model(X), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with gradlab.no_grad():
        acc = float((model(X).argmax(-1) == y).float().mean())
    elapsed = time.process_time() - t0
    assert acc >= 0.97, f"training accuracy {acc:.3f} < 0.97"
    assert elapsed < 20, f"took {elapsed:.1f} s"


def test_minibatch_training_with_dataloader_and_scheduler():
    gradlab.manual_seed(1)
    ds = gradlab.data.moons(256, noise=0.1, seed=1, as_dataset=True)
    loader = gradlab.data.DataLoader(ds, batch_size=32, shuffle=True, drop_last=True)
    model = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=25 * len(loader))
    for _ in range(25):
        for xb, yb in loader:
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            sched.step()
    X, y = ds.tensors
    assert float((model(X).argmax(-1) == y).float().mean()) > 0.97


def test_small_gpt_learns_addition_well_above_chance():
    """A fast version of benchmarks/train_addition.py: chance exact match is 1/1000."""
    gradlab.manual_seed(0)
    task = gradlab.data.AdditionTask(n_digits=2, seed=0)
    X, Y = task.train.tensors
    model = nn.GPT(task.vocab_size, task.block_size, n_layer=2, n_head=4, n_embd=64)
    opt = optim.AdamW(model.parameters(), lr=3e-3)
    sched = optim.lr_scheduler.WarmupCosineLR(opt, warmup_steps=30, total_steps=300)
    rng = np.random.default_rng(0)
    t0 = time.process_time()
    for _ in range(300):
        idx = rng.integers(0, X.shape[0], size=128)
        _, loss = model(X[idx], Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    acc = task.evaluate(model, "test")
    assert acc > 0.2, f"held-out exact match {acc:.3f}"
    assert time.process_time() - t0 < 60
