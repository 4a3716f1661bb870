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


# ---------------------------------------------------------------- optimizers, step by step against PyTorch
_OPT_CASES = [
    ("Adadelta", {}), ("Adadelta", dict(lr=0.5, weight_decay=0.1)), ("Adamax", {}),
    ("Adamax", dict(weight_decay=0.1, lr=0.01)), ("NAdam", {}),
    ("NAdam", dict(weight_decay=0.1, decoupled_weight_decay=True, lr=0.01)), ("RAdam", {}),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)), ("ASGD", {}),
    ("ASGD", dict(t0=3, lr=0.05, weight_decay=0.01)), ("Rprop", {}), ("Rprop", dict(lr=0.05, maximize=True)),
    ("LBFGS", dict(lr=0.5, max_iter=4)), ("LBFGS", dict(line_search_fn="strong_wolfe", max_iter=5, history_size=3)),
]


def _optimize(L, name, kw, steps, dtype):
    rng = np.random.default_rng(0)
    W0, X, Y = (rng.standard_normal(s).astype(dtype) for s in ((5, 3), (16, 5), (16, 3)))
    w, b = L.tensor(W0, requires_grad=True), L.zeros(3, dtype=L.float64 if dtype == np.float64 else L.float32,
                                                     requires_grad=True)
    x, y = L.tensor(X), L.tensor(Y)
    opt = getattr(L.optim, name)([w, b], **kw)
    losses, ws = [], []
    for _ in range(steps):
        def closure():
            opt.zero_grad()
            loss = ((L.tanh(x @ w + b) - y) ** 2).mean()
            loss.backward()
            return loss
        if name == "LBFGS":
            losses.append(float(opt.step(closure)))
        else:
            losses.append(float(closure().detach()))
            opt.step()
        ws.append(w.detach().numpy().copy())
    return np.array(losses), np.array(ws), opt


@pytest.mark.parametrize("name,kw", _OPT_CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(_OPT_CASES)])
def test_optimizer_matches_pytorch_step_by_step(name, kw, torch):
    for dtype, steps, tol in ((np.float64, 6, 1e-7), (np.float32, 12 if name != "LBFGS" else 1, 2e-5)):
        lg, wg, og = _optimize(gradlab, name, kw, steps, dtype)
        lt, wt, ot = _optimize(torch, name, kw, steps, dtype)
        np.testing.assert_allclose(lg, lt, rtol=tol, atol=tol, err_msg=f"{name} losses ({dtype.__name__})")
        np.testing.assert_allclose(wg, wt, rtol=tol * 10, atol=tol * 10, err_msg=f"{name} weights per step")
    if name != "LBFGS":  # the same state entries, as PyTorch names them
        (sg,), (st,) = list(og.state.values())[:1], list(ot.state.values())[:1]
        assert sorted(sg) == sorted(st)


def test_every_torch_optimizer_is_there_or_refused_clearly(torch):
    for name in torch.optim.__all__:
        if name in ("lr_scheduler", "swap_in_optimizer_params_and_state"):
            continue
        try:
            getattr(gradlab.optim, name)
        except AttributeError as e:
            assert "gradlab.optim has no" in str(e), name
    with pytest.raises(gradlab.ArgumentError, match="use gradlab.optim.Adam"):
        gradlab.optim.SparseAdam([gradlab.zeros(2, requires_grad=True)])


# ---------------------------------------------------------------- gradlab.utils.data
def test_utils_data_is_a_package_reachable_from_import_gradlab():
    import importlib
    for sub in ("dataloader", "dataset", "sampler", "distributed"):
        importlib.import_module(f"gradlab.utils.data.{sub}")
    import gradlab as g
    assert g.utils.data.DataLoader is gradlab.data.DataLoader
    from gradlab.utils.data.sampler import SubsetRandomSampler, WeightedRandomSampler  # noqa: F401


def _both(torch):
    import gradlab.utils.data as gd
    return ((gradlab, gd), (torch, torch.utils.data))


