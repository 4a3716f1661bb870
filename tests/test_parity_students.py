"""PyTorch parity for what students write: tutorial and course-assignment programs run with ``torch``
swapped for ``gradlab`` (the same source, executed with either library bound to ``torch``, ``nn``,
``F``, ``optim`` and ``data``), comparing values, dtypes, shapes, ``requires_grad`` and gradients;
and the bad inputs students make, which must raise gradlab's own errors.

Each case here was a divergence or a missing API found by such a program.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradlab
from gradlab.errors import GradlabError

pytestmark = pytest.mark.oracle


def _namespace(L):
    if L is gradlab:
        import gradlab.nn as nn
        import gradlab.nn.functional as F
        import gradlab.optim as optim
        import gradlab.utils.data as data
    else:
        import torch.nn as nn
        import torch.nn.functional as F
        import torch.optim as optim
        import torch.utils.data as data
    return dict(torch=L, nn=nn, F=F, optim=optim, data=data, np=np)


def _plain(o, torch):
    if isinstance(o, (gradlab.Tensor, torch.Tensor)):
        a = np.array(o.detach().numpy())
        return ("T", str(o.dtype).split(".")[-1], a, bool(o.requires_grad))
    if isinstance(o, (np.dtype, torch.dtype)):
        return ("dtype", str(o).split(".")[-1])
    if isinstance(o, dict):
        return {k: _plain(v, torch) for k, v in o.items()}
    if isinstance(o, (tuple, list)):
        return ("list" if isinstance(o, list) else "tuple",) + tuple(_plain(x, torch) for x in o)
    return o


def _assert_same(a, b, where, tol=1e-5):
    if isinstance(a, tuple) and a and a[0] == "T":
        assert isinstance(b, tuple) and b and b[0] == "T", f"{where}: {a!r} vs {b!r}"
        assert a[1] == b[1], f"{where}: dtype {a[1]} (gradlab) vs {b[1]} (torch)"
        assert a[2].shape == b[2].shape, f"{where}: shape {a[2].shape} (gradlab) vs {b[2].shape} (torch)"
        assert a[3] == b[3], f"{where}: requires_grad {a[3]} (gradlab) vs {b[3]} (torch)"
        if a[2].dtype.kind in "fc":
            np.testing.assert_allclose(a[2].astype(np.float64), b[2].astype(np.float64), rtol=tol, atol=tol,
                                       equal_nan=True, err_msg=where)
        else:
            np.testing.assert_array_equal(a[2], b[2], err_msg=where)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), f"{where}: keys {a} vs {b}"
        for k in a:
            _assert_same(a[k], b[k], f"{where}[{k!r}]", tol)
    elif isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), f"{where}: {a!r} vs {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{where}[{i}]", tol)
    elif isinstance(a, float):
        assert isinstance(b, float) and np.isclose(a, b, rtol=tol, atol=tol, equal_nan=True), f"{where}: {a} vs {b}"
    else:
        assert a == b, f"{where}: {a!r} (gradlab) vs {b!r} (torch)"


def run_both(torch, src):
    """Execute ``src`` with each library; return the two values of its ``out`` variable."""
    outs = []
    for L in (gradlab, torch):
        ns = _namespace(L)
        L.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(src, ns)  # noqa: S102 - the test programs below
        outs.append(_plain(ns["out"], torch))
    return outs


PROGRAMS = {
    # torch.utils.data is where every tutorial imports DataLoader/TensorDataset from
    "utils_data_loader": """
X = torch.arange(20.).view(10, 2); y = torch.arange(10)
ds = data.TensorDataset(X, y)
both = data.ConcatDataset([ds, ds])
out = [len(ds), len(both), both[12], (ds + ds)[-1], [tuple(b) for b in data.DataLoader(ds, batch_size=4)],
       len(data.DataLoader(ds, batch_size=3, drop_last=True))]
""",
    # inverse trigonometry and friends (registered ops: gradchecked by the generic suite)
    "inverse_trig": """
x = torch.linspace(-0.9, 0.9, 7, dtype=torch.float64, requires_grad=True)
y = (torch.asin(x) + x.acos() + torch.atan(x * 3) + torch.arctan2(x, x.flip(0) + 0.05) + torch.asinh(x * 4)
     + torch.acosh(x.abs() + 1.5) + x.atanh() + torch.deg2rad(x) + x.rad2deg() + torch.hypot(x, 2 * x))
y.sum().backward()
out = (y, x.grad, torch.atan2(torch.tensor([1., -1.]), torch.tensor([-1., -1.])), torch.asin(torch.tensor([0, 1])))
""",
    "stack_and_split_family": """
