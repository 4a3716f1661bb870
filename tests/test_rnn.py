"""Recurrent layers (RNNCell/LSTMCell/GRUCell, RNN/LSTM/GRU) and TransformerEncoder against PyTorch.

Weights are copied from PyTorch in float64; outputs, final states and the gradients of the
input, the initial state and every parameter must agree.
"""
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
    assert [tuple(v.shape) for v in g.state_dict().values()] == [tuple(v.shape) for v in t.state_dict().values()]
    g.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})


def _pair(torch, a):
    return gradlab.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [y for o in out for y in _flat(o)]
    return [out]


def _check(torch, g, t, gouts, touts, gins, tins, atol=1e-10):
    gouts, touts = _flat(gouts), _flat(touts)
    assert len(gouts) == len(touts)
    gl, tl = 0, 0
    for a, b in zip(gouts, touts):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=atol)
        w = np.random.randn(*b.shape)
        gl, tl = gl + (a * gradlab.tensor(w)).sum(), tl + (b * torch.tensor(w)).sum()
    gl.backward()
    tl.backward()
    for i, (a, b) in enumerate(zip(gins, tins)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=atol, err_msg=f"input {i}")
    tp = dict(t.named_parameters())
    for name, p in g.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tp[name].grad.numpy(), atol=atol, err_msg=name)


CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu", "bias": False}), ("LSTMCell", {}),
         ("LSTMCell", {"bias": False}), ("GRUCell", {}), ("GRUCell", {"bias": False})]


@pytest.mark.parametrize("name,kw", CELLS)
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_state", [True, False])
def test_cells_match_torch(torch, name, kw, batched, with_state):
    g, t = getattr(nn, name)(3, 4, **kw), getattr(torch.nn, name)(3, 4, **kw)
    _load(g, t)
    assert g.extra_repr() == t.extra_repr()
    lead = (2,) if batched else ()
    gx, tx = _pair(torch, np.random.randn(*lead, 3))
    gins, tins = [gx], [tx]
    if with_state:
        n = 2 if name == "LSTMCell" else 1
        states = [_pair(torch, np.random.randn(*lead, 4)) for _ in range(n)]
        gins += [s[0] for s in states]
        tins += [s[1] for s in states]
        gs = tuple(s[0] for s in states) if n == 2 else states[0][0]
        ts = tuple(s[1] for s in states) if n == 2 else states[0][1]
        _check(torch, g, t, g(gx, gs), t(tx, ts), gins, tins)
    else:
        _check(torch, g, t, g(gx), t(tx), gins, tins)


SEQ = [
    ("RNN", {}), ("RNN", {"nonlinearity": "relu", "num_layers": 2}), ("RNN", {"bidirectional": True, "bias": False}),
    ("LSTM", {}), ("LSTM", {"num_layers": 2, "bidirectional": True}), ("LSTM", {"batch_first": True, "bias": False}),
    ("LSTM", {"proj_size": 2, "num_layers": 2, "bidirectional": True}),
    ("GRU", {}), ("GRU", {"num_layers": 2, "batch_first": True}), ("GRU", {"bidirectional": True}),
]


@pytest.mark.parametrize("name,kw", SEQ, ids=[f"{n}-{i}" for i, (n, _) in enumerate(SEQ)])
@pytest.mark.parametrize("mode", ["batched_h0", "batched", "unbatched_h0"])
def test_sequence_layers_match_torch(torch, name, kw, mode):
    g, t = getattr(nn, name)(3, 4, **kw), getattr(torch.nn, name)(3, 4, **kw)
    _load(g, t)
    assert g.extra_repr() == t.extra_repr()
    L, N = 5, 2
    shape = (L, 3) if mode.startswith("unbatched") else ((N, L, 3) if kw.get("batch_first") else (L, N, 3))
    gx, tx = _pair(torch, np.random.randn(*shape))
    gins, tins = [gx], [tx]
    if mode.endswith("h0"):
        dirs = 2 if kw.get("bidirectional") else 1
        lead = (kw.get("num_layers", 1) * dirs,) + (() if mode.startswith("unbatched") else (N,))
        sizes = [kw.get("proj_size") or 4, 4] if name == "LSTM" else [4]
        states = [_pair(torch, np.random.randn(*(lead + (size,)))) for size in sizes]
        gins += [s[0] for s in states]
        tins += [s[1] for s in states]
        gs = tuple(s[0] for s in states) if name == "LSTM" else states[0][0]
        ts = tuple(s[1] for s in states) if name == "LSTM" else states[0][1]
        gout, tout = g(gx, gs), t(tx, ts)
    else:
        gout, tout = g(gx), t(tx)
    assert isinstance(gout, tuple) and len(gout) == 2
    if name == "LSTM":
        assert isinstance(gout[1], tuple) and len(gout[1]) == 2
    _check(torch, g, t, gout, tout, gins, tins)


