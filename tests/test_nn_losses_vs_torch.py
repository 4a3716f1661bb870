"""More torch.nn losses (weights copied, float64), CTC, EmbeddingBag and gumbel_softmax against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
from gradlab import nn

from .test_nn_layers_vs_torch import _compare, _x

pytestmark = pytest.mark.oracle


def _probs(*s):
    return 1 / (1 + np.exp(-np.random.randn(*s)))


def _signs(*s):
    return np.where(np.random.rand(*s) < 0.5, -1.0, 1.0)


LOSSES = [
    ("L1Loss", {}, lambda: [_x(3, 4), _x(3, 4)]), ("L1Loss", {"reduction": "sum"}, lambda: [_x(3, 4), _x(3, 4)]),
    ("L1Loss", {"reduction": "none"}, lambda: [_x(3, 4), _x(3, 4)]),
    ("L1Loss", {"size_average": False}, lambda: [_x(3, 4), _x(3, 4)]),
    ("SmoothL1Loss", {"beta": 0.5}, lambda: [_x(3, 4), _x(3, 4)]),
    ("HuberLoss", {"delta": 0.7, "reduction": "sum"}, lambda: [_x(3, 4), _x(3, 4)]),
    ("BCELoss", {}, lambda: [_probs(3, 4), _probs(3, 4)]),
    ("BCELoss", {"weight": "w4", "reduction": "none"}, lambda: [_probs(3, 4), _probs(3, 4)]),
    ("KLDivLoss", {"reduction": "batchmean"}, lambda: [np.log(_probs(3, 4)), _probs(3, 4)]),
    ("KLDivLoss", {"log_target": True}, lambda: [np.log(_probs(3, 4)), np.log(_probs(3, 4))]),
    ("MarginRankingLoss", {"margin": 0.1}, lambda: [_x(5), _x(5), _signs(5)]),
    ("HingeEmbeddingLoss", {}, lambda: [_x(3, 4), _signs(3, 4)]),
    ("SoftMarginLoss", {}, lambda: [_x(3, 4), _signs(3, 4)]),
    ("MultiLabelSoftMarginLoss", {"weight": "w4"}, lambda: [_x(3, 4), (np.random.rand(3, 4) < 0.5) * 1.0]),
    ("CosineEmbeddingLoss", {"margin": 0.2}, lambda: [_x(5, 3), _x(5, 3), _signs(5)]),
    ("TripletMarginLoss", {"margin": 0.5, "p": 1}, lambda: [_x(4, 3), _x(4, 3), _x(4, 3)]),
    ("PoissonNLLLoss", {}, lambda: [_x(3, 4), np.random.poisson(2.0, (3, 4)) * 1.0]),
    ("GaussianNLLLoss", {}, lambda: [_x(3, 4), _x(3, 4), _probs(3, 4) + 0.1]),
    ("GaussianNLLLoss", {"full": True, "reduction": "sum"}, lambda: [_x(3, 4), _x(3, 4), _probs(3)]),
    ("MultiMarginLoss", {}, lambda: [_x(5, 4), np.random.randint(0, 4, 5)]),
    ("MultiMarginLoss", {"p": 2, "margin": 0.7, "weight": "w4"}, lambda: [_x(5, 4), np.random.randint(0, 4, 5)]),
    ("MultiLabelMarginLoss", {}, lambda: [_x(3, 4), np.array([[3, 0, -1, 1], [1, 2, 3, -1], [-1, 0, 0, 0]])]),
    ("TripletMarginWithDistanceLoss", {"margin": 0.5, "swap": True}, lambda: [_x(4, 3), _x(4, 3), _x(4, 3)]),
    ("TripletMarginWithDistanceLoss", {"distance_function": "cos"}, lambda: [_x(4, 3), _x(4, 3), _x(4, 3)]),
    ("PoissonNLLLoss", {"log_input": False, "full": True},
     lambda: [_probs(3, 4) + 0.5, np.random.poisson(2.0, (3, 4)) * 1.0]),
]


@pytest.mark.parametrize("name,kwargs,make", LOSSES, ids=[f"{c[0]}-{i}" for i, c in enumerate(LOSSES)])
def test_loss_matches_torch(torch, name, kwargs, make):
    w = np.random.rand(4) + 0.5
    special_g = {"w4": gradlab.tensor(w), "cos": lambda a, b: 1 - nn.functional.cosine_similarity(a, b)}
    special_t = {"w4": torch.tensor(w), "cos": lambda a, b: 1 - torch.nn.functional.cosine_similarity(a, b)}
    gkw = {k: special_g.get(v, v) if isinstance(v, str) else v for k, v in kwargs.items()}
    tkw = {k: special_t.get(v, v) if isinstance(v, str) else v for k, v in kwargs.items()}
    g, t = getattr(nn, name)(**gkw), getattr(torch.nn, name)(**tkw)
    assert g.reduction == t.reduction
    inputs = make()
    if name == "GaussianNLLLoss":
        grads = [True, False, True]
    elif name.startswith("Triplet"):
        grads = [True] * 3
    else:
        grads = [True] * (len(inputs) - 1) + [False]
    _compare(torch, g, t, inputs, grads=grads)  # no gradient for the target
    assert list(g.state_dict()) == list(t.state_dict())  # a weight is a buffer in both


@pytest.mark.parametrize("kw,offsets,weighted", [
    ({"mode": "sum"}, [0, 2, 2, 5], True), ({"mode": "mean"}, [0, 3, 4], False), ({"mode": "max"}, [0, 1, 4], False),
    ({"mode": "mean", "padding_idx": 1}, [0, 2, 4], False), ({"mode": "sum", "include_last_offset": True},
                                                             [0, 2, 6], False),
    ({"mode": "max"}, None, False), ({"mode": "mean"}, None, False),
])
def test_embedding_bag_matches_torch(torch, kw, offsets, weighted):
    g, t = nn.EmbeddingBag(6, 3, **kw), torch.nn.EmbeddingBag(6, 3, **kw).double()
    g.double()
    g.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    assert g.extra_repr() == t.extra_repr()
    ids = np.array([1, 4, 1, 5, 0, 2]) if offsets is not None else np.array([[1, 4, 1], [5, 0, 2]])
    gargs, targs = [gradlab.tensor(ids)], [torch.tensor(ids)]
    if offsets is not None:
        gargs.append(gradlab.tensor(offsets))
        targs.append(torch.tensor(offsets))
    gkw, tkw = {}, {}
    if weighted:
        psw = np.random.rand(6)
        gkw["per_sample_weights"] = gp = gradlab.tensor(psw, requires_grad=True)
        tkw["per_sample_weights"] = tp = torch.tensor(psw, requires_grad=True)
    go, to = g(*gargs, **gkw), t(*targs, **tkw)
    np.testing.assert_allclose(go.detach().numpy(), to.detach().numpy(), atol=1e-12)
    w = np.random.randn(*to.shape)
    (go * gradlab.tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(g.weight.grad.numpy(), t.weight.grad.numpy(), atol=1e-12)
    if weighted:
        np.testing.assert_allclose(gp.grad.numpy(), tp.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("case", ["padded", "concatenated", "unbatched", "impossible"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_loss_matches_torch_through_log_softmax(torch, case, reduction):
    """Compared through log_softmax: PyTorch's CTC gradient w.r.t. log_probs is only right after it."""
    T, N, C = 6, 3, 5
    logits = np.random.randn(T, N, C)
    targets, tl, il = np.array([[1, 2, 2], [3, 1, 0], [4, 0, 0]]), [3, 2, 1], [6, 5, 4]
    zero_inf = False
    if case == "concatenated":
        targets = np.array([1, 2, 2, 3, 1, 4])
    elif case == "unbatched":
        logits, targets, tl, il = logits[:, 0], np.array([1, 2, 2]), 3, 6
    elif case == "impossible":
        targets, tl, il, zero_inf = np.array([[1, 1, 1]] * 3), [3, 3, 3], [2, 6, 6], True  # sample 0 cannot fit
    g = nn.CTCLoss(blank=0, reduction=reduction, zero_infinity=zero_inf)
    t = torch.nn.CTCLoss(blank=0, reduction=reduction, zero_infinity=zero_inf)
    gx, tx = gradlab.tensor(logits, requires_grad=True), torch.tensor(logits, requires_grad=True)
    gl = g(nn.functional.log_softmax(gx, dim=-1), gradlab.tensor(targets), il, tl)
    tlv = t(torch.log_softmax(tx, -1), torch.tensor(targets), torch.tensor(il), torch.tensor(tl))
    np.testing.assert_allclose(gl.detach().numpy(), tlv.detach().numpy(), atol=1e-10)
    gl.sum().backward()
    tlv.sum().backward()
    np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), atol=1e-10)