def test_samplers_and_loader_match_pytorch(torch):
    out = []
    for L, D in _both(torch):
        ds = D.TensorDataset(L.arange(10), L.arange(10) * 2)
        r = []
        r.append(list(D.BatchSampler(D.SequentialSampler(range(10)), 3, False)))
        r.append(list(D.BatchSampler(D.SequentialSampler(range(10)), 3, True)))
        loader = D.DataLoader(ds, batch_sampler=[[0, 1], [5, 6, 7], [9]])
        r.append([b[0].tolist() for b in loader])
        r.append(len(loader))
        r.append([b[1].tolist() for b in D.DataLoader(ds, batch_size=4, sampler=[9, 8, 7, 6, 5])])
        r.append(len(D.RandomSampler(range(10), num_samples=25)))
        r.append(sorted(D.RandomSampler(range(10)).__iter__()))
        r.append(len(list(D.RandomSampler(range(4), replacement=True, num_samples=70))))
        r.append(len(D.WeightedRandomSampler([0.1, 0.9, 0.0], 20)))
        r.append(sorted(set(D.WeightedRandomSampler([0.1, 0.9, 0.0], 50))) <= [0, 1])
        r.append(sorted(D.SubsetRandomSampler([3, 5, 7])))
        a, b = D.random_split(range(10), [0.7, 0.3])
        r.append((len(a), len(b), sorted(list(a) + list(b))))
        sub = D.Subset(ds, [4, 2])
        r.append([t.tolist() for t in sub[1]])

        class Stream(D.IterableDataset):
            def __iter__(self):
                return iter(range(7))
        r.append([b.tolist() for b in D.DataLoader(Stream(), batch_size=3)])
        r.append([b.tolist() for b in D.DataLoader(Stream(), batch_size=3, drop_last=True)])
        for bad in (dict(batch_sampler=[[0]], batch_size=2), dict(sampler=[0], shuffle=True)):
            with pytest.raises(ValueError):
                D.DataLoader(ds, **bad)
        with pytest.raises(ValueError):
            D.DataLoader(Stream(), shuffle=True)
        out.append(r)
    assert out[0] == out[1]


def test_loader_iterates_an_endless_sampler_lazily():
    import itertools

    from gradlab.utils.data import DataLoader, Sampler, TensorDataset

    class Forever(Sampler):
        def __iter__(self):
            return itertools.cycle(range(5))

    loader = DataLoader(TensorDataset(gradlab.arange(5)), batch_size=2, sampler=Forever())
    first = list(itertools.islice(iter(loader), 3))
    assert [b[0].tolist() for b in first] == [[0, 1], [2, 3], [4, 0]]
    huge = DataLoader(TensorDataset(gradlab.arange(5)), batch_size=2,
                      sampler=gradlab.utils.data.RandomSampler(range(5), replacement=True, num_samples=10 ** 10))
    assert len(next(iter(huge))[0]) == 2


# ---------------------------------------------------------------- module paths, pass-throughs, refusals
def test_torch_nn_modules_files_import_with_pytorchs_names(torch):
    import importlib
    import pkgutil

    import torch.nn.modules as tm
    missing = []
    for m in pkgutil.iter_modules(tm.__path__):
        if m.name.startswith("_") or m.name in ("adaptive", "linear_cross_entropy", "linear_cross_entropy_options"):
            continue
        g = importlib.import_module(f"gradlab.nn.modules.{m.name}")
        tmod = importlib.import_module(f"torch.nn.modules.{m.name}")
        for n in getattr(tmod, "__all__", []):
            if hasattr(gnn, n) and not hasattr(g, n):
                missing.append(f"{m.name}.{n}")
    assert not missing
    from gradlab.nn.modules.batchnorm import _BatchNorm  # noqa: F401
    from gradlab.nn.modules.loss import CTCLoss, _Loss  # noqa: F401
    from gradlab.nn.modules.utils import _pair
    assert _pair(3) == (3, 3)