def test_init_and_parameter_names(torch):
    g, t = nn.LSTM(5, 8, num_layers=2, bidirectional=True), torch.nn.LSTM(5, 8, num_layers=2, bidirectional=True)
    assert [n for n, _ in g.named_parameters()] == [n for n, _ in t.named_parameters()]
    bound = 1 / np.sqrt(8)
    ws = np.concatenate([p.detach().numpy().ravel() for p in g.parameters()])
    assert np.abs(ws).max() <= bound and ws.std() == pytest.approx(bound / np.sqrt(3), rel=0.1)
    assert len(g.all_weights) == 4 and len(g.all_weights[0]) == 4
    g.flatten_parameters()  # a no-op, kept for PyTorch code


def test_dropout_between_layers_only_in_training(torch):
    g = nn.GRU(3, 4, num_layers=2, dropout=0.5)
    x = gradlab.randn(6, 2, 3)
    g.eval()
    a, b = g(x)[0].detach().numpy(), g(x)[0].detach().numpy()
    np.testing.assert_array_equal(a, b)
    g.train()
    c = g(x)[0].detach().numpy()
    assert not np.allclose(a, c)
    t = torch.nn.GRU(3, 4, num_layers=2, dropout=0.5)
    assert g.extra_repr() == t.extra_repr()
    with pytest.warns(UserWarning, match="num_layers=1"):
        nn.LSTM(3, 4, dropout=0.2)


def test_rnn_errors_name_the_argument():
    from gradlab.errors import GradlabError
    cases = [
        (lambda: nn.GRU(3, 4, proj_size=2), "proj_size"),
        (lambda: nn.LSTM(3, 4, proj_size=4), "proj_size"),
        (lambda: nn.LSTM(3, 4, proj_size=2)(gradlab.randn(5, 2, 3), (gradlab.randn(1, 2, 4), gradlab.randn(1, 2, 4))),
         "(1, 2, 2)"),
        (lambda: nn.RNN(3, 4, nonlinearity="sigmoid"), "nonlinearity"),
        (lambda: nn.GRU(3, 4, dropout=2.0), "dropout"),
        (lambda: nn.LSTM(3, 4)(gradlab.randn(5, 2, 6)), "input_size is 3"),
        (lambda: nn.LSTM(3, 4)(gradlab.randn(5, 2, 3), gradlab.randn(1, 2, 4)), "(h_0, c_0)"),
        (lambda: nn.GRU(3, 4, num_layers=2)(gradlab.randn(5, 2, 3), gradlab.randn(1, 2, 4)), "(2, 2, 4)"),
        (lambda: nn.RNN(3, 4)(gradlab.randn(2, 5, 2, 3)), "3-D"),
        (lambda: nn.GRUCell(3, 4)(gradlab.randn(2, 3), gradlab.randn(3, 4)), "(2, 4)"),
        (lambda: nn.LSTMCell(3, 4)(gradlab.randn(2, 3), gradlab.randn(2, 4)), "tuple"),
        (lambda: nn.LSTM(3, 4)(gradlab.tensor([[[1, 2, 3]]])), "nn.Embedding"),
    ]
    for make, word in cases:
        with pytest.raises(GradlabError) as e:
            make()
        assert word in str(e.value), str(e.value)


def test_lstm_graph_is_drawable_and_backprops_through_time():
    m = nn.LSTM(2, 3)
    out, (h, c) = m(gradlab.randn(4, 1, 2))
    loss = out.sum() + c.sum()
    loss.backward()
    assert all(p.grad is not None for p in m.parameters())
    svg = gradlab.show_graph(loss)
    assert svg is not None


@pytest.mark.parametrize("bidirectional", [False, True])
def test_lstm_sequence_node_equals_the_step_by_step_graph(bidirectional):
    """nn.LSTM runs each layer direction as one fused_lstm node; it must agree with the loop of fused steps."""
    from gradlab.nn import functional as F
    from gradlab.nn.modules.rnn import _step
    m = nn.LSTM(3, 4, bidirectional=bidirectional).double()
    x = gradlab.randn(5, 2, 3, dtype=gradlab.float64, requires_grad=True)
    out, (h, c) = m(x)
    assert sum(n.name == "fused_lstm" for n in _nodes(out.grad_fn)) == (2 if bidirectional else 1)
    (out.sum() + (c * c).sum()).backward()
    got = [x.grad.numpy()] + [p.grad.numpy() for p in m.parameters()]
    x.grad = None
    m.zero_grad()
    outs, cs = [], []
    for sfx in ["_l0", "_l0_reverse"][:2 if bidirectional else 1]:
        w_ih, w_hh, b_ih, b_hh = (getattr(m, k + sfx) for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
        hh, cc = gradlab.zeros(2, 4, dtype=gradlab.float64), gradlab.zeros(2, 4, dtype=gradlab.float64)
        ys = [None] * 5
        for t in (range(4, -1, -1) if sfx.endswith("reverse") else range(5)):
            hh, cc = _step("LSTM", F.linear(x[t], w_ih, b_ih), hh, cc, w_hh, b_hh)
            ys[t] = hh
        outs.append(gradlab.stack(ys, 0))
        cs.append(cc)
    ref = outs[0] if len(outs) == 1 else gradlab.cat(outs, -1)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-12)
    (ref.sum() + sum((cc * cc).sum() for cc in cs)).backward()
    want = [x.grad.numpy()] + [p.grad.numpy() for p in m.parameters()]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def _nodes(root):
    seen, stack = set(), [root]
    while stack:
        n = stack.pop()
        if n is not None and n not in seen:
            seen.add(n)
            stack.extend(e[0] for e in n.next_functions if e is not None)
    return seen