a = torch.arange(6.).view(2, 3).requires_grad_(); b = torch.ones(2, 3)
parts = [torch.hstack([a, b]), torch.vstack((a, b)), torch.dstack([a, b]), torch.column_stack([a[0], b[1]]),
         torch.row_stack([a, b]), torch.hstack([a[0], b[0]]), torch.vstack([a[0], b[0]])]
splits = (torch.tensor_split(torch.arange(7), 3), torch.arange(7).tensor_split([1, 5]),
          torch.tensor_split(a, 2, dim=1), torch.arange(10).tensor_split(torch.tensor([2, 3])),
          torch.hsplit(torch.arange(12).view(2, 6), 3), torch.vsplit(torch.arange(12).view(4, 3), [1]))
sum(p.sum() for p in parts).backward()
out = (parts, splits, a.grad)
""",
    "flips_turns_grids": """
x = torch.arange(24.).view(2, 3, 4).requires_grad_()
ys = [x.fliplr(), torch.flipud(x), torch.rot90(x), x.rot90(2, (1, 2)), torch.rot90(x, -1, [0, 2]),
      torch.diff(x), x.diff(n=2, dim=1), torch.diff(x, dim=0, prepend=x[:1] * 2),
      torch.take_along_dim(x, x.argsort(dim=2), dim=2), torch.take_along_dim(x, torch.tensor([0, 23, 5]))]
sum((y * torch.arange(float(y.numel())).view(y.shape)).sum() for y in ys).backward()
gx, gy = torch.meshgrid(torch.arange(3), torch.arange(2), indexing="ij")
hx, hy = torch.meshgrid([torch.arange(3.), torch.arange(2.)], indexing="xy")
out = (ys, x.grad, gx, gy, hx, hy, torch.argwhere(x > 20), x.argwhere().shape,
       torch.diff(torch.tensor([True, False, False])))
""",
    "clamp_min_max_and_casts": """
x = torch.linspace(-2, 2, 9, requires_grad=True)
y = x.clamp_min(0.5) + torch.clamp_max(x, -0.5) * 2
y.sum().backward()
v = torch.tensor([1.7, -2.3, 300.0])
out = (y, x.grad, v.short(), v.char(), torch.tensor([1.7, 3.0, 255.0]).byte(), torch.absolute(-v),
       torch.divide(v, 2), torch.divide(v, 2, rounding_mode="floor"), torch.tensor([[3, 1], [2, 0]]).msort())
""",
    "running_and_order_statistics": """
x = torch.tensor([[1., 0., 3., -2.], [2., 5., 0., 0.5]], dtype=torch.float64, requires_grad=True)
cp = x.cumprod(1); cp0 = torch.cumprod(x, dim=0)
cm = torch.cummax(x, 1); cn = x.cummin(dim=0)
kv = x.kthvalue(2, dim=1); md = x.median(); mdd = torch.median(x, dim=1, keepdim=True)
w = torch.arange(1., 9.).view(2, 4).double()
((cp * w).sum() + (cp0 * w).sum() + (cm.values * w).sum() + (cn.values * w).sum() + (kv.values * w[:, 0]).sum()
 + md * 3 + (mdd.values * 2).sum()).backward()
out = (cp, cp0, tuple(cm), tuple(cn), tuple(kv), md, tuple(mdd), x.grad, torch.cumprod(torch.tensor([1, 2, 3]), 0),
       torch.cummax(torch.tensor([1, 3, 3, 2]), 0).indices, torch.median(torch.tensor([4., 1., 3., 2.])),
       tuple(torch.mode(torch.tensor([[1, 2, 2, 3], [4, 4, 1, 1]]), 1)))
""",
    "unique_and_counting": """
t = torch.tensor([3, 1, 2, 3, 1])
u2, inv = torch.unique(t, return_inverse=True)
u3, cnt = t.unique(return_counts=True)
m = torch.tensor([[1, 2], [1, 2], [0, 1]])
out = (torch.unique(t), u2, inv, u3, cnt, torch.unique(m, dim=0, return_inverse=True, return_counts=True),
       torch.unique(torch.tensor([[2., 1.], [1., 5.]])), torch.unique(torch.tensor([[2., 1.], [1., 5.]]), sorted=False),
       torch.unique_consecutive(torch.tensor([1, 1, 2, 2, 3, 1]), return_inverse=True, return_counts=True),
       torch.bincount(torch.tensor([1, 1, 3])), torch.tensor([0, 2]).bincount(minlength=5),
       torch.bincount(torch.tensor([1, 1, 3]), weights=torch.tensor([0.5, 0.5, 1.0])),
       torch.isin(torch.tensor([1, 2, 3, 4]), torch.tensor([2, 4])), torch.isin(t, torch.tensor([3])),
       torch.isin(torch.tensor([1, 2]), torch.tensor([2]), invert=True))