def test_gumbel_softmax_samples_the_categorical_and_passes_gradients():
    F = nn.functional
    logits = gradlab.tensor(np.log([[0.6, 0.3, 0.1]] * 20000), requires_grad=True)
    y = F.gumbel_softmax(logits, tau=0.5, hard=True)
    counts = y.detach().numpy().sum(0) / 20000
    np.testing.assert_allclose(counts, [0.6, 0.3, 0.1], atol=0.015)
    assert set(np.unique(y.detach().numpy())) <= {0.0, 1.0}
    # straight-through: the gradient is the soft sample's, which for the same noise is softmax's
    gradlab.manual_seed(3)
    w = gradlab.tensor(np.random.randn(20000, 3))
    (F.gumbel_softmax(logits, tau=0.5, hard=True) * w).sum().backward()
    hard_grad = logits.grad.numpy().copy()
    logits.grad = None
    gradlab.manual_seed(3)
    (F.gumbel_softmax(logits, tau=0.5) * w).sum().backward()
    np.testing.assert_allclose(hard_grad, logits.grad.numpy(), atol=1e-12)
    soft = F.gumbel_softmax(logits[:5], tau=2.0, dim=-1).detach().numpy()
    np.testing.assert_allclose(soft.sum(-1), 1.0)
    assert (soft > 0).all()
