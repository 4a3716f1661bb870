"""More torch.nn layers (activations, conv/pool/resample/pad, norms, losses, containers) against PyTorch.

Each case builds the same layer in both libraries, copies PyTorch's (randomised) weights into
gradlab in float64, and compares outputs and the gradients of inputs and parameters; state_dict
keys and extra_repr must match PyTorch's.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import gradlab
from gradlab import nn

pytestmark = pytest.mark.oracle


def _gl(a):
    return gradlab.tensor(np.asarray(a), requires_grad=np.issubdtype(np.asarray(a).dtype, np.floating))


def _compare(torch, g, t, inputs, atol=1e-9, randomize=True, grads=None):
    """Run ``g`` and ``t`` on the same float64 ``inputs``; compare outputs and all gradients."""
    t = t.double()
    if randomize:
        with torch.no_grad():
            for p in t.parameters():
                p.copy_(torch.randn_like(p) * 0.5 + (1.0 if p.ndim == 1 else 0.0))
    g.double()
    assert list(g.state_dict()) == list(t.state_dict())
    g.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    grads = grads or [True] * len(inputs)
    tin = [torch.tensor(a, requires_grad=r) for a, r in zip(inputs, grads)]
    gin = [gradlab.tensor(a, requires_grad=r) for a, r in zip(inputs, grads)]
    to, go = t(*tin), g(*gin)
    np.testing.assert_allclose(go.detach().numpy(), to.detach().numpy(), atol=atol, rtol=1e-7)
    w = np.random.randn(*to.shape)
    (to * torch.tensor(w)).sum().backward()
    (go * gradlab.tensor(w)).sum().backward()
    for i, (a, b) in enumerate(zip(gin, tin)):
        if b.requires_grad:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=atol, rtol=1e-6, err_msg=f"input {i}")
    tp = dict(t.named_parameters())
    for name, p in g.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tp[name].grad.numpy(), atol=atol, rtol=1e-6, err_msg=name)
    assert g.extra_repr() == t.extra_repr()


def _x(*shape):
    return np.random.randn(*shape)


# (class name, args, kwargs, input shapes)
LAYERS = [
    ("LeakyReLU", (), {}, [(3, 5)]), ("LeakyReLU", (0.2,), {}, [(3, 5)]),
    ("ELU", (), {"alpha": 0.5}, [(3, 5)]), ("CELU", (1.5,), {}, [(3, 5)]), ("SELU", (), {}, [(3, 5)]),
    ("Softplus", (), {"beta": 2.0, "threshold": 3.0}, [(3, 5)]), ("Mish", (), {}, [(3, 5)]),
    ("Hardtanh", (-2.0, 0.5), {}, [(3, 5)]), ("ReLU6", (), {}, [(3, 5)]), ("Hardswish", (), {}, [(3, 5)]),
    ("Hardsigmoid", (), {}, [(3, 5)]), ("LogSigmoid", (), {}, [(3, 5)]), ("Softsign", (), {}, [(3, 5)]),
    ("Tanhshrink", (), {}, [(3, 5)]), ("Hardshrink", (0.3,), {}, [(3, 5)]), ("Softshrink", (), {}, [(3, 5)]),
    ("Threshold", (0.1, -1.0), {}, [(3, 5)]), ("GLU", (), {}, [(3, 6)]), ("GLU", (0,), {}, [(4, 3)]),
    ("Softmin", (), {"dim": 1}, [(3, 5)]), ("Softmax2d", (), {}, [(2, 3, 4, 5)]), ("Softmax2d", (), {}, [(3, 4, 5)]),
    ("PReLU", (), {}, [(2, 3, 4)]), ("PReLU", (3,), {"init": 0.1}, [(2, 3, 4)]),
    ("Conv1d", (2, 4, 3), {}, [(2, 2, 7)]),
    ("Conv1d", (4, 6, 3), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2, "bias": False}, [(2, 4, 9)]),
    ("Conv1d", (2, 4, 3), {"padding": "same", "padding_mode": "reflect"}, [(2, 2, 7)]),
    ("Conv1d", (2, 3, 4), {"padding": "same"}, [(2, 2, 7)]),
    ("Conv1d", (2, 4, 3), {"padding": 2, "padding_mode": "circular"}, [(2, 2, 7)]),
    ("Conv1d", (2, 4, 3), {"padding": "valid"}, [(2, 7)]),
    ("ConvTranspose2d", (2, 4, 3), {}, [(2, 2, 5, 4)]),
    ("ConvTranspose2d", (4, 2, 3), {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}, [(2, 4, 3, 4)]),
    ("ConvTranspose2d", (2, 3, (2, 3)), {"stride": (2, 1), "bias": False, "dilation": 2}, [(2, 2, 3, 4)]),
    ("MaxPool1d", (3,), {}, [(2, 3, 8)]), ("MaxPool1d", (3, 2, 1), {"dilation": 1}, [(2, 3, 8)]),
    ("AvgPool1d", (3, 2, 1), {"count_include_pad": False}, [(2, 3, 8)]), ("AvgPool1d", (2,), {}, [(3, 8)]),
    ("AdaptiveAvgPool1d", (3,), {}, [(2, 3, 8)]),
    ("Upsample", (), {"scale_factor": 2}, [(1, 2, 3, 4)]),
    ("Upsample", (), {"size": (5, 7), "mode": "bilinear", "align_corners": True}, [(1, 2, 3, 4)]),
    ("Upsample", (), {"scale_factor": 2, "mode": "linear"}, [(1, 2, 5)]),
    ("UpsamplingNearest2d", (), {"scale_factor": 2}, [(1, 2, 3, 4)]),
    ("UpsamplingBilinear2d", (), {"size": (4, 6)}, [(1, 2, 3, 4)]),
    ("PixelShuffle", (2,), {}, [(1, 8, 3, 3)]), ("PixelUnshuffle", (2,), {}, [(1, 2, 4, 6)]),
    ("ZeroPad2d", (1,), {}, [(2, 3, 4, 5)]), ("ZeroPad2d", ((1, 2, 0, 3),), {}, [(2, 3, 4, 5)]),
    ("ZeroPad1d", ((1, 2),), {}, [(2, 3, 5)]), ("ConstantPad1d", (2, 3.5), {}, [(2, 3, 5)]),
    ("ConstantPad2d", ((1, 0, 2, 1), -1.0), {}, [(3, 4, 5)]), ("ReflectionPad1d", (2,), {}, [(2, 3, 5)]),
    ("ReflectionPad2d", ((1, 2, 2, 1),), {}, [(2, 3, 4, 5)]), ("ReplicationPad1d", ((0, 3),), {}, [(2, 3, 5)]),
    ("ReplicationPad2d", (2,), {}, [(2, 3, 4, 5)]), ("CircularPad1d", (1,), {}, [(2, 3, 5)]),
    ("CircularPad2d", (1,), {}, [(2, 3, 4, 5)]),
    ("GroupNorm", (2, 4), {}, [(3, 4, 5)]), ("GroupNorm", (1, 4), {"affine": False}, [(3, 4, 5)]),
    ("GroupNorm", (4, 4), {"eps": 1e-3, "bias": False}, [(3, 4, 2, 3)]),
    ("RMSNorm", (5,), {}, [(3, 4, 5)]), ("RMSNorm", ([4, 5],), {"eps": 1e-5}, [(3, 4, 5)]),
    ("RMSNorm", (5,), {"elementwise_affine": False}, [(3, 4, 5)]),
    ("InstanceNorm1d", (3,), {}, [(2, 3, 6)]), ("InstanceNorm1d", (3,), {"affine": True}, [(2, 3, 6)]),
    ("InstanceNorm1d", (3,), {"affine": True}, [(3, 6)]),
    ("InstanceNorm2d", (3,), {"affine": True, "eps": 1e-3}, [(2, 3, 4, 5)]),
    ("CosineSimilarity", (), {}, [(4, 5), (4, 5)]), ("CosineSimilarity", (), {"dim": 0, "eps": 1e-6}, [(4, 5), (1, 5)]),
    ("PairwiseDistance", (), {}, [(4, 5), (4, 5)]), ("PairwiseDistance", (1.0, 1e-3, True), {}, [(4, 5), (4, 5)]),
    ("Unflatten", (1, (2, 3)), {}, [(4, 6, 2)]), ("Unflatten", (-1, [3, -1]), {}, [(4, 6)]),
    ("Dropout1d", (0.3,), {}, [(2, 3, 4)]), ("Dropout2d", (), {}, [(2, 3, 4, 5)]),
    ("Unfold", (2,), {"padding": 1, "stride": 2}, [(2, 3, 4, 5)]),
    ("Fold", ((4, 5), 2), {}, [(2, 12, 12)]),
    ("ConvTranspose1d", (2, 4, 3), {}, [(2, 2, 5)]),
    ("ConvTranspose1d", (4, 2, 3), {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}, [(2, 4, 6)]),
    ("ConvTranspose1d", (2, 3, 2), {"dilation": 2, "bias": False}, [(2, 5)]),
    ("AdaptiveMaxPool1d", (3,), {}, [(2, 3, 8)]), ("AdaptiveMaxPool2d", ((2, None),), {}, [(2, 3, 5, 4)]),
    ("AdaptiveMaxPool2d", (3,), {}, [(3, 7, 5)]), ("AdaptiveMaxPool2d", (1,), {}, [(2, 3, 4, 4)]),
    ("Bilinear", (2, 3, 4), {}, [(5, 2), (5, 3)]), ("Bilinear", (2, 3, 1), {"bias": False}, [(2, 5, 2), (2, 5, 3)]),
    ("AlphaDropout", (0.2,), {}, [(3, 4)]),
    ("LocalResponseNorm", (3,), {}, [(2, 5, 4)]),
    ("LocalResponseNorm", (2,), {"alpha": 0.5, "beta": 0.5, "k": 2.0}, [(2, 4, 3, 3)]),
    ("ChannelShuffle", (2,), {}, [(2, 4, 3)]), ("RReLU", (0.1, 0.3), {}, [(3, 5)]),
    ("LPPool1d", (2, 3), {}, [(2, 3, 8)]), ("LPPool2d", (2, 2), {"stride": 1}, [(2, 3, 4, 5)]),
    ("BatchNorm3d", (3,), {}, [(2, 3, 2, 3, 4)]), ("InstanceNorm3d", (3,), {"affine": True}, [(2, 3, 2, 3, 4)]),
    ("ZeroPad3d", ((1, 0, 2, 1, 0, 1),), {}, [(2, 3, 2, 3, 4)]), ("ConstantPad3d", (1, 2.5), {}, [(3, 2, 3, 4)]),
    ("ReflectionPad3d", (1,), {}, [(2, 3, 2, 3, 4)]), ("ReplicationPad3d", (2,), {}, [(2, 3, 2, 3, 4)]),
    ("CircularPad3d", (1,), {}, [(2, 3, 2, 3, 4)]),
    ("Conv3d", (2, 3, 2), {}, [(2, 2, 3, 4, 4)]),
    ("Conv3d", (2, 4, (1, 2, 3)), {"stride": (1, 2, 1), "padding": (0, 1, 1), "groups": 2, "bias": False},
     [(1, 2, 3, 4, 5)]),
    ("Conv3d", (2, 3, 3), {"padding": "same", "padding_mode": "replicate", "dilation": (1, 2, 1)}, [(2, 3, 5, 4)]),
    ("ConvTranspose3d", (2, 3, 2), {}, [(2, 2, 3, 2, 3)]),
    ("ConvTranspose3d", (4, 2, (2, 1, 3)), {"stride": (2, 1, 2), "padding": (1, 0, 1), "output_padding": (1, 0, 1),
                                            "groups": 2, "bias": False}, [(1, 4, 3, 2, 3)]),
    ("MaxPool3d", (2,), {}, [(2, 2, 4, 4, 5)]), ("MaxPool3d", (3, 2, 1), {"ceil_mode": True}, [(1, 2, 5, 4, 6)]),
    ("AvgPool3d", (2,), {"stride": 1, "padding": 1, "count_include_pad": False}, [(1, 2, 3, 4, 3)]),
    ("AvgPool3d", ((2, 1, 3),), {"ceil_mode": True, "stride": 2}, [(2, 3, 5, 4, 5)]),
    ("AdaptiveAvgPool3d", ((2, None, 3),), {}, [(2, 2, 5, 4, 7)]),
    ("AdaptiveMaxPool3d", ((2, None, 3),), {}, [(2, 2, 5, 4, 7)]), ("LPPool3d", (2, 2), {}, [(1, 2, 4, 4, 5)]),
    ("FeatureAlphaDropout", (0.3,), {}, [(2, 3, 4)]),
]


@pytest.mark.parametrize("name,args,kwargs,shapes", LAYERS, ids=[f"{c[0]}-{i}" for i, c in enumerate(LAYERS)])
def test_layer_matches_torch(torch, name, args, kwargs, shapes):
    g, t = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    if "Dropout" in name or name == "RReLU":
        g.eval(), t.eval()  # the identity in eval mode; training is checked below
    _compare(torch, g, t, [_x(*s) for s in shapes])


def test_inplace_flag_is_shown_as_torch(torch):
    for name, args in [("LeakyReLU", (0.2, True)), ("ELU", (1.0, True)), ("SELU", (True,)), ("ReLU6", (True,)),
                       ("Hardtanh", (-1.0, 1.0, True)), ("Threshold", (0.1, 0.0, True)), ("Mish", (True,)),
                       ("Hardswish", (True,))]:
        assert getattr(nn, name)(*args).extra_repr() == getattr(torch.nn, name)(*args).extra_repr(), name


def test_init_distributions_like_torch(torch):
    """Default inits: same bounds and spread as PyTorch (values differ: different random streams)."""
    for name, args in [("Conv1d", (8, 16, 5)), ("ConvTranspose2d", (8, 6, 3)), ("Conv3d", (4, 8, 3))]:
        g, t = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
        fan_in, _ = torch.nn.init._calculate_fan_in_and_fan_out(t.weight)
        for (gn, gp), (tn, tp) in zip(g.named_parameters(), t.named_parameters()):
            assert gn == tn and tuple(gp.shape) == tuple(tp.shape)
            # kaiming_uniform_(a=sqrt(5)) and the bias init both give U(-1/sqrt(fan_in), 1/sqrt(fan_in))
            assert float(np.abs(gp.detach().numpy()).max()) <= 1 / math.sqrt(fan_in) + 1e-7
            if gn == "weight":
                assert gp.detach().numpy().std() == pytest.approx(float(tp.detach().std()), rel=0.2)
    assert np.all(nn.PReLU(4).weight.detach().numpy() == 0.25)
    gn = nn.GroupNorm(2, 4)
    assert np.all(gn.weight.detach().numpy() == 1) and np.all(gn.bias.detach().numpy() == 0)


def test_instance_norm_running_stats(torch):
    g = nn.InstanceNorm1d(3, affine=True, track_running_stats=True, momentum=0.2)
    t = torch.nn.InstanceNorm1d(3, affine=True, track_running_stats=True, momentum=0.2).double()
    g.double()
    assert list(g.state_dict()) == list(t.state_dict())
    for _ in range(2):
        x = _x(2, 3, 6)
        g(_gl(x)), t(torch.tensor(x))
    for k in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(g, k).numpy(), getattr(t, k).numpy(), atol=1e-12)
    assert int(g.num_batches_tracked.item()) == int(t.num_batches_tracked)  # PyTorch does not count them here
    g.eval(), t.eval()
    x = _x(2, 3, 6)
    np.testing.assert_allclose(g(_gl(x)).detach().numpy(), t(torch.tensor(x)).detach().numpy(), atol=1e-12)


def test_adaptive_max_pool_indices_match_torch(torch):
    x = np.random.randn(2, 3, 7, 5)
    g = nn.AdaptiveMaxPool2d((3, 2), return_indices=True)(gradlab.tensor(x))
    t = torch.nn.AdaptiveMaxPool2d((3, 2), return_indices=True)(torch.tensor(x))
    np.testing.assert_array_equal(g[0].numpy(), t[0].numpy())
    np.testing.assert_array_equal(g[1].numpy(), t[1].numpy())
    x = np.random.randn(2, 3, 7)
    g = nn.AdaptiveMaxPool1d(4, return_indices=True)(gradlab.tensor(x))
    t = torch.nn.AdaptiveMaxPool1d(4, return_indices=True)(torch.tensor(x))
    np.testing.assert_array_equal(g[1].numpy(), t[1].numpy())


def test_alpha_dropout_keeps_mean_and_variance():
    x = gradlab.randn(200000, dtype=gradlab.float64)
    m = nn.AlphaDropout(0.2)
    y = m(x).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.var() - 1) < 0.03
    _, counts = np.unique(y, return_counts=True)
    f = nn.FeatureAlphaDropout(0.5)(gradlab.randn(64, 32, 7)).numpy()
    alpha, p = -1.7580993408473766, 0.5
    a = ((1 - p) * (1 + p * alpha ** 2)) ** -0.5
    dropped = np.isclose(f, a * alpha - a * alpha * p)                # the value a dropped unit takes
    assert np.all(dropped.all(-1) == dropped.any(-1))                # a channel is dropped whole or not at all
    assert 0.4 < dropped.all(-1).mean() < 0.6
    assert counts.max() / y.size == pytest.approx(0.2, abs=0.01)  # the dropped units share one value
    m.eval()
    np.testing.assert_array_equal(m(x).numpy(), x.numpy())


def test_channel_dropout_zeroes_whole_channels():
    x = gradlab.ones(8, 16, 5)
    y = nn.Dropout1d(0.5)(x).numpy()
    per_channel = y.reshape(8 * 16, 5)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert np.all(per_channel.min(1) == per_channel.max(1))  # a channel is dropped whole or kept whole
    assert 0 < (per_channel[:, 0] == 0).mean() < 1
    assert str(nn.Dropout2d(0.2)) == "Dropout2d(p=0.2, inplace=False)"


def test_parameter_list_and_dict_are_registered(torch):
    class G(nn.Module):
        def __init__(self):
            super().__init__()
            self.ws = nn.ParameterList([nn.Parameter(gradlab.randn(3, 2)) for _ in range(2)])
            self.ws.append(gradlab.zeros(2))  # a plain tensor is wrapped in a Parameter
            self.extra = nn.ParameterDict({"scale": nn.Parameter(gradlab.ones(2))})

        def forward(self, x):
            return (x @ self.ws[0] @ self.ws[1].T @ self.ws[1] + self.ws[-1]) * self.extra["scale"]

    class T(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ws = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(3, 2)) for _ in range(2)])
            self.ws.append(torch.zeros(2))
            self.extra = torch.nn.ParameterDict({"scale": torch.nn.Parameter(torch.ones(2))})

        def forward(self, x):
            return (x @ self.ws[0] @ self.ws[1].T @ self.ws[1] + self.ws[-1]) * self.extra["scale"]

    g, t = G(), T()
    assert len(list(g.parameters())) == 4 and all(isinstance(p, nn.Parameter) for p in g.ws)
    assert len(g.ws) == 3 and len(g.extra) == 1 and "scale" in g.extra and list(g.extra.keys()) == ["scale"]
    _compare(torch, g, t, [_x(5, 3)])
    opt = gradlab.optim.SGD(g.parameters(), lr=0.1)
    before = g.extra["scale"].detach().numpy().copy()
    opt.step()
    assert not np.allclose(before, g.extra["scale"].detach().numpy())
    assert "(0): Parameter containing: [gradlab.float64 of size 3x2]" in repr(g.ws)
    with pytest.raises(IndexError, match="out of range"):
        g.ws[3]


def test_bad_arguments_raise_gradlab_errors():
    from gradlab.errors import GradlabError
    cases = [
        (lambda: nn.Conv1d(3, 4, 3, groups=2), "groups"),
        (lambda: nn.Conv1d(2, 4, 3, padding_mode="mirror"), "padding_mode"),
        (lambda: nn.Conv1d(2, 4, 3, stride=2, padding="same"), "same"),
        (lambda: nn.Conv1d(2, 4, (3, 3)), "kernel_size"),
        (lambda: nn.Conv1d(2, 4, 3)(gradlab.randn(1, 3, 8)), "3"),
        (lambda: nn.ConvTranspose2d(2, 4, 3, stride=2)(gradlab.randn(1, 2, 4, 4), output_size=(20, 20)),
         "output_size"),
        (lambda: nn.GroupNorm(3, 4), "num_groups"),
        (lambda: nn.InstanceNorm2d(3)(gradlab.randn(3, 4)), "4-D"),
        (lambda: nn.Hardtanh(1.0, -1.0), "max_val"),
        (lambda: nn.L1Loss(reduction="avg"), "reduction"),
        (lambda: nn.Upsample(), "size"),
        (lambda: nn.Unflatten(1, (4, 4))(gradlab.randn(2, 6)), "(4, 4)"),
        (lambda: nn.Softmax2d()(gradlab.randn(3, 4)), "Softmax2d"),
        (lambda: nn.ZeroPad2d((1, 2, 3)), "padding"),
        (lambda: nn.Dropout2d(1.5), "between 0 and 1"),
        (lambda: nn.GaussianNLLLoss()(gradlab.zeros(2, 3), gradlab.zeros(2, 3), -gradlab.ones(2, 3)), "negative"),
        (lambda: nn.GaussianNLLLoss()(gradlab.zeros(2, 3), gradlab.zeros(2, 3), gradlab.ones(3, 2)), "var (3, 2)"),
        (lambda: nn.MultiMarginLoss(p=3), "p == 1"),
        (lambda: nn.MultiMarginLoss()(gradlab.zeros(2, 3), gradlab.tensor([0, 5])), "[0, 3)"),
        (lambda: nn.Bilinear(2, 3, 4)(gradlab.zeros(5, 2), gradlab.zeros(5, 4)), "in1, in2"),
        (lambda: nn.AdaptiveMaxPool2d((2, 2, 2))(gradlab.zeros(1, 2, 4, 4)), "output_size"),
    ]
    for make, word in cases:
        with pytest.raises(GradlabError) as e:
            make()
        assert word in str(e.value), str(e.value)


def test_conv_transpose_output_size_picks_output_padding(torch):
    g, t = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1), torch.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
    g.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    x = np.random.randn(1, 2, 4, 4).astype(np.float32)
    out = g(gradlab.tensor(x), output_size=(8, 8))
    ref = t(torch.tensor(x), output_size=[8, 8])
    assert tuple(out.shape) == tuple(ref.shape) == (1, 3, 8, 8)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-5)
    assert math.isfinite(float(out.sum().item()))


@pytest.mark.parametrize("n", [1, 2])
def test_max_unpool_matches_torch(torch, n):
    shape = (2, 3, 6) if n == 1 else (2, 3, 5, 6)
    x = np.random.randn(*shape)
    tpool = getattr(torch.nn, f"MaxPool{n}d")(2, return_indices=True)
    g, t = getattr(nn, f"MaxUnpool{n}d")(2), getattr(torch.nn, f"MaxUnpool{n}d")(2)
    assert g.extra_repr() == t.extra_repr()
    vals, idx = tpool(torch.tensor(x))
    gv, tv = gradlab.tensor(vals.numpy(), requires_grad=True), vals.detach().clone().requires_grad_(True)
    size = shape[2:]
    go, to = g(gv, gradlab.tensor(idx.numpy()), output_size=size), t(tv, idx, output_size=size)
    np.testing.assert_array_equal(go.detach().numpy(), to.detach().numpy())
    w = np.random.randn(*to.shape)
    (go * gradlab.tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(gv.grad.numpy(), tv.grad.numpy())


def test_module_classes_are_related_as_in_pytorch(torch):
    """For every two module classes both libraries have, one is a subclass of the other in gradlab exactly
    when it is in PyTorch: code that finds a model's layers by type (``isinstance(m, nn.Softmax)``,
    ``isinstance(m, nn.Linear)`` on a lazy layer, ``nn.ReLU6`` as a ``Hardtanh``) finds the same layers.
    Shared private bases must not make one public class a kind of another."""
    import inspect
    names = [n for n in dir(nn) if inspect.isclass(getattr(nn, n)) and inspect.isclass(getattr(torch.nn, n, None))]
    assert len(names) > 100
    wrong = [(a, b) for a in names for b in names if a != b and
             issubclass(getattr(nn, a), getattr(nn, b)) != issubclass(getattr(torch.nn, a), getattr(torch.nn, b))]
    assert not wrong, f"(subclass, class) related in one library only: {wrong}"