""",
    "nan_aware": """
x = torch.tensor([[1., float('nan'), 2.], [float('inf'), -1., float('-inf')]], requires_grad=True)
a = torch.nansum(x[:, :2]); b = x[0].nanmean(); c = torch.nan_to_num(x); d = x.nan_to_num(nan=0.5, posinf=9.0)
e = torch.nanmean(x[:, :2], dim=0); f = torch.xlogy(torch.tensor([0., 2., 1.]), torch.tensor([0., 3., 1.]))
(a + b + c.sum() + d.sum() + e.nansum()).backward()
out = (a, b, c, d, e, f, x.grad, torch.tensor([0., 1.]).xlogy(2.0))
""",
    "linalg_norms": """
x = torch.tensor([[3., -4.], [1., 2.]], requires_grad=True)
ys = [torch.linalg.norm(x), torch.linalg.norm(x, dim=1), torch.linalg.vector_norm(x, ord=1),
      torch.linalg.vector_norm(x, ord=float('inf'), dim=1), torch.linalg.norm(x, 'fro'),
      torch.linalg.matrix_norm(x), torch.linalg.norm(x, ord=1), torch.linalg.norm(x, float('inf')),
      torch.linalg.matrix_norm(x, ord=-1, keepdim=True), torch.linalg.norm(x[0], ord=3),
      torch.linalg.vector_norm(x, 2, dim=(0, 1), keepdim=True)]
sum(y.sum() for y in ys).backward()
out = (ys, x.grad)
""",
    "factories_more": """
out = (torch.logspace(0, 2, 3), torch.logspace(0, 3, 4, base=2), torch.logspace(-1, 1, 5, dtype=torch.float64),
       torch.randint_like(torch.ones(3, 2), 0, 4).dtype, torch.randint_like(torch.ones(3, dtype=torch.int32), 5).shape,
       bool((torch.randint_like(torch.ones(500), 3, 7) >= 3).all()),
       sorted(torch.randint_like(torch.ones(500), 3, 7).unique().tolist()))
""",
    # hardtanh/relu6/hardsigmoid/hardswish have slope 0 at their corners in PyTorch (clamp itself has 1)
    "activation_corner_slopes": """
x = torch.tensor([-4., -3., -1., 0., 1., 3., 6., 7.], requires_grad=True)
ys = [F.hardtanh(x), F.relu6(x), F.hardsigmoid(x), F.hardswish(x), nn.Hardtanh(-3.0, 3.0)(x), nn.ReLU6()(x),
      nn.Hardsigmoid()(x), nn.Hardswish()(x), F.hardtanh(x, 0.0, 1.0)]
sum((y * torch.arange(1., 9.)).sum() for y in ys).backward()
out = (ys, x.grad)
""",
    # default_collate: tuples come back as lists, Python floats as float64 (a TensorDataset batch too)
    "collate_like_pytorch": """
class DS(data.Dataset):
    def __len__(self): return 5
    def __getitem__(self, i): return torch.tensor([float(i), 1.0]), i, {'w': 0.5 * i, 'ok': i > 2}
b = next(iter(data.DataLoader(DS(), batch_size=3)))
t = next(iter(data.DataLoader(data.TensorDataset(torch.arange(6.).view(3, 2), torch.arange(3)), batch_size=2)))
out = (b, type(b).__name__, t, type(t).__name__, nn.init.calculate_gain('sigmoid'), nn.init.calculate_gain('conv2d'),
       nn.init.calculate_gain('tanh'))
""",
    # GNN-style message passing and slice updates
    "index_add_copy_fill": """
