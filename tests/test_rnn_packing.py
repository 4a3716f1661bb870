"""gradlab.nn.utils.rnn (pad / pack variable-length sequences) and RNNs on PackedSequence, against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
from gradlab import nn
from gradlab.nn.utils.rnn import (
    PackedSequence,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpack_sequence,
)

pytestmark = pytest.mark.oracle


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_matches_torch(torch, batch_first, side):
    arrays = [np.random.randn(n, 3) for n in (4, 2, 5)]
    gs = [gradlab.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    g = pad_sequence(gs, batch_first=batch_first, padding_value=-1.5, padding_side=side)
    t = torch.nn.utils.rnn.pad_sequence(ts, batch_first=batch_first, padding_value=-1.5, padding_side=side)
    np.testing.assert_array_equal(g.detach().numpy(), t.detach().numpy())
    w = np.random.randn(*t.shape)
    (g * gradlab.tensor(w)).sum().backward()
    (t * torch.tensor(w)).sum().backward()
    for a, b in zip(gs, ts):
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())


@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_and_unpack_match_torch(torch, enforce_sorted, batch_first):
    lengths = [5, 3, 3, 1] if enforce_sorted else [2, 5, 1, 3]
    x = np.random.randn(4, 5, 2) if batch_first else np.random.randn(5, 4, 2)
    gx, tx = gradlab.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    g = pack_padded_sequence(gx, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    t = torch.nn.utils.rnn.pack_padded_sequence(tx, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    assert isinstance(g, PackedSequence)
    np.testing.assert_array_equal(g.data.detach().numpy(), t.data.detach().numpy())
    np.testing.assert_array_equal(g.batch_sizes.numpy(), t.batch_sizes.numpy())
    if enforce_sorted:
        assert g.sorted_indices is None and t.sorted_indices is None
    else:
        np.testing.assert_array_equal(g.sorted_indices.numpy(), t.sorted_indices.numpy())
        np.testing.assert_array_equal(g.unsorted_indices.numpy(), t.unsorted_indices.numpy())
    gp, gl = pad_packed_sequence(g, batch_first=batch_first, padding_value=9.0, total_length=6)
    tp, tl = torch.nn.utils.rnn.pad_packed_sequence(t, batch_first=batch_first, padding_value=9.0, total_length=6)
    np.testing.assert_array_equal(gp.detach().numpy(), tp.detach().numpy())
    np.testing.assert_array_equal(gl.numpy(), tl.numpy())
    w = np.random.randn(*tp.shape)
    (gp * gradlab.tensor(w)).sum().backward()
    (tp * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(gx.grad.numpy(), tx.grad.numpy())


def test_pack_sequence_round_trip():
    seqs = [gradlab.randn(n, 3) for n in (2, 4, 1)]
    packed = pack_sequence(seqs, enforce_sorted=False)
    back = unpack_sequence(packed)
    assert [tuple(s.shape) for s in back] == [(2, 3), (4, 3), (1, 3)]
    for a, b in zip(seqs, back):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(gradlab.errors.GradlabError, match="enforce_sorted"):
        pack_sequence(seqs)


@pytest.mark.parametrize("name,kw", [("LSTM", {"num_layers": 2, "bidirectional": True}), ("GRU", {}),
                                     ("RNN", {"bidirectional": True, "batch_first": True}),
                                     ("LSTM", {"batch_first": True, "proj_size": 3})])
@pytest.mark.parametrize("with_h0", [False, True])
def test_rnn_on_packed_sequence_matches_torch(torch, name, kw, with_h0):
    g, t = getattr(nn, name)(3, 4, **kw), getattr(torch.nn, name)(3, 4, **kw).double()
    g.double()
    g.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    bf = kw.get("batch_first", False)
    lengths = [3, 5, 1, 4]
    x = np.random.randn(4, 5, 3) if bf else np.random.randn(5, 4, 3)
    gx, tx = gradlab.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    gp = pack_padded_sequence(gx, lengths, batch_first=bf, enforce_sorted=False)
    tp = torch.nn.utils.rnn.pack_padded_sequence(tx, lengths, batch_first=bf, enforce_sorted=False)
    gins, tins = [gx], [tx]
    ghx = thx = None
    if with_h0:
        dirs = 2 if kw.get("bidirectional") else 1
        sizes = [kw.get("proj_size") or 4, 4] if name == "LSTM" else [4]
        hs = [np.random.randn(kw.get("num_layers", 1) * dirs, 4, size) for size in sizes]
        gh = [gradlab.tensor(h, requires_grad=True) for h in hs]
        th = [torch.tensor(h, requires_grad=True) for h in hs]
        gins, tins = gins + gh, tins + th
        ghx, thx = (tuple(gh), tuple(th)) if name == "LSTM" else (gh[0], th[0])
    gout, gstate = g(gp, ghx)
    tout, tstate = t(tp, thx)
    assert isinstance(gout, PackedSequence)
    np.testing.assert_array_equal(gout.batch_sizes.numpy(), tout.batch_sizes.numpy())
    gstates = list(gstate) if name == "LSTM" else [gstate]
    tstates = list(tstate) if name == "LSTM" else [tstate]
    gpad, _ = pad_packed_sequence(gout, batch_first=bf)
    tpad, _ = torch.nn.utils.rnn.pad_packed_sequence(tout, batch_first=bf)
    gl, tl = 0, 0
    for a, b in zip([gout.data, gpad] + gstates, [tout.data, tpad] + tstates):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-10)
        w = np.random.randn(*b.shape)
        gl, tl = gl + (a * gradlab.tensor(w)).sum(), tl + (b * torch.tensor(w)).sum()
    gl.backward()
    tl.backward()
    for a, b in zip(gins, tins):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-10)
    tparams = dict(t.named_parameters())
    for n_, p in g.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tparams[n_].grad.numpy(), atol=1e-10, err_msg=n_)
