"""Small PyTorch-style student programs using the newer layers, run in gradlab and in PyTorch from the same
initial weights: the losses must follow the same trajectory over a few optimizer steps."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
from gradlab import nn

pytestmark = pytest.mark.oracle


def _build(lib, kind):
    """The same model in gradlab (``lib = gradlab``) or PyTorch (``lib = torch``)."""
    N = lib.nn

    class CharLSTM(N.Module):
        def __init__(self):
            super().__init__()
            self.emb = N.Embedding(11, 6)
            self.rnn = N.LSTM(6, 8, num_layers=2, batch_first=True, dropout=0.0)
            self.head = N.Linear(8, 11)

        def forward(self, idx):
            out, (h, c) = self.rnn(self.emb(idx))
            return self.head(out)

    class Seq2SeqGRU(N.Module):
        def __init__(self):
            super().__init__()
            self.enc = N.GRU(3, 6, bidirectional=True)
            self.bridge = N.Linear(12, 6)
            self.cell = N.GRUCell(3, 6)
            self.out = N.Linear(6, 3)

        def forward(self, src, tgt):
            _, h = self.enc(src)
            h = lib.tanh(self.bridge(lib.cat([h[0], h[1]], dim=-1)))
            outs = []
            for t in range(tgt.shape[0]):  # teacher forcing
                h = self.cell(tgt[t], h)
                outs.append(self.out(h))
            return lib.stack(outs)

    class Conv1dNet(N.Module):
        def __init__(self):
            super().__init__()
            self.features = N.Sequential(
                N.Conv1d(2, 4, 3, padding=1), N.GroupNorm(2, 4), N.LeakyReLU(0.1), N.MaxPool1d(2),
                N.Conv1d(4, 6, 3, padding="same"), N.ELU(), N.AdaptiveAvgPool1d(2), N.Flatten(),
            )
            self.head = N.Linear(12, 3)

        def forward(self, x):
            return self.head(self.features(x))

    class ConvAutoencoder(N.Module):
        def __init__(self):
            super().__init__()
            self.enc = N.Sequential(N.Conv2d(1, 4, 3, stride=2, padding=1), N.PReLU(4))
            self.dec = N.Sequential(N.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1), N.Mish(),
                                    N.Upsample(scale_factor=1, mode="nearest"), N.Conv2d(2, 1, 1), N.Sigmoid())

        def forward(self, x):
            return self.dec(self.enc(x))

    class EncoderClassifier(N.Module):
        def __init__(self):
            super().__init__()
            layer = N.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True,
                                              norm_first=True, activation="gelu")
            self.encoder = N.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = N.Linear(8, 2)

        def forward(self, x, pad):
            h = self.encoder(x, src_key_padding_mask=pad)
            return self.head(h.mean(dim=1))

    return {"lstm": CharLSTM, "gru": Seq2SeqGRU, "conv1d": Conv1dNet, "ae": ConvAutoencoder,
            "enc": EncoderClassifier}[kind]()


def _data(kind):
    rng = np.random.default_rng(0)
    if kind == "lstm":
        idx = rng.integers(0, 11, (4, 7))
        return [idx[:, :-1]], idx[:, 1:]
    if kind == "gru":
        return [rng.standard_normal((5, 2, 3)), rng.standard_normal((4, 2, 3))], rng.standard_normal((4, 2, 3))
    if kind == "conv1d":
        return [rng.standard_normal((4, 2, 8))], rng.integers(0, 3, 4)
    if kind == "ae":
        x = rng.uniform(0, 1, (2, 1, 6, 6))
        return [x], x
    pad = np.zeros((3, 5), dtype=bool)
    pad[0, 3:] = True
    return [rng.standard_normal((3, 5, 8)), pad], rng.integers(0, 2, 3)


def _loss(lib, kind, out, target):
    F = lib.nn.functional
    if kind == "lstm":
        return F.cross_entropy(out.reshape(-1, 11), target.reshape(-1))
    if kind == "gru":
        return lib.nn.SmoothL1Loss(beta=0.5)(out, target)
    if kind == "ae":
        return lib.nn.BCELoss()(out, target)
    return lib.nn.CrossEntropyLoss()(out, target)


@pytest.mark.parametrize("kind", ["lstm", "gru", "conv1d", "ae", "enc"])
def test_training_trajectory_matches_torch(torch, kind):
    t_model, g_model = _build(torch, kind).double(), _build(gradlab, kind).double()
    assert list(g_model.state_dict()) == list(t_model.state_dict())
    g_model.load_state_dict({k: v.detach().numpy() for k, v in t_model.state_dict().items()})
    inputs, target = _data(kind)
    t_opt = torch.optim.Adam(t_model.parameters(), lr=1e-2)
    g_opt = gradlab.optim.Adam(g_model.parameters(), lr=1e-2)
    for _ in range(3):
        t_opt.zero_grad()
        g_opt.zero_grad()
        tl = _loss(torch, kind, t_model(*[torch.tensor(a) for a in inputs]), torch.tensor(target))
        gl = _loss(gradlab, kind, g_model(*[gradlab.tensor(a) for a in inputs]), gradlab.tensor(target))
        np.testing.assert_allclose(gl.item(), tl.item(), rtol=1e-9, atol=1e-10)
        tl.backward()
        gl.backward()
        torch.nn.utils.clip_grad_norm_(t_model.parameters(), 1.0)
        gradlab.nn.utils.clip_grad_norm_(g_model.parameters(), 1.0)
        t_opt.step()
        g_opt.step()
    for k, v in t_model.state_dict().items():
        np.testing.assert_allclose(g_model.state_dict()[k].numpy(), v.numpy(), rtol=1e-7, atol=1e-9, err_msg=k)


def test_truncated_bptt_with_detached_state():
    """The usual language-model loop: carry (h, c) across batches, detached so backward stops there."""
    m = nn.LSTM(3, 4, batch_first=True)
    state = None
    for _ in range(3):
        out, state = m(gradlab.randn(2, 5, 3), state)
        out.pow(2).mean().backward()
        state = tuple(s.detach() for s in state)
        assert all(s.grad_fn is None and not s.requires_grad for s in state)
    assert m.weight_hh_l0.grad is not None