x = torch.arange(12.).view(4, 3).requires_grad_()
msg = torch.tensor(np.cos(np.arange(9.)).reshape(3, 3), dtype=torch.float32, requires_grad=True)
dst = torch.tensor([2, 0, 2])
a = torch.index_add(x, 0, dst, msg); b = x.index_add(1, torch.tensor([1, 1]), msg[:, :2].T.T[:4].repeat(2, 1)[:4], alpha=2)
c = x.index_copy(0, torch.tensor([3, 1]), msg[:2]); d = x.index_fill(1, torch.tensor([0, 2]), -1.0)
agg = torch.zeros(4, 3).index_add_(0, dst, msg)
h = x * 1; h.index_fill_(0, torch.tensor([1]), 0.0); h.index_copy_(1, torch.tensor([2]), msg[:, :1].repeat(2, 1)[:4])
w = torch.arange(1., 13.).view(4, 3)
((a * w).sum() + (b * w).sum() + (c * w).sum() + (d * w).sum() + (agg * w).sum() + (h * w).sum()).backward()
out = (a, b, c, d, agg, h, x.grad, msg.grad)
""",
    # old tutorials: torch.Tensor(data) is always float32, torch.Tensor(2, 3) a shape; FloatTensor/LongTensor
    "legacy_constructors": """
out = (torch.Tensor([1, 2]), torch.Tensor(2, 3).shape, torch.Tensor(np.array([[1, 2]])), torch.Tensor().shape,
       torch.FloatTensor([1, 2]), torch.LongTensor([1.0, 2.0]), torch.DoubleTensor(3).shape, torch.IntTensor([1]),
       torch.BoolTensor([1, 0]), torch.FloatTensor(2, 2).dtype)
""",
    # the legacy rule PyTorch still applies: a list holding lists indexes like a tuple
    "list_of_lists_index": """