def test_pass_throughs_and_refusals(torch):
    import gradlab.backends.cudnn as cudnn
    from gradlab.nn.parallel import DistributedDataParallel
    cudnn.benchmark = True
    gradlab.backends.cuda.matmul.allow_tf32 = True
    assert gradlab.backends.mps.is_available() is False and cudnn.is_available() is False
    assert gradlab.distributed.is_available() is False and gradlab.distributed.is_initialized() is False
    assert gradlab.distributed.get_world_size() == 1
    with pytest.raises(gradlab.DeviceError, match="one process"):
        gradlab.distributed.init_process_group("gloo")
    m = gnn.Linear(2, 3)
    ddp = DistributedDataParallel(m)
    x = gradlab.randn(4, 2)
    assert np.array_equal(ddp(x).detach().numpy(), m(x).detach().numpy())
    assert list(ddp.state_dict()) == ["module.weight", "module.bias"]
    with ddp.no_sync():
        pass
    with pytest.raises(RuntimeError, match="no ONNX exporter"):
        gradlab.onnx.export(m, (x,), "m.onnx")
    assert gradlab.serialization.save is gradlab.save
    gradlab.serialization.add_safe_globals([dict])
    from gradlab.cuda.amp import GradScaler, autocast  # noqa: F401
    assert gradlab.cuda.is_bf16_supported() == torch.cuda.is_bf16_supported() or not gradlab.cuda.is_available()
    assert gradlab.accelerator.is_available() == gradlab.cuda.is_available()
    if not gradlab.cuda.is_available():
        assert gradlab.accelerator.current_accelerator() is None
    t = gradlab.zeros(2)
    assert t.is_xpu is False and t.is_mps is False
    assert gnn.SyncBatchNorm.convert_sync_batchnorm(m) is m


def test_default_device_is_used_by_the_factories():
    from gradlab.backend import simulate_device
    assert str(gradlab.get_default_device()) == "cpu"
    with simulate_device():
        gradlab.set_default_device("cuda")
        try:
            assert gradlab.zeros(2).is_cuda and gradlab.tensor([1.0]).is_cuda and gradlab.arange(3).is_cuda
        finally:
            gradlab.set_default_device(None)
    assert gradlab.zeros(2).device.type == "cpu"


# ---------------------------------------------------------------- ops programs use, against PyTorch
def test_tensor_methods_match_pytorch(torch):
    a = np.random.default_rng(0).standard_normal((3, 7))
    got = []
    for L in (gradlab, torch):
        r = []
        x = L.tensor(a, requires_grad=True)
        y = x.unfold(1, 3, 2)
        (y * y).sum().backward()
        r += [tuple(y.shape), y.detach().numpy().round(12).tolist(), x.grad.numpy().tolist()]
        src = L.tensor(np.arange(21.0), requires_grad=True)
        z = L.zeros(3, 7, dtype=L.float64).masked_scatter(L.tensor(a > 0), src)
        (z * L.tensor(a)).sum().backward()
        r += [z.detach().numpy().tolist(), src.grad.numpy().tolist()]
        w = L.zeros(4, 3)
        w.index_put_((L.tensor([0, 0, 2]),), L.tensor([1.0, 2.0, 3.0]), accumulate=True)
        w.index_put_((L.tensor([1, 3]), L.tensor([2, 0])), L.tensor(5.0))
        r.append(w.tolist())
        b = a.copy()
        b[0, 2] = np.nan
        t = L.tensor(b)
        r += [L.nanmedian(t).item(), L.nanmedian(t, 1)[0].tolist(), L.nanmedian(t, 1)[1].tolist()]
        r += [L.fmax(t, L.tensor(0.0)).tolist(), L.fmin(t, t.flip(0)).tolist()]
        r += [L.histc(L.tensor(a.astype(np.float32)), bins=5).tolist(), L.histc(L.tensor(a), 4, -1, 1).tolist()]
        i = L.tensor([1, 2, 3])
        r += [(i << 2).tolist(), (i >> 1).tolist(), (1 << i).tolist()]
        f = L.tensor([1.0, 2.0])
        r += [f.view(L.int32).tolist(), str(f.view(L.int32).dtype).split(".")[-1], f == None, f != None]  # noqa: E711
        got.append(r)
    def same(p, q):
        return p == q or (isinstance(p, float) and np.isnan(p) and np.isnan(q)) or (
            isinstance(p, list) and len(p) == len(q) and all(same(u, v) for u, v in zip(p, q)))
    for k, (p, q) in enumerate(zip(*got)):
        assert same(p, q), (k, p, q)


