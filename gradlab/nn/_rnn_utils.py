"""``gradlab.nn.utils.rnn``: padding and packing variable-length sequences, as ``torch.nn.utils.rnn``.

A batch of sequences of different lengths is stored either *padded* (one ``(L_max, B, *)``
tensor, short sequences filled with ``padding_value``) or *packed*: a ``PackedSequence`` keeps
only the real steps, time step by time step (``data`` is ``(sum of lengths, *)``) with
``batch_sizes[t]`` = how many sequences are still running at step ``t``. An RNN given a packed
sequence runs each sequence exactly for its own length, so padding never leaks into ``h_n``.

The sequences are sorted by decreasing length inside (``enforce_sorted=False`` lets this module
do the sorting and remember ``sorted_indices`` / ``unsorted_indices`` to undo it).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import ops as O
from .._tensor import Tensor
from ..errors import ArgumentError, ShapeError, fmt_shape
from ..factories import tensor as _tensor
from ..ops._util import check_tensor
from ..ops.pad import pad as _pad

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence", "pack_sequence",
           "unpad_sequence", "unpack_sequence"]


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """``data`` ``(sum of lengths, *)``, ``batch_sizes`` (int64, one per time step), and the permutation
    (``sorted_indices``, ``unsorted_indices``, or None when the batch was already sorted)."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        return type(self)(self.data.to(*args, **kwargs), self.batch_sizes, self.sorted_indices,
                          self.unsorted_indices)

    def double(self):
        return self.to(np.float64)

    def float(self):
        return self.to(np.float32)

    @property
    def is_cuda(self):
        return self.data.device.type == "cuda"

    def _batch_sizes(self):
        return [int(b) for b in np.asarray(self.batch_sizes.numpy() if isinstance(self.batch_sizes, Tensor)
                                           else self.batch_sizes)]


def _invert(perm):
    p = np.asarray(perm.numpy() if isinstance(perm, Tensor) else perm)
    inv = np.empty_like(p)
    inv[p] = np.arange(len(p))
    return _tensor(inv.astype(np.int64))


def _lengths(lengths):
    if isinstance(lengths, Tensor):
        lengths = lengths.detach().numpy() if lengths.requires_grad else lengths.numpy()
    arr = np.asarray(lengths)
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
        raise ArgumentError(f"pack_padded_sequence: lengths must be a 1-D list or tensor of integers, got {lengths!r}")
    return arr.astype(np.int64)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of shapes ``(L_i, *)`` into ``(L_max, B, *)`` (``(B, L_max, *)`` if ``batch_first``),
    filling the missing steps with ``padding_value`` (on the right, or the left with ``padding_side='left'``)."""
    seqs = [check_tensor(s, "pad_sequence", f"sequences[{i}]") for i, s in enumerate(sequences)]
    if not seqs:
        raise ArgumentError("pad_sequence: got an empty list of sequences")
    if padding_side not in ("right", "left"):
        raise ArgumentError(f"pad_sequence: padding_side must be 'right' or 'left', got {padding_side!r}")
    trail = tuple(seqs[0].shape[1:])
    for i, s in enumerate(seqs):
        if s.ndim == 0 or tuple(s.shape[1:]) != trail:
            raise ShapeError(f"pad_sequence: every sequence must be (L_i, *{trail}); sequences[{i}] is "
                             f"{fmt_shape(s.shape)}")
    n = max(s.shape[0] for s in seqs)
    padded = []
    for s in seqs:
        extra = n - s.shape[0]
        amounts = (0, 0) * (s.ndim - 1) + ((0, extra) if padding_side == "right" else (extra, 0))
        padded.append(_pad(s, amounts, value=padding_value) if extra else s)
    return O.stack(padded, 0 if batch_first else 1)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded ``(L, B, *)`` batch (``(B, L, *)`` if ``batch_first``) whose sequence ``b`` has
    ``lengths[b]`` real steps. With ``enforce_sorted=True`` the lengths must be decreasing."""
    x = check_tensor(input, "pack_padded_sequence")
    lens = _lengths(lengths)
    if x.ndim < 2:
        raise ShapeError(f"pack_padded_sequence: input must have a time and a batch dim, got {fmt_shape(x.shape)}")
    if batch_first:
        x = O.transpose(x, 0, 1)
    if len(lens) != x.shape[1]:
        raise ShapeError(f"pack_padded_sequence: got {len(lens)} lengths for a batch of {x.shape[1]} sequences "
                         f"(input {fmt_shape(input.shape)}, batch_first={batch_first})")
    if lens.min() <= 0 or lens.max() > x.shape[0]:
        raise ArgumentError(f"pack_padded_sequence: every length must be between 1 and the padded length "
                            f"{x.shape[0]}, got {lens.tolist()}")
    sorted_indices = None
    if enforce_sorted:
        if np.any(np.diff(lens) > 0):
            raise ArgumentError(f"pack_padded_sequence: lengths {lens.tolist()} must be sorted in decreasing order "
                                "when enforce_sorted=True; pass enforce_sorted=False to have them sorted for you")
    else:
        order = np.argsort(-lens, kind="stable")
        sorted_indices = _tensor(order.astype(np.int64))
        lens = lens[order]
        x = x[:, sorted_indices]
    batch_sizes = np.array([(lens > t).sum() for t in range(int(lens[0]))], dtype=np.int64)
    data = O.cat([x[t, :int(b)] for t, b in enumerate(batch_sizes)], 0)
    return PackedSequence(data, _tensor(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo ``pack_padded_sequence``: returns ``(padded, lengths)`` in the batch's original order."""
    if not isinstance(sequence, PackedSequence):
        raise ArgumentError(f"pad_packed_sequence: expected a PackedSequence, got {type(sequence).__name__}")
    sizes = sequence._batch_sizes()
    n, steps = sizes[0], len(sizes)
    if total_length is not None:
        if total_length < steps:
            raise ArgumentError(f"pad_packed_sequence: total_length={total_length} is shorter than the longest "
                                f"sequence ({steps} steps)")
    rows, off = [], 0
    data = sequence.data
    trail = (0, 0) * (data.ndim - 1)
    for b in sizes:
        step = data[off:off + b]
        rows.append(_pad(step, trail + (0, n - b), value=padding_value) if b < n else step)
        off += b
    out = O.stack(rows, 0)
    if total_length is not None and total_length > steps:
        out = _pad(out, (0, 0) * (out.ndim - 1) + (0, total_length - steps), value=padding_value)
    lengths = np.array([sum(1 for b in sizes if b > j) for j in range(n)], dtype=np.int64)
    if sequence.unsorted_indices is not None:
        out = out[:, sequence.unsorted_indices]
        lengths = lengths[np.asarray(sequence.unsorted_indices.numpy())]
    if batch_first:
        out = O.transpose(out, 0, 1)
    return out, _tensor(lengths)


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of ``(L_i, *)`` tensors (``pad_sequence`` then ``pack_padded_sequence``)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Split a padded batch back into a list of ``(L_i, *)`` tensors."""
    x = padded_sequences if batch_first else O.transpose(padded_sequences, 0, 1)
    return [x[i, :int(n)] for i, n in enumerate(_lengths(lengths))]


def unpack_sequence(packed_sequences):
    """Split a ``PackedSequence`` back into the list of its sequences (original order)."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