x = torch.arange(24).view(2, 3, 4)
out = (x[[[0, 1], [1, 0]]], x[[0, slice(1, 3)]], x[[[1]]])
""",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_student_program_matches_pytorch(torch, name):
    ours, theirs = run_both(torch, PROGRAMS[name])
    _assert_same(ours, theirs, name)


BAD = {
    # x[::-1]: PyTorch has no negative strides and says so; NumPy would silently reverse
    "negative_step": ("x = torch.arange(5); out = x[::-1]", ValueError, ["step", "flip"]),
    "negative_step_2d": ("x = torch.ones(3, 3); out = x[:, ::-2]", ValueError, ["step", "flip"]),
    "negative_step_setitem": ("x = torch.ones(4); x[::-1] = torch.zeros(4); out = x", ValueError, ["step"]),
    "kthvalue_k_too_big": ("out = torch.tensor([1., 2.]).kthvalue(3)", Exception, ["k=3", "2"]),
    "hstack_not_a_list": ("out = torch.hstack(torch.ones(2))", TypeError, ["list"]),
    "bincount_float": ("out = torch.bincount(torch.tensor([1.0, 2.0]))", RuntimeError, ["integer", "float32"]),
    "bincount_negative": ("out = torch.bincount(torch.tensor([1, -2]))", RuntimeError, ["non-negative"]),
    # PyTorch reports shape problems from its kernels as RuntimeError: except RuntimeError must catch ours
    "matmul_shapes": ("out = torch.ones(3, 4) @ torch.ones(5, 2)", RuntimeError, ["(3, 4)", "(5, 2)"]),
    "linear_in_features": ("out = nn.Linear(10, 5)(torch.ones(4, 8))", RuntimeError, ["(4, 8)", "10"]),
    "cat_sizes": ("out = torch.cat([torch.ones(2, 3), torch.ones(2, 4)])", RuntimeError, ["(2, 4)", "(2, 3)"]),
    "view_non_contiguous": ("out = torch.ones(3, 4).t().view(12)", RuntimeError, ["reshape"]),
    "mse_shapes": ("out = F.mse_loss(torch.ones(4, 3), torch.ones(4, 2))", RuntimeError, ["(4, 3)", "(4, 2)"]),
    "conv_channels": ("out = nn.Conv2d(3, 4, 3)(torch.ones(1, 1, 8, 8))", RuntimeError, ["(1, 1, 8, 8)", "3"]),
    "load_state_dict_sizes": ("m = nn.Linear(2, 3); m.load_state_dict(nn.Linear(2, 4).state_dict()); out = m",
                              RuntimeError, ["weight", "(4, 2)", "(3, 2)"]),
    "int_requires_grad": ("out = torch.tensor([1, 2], requires_grad=True)", RuntimeError, ["int64", "float"]),
    "embedding_float_ids": ("out = nn.Embedding(5, 2)(torch.tensor([1.0, 2.0]))", RuntimeError, ["float32", "long"]),
    "topk_k": ("out = torch.ones(3).topk(4)", RuntimeError, ["k=4", "3"]),
    "gather_out_of_range": ("out = torch.ones(2, 3).gather(1, torch.tensor([[0], [3]]))", RuntimeError, ["[0, 3)"]),
    "float_index_tensor": ("out = torch.ones(3)[torch.tensor([0.0, 1.0])]", IndexError, ["float32", ".long()"]),
    # cross_entropy takes int64 (or uint8) class indices only, as PyTorch; BCE wants a float target
    "cross_entropy_int32_target": ("out = F.cross_entropy(torch.ones(4, 3), torch.tensor([0, 1, 2, 1], "
                                   "dtype=torch.int32))", RuntimeError, ["int32", "target.long()", "(4, 3)"]),
    "nll_bool_target": ("out = F.nll_loss(torch.ones(2, 3), torch.tensor([True, False]))", RuntimeError, ["bool"]),
    "bce_long_target": ("out = F.binary_cross_entropy(torch.full((2,), 0.5), torch.tensor([0, 1]))", RuntimeError,
                        ["int64", "target.float()"]),
    "bce_logits_long_target": ("out = F.binary_cross_entropy_with_logits(torch.zeros(2), torch.tensor([0, 1]))",
                               RuntimeError, ["int64", "target.float()"]),
    "clip_grad_norm_type": ("out = nn.utils.clip_grad_norm_([torch.ones(2, requires_grad=True)], 1.0, norm_type='x')",
                            ValueError, ["norm_type", "'x'"]),
    # NumPy data is float64, models are float32: PyTorch refuses to mix them in a matrix product
    "linear_float64_input": ("out = nn.Linear(3, 2)(torch.tensor(np.ones((4, 3))))", RuntimeError,
                             ["float64", "float32", "x.float()"]),
    "linear_long_input": ("out = nn.Linear(3, 2)(torch.ones(4, 3, dtype=torch.long))", RuntimeError, ["int64"]),
    "matmul_mixed_dtypes": ("out = torch.ones(2, 3) @ torch.ones(3, 2, dtype=torch.float64)", RuntimeError,
                            ["float32", "float64", "(2, 3)", "(3, 2)"]),
    "meshgrid_2d_input": ("out = torch.meshgrid(torch.ones(2, 2), torch.ones(2), indexing='ij')", Exception, ["(2, 2)"]),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_student_mistake_raises_a_gradlab_error(torch, name):
    src, builtin, words = BAD[name]
    ns = _namespace(torch)
    with pytest.raises(builtin):
        exec(src, ns)  # noqa: S102
    ns = _namespace(gradlab)
    with pytest.raises(builtin) as info:
        exec(src, ns)  # noqa: S102
    assert isinstance(info.value, GradlabError), f"{name}: {type(info.value).__name__} is not a gradlab error"
    for w in words:
        assert w in str(info.value), f"{name}: {w!r} missing from {info.value}"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linspace_is_bit_identical_to_pytorch(torch, dtype):
    """Plots and regression data start from linspace: the same points, to the last bit (the middle point of
    linspace(-0.9, 0.9, 7) is +5.6e-17 in PyTorch, so relu and abs have slope 1 there, not 0)."""
    rng = np.random.default_rng(0)
    cases = [(-0.9, 0.9, 7), (0, 1, 11), (-3, 7, 1000), (-1, 1, 101), (2, -2, 9), (3, 3, 4), (0, 1, 1), (0, 1, 0)]
    cases += [(float(a), float(b), int(n)) for a, b, n in zip(rng.normal(0, 10, 40), rng.normal(0, 10, 40),
                                                          rng.integers(2, 500, 40))]
    for a, b, n in cases:
        ours = gradlab.linspace(a, b, n, dtype=getattr(gradlab, dtype)).numpy()
        theirs = torch.linspace(a, b, n, dtype=getattr(torch, dtype)).numpy()
        np.testing.assert_array_equal(ours, theirs, err_msg=f"linspace({a}, {b}, {n})")
    if dtype == "float32":
        for a, b, n in cases[:4]:
            np.testing.assert_allclose(gradlab.logspace(a / 4, b / 4, n).numpy(), torch.logspace(a / 4, b / 4, n).numpy(),
                                       rtol=2e-7)
    x = gradlab.linspace(-0.9, 0.9, 7, dtype=getattr(gradlab, dtype), requires_grad=True)
    x.relu().sum().backward()
    t = torch.linspace(-0.9, 0.9, 7, dtype=getattr(torch, dtype), requires_grad=True)
    t.relu().sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_optimizer_given_a_module_raises_a_gradlab_error():
    with pytest.raises(GradlabError, match="parameters"):
        gradlab.optim.SGD(gradlab.nn.Linear(2, 2), lr=0.1)


def test_scheduler_without_optimizer_raises_a_gradlab_error():
    with pytest.raises(GradlabError):
        gradlab.optim.lr_scheduler.StepLR(None, 2)
