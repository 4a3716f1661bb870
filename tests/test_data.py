"""gradlab.data: loaders, synthetic sets, sequence tasks, the char corpus, optional digits."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
from gradlab.data import (
    AdditionTask,
    CharDataset,
    DataLoader,
    ReversalTask,
    SortTask,
    TensorDataset,
    blobs,
    moons,
    spirals,
    stdlib_text,
)


def test_dataloader_batches_shuffle_drop_last():
    X = gradlab.arange(10).reshape(10, 1).float()
    y = gradlab.arange(10)
    ds = TensorDataset(X, y)
    batches = list(DataLoader(ds, batch_size=4))
    assert [b[0].shape for b in batches] == [(4, 1), (4, 1), (2, 1)]
    assert len(DataLoader(ds, batch_size=4)) == 3 and len(DataLoader(ds, batch_size=4, drop_last=True)) == 2
    assert [len(b[1]) for b in DataLoader(ds, batch_size=4, drop_last=True)] == [4, 4]
    order = np.concatenate([b[1].numpy() for b in DataLoader(ds, batch_size=3, shuffle=True, seed=1)])
    again = np.concatenate([b[1].numpy() for b in DataLoader(ds, batch_size=3, shuffle=True, seed=1)])
    assert sorted(order.tolist()) == list(range(10)) and order.tolist() != list(range(10))
    np.testing.assert_array_equal(order, again)
    loader = DataLoader(ds, batch_size=10, shuffle=True, seed=2)
    e1, e2 = next(iter(loader))[1].numpy(), next(iter(loader))[1].numpy()
    assert e1.tolist() != e2.tolist()  # a new permutation each epoch
    gradlab.manual_seed(4)
    g1 = next(iter(DataLoader(ds, batch_size=10, shuffle=True)))[1].numpy()
    gradlab.manual_seed(4)
    g2 = next(iter(DataLoader(ds, batch_size=10, shuffle=True)))[1].numpy()
    np.testing.assert_array_equal(g1, g2)  # the global generator is seeded by manual_seed
    with pytest.raises(ValueError, match="same first dimension"):
        TensorDataset(X, gradlab.arange(3))


def test_default_collate_tuples_dicts_numbers():
    class DS:
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"x": gradlab.ones(2) * i, "label": i, "w": 0.5, "name": f"s{i}"}

    b = next(iter(DataLoader(DS(), batch_size=3)))
    assert b["x"].shape == (3, 2) and b["label"].dtype == gradlab.int64 and b["w"].dtype == gradlab.float64
    assert b["name"] == ["s0", "s1", "s2"]
    np.testing.assert_array_equal(b["label"].numpy(), [0, 1, 2])


@pytest.mark.parametrize("fn", [moons, spirals, blobs])
def test_synthetic_sets_are_deterministic(fn):
    X, y = fn(120, seed=3)
    X2, y2 = fn(120, seed=3)
    assert X.dtype == gradlab.float32 and y.dtype == gradlab.int64 and X.shape[1] == 2
    np.testing.assert_array_equal(X.numpy(), X2.numpy())
    assert len(np.unique(y.numpy())) >= 2
    X3, _ = fn(120, seed=4)
    assert not np.array_equal(X.numpy(), X3.numpy())


def test_addition_task_format_and_split():
    t = AdditionTask(n_digits=2, test_fraction=0.1, seed=0)
    train, test = t.sequences("train"), t.sequences("test")
    assert len(train) == 9000 and len(test) == 1000
    assert not ({tuple(r) for r in train[:, :4]} & {tuple(r) for r in test[:, :4]})  # held-out pairs unseen
    for row in train[:50]:
        a, b = row[0] * 10 + row[1], row[2] * 10 + row[3]
        assert t.decode_answer(row[4:]) == a + b
    x, y = t.train[0]
    assert x.shape == (6,) and y.numpy()[:3].tolist() == [-100, -100, -100]
    np.testing.assert_array_equal(y.numpy()[3:], train[0][4:])

    class Oracle:  # a "model" that knows the answer scores 100%
        def __call__(self, idx):
            seq = idx.numpy()
            logits = np.zeros(seq.shape + (10,), dtype=np.float32)
            a, b = seq[:, 0] * 10 + seq[:, 1], seq[:, 2] * 10 + seq[:, 3]
            digits = np.stack([(a + b) // 10 ** i % 10 for i in range(3)], 1)
            k = seq.shape[1] - 4
            logits[np.arange(len(seq)), -1, digits[:, k]] = 1
            return gradlab.tensor(logits)
    assert t.evaluate(Oracle()) == 1.0


def test_sort_and_reversal_tasks():
    s = SortTask(length=5, n_values=4, n_problems=500, seed=0)
    seq = s.sequences("train")
    np.testing.assert_array_equal(np.sort(seq[:, :5], 1), seq[:, 5:])
    r = ReversalTask(length=4, n_values=10, n_problems=300, seed=1)
    seq = r.sequences("test")
    np.testing.assert_array_equal(seq[:, :4][:, ::-1], seq[:, 4:])
    assert len(r.test) == 30


def test_char_dataset_from_stdlib_and_file(tmp_path):
    text = stdlib_text(50_000)
    assert len(text) == 50_000 and text == stdlib_text(50_000)  # deterministic
    assert sum(c.isalpha() for c in text) > 0.5 * len(text)  # prose, not binary
    ds = CharDataset(text, block_size=16)
    x, y = ds[3]
    assert ds.decode(x)[1:] == ds.decode(y)[:-1] and ds.decode(x) == text[3:19]
    train, val = ds.split(0.1)
    assert train.chars == val.chars and len(train.text) + len(val.text) == len(text)
    xb, yb = ds.batch(8)
    assert xb.shape == (8, 16) and np.array_equal(xb.numpy()[:, 1:], yb.numpy()[:, :-1])
    p = tmp_path / "t.txt"
    p.write_text("hello world, hello gradlab\n" * 3)
    fds = CharDataset.from_file(p, block_size=8)
    assert fds.decode(fds.encode("hello")) == "hello" and fds.vocab_size == len(set(p.read_text()))
    with pytest.raises(ValueError, match="block_size"):
        CharDataset("short", block_size=10)


def test_digits_optional():
    pytest.importorskip("sklearn", reason="the 8x8 digits need scikit-learn (pip install 'gradlab[data]')")
    X, y = gradlab.data.digits()
    assert X.shape == (1797, 1, 8, 8) and float(X.numpy().max()) <= 1.0 and set(np.unique(y.numpy())) == set(range(10))


def test_digits_without_sklearn_says_how_to_get_it(monkeypatch):
    import builtins
    real = builtins.__import__

    def fake(name, *a, **k):
        if name.startswith("sklearn"):
            raise ImportError("no sklearn")
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", fake)
    assert not gradlab.data.have_digits()
    with pytest.raises(ImportError, match=r"gradlab\[data\]"):
        gradlab.data.digits()
