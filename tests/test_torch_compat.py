"""What real PyTorch programs reach for, beyond the ops (issue #23): module paths, state_dict order for every
``nn`` layer, the samplers and the loader, the optimizers step by step, the pass-throughs and refusals. Each
compared with PyTorch where PyTorch has the thing."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradlab
import gradlab.nn as gnn

pytestmark = pytest.mark.oracle

#: constructor arguments tried in order (the first PyTorch accepts is used for both libraries)
_CANDIDATE_ARGS = [(), (4,), (4, 4), (4, 6, 3), (2, 4), (4, 2, 2), ((4,),), (4, 4, 4)]
_SPECIAL = {
    "MultiheadAttention": (8, 2), "Transformer": dict(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                                                      dim_feedforward=16),
    "TransformerEncoderLayer": (8, 2, 16), "TransformerDecoderLayer": (8, 2, 16),
    "Embedding": (10, 4), "EmbeddingBag": (10, 4), "Bilinear": (3, 4, 5), "GroupNorm": (2, 4),
    "RNN": (4, 6, 2), "LSTM": (4, 6, 2), "GRU": (4, 6, 2), "RNNCell": (4, 6), "LSTMCell": (4, 6), "GRUCell": (4, 6),
    "PReLU": (3,), "RMSNorm": (4,), "LayerNorm": (4,), "Upsample": dict(scale_factor=2),
    "UpsamplingNearest2d": dict(scale_factor=2), "UpsamplingBilinear2d": dict(scale_factor=2),
}
_SKIP = {"TransformerEncoder", "TransformerDecoder", "Module", "Container", "RNNBase", "RNNCellBase", "SyncBatchNorm"}


def _layer_names(torch):
    import torch.nn.modules as tm
    names = []
    for n in tm.__all__:
        if n in _SKIP or n.startswith("Lazy") or not hasattr(gnn, n) or not isinstance(getattr(tm, n), type):
            continue
        names.append(n)
    return names


def _build(lib_nn, name, torch_nn):
    spec = _SPECIAL.get(name)
    cands = [spec] if spec is not None else _CANDIDATE_ARGS
    for args in cands:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if isinstance(args, dict):
                    t = getattr(torch_nn, name)(**args)
                else:
                    t = getattr(torch_nn, name)(*args)
        except Exception:  # noqa: BLE001 - try the next signature
            continue
        try:
            g = getattr(lib_nn, name)(**args) if isinstance(args, dict) else getattr(lib_nn, name)(*args)
        except Exception as e:  # noqa: BLE001
            raise AssertionError(f"{name}{args}: PyTorch builds it, gradlab raises {type(e).__name__}: {e}") from e
        return g, t
    return None, None


def test_state_dict_key_order_matches_pytorch_for_every_layer(torch):
    """Every layer gradlab shares with torch.nn: the same state_dict keys in the same order, the same shapes
    (optimizers, checkpoints and weight copying all walk this order)."""
    checked, differ = [], []
    for name in _layer_names(torch):
        g, t = _build(gnn, name, torch.nn)
        if t is None:
            continue
        gk = [(k, tuple(v.shape)) for k, v in g.state_dict().items()]
        tk = [(k, tuple(v.shape)) for k, v in t.state_dict().items()]
        if gk != tk:
            differ.append((name, gk, tk))
        checked.append(name)
    print(len(checked), "layers checked")
    assert len(checked) > 90, checked
    assert not differ, differ


def test_reassigned_parameter_and_submodule_keep_their_place(torch):
    def order(L):
        class Net(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = L.nn.Linear(2, 3)
                self.b = L.nn.Linear(3, 2)
                self.scale = L.nn.Parameter(L.ones(2))
                self.head = L.nn.Linear(2, 2)

        net = Net()
        net.a = L.nn.Linear(2, 3)                             # replace a submodule
        net.scale = L.nn.Parameter(L.zeros(2))                # replace a parameter
        net.head.weight = net.b.weight.T.contiguous() if False else L.nn.Parameter(L.zeros(2, 2))  # tie / swap
        net.add_module("b", L.nn.Linear(3, 2))
        return list(net.state_dict()), [tuple(p.shape) for p in net.parameters()]
    assert order(gradlab) == order(torch)
