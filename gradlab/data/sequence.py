"""Sequence tasks for small transformers: addition, sorting, reversal.

Each task makes token sequences ``prompt + answer`` and splits the distinct
problems into a training set and a *held-out* set the model never sees, so the
test measures whether it learned the rule rather than memorised the pairs.

Items are ``(x, y)`` for next-token training: ``x = seq[:-1]``, ``y =
seq[1:]`` with the prompt positions of ``y`` set to ``-100`` (cross_entropy's
``ignore_index``), so only the answer tokens are graded. ``task.evaluate(model)``
decodes greedily and returns the exact-match accuracy.

``AdditionTask(n_digits=2)``: ``a`` and ``b`` as zero-padded digits, then the
sum's ``n_digits + 1`` digits *reversed* (least significant first, the order in
which carries are computed), e.g. 2-digit ``35 + 47 = 82``: ``3 5 4 7 2 8 0``.
"""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..errors import ArgumentError
from .dataloader import TensorDataset

IGNORE_INDEX = -100


class SequenceTask:
    """Base: ``prompts`` (n, P) and ``answers`` (n, A) integer arrays, split into train/test."""

    vocab_size: int
    name = "task"

    def _build(self, prompts, answers, test_fraction, seed, n_test=None):
        rng = np.random.default_rng(seed)
        n = len(prompts)
        perm = rng.permutation(n)
        k = int(n_test) if n_test is not None else int(round(n * test_fraction))
        if not 0 < k < n:
            raise ArgumentError(f"{type(self).__name__}: the held-out split must leave both sides non-empty "
                                f"(got {k} of {n} problems)")
        self.prompt_len, self.answer_len = prompts.shape[1], answers.shape[1]
        self.block_size = self.prompt_len + self.answer_len - 1
        self._splits = {"test": perm[:k], "train": perm[k:]}
        self.prompts, self.answers = prompts.astype(np.int64), answers.astype(np.int64)
        self.train = self.dataset("train")
        self.test = self.dataset("test")

    def sequences(self, split="train"):
        idx = self._splits[split]
        return np.concatenate([self.prompts[idx], self.answers[idx]], axis=1)

    def dataset(self, split="train") -> TensorDataset:
        seq = self.sequences(split)
        x, y = seq[:, :-1].copy(), seq[:, 1:].copy()
        y[:, :self.prompt_len - 1] = IGNORE_INDEX
        return TensorDataset(Tensor._make(x), Tensor._make(y))

    @no_grad()
    def evaluate(self, model, split="test", batch_size=2048, return_predictions=False):
        """Greedy-decode the answers of ``split`` and return the exact-match accuracy (0..1)."""
        was_training = getattr(model, "training", False)
        if hasattr(model, "eval"):
            model.eval()
        idx = self._splits[split]
        prompts, answers = self.prompts[idx], self.answers[idx]
        preds = []
        for s in range(0, len(idx), batch_size):
            seq = prompts[s:s + batch_size]
            for _ in range(self.answer_len):
                logits = model(Tensor._make(seq))
                nxt = np.asarray(logits._data[:, -1, :]).argmax(-1)
                seq = np.concatenate([seq, nxt[:, None]], axis=1)
            preds.append(seq[:, self.prompt_len:])
        if was_training and hasattr(model, "train"):
            model.train()
        preds = np.concatenate(preds)
        acc = float((preds == answers).all(axis=1).mean())
        return (acc, preds) if return_predictions else acc

    def __repr__(self):
        return (f"{type(self).__name__}(train={len(self._splits['train'])}, test={len(self._splits['test'])}, "
                f"vocab_size={self.vocab_size}, block_size={self.block_size})")


class AdditionTask(SequenceTask):
    """Every ``a + b`` with ``n_digits``-digit operands; a fraction held out for testing."""

    def __init__(self, n_digits=2, test_fraction=0.1, seed=0, n_test=None):
        if n_digits < 1 or n_digits > 3:
            raise ArgumentError(f"AdditionTask: n_digits must be 1..3 (all pairs are enumerated), got {n_digits}")
        self.n_digits = n_digits
        self.vocab_size = 10
        m = 10 ** n_digits
        a, b = np.divmod(np.arange(m * m), m)
        c = a + b
        prompts = np.concatenate([_digits(a, n_digits), _digits(b, n_digits)], axis=1)
        answers = _digits(c, n_digits + 1)[:, ::-1]
        self._build(prompts, answers, test_fraction, seed, n_test)

    def decode_answer(self, answer_tokens) -> int:
        return int("".join(str(int(d)) for d in np.asarray(answer_tokens)[::-1]))


class SortTask(SequenceTask):
    """Sort ``length`` tokens drawn from ``n_values`` symbols (distinct random problems)."""

    def __init__(self, length=6, n_values=3, n_problems=5000, test_fraction=0.1, seed=0):
        rng = np.random.default_rng(seed)
        self.vocab_size = n_values
        prompts = _distinct(rng, n_problems, length, n_values)
        self._build(prompts, np.sort(prompts, axis=1), test_fraction, seed)


class ReversalTask(SequenceTask):
    """Write ``length`` tokens backwards."""

    def __init__(self, length=6, n_values=10, n_problems=5000, test_fraction=0.1, seed=0):
        rng = np.random.default_rng(seed)
        self.vocab_size = n_values
        prompts = _distinct(rng, n_problems, length, n_values)
        self._build(prompts, prompts[:, ::-1].copy(), test_fraction, seed)


def _digits(x, n):
    return np.stack([(x // 10 ** (n - 1 - i)) % 10 for i in range(n)], axis=1)


def _distinct(rng, n, length, n_values):
    space = n_values ** length
    if n > space:
        raise ArgumentError(f"only {space} distinct problems of length {length} over {n_values} symbols; ask for fewer")
    codes = rng.choice(space, size=n, replace=False)
    return np.stack([(codes // n_values ** i) % n_values for i in range(length)], axis=1)
