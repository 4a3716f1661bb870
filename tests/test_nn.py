"""gradlab.nn: Module machinery, init, and layers compared with torch.nn (weights copied across)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import gradlab
from gradlab import nn


def _copy_from_torch(gl_module, torch_module):
    sd = {k: gradlab.tensor(v.detach().numpy()) for k, v in torch_module.state_dict().items()}
    gl_module.load_state_dict(sd)


def _grads_match(gl_module, torch_module, atol=1e-5):
    tg = dict(torch_module.named_parameters())
    for name, p in gl_module.named_parameters():
        assert p.grad is not None, name
        np.testing.assert_allclose(p.grad.numpy(), tg[name].grad.numpy(), atol=atol, rtol=1e-4, err_msg=name)


# ------------------------------------------------------------------ Module
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 5)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(5, 2)
        self.register_buffer("steps", gradlab.zeros(1))
        self.register_buffer("scratch", gradlab.zeros(2), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def test_registration_and_walking():
    m = MLP()
    assert [n for n, _ in m.named_parameters()] == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert [n for n, _ in m.named_modules()] == ["", "fc1", "act", "fc2"]
    assert [type(c).__name__ for c in m.children()] == ["Linear", "ReLU", "Linear"]
    assert [n for n, _ in m.named_buffers()] == ["steps", "scratch"]
    # own parameters and buffers first, then the children (PyTorch's order); non-persistent buffers left out
    assert list(m.state_dict()) == ["steps", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert all(isinstance(p, nn.Parameter) for p in m.parameters())
    assert not isinstance(gradlab.zeros(2), nn.Parameter)
    assert m.num_parameters() == 3 * 5 + 5 + 5 * 2 + 2
    # a plain tensor assigned to a parameter's name is refused, as in PyTorch
    with pytest.raises(TypeError, match="Parameter"):
        m.fc1.weight = gradlab.zeros(5, 3)
    del m.fc2
    assert "fc2.weight" not in dict(m.named_parameters())


def test_shared_parameter_counted_once():
    a = nn.Linear(4, 4)
    m = nn.Sequential(a, nn.ReLU(), a)
    assert len(list(m.parameters())) == 2
    assert [n for n, _ in m.named_modules()] == ["", "0", "1"]


def test_state_dict_round_trip_and_errors():
    a, b = MLP(), MLP()
    b.load_state_dict(a.state_dict())
    np.testing.assert_array_equal(a.fc1.weight.detach().numpy(), b.fc1.weight.detach().numpy())
    sd = a.state_dict()
    sd["extra.weight"] = gradlab.zeros(1)
    del sd["fc2.bias"]
    sd["fc1.weight"] = gradlab.zeros(4, 3)
    with pytest.raises(ValueError) as e:
        b.load_state_dict(sd)
    msg = str(e.value)
    assert "'fc2.bias'" in msg and "'extra.weight'" in msg and "(4, 3)" in msg and "(5, 3)" in msg
    sd["fc1.weight"] = gradlab.zeros(5, 3)
    res = b.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["fc2.bias"] and res.unexpected_keys == ["extra.weight"]
    np.testing.assert_array_equal(b.fc1.weight.detach().numpy(), 0)


@pytest.mark.oracle
def test_state_dict_keys_match_torch(torch):
    g = nn.Sequential(nn.Linear(2, 3), nn.LayerNorm(3), nn.MultiheadAttention(3, 1), nn.Embedding(4, 3),
                      nn.Conv2d(1, 2, 3))
    t = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.LayerNorm(3), torch.nn.MultiheadAttention(3, 1),
                            torch.nn.Embedding(4, 3), torch.nn.Conv2d(1, 2, 3))
    assert list(g.state_dict()) == list(t.state_dict())
    assert [tuple(v.shape) for v in g.state_dict().values()] == [tuple(v.shape) for v in t.state_dict().values()]


def test_train_eval_zero_grad_requires_grad_apply_to():
    m = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
    assert m.training and m[1].training
    assert m.eval() is m and not m[1].training
    m.train()
    assert m[1].training
    m(gradlab.ones(3, 2)).sum().backward()
    assert m[0].weight.grad is not None
    m.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(m[0].weight.grad.numpy(), 0)
    m.zero_grad()
    assert m[0].weight.grad is None
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "Dropout", "Sequential"]
    w = m[0].weight
    m.to(gradlab.float64)
    assert m[0].weight is w and w.dtype == gradlab.float64
    m.float()
    assert w.dtype == gradlab.float32


def test_hooks_and_repr():
    m = nn.Linear(2, 3)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append(out.shape) or out * 0)
    out = m(gradlab.ones(1, 2))
    assert calls == [(1, 3)]
    np.testing.assert_array_equal(out.detach().numpy(), 0)
    h1.remove()
    h2.remove()
    out = m(gradlab.ones(1, 2))
    assert float(abs(out).sum()) > 0
    r = repr(nn.Sequential(nn.Linear(2, 3), nn.ReLU()))
    assert "Linear(in_features=2, out_features=3, bias=True)" in r and "9 parameters" in r


def test_module_path_recorded_on_nodes():
    model = nn.GPT(vocab_size=7, block_size=5, n_layer=2, n_head=2, n_embd=8)
    loss = model(gradlab.randint(0, 7, (2, 5))).sum()
    found = set()
    stack, seen = [loss.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if getattr(node, "meta", None) and "module" in node.meta:
            found.add((node.meta["module"], node.meta["module_type"]))
        stack.extend(e[0] for e in node.next_functions if e is not None)
    assert ("blocks.0.attn", "MultiheadAttention") in found
    assert ("blocks.1.mlp.0", "Linear") in found
    assert ("ln_f", "LayerNorm") in found
    # outside any module nothing is labelled, and the observer is gone
    from gradlab.autograd import function as fn
    x = gradlab.ones(2, requires_grad=True)
    assert (x * 2).grad_fn.meta is None or "module" not in (x * 2).grad_fn.meta
    assert not any(getattr(o, "__module__", "") == "gradlab.nn._naming" for o in fn.node_observers)


# -------------------------------------------------------------------- init
def test_init_is_seeded_and_follows_torch_rules(torch):
    gradlab.manual_seed(5)
    a = nn.Linear(50, 40)
    gradlab.manual_seed(5)
    b = nn.Linear(50, 40)
    np.testing.assert_array_equal(a.weight.detach().numpy(), b.weight.detach().numpy())
    bound = 1 / math.sqrt(50)
    assert abs(a.weight.detach().numpy()).max() <= bound and abs(a.weight.detach().numpy()).max() > 0.9 * bound
    for nl, param in (("relu", None), ("tanh", None), ("leaky_relu", 0.2), ("linear", None), ("selu", None)):
        assert nn.init.calculate_gain(nl, param) == pytest.approx(torch.nn.init.calculate_gain(nl, param))
    w = gradlab.empty(200, 300)
    nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert w.numpy().std() == pytest.approx(math.sqrt(2 / 200), rel=0.05)
    nn.init.xavier_uniform_(w, gain=2.0)
    assert abs(w.numpy()).max() <= 2.0 * math.sqrt(6 / 500)
    assert w.numpy().std() == pytest.approx(2.0 * math.sqrt(2 / 500), rel=0.05)
    c = gradlab.empty(8, 3, 5, 5)
    assert nn.init._calculate_fan_in_and_fan_out(c) == torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(8, 3, 5, 5))
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.init.xavier_uniform_(gradlab.empty(3))


# ------------------------------------------------------- layers vs torch
@pytest.mark.oracle
def test_linear_embedding_layernorm_match_torch(torch):
    tl, gl = torch.nn.Linear(4, 3), nn.Linear(4, 3)
    _copy_from_torch(gl, tl)
    x = np.random.default_rng(0).standard_normal((2, 5, 4)).astype(np.float32)
    out_t, out_g = tl(torch.tensor(x)), gl(gradlab.tensor(x))
    np.testing.assert_allclose(out_g.detach().numpy(), out_t.detach().numpy(), atol=1e-6)
    out_t.square().sum().backward()
    (out_g * out_g).sum().backward()
    _grads_match(gl, tl)

    te, ge = torch.nn.Embedding(6, 3, padding_idx=1), nn.Embedding(6, 3, padding_idx=1)
    assert np.all(ge.weight.detach().numpy()[1] == 0)
    _copy_from_torch(ge, te)
    idx = [[0, 1, 5], [1, 5, 5]]
    (te(torch.tensor(idx)) * 2).sum().backward()
    (ge(gradlab.tensor(idx)) * 2).sum().backward()
    _grads_match(ge, te)

    tn, gn = torch.nn.LayerNorm(4), nn.LayerNorm(4)
    with torch.no_grad():
        tn.weight.uniform_()
        tn.bias.uniform_()
    _copy_from_torch(gn, tn)
    yt, yg = tn(torch.tensor(x)), gn(gradlab.tensor(x))
    np.testing.assert_allclose(yg.detach().numpy(), yt.detach().numpy(), atol=1e-5)
    (yt * torch.arange(4.0)).sum().backward()
    (yg * gradlab.arange(4.0)).sum().backward()
    _grads_match(gn, tn)


@pytest.mark.oracle
def test_conv_pool_flatten_match_torch(torch):
    tm = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                             torch.nn.Flatten(), torch.nn.Linear(4 * 3 * 3, 2))
    gm = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(36, 2))
    _copy_from_torch(gm, tm)
    x = np.random.default_rng(1).standard_normal((3, 2, 6, 6)).astype(np.float32)
    yt, yg = tm(torch.tensor(x)), gm(gradlab.tensor(x))
    np.testing.assert_allclose(yg.detach().numpy(), yt.detach().numpy(), atol=1e-5)
    yt.sum().backward()
    yg.sum().backward()
    _grads_match(gm, tm)


@pytest.mark.oracle
@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_matches_torch(torch, batch_first):
    tm = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    gm = nn.MultiheadAttention(8, 2, batch_first=batch_first)
    _copy_from_torch(gm, tm)
    rng = np.random.default_rng(2)
    shape = (3, 5, 8) if batch_first else (5, 3, 8)
    q = rng.standard_normal(shape).astype(np.float32)
    kv = rng.standard_normal((3, 4, 8) if batch_first else (4, 3, 8)).astype(np.float32)
    causal = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
    kpm = np.zeros((3, 4), dtype=bool)
    kpm[0, -1] = True
    # self-attention with a causal mask, weights returned
    ot, wt = tm(torch.tensor(q), torch.tensor(q), torch.tensor(q), attn_mask=causal)
    og, wg = gm(gradlab.tensor(q), gradlab.tensor(q), gradlab.tensor(q), attn_mask=gradlab.tensor(causal.numpy()))
    np.testing.assert_allclose(og.detach().numpy(), ot.detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(wg.detach().numpy(), wt.detach().numpy(), atol=1e-5)
    # is_causal without a mask gives the same as the explicit mask, fused path
    og2, none = gm(gradlab.tensor(q), gradlab.tensor(q), gradlab.tensor(q), need_weights=False, is_causal=True)
    assert none is None
    np.testing.assert_allclose(og2.detach().numpy(), ot.detach().numpy(), atol=1e-5)
    # cross-attention with key padding, per-head weights, gradients
    ot, wt = tm(torch.tensor(q), torch.tensor(kv), torch.tensor(kv), key_padding_mask=torch.tensor(kpm),
                average_attn_weights=False)
    og, wg = gm(gradlab.tensor(q), gradlab.tensor(kv), gradlab.tensor(kv), key_padding_mask=gradlab.tensor(kpm),
                average_attn_weights=False)
    np.testing.assert_allclose(og.detach().numpy(), ot.detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(wg.detach().numpy(), wt.detach().numpy(), atol=1e-5)
    (ot ** 2).sum().backward()
    (og ** 2).sum().backward()
    _grads_match(gm, tm, atol=1e-4)


def test_mha_shape_errors():
    m = nn.MultiheadAttention(8, 2, batch_first=True)
    with pytest.raises(ValueError, match="embed_dim"):
        m(gradlab.ones(2, 3, 6), gradlab.ones(2, 3, 6), gradlab.ones(2, 3, 6))
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiheadAttention(6, 4)


def test_containers():
    s = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
    assert isinstance(s[0], nn.Linear) and len(s[1:]) == 2 and isinstance(s[-1], nn.Linear)
    ml = nn.ModuleList([nn.Linear(1, 1)])
    ml.append(nn.Linear(1, 2))
    ml += [nn.Tanh()]
    assert len(ml) == 3 and [n for n, _ in ml.named_parameters()] == ["0.weight", "0.bias", "1.weight", "1.bias"]
    md = nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.Sigmoid()})
    assert list(md.keys()) == ["a", "b"] and "a" in md
    with pytest.raises(IndexError):
        s[5]


def test_lora_linear_trains_only_low_rank_part():
    base = nn.Linear(6, 4)
    lora = nn.LoRALinear(base, r=2, alpha=4)
    trainable = [n for n, p in lora.named_parameters() if p.requires_grad]
    assert trainable == ["lora_A", "lora_B"]
    x = gradlab.randn(3, 6)
    np.testing.assert_allclose(lora(x).detach().numpy(), base(x).detach().numpy(), atol=1e-6)
    opt = gradlab.optim.SGD([p for p in lora.parameters() if p.requires_grad], lr=0.1)
    before = base.weight.detach().numpy().copy()
    for _ in range(3):
        opt.zero_grad()
        ((lora(x) - 1) ** 2).mean().backward()
        opt.step()
    assert base.weight.grad is None
    np.testing.assert_array_equal(base.weight.detach().numpy(), before)
    merged = lora.merge()
    np.testing.assert_allclose(merged(x).detach().numpy(), lora(x).detach().numpy(), atol=1e-5)
    assert lora.num_parameters(trainable_only=True) == 2 * (6 + 4)


def test_gpt_shapes_tying_generate_and_overfit():
    gradlab.manual_seed(0)
    m = nn.GPT(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=16)
    assert m.head.weight is m.tok_emb.weight
    untied = nn.GPT(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=16, tie_weights=False)
    assert untied.num_parameters() == m.num_parameters() + 11 * 16
    idx = gradlab.randint(0, 11, (4, 8))
    logits = m(idx)
    assert logits.shape == (4, 8, 11)
    with pytest.raises(ValueError, match="block_size"):
        m(gradlab.randint(0, 11, (1, 9)))
    opt = gradlab.optim.AdamW(m.parameters(), lr=1e-2)
    first = None
    for _ in range(40):
        _, loss = m(idx[:, :-1], idx[:, 1:])
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.3 * first
    out = m.generate(idx[:, :2], 5, do_sample=False)
    assert out.shape == (4, 7)
    gradlab.manual_seed(1)
    s1 = m.generate(idx[:, :2], 5, temperature=1.0, top_k=3)
    gradlab.manual_seed(1)
    s2 = m.generate(idx[:, :2], 5, temperature=1.0, top_k=3)
    np.testing.assert_array_equal(s1.numpy(), s2.numpy())


def test_clip_grad_norm_returns_total_norm():
    m = nn.Linear(3, 3)
    (m(gradlab.ones(2, 3)) * 100).sum().backward()
    total = math.sqrt(sum(float((p.grad.numpy().astype(np.float64) ** 2).sum()) for p in m.parameters()))
    got = nn.utils.clip_grad_norm_(m.parameters(), 1.0)
    assert float(got) == pytest.approx(total, rel=1e-5)
    after = math.sqrt(sum(float((p.grad.numpy().astype(np.float64) ** 2).sum()) for p in m.parameters()))
    assert after == pytest.approx(1.0, rel=1e-4)
