"""Bad input that once passed silently or escaped as a bare NumPy/Python error.

Each case must raise one of gradlab's own errors, of the class PyTorch-style code catches
(``except TypeError`` / ``IndexError`` / ``RuntimeError``), naming the function called.
"""
from __future__ import annotations

import io
import pickle

import numpy as np
import pytest

import gradlab
import gradlab.nn.functional as F
from gradlab import nn

from .test_bad_input import assert_refused

x = gradlab.tensor([1.0, 2.0, 3.0])


def _nested(depth):
    top = cur = []
    for _ in range(depth):
        nxt = []
        cur.append(nxt)
        cur = nxt
    return top


class _Unseekable(io.RawIOBase):
    def __init__(self, data):
        self.b = io.BytesIO(data)

    def readable(self):
        return True

    def readinto(self, m):
        return self.b.readinto(m)

    def seekable(self):
        return False


CASES = {  # name -> (call, the built-in class PyTorch-style code catches, words the message must hold)
    "add(x, list)": (lambda: gradlab.add(x, [1.0, 2.0, 3.0]), TypeError, "add: other"),
    "x * list": (lambda: x * [1.0, 2.0, 3.0], TypeError, "list"),
    "keepdim='yes'": (lambda: x.sum(0, keepdim="yes"), TypeError, "keepdim must be a bool"),
    "keepdim=1 (max)": (lambda: x.max(0, keepdim=1), TypeError, "keepdim"),
    "unbiased='x'": (lambda: x.var(unbiased="x"), TypeError, "unbiased must be a bool"),
    ".to('float32')": (lambda: x.to("float32"), RuntimeError, "gradlab.float32"),
    "to(dtype='float32')": (lambda: x.to(dtype="float32"), TypeError, "dtype"),
    "lr=True": (lambda: gradlab.optim.SGD([gradlab.ones(1, requires_grad=True)], lr=True), TypeError, "lr"),
    "isclose(rtol=-1)": (lambda: gradlab.isclose(x, x, rtol=-1), RuntimeError, "rtol"),
    "mv(v, v)": (lambda: gradlab.mv(x, x), RuntimeError, "mv"),
    "layer_norm(x, 3)": (lambda: F.layer_norm(x, 3), TypeError, "normalized_shape"),
    "BCE with NaN": (lambda: F.binary_cross_entropy(gradlab.tensor([float("nan")]), gradlab.tensor([1.0])),
                     RuntimeError, "NaN"),
    "BCE with a NaN among numbers": (lambda: F.binary_cross_entropy(gradlab.tensor([0.5, float("nan")]),
                                                                    gradlab.tensor([1.0, 0.0])), RuntimeError, "NaN"),
    "mode of an empty dim": (lambda: gradlab.ones(2, 0).mode(1), IndexError, "non-zero size"),
    "max of an empty dim": (lambda: gradlab.ones(2, 0).max(1), IndexError, "non-zero size"),
    "kthvalue of an empty dim": (lambda: gradlab.ones(2, 0).kthvalue(1, 1), IndexError, "non-zero size"),
    "T.size(2)": (lambda: gradlab.ones(2, 3).size(2), IndexError, "out of range"),
    "T['a']": (lambda: gradlab.ones(2, 3)["a"], TypeError, "not an index"),
    "index_select out of range": (lambda: gradlab.index_select(x, 0, gradlab.tensor([5])), IndexError, "index"),
    "scatter out of range": (lambda: gradlab.zeros(3).scatter(0, gradlab.tensor([5]), gradlab.ones(1)),
                             IndexError, "scatter"),
    "init.normal_(std=-1)": (lambda: nn.init.normal_(gradlab.ones(2), std=-1), RuntimeError, "std"),
    "save(obj, None)": (lambda: gradlab.save({"a": 1}, None), TypeError, "save: f"),
    "save of a deeply nested list": (lambda: gradlab.save(_nested(100_000), io.BytesIO()), RuntimeError, "nested"),
    "TensorDataset index": (lambda: gradlab.utils.data.TensorDataset(gradlab.ones(2, 3))[5], IndexError, "index 5"),
    "Subset index": (lambda: gradlab.utils.data.Subset(gradlab.utils.data.TensorDataset(gradlab.ones(2, 3)),
                                                      [0, 1])[7], IndexError, "index 7"),
    "collate unequal shapes": (lambda: gradlab.utils.data.default_collate([gradlab.ones(2), gradlab.ones(3)]),
                               RuntimeError, "same shape"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_refused_in_the_right_class(name):
    call, builtin, words = CASES[name]
    assert_refused(name, call, builtin, [words])


@pytest.fixture
def checkpoint(tmp_path):
    p = tmp_path / "c.pt"
    gradlab.save({"a": gradlab.ones(3)}, p)
    return p


def test_damaged_and_truncated_checkpoints_are_runtime_errors(checkpoint, tmp_path):
    raw = checkpoint.read_bytes()
    (tmp_path / "t.pt").write_bytes(raw[: len(raw) // 2])
    bad = bytearray(raw)
    bad[len(bad) // 2] ^= 0xFF
    (tmp_path / "d.pt").write_bytes(bytes(bad))
    for name in ("t.pt", "d.pt"):
        with pytest.raises(RuntimeError, match="damaged|truncated"):
            gradlab.load(tmp_path / name)


@pytest.mark.parametrize("protocol", [0, 1])
@pytest.mark.parametrize("obj", [{"a": 1}, [1, 2], (1, "x"), 3, "text", 1.5, None])
def test_old_protocol_pickles_are_called_pickles(tmp_path, protocol, obj):
    p = tmp_path / "p.pkl"
    p.write_bytes(pickle.dumps(obj, protocol=protocol))
    with pytest.raises(RuntimeError, match="pickle"):
        gradlab.load(p)


def test_load_of_a_directory_or_a_text_mode_file(checkpoint, tmp_path):
    with pytest.raises(IsADirectoryError, match="load: .* is a directory"):
        gradlab.load(tmp_path)
    with open(checkpoint) as text, pytest.raises(TypeError, match="text mode"):
        gradlab.load(text)


def test_load_from_an_unseekable_stream(checkpoint):
    got = gradlab.load(io.BufferedReader(_Unseekable(checkpoint.read_bytes())))
    np.testing.assert_array_equal(got["a"].numpy(), np.ones(3))


def test_the_same_calls_are_refused_by_pytorch_in_the_same_class(torch):
    """The PyTorch twins of a few cases above: the same except clause catches both."""
    tx = torch.tensor([1.0, 2.0, 3.0])
    twins = {
        "add(x, list)": lambda: torch.add(tx, [1.0, 2.0, 3.0]),
        "keepdim='yes'": lambda: tx.sum(0, keepdim="yes"),
        ".to('float32')": lambda: tx.to("float32"),
        "isclose(rtol=-1)": lambda: torch.isclose(tx, tx, rtol=-1),
        "mv(v, v)": lambda: torch.mv(tx, tx),
        "layer_norm(x, 3)": lambda: torch.nn.functional.layer_norm(tx, 3),
        "max of an empty dim": lambda: torch.ones(2, 0).max(1),
        "T.size(2)": lambda: torch.ones(2, 3).size(2),
        "init.normal_(std=-1)": lambda: torch.nn.init.normal_(torch.ones(2), std=-1),
        "collate unequal shapes": lambda: torch.utils.data.default_collate([torch.ones(2), torch.ones(3)]),
    }
    for name, call in twins.items():
        with pytest.raises(CASES[name][1]):
            call()