def test_svd_and_eigh_match_pytorch_up_to_sign(torch):
    rng = np.random.default_rng(1)
    for shape in ((4, 3), (3, 5), (2, 3, 3)):
        A = rng.standard_normal(shape)
        ga = gradlab.tensor(A, requires_grad=True)
        U, S, Vh = gradlab.linalg.svd(ga, full_matrices=False)
        ta = torch.tensor(A, requires_grad=True)
        tU, tS, tVh = torch.linalg.svd(ta, full_matrices=False)
        np.testing.assert_allclose(S.detach().numpy(), tS.detach().numpy(), atol=1e-10)
        sign = np.sign(np.sum(U.detach().numpy() * tU.detach().numpy(), axis=-2, keepdims=True))
        np.testing.assert_allclose(U.detach().numpy(), tU.detach().numpy() * sign, atol=1e-10)
        # a gauge-invariant loss: the gradients agree exactly
        (U.abs().sum() + Vh.abs().sum() + S.sum()).backward()
        (tU.abs().sum() + tVh.abs().sum() + tS.sum()).backward()
        np.testing.assert_allclose(ga.grad.numpy(), ta.grad.numpy(), atol=1e-8)
    B = rng.standard_normal((4, 4))
    B = B + B.T
    ga, ta = gradlab.tensor(B, requires_grad=True), torch.tensor(B, requires_grad=True)
    w, V = gradlab.linalg.eigh(ga)
    tw, tV = torch.linalg.eigh(ta)
    np.testing.assert_allclose(w.detach().numpy(), tw.detach().numpy(), atol=1e-10)
    ((V ** 2) * gradlab.arange(4.0)).sum().backward()
    ((tV ** 2) * torch.arange(4.0, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(ga.grad.numpy(), ta.grad.numpy(), atol=1e-8)


def test_linalg_errors_name_the_function():
    with pytest.raises(gradlab.ShapeError, match="linalg.inv: A must be a square"):
        gradlab.linalg.inv(gradlab.zeros(2, 3))
    with pytest.raises(gradlab.ArgumentError, match="linalg.cholesky: the input is not positive-definite"):
        gradlab.linalg.cholesky(-gradlab.eye(2))
    with pytest.raises(gradlab.ArgumentError, match="linalg.solve: the input matrix is singular"):
        gradlab.linalg.solve(gradlab.zeros(2, 2), gradlab.ones(2))


# ---------------------------------------------------------------- the wrong results
def test_compile_with_inf_and_nan_constants():
    def f(x):
        T = x.shape[-1]
        y = x.masked_fill(gradlab.tril(gradlab.ones(T, T)) == 0, float("-inf"))
        return gradlab.softmax(y, dim=-1).sum() + gradlab.nan_to_num(x * float("nan"), nan=0.5).sum()
    x = gradlab.randn(2, 4, 4, requires_grad=True)
    np.testing.assert_allclose(gradlab.compile(f)(x).item(), f(x).item(), rtol=1e-6)


def test_func_grad_argnums_repeated_raises_and_autograd_grad_counts_grad_outputs(torch):
    from gradlab.func import grad
    with pytest.raises(gradlab.ArgumentError, match="unique"):
        grad(lambda x: (x * x).sum(), argnums=(0, 0))(gradlab.ones(2))
    x = gradlab.ones(2, requires_grad=True)
    with pytest.raises(gradlab.GradError, match="got 2 tensors and 1 gradients"):
        gradlab.autograd.grad([(x * 2).sum(), (x * 3).sum()], x, grad_outputs=[gradlab.tensor(1.0)])


def test_layer_norm_repr_matches_pytorch(torch):
    for kw in ({}, dict(bias=False), dict(elementwise_affine=False)):
        assert repr(gnn.LayerNorm(4, **kw)).split("  #")[0] == repr(torch.nn.LayerNorm(4, **kw))


def test_data_is_pytorchs_a_tensor_sharing_storage():
    p = gnn.Parameter(gradlab.ones(3))
    p.data.add_(p, alpha=-0.1)  # torch-data: the PyTorch habit runs as written (tests/test_data_attribute.py)
    np.testing.assert_allclose(p.detach().numpy(), 0.9 * np.ones(3), rtol=1e-6)
    m = gnn.Linear(3, 2)
    gnn.init.constant_(m.weight.data, 0.25)  # torch-data: DCGAN's weights_init passes .data
    assert float(m.weight.sum()) == 1.5