# ---------------------------------------------------------------------------------- transformer
ENC = [
    {}, {"norm_first": True}, {"activation": "gelu", "batch_first": True}, {"bias": False, "norm_first": True},
]


@pytest.mark.parametrize("kw", ENC, ids=[str(i) for i in range(len(ENC))])
@pytest.mark.parametrize("masks", ["none", "causal_bool", "padding", "is_causal"])
def test_transformer_encoder_layer_matches_torch(torch, kw, masks):
    g = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, **kw)
    t = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, **kw)
    _load(g, t)
    S, N = 5, 3
    shape = (N, S, 8) if kw.get("batch_first") else (S, N, 8)
    gx, tx = _pair(torch, np.random.randn(*shape))
    gkw, tkw = {}, {}
    if masks in ("causal_bool", "is_causal"):
        m = np.triu(np.ones((S, S), dtype=bool), 1)
        gkw["src_mask"], tkw["src_mask"] = gradlab.tensor(m), torch.tensor(m)
        if masks == "is_causal":
            gkw["is_causal"] = tkw["is_causal"] = True
    if masks == "padding":
        p = np.zeros((N, S), dtype=bool)
        p[0, -2:] = True
        gkw["src_key_padding_mask"], tkw["src_key_padding_mask"] = gradlab.tensor(p), torch.tensor(p)
    _check(torch, g, t, g(gx, **gkw), t(tx, **tkw), [gx], [tx], atol=1e-9)


def test_transformer_encoder_stack_matches_torch(torch):
    layer_g = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    layer_t = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    g = nn.TransformerEncoder(layer_g, 2, norm=nn.LayerNorm(8))
    t = torch.nn.TransformerEncoder(layer_t, 2, norm=torch.nn.LayerNorm(8), enable_nested_tensor=False)
    with torch.no_grad():
        for p in t.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    _load(g, t)
    gx, tx = _pair(torch, np.random.randn(2, 4, 8))
    m = np.triu(np.ones((4, 4), dtype=bool), 1)
    _check(torch, g, t, g(gx, mask=gradlab.tensor(m)), t(tx, mask=torch.tensor(m)), [gx], [tx], atol=1e-9)
    # the copies start equal but are separate parameters
    assert g.layers[0].linear1.weight is not g.layers[1].linear1.weight
    with pytest.raises(gradlab.errors.GradlabError, match="activation"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")


def test_linear_skips_its_checks_only_when_they_cannot_matter(monkeypatch):
    """``F.linear`` (each time step of a recurrent layer calls it) sends the everyday call straight to
    its one node; any call whose checks could change something (another dtype, half precision, a
    bias that broadcasts, a vector, autocast) runs them. Either way the same numbers as the composite."""
    from gradlab.nn import _linear, functional as F

    checked = []
    real_check = _linear.check_tensor
    monkeypatch.setattr(_linear, "check_tensor", lambda *a: checked.append(a[1]) or real_check(*a))

    def takes_checks(*args):
        checked.clear()
        out = F.linear(*args)
        return bool(checked), out

    h, w, b = (gradlab.randn(*s, requires_grad=True) for s in ((4, 3), (6, 3), (6,)))
    assert takes_checks(h, w, b)[0] is False                       # the everyday call: one node, no checks
    assert takes_checks(h, w)[0] is False                          # no bias
    assert takes_checks(h.double(), w.double(), b.double())[0] is False
    assert takes_checks(h.half(), w.half(), b.half())[0] is True   # half precision: the composite
    assert takes_checks(h[0], w, b)[0] is True                     # a vector input
    assert takes_checks(h, w, gradlab.randn(4, 6))[0] is True      # a bias that broadcasts
    with gradlab.autocast("cpu"):
        assert takes_checks(h, w, b)[0] is True                    # autocast casts, then the checks run
    with pytest.raises(gradlab.errors.DTypeError, match="linear"):
        F.linear(h.double(), w, b)                                 # dtypes differ: the checks' error
    with pytest.raises(gradlab.errors.DTypeError, match="bias"):
        F.linear(h, w, b.double())
    with pytest.raises(gradlab.errors.ShapeError, match="features"):
        F.linear(gradlab.randn(4, 5), w, b)
    # the node's numbers and gradients are the composite's
    out = F.linear(h, w, b)
    assert out.grad_fn.name == "linear"
    out.sum().backward()
    got = [t.grad.numpy().copy() for t in (h, w, b)]
    for t in (h, w, b):
        t.grad = None
    ref = h @ w.mT + b
    ref.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-6)
    for a, t in zip(got, (h, w, b)):
        np.testing.assert_allclose(a, t.grad.numpy(), rtol=1e-6)
