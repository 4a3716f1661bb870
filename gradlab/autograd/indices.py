"""What an index means, for reading (``x[i]``, ``ops/indexing.py``) and writing (``x[i] = v``,
``autograd/inplace.py``) alike.

Holds: ``normalize_index`` (tensors and lists inside an index become arrays; float indices and
non-positive slice steps refused, as PyTorch refuses them), ``check_steps`` (the slice-step check
alone, for the plain ``x[:, 3:5]`` path) and ``ints_first`` (PyTorch applies integer indices before
index arrays; NumPy does not), and ``assign`` (``arr[index] = value`` with that meaning). They live below
the ops so that writing through an index, an autograd matter, reads the same rules as reading without
importing the ops.
"""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from ..errors import ArgumentError, ArgumentTypeError, IndexTypeError


def check_steps(index, op="getitem"):
    """PyTorch refuses a zero or negative slice step (``x[::-1]``): tensors have no reversed views."""
    for i in (index if type(index) is tuple else (index,)):
        if type(i) is slice and i.step is not None and i.step <= 0:
            raise ArgumentError(f"{op}: step must be greater than zero, got the slice step {i.step}; "
                                "to reverse a dim use x.flip(dim)")


def _sequence_as_tuple(index):
    """PyTorch's legacy rule: a list that holds a sequence, a tensor, a slice, None or ``...`` indexes like a
    tuple (``x[[[0, 1], [1, 0]]]`` is ``x[[0, 1], [1, 0]]``), with a deprecation warning."""
    if type(index) is not list or len(index) >= 32:
        return index
    if any(isinstance(i, (list, tuple, Tensor, slice, np.ndarray)) or i is None or i is Ellipsis for i in index):
        import warnings
        warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated; use "
                      "x[tuple(seq)] instead of x[seq] (a later PyTorch will read it as x[torch.tensor(seq)])",
                      UserWarning, stacklevel=4)
        return tuple(index)
    return index


def _outside_gradlab() -> int:
    """The ``stacklevel`` of the first caller outside the gradlab package (a warning names the user's line)."""
    import os
    import sys
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    f, level = sys._getframe(2), 2
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(pkg):
        f, level = f.f_back, level + 1
    return level


def normalize_index(index, shape, op="getitem"):
    """Turn tensors and lists inside an index into arrays; check float indices and slice steps."""
    index = _sequence_as_tuple(index)
    check_steps(index, op)
    def conv(i):
        if isinstance(i, Tensor):
            if i.dtype == np.uint8:  # PyTorch reads a uint8 index as a mask (deprecated): so does gradlab
                import warnings
                warnings.warn("indexing with dtype uint8 is now deprecated, please use a dtype bool instead "
                              "(it is read as a mask, as PyTorch reads it, not as positions)", UserWarning,
                              stacklevel=_outside_gradlab())
                return i._data.astype(bool)
            i = i._data
        elif isinstance(i, list):
            i = np.asarray(i)
            if i.size == 0:
                i = i.astype(np.int64)
        if isinstance(i, np.ndarray) and i.dtype.kind not in "biu":
            raise IndexTypeError(f"{op}: index arrays must hold integers or bools, got dtype {i.dtype}; "
                            "convert with .long() (or build a boolean mask)")
        if isinstance(i, float):
            raise ArgumentTypeError(f"{op}: {i!r} is a float; indices must be integers")
        if isinstance(i, (str, bytes, dict, set)):  # (a TypeError, as PyTorch's)
            raise IndexTypeError(f"{op}: {i!r} ({type(i).__name__}) is not an index; index with integers, slices (:), "
                                 "..., None, or integer/bool tensors")
        return i
    if isinstance(index, tuple):
        return tuple(conv(i) for i in index)
    return conv(index)


def ints_first(idx):
    """Split an index mixing integers with index arrays into (integers, the rest), or None.

    PyTorch applies integer indices first, as basic indexing, and then the index arrays; NumPy
    counts the integers as index arrays too, which moves the picked dims to the front whenever
    they are separated by a slice or None (``x[0, :, [1, 2]]`` would come out transposed).
    """
    if not isinstance(idx, tuple):
        return None
    def is_int(i):
        return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))
    def is_array(i):
        return hasattr(i, "shape") and hasattr(i, "dtype") and len(i.shape) > 0
    if not (any(is_int(i) for i in idx) and any(is_array(i) for i in idx)):
        return None
    first, rest = [], []
    for i in idx:
        if is_int(i):
            first.append(i)
        elif i is None:
            first.append(None)
            rest.append(slice(None))
        elif i is Ellipsis:
            first.append(Ellipsis)
            rest.append(Ellipsis)
        else:  # a slice or an index array (a bool mask covers as many dims as it has)
            first.extend([slice(None)] * (len(i.shape) if is_array(i) and i.dtype.kind == "b" else 1))
            rest.append(i)
    return tuple(first), tuple(rest)


def assign(arr, index, value):
    """``arr[index] = value`` with PyTorch's meaning of an index mixing integers and index arrays
    (the integers apply first; see :func:`ints_first`)."""
    split = ints_first(index)
    if split is None:
        arr[index] = value
    else:
        arr[split[0]][split[1]] = value  # arr[ints] is a view: the write lands in arr
