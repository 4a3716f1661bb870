"""TransformerDecoderLayer, TransformerDecoder and Transformer against PyTorch (float64, weights copied)."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
from gradlab import nn

pytestmark = pytest.mark.oracle


def _load(g, t):
    t.double()
    g.double()
    assert list(g.state_dict()) == list(t.state_dict())
    g.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})


def _run_both(torch, g, t, arrays, gkw, tkw, atol=1e-9):
    gins = [gradlab.tensor(a, requires_grad=True) for a in arrays]
    tins = [torch.tensor(a, requires_grad=True) for a in arrays]
    go, to = g(*gins, **gkw), t(*tins, **tkw)
    np.testing.assert_allclose(go.detach().numpy(), to.detach().numpy(), atol=atol)
    w = np.random.randn(*to.shape)
    (go * gradlab.tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    for i, (a, b) in enumerate(zip(gins, tins)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=atol, err_msg=f"input {i}")
    tp = dict(t.named_parameters())
    for name, p in g.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tp[name].grad.numpy(), atol=atol, err_msg=name)


@pytest.mark.parametrize("kw", [{}, {"norm_first": True, "activation": "gelu"}, {"batch_first": True, "bias": False}])
@pytest.mark.parametrize("masks", [False, True])
def test_decoder_layer_matches_torch(torch, kw, masks):
    g = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, **kw)
    t = torch.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, **kw)
    _load(g, t)
    T, S, N = 4, 6, 2
    bf = kw.get("batch_first")
    tgt, mem = np.random.randn(*((N, T, 8) if bf else (T, N, 8))), np.random.randn(*((N, S, 8) if bf else (S, N, 8)))
    gkw, tkw = {}, {}
    if masks:
        causal = np.triu(np.ones((T, T), dtype=bool), 1)
        pad = np.zeros((N, S), dtype=bool)
        pad[1, -2:] = True
        gkw = {"tgt_mask": gradlab.tensor(causal), "memory_key_padding_mask": gradlab.tensor(pad)}
        tkw = {"tgt_mask": torch.tensor(causal), "memory_key_padding_mask": torch.tensor(pad)}
    _run_both(torch, g, t, [tgt, mem], gkw, tkw)


def test_transformer_matches_torch(torch):
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16, dropout=0.0,
              batch_first=True)
    g, t = nn.Transformer(**kw), torch.nn.Transformer(**kw)
    _load(g, t)
    mask = nn.Transformer.generate_square_subsequent_mask(3, dtype=gradlab.float64)
    tmask = torch.nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64)
    np.testing.assert_array_equal(mask.numpy(), tmask.numpy())
    src, tgt = np.random.randn(2, 5, 8), np.random.randn(2, 3, 8)
    _run_both(torch, g, t, [src, tgt], {"tgt_mask": mask}, {"tgt_mask": tmask})
    # xavier_uniform_ on every matrix, as PyTorch
    w = gradlab.nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                               dim_feedforward=32).encoder.layers[0].linear1.weight.detach().numpy()
    assert np.abs(w).max() <= np.sqrt(6 / (16 + 32)) + 1e-7
    with pytest.raises(gradlab.errors.GradlabError, match="batch size"):
        g(gradlab.randn(2, 5, 8, dtype=gradlab.float64), gradlab.randn(3, 3, 8, dtype=gradlab.float64))
    with pytest.raises(gradlab.errors.GradlabError, match="d_model"):
        g(gradlab.randn(2, 5, 4, dtype=gradlab.float64), gradlab.randn(2, 3, 4, dtype=gradlab.float64))
