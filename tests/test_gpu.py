"""Real-GPU tests: CuPy on a CUDA device. Every test here skips without one.

The device plumbing itself is tested everywhere with the simulated device
(tests/test_device.py); these tests check what only a real GPU can: CuPy's
kernels give the cpu's results (registry suite, float32 tolerances), float16
matmul, memory accounting from CuPy's pool, synchronisation, and a training
step. Run them with ``pytest -m gpu`` on a machine with CUDA and
``pip install 'gradlab[gpu]'``.
"""
from __future__ import annotations

import io

import numpy as np
import pytest

import gradlab
import gradlab.nn.functional as F
from gradlab import nn, optim
from gradlab.errors import DeviceError
from gradlab.ops.registry import REGISTRY, SampleSource

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gradlab.cuda.is_available(), reason="needs CuPy and a CUDA device"),
]


def _cupy():
    import cupy
    return cupy


def test_tensor_on_gpu_is_a_cupy_array():
    x = gradlab.tensor([[1.0, 2.0], [3.0, 4.0]], device="cuda")
    assert isinstance(x._data, _cupy().ndarray) and x.device == "cuda:0" and x.is_cuda
    assert gradlab.cuda.device_count() >= 1 and isinstance(gradlab.cuda.get_device_name(), str)
    with pytest.raises(DeviceError, match=r"call \.cpu\(\) first"):
        x.numpy()
    with pytest.raises(DeviceError, match="device mismatch: add"):
        x + gradlab.ones(2, 2)
    np.testing.assert_array_equal(x.cpu().numpy(), [[1.0, 2.0], [3.0, 4.0]])


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_matmul_forward_backward_matches_cpu(dtype):
    gradlab.manual_seed(0)
    a = gradlab.randn(64, 48, dtype=getattr(gradlab, dtype))
    b = gradlab.randn(48, 32, dtype=getattr(gradlab, dtype))
    ag, bg = a.cuda().requires_grad_(), b.cuda().requires_grad_()
    ac, bc = a.float().requires_grad_(), b.float().requires_grad_()
    (ag @ bg).float().square().sum().backward()
    (ac @ bc).square().sum().backward()
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=3e-2, atol=3e-1)
    assert ag.grad.is_cuda and ag.grad.dtype == ag.dtype
    np.testing.assert_allclose(ag.grad.cpu().numpy().astype(np.float32), ac.grad.numpy(), **tol)
    np.testing.assert_allclose(bg.grad.cpu().numpy().astype(np.float32), bc.grad.numpy(), **tol)


def _move(o, dev):
    if isinstance(o, gradlab.Tensor):
        t = o.detach().to(dev)
        if t.is_floating_point() and t.dtype == gradlab.float64:
            t = t.float()  # GPUs are slow at float64: compare in float32
        return t.requires_grad_() if o.requires_grad else t
    if isinstance(o, (list, tuple)):
        return type(o)(_move(v, dev) for v in o)
    if isinstance(o, dict):
        return {k: _move(v, dev) for k, v in o.items()}
    return o


def _tensors(o):
    if isinstance(o, gradlab.Tensor):
        return [o]
    if isinstance(o, (list, tuple)):
        return [t for v in o for t in _tensors(v)]
    return []


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_registry_on_gpu_matches_cpu(name):
    """Every registered op in float32 on the GPU against the same op in float32 on the cpu."""
    info = REGISTRY[name]
    for s in info.samples(SampleSource(0)):
        cargs, ckw = _move(s.args, "cpu"), _move(s.kwargs, "cpu")
        try:
            ref = info.fn(*cargs, **ckw)
        except Exception:  # noqa: BLE001 - a sample that shows an error case
            continue
        gargs, gkw = _move(s.args, "cuda"), _move(s.kwargs, "cuda")
        out = info.fn(*gargs, **gkw)
        for o, r in zip(_tensors(out), _tensors(ref)):
            assert o.is_cuda, f"{name}: output on {o.device}"
            np.testing.assert_allclose(o.detach().cpu().numpy().astype(np.float64),
                                       r.detach().numpy().astype(np.float64), rtol=2e-4, atol=2e-5, err_msg=str(s))
        gins = [t for t in _tensors((gargs, list(gkw.values()))) if t.requires_grad]
        cins = [t for t in _tensors((cargs, list(ckw.values()))) if t.requires_grad]
        gouts = [o for o in _tensors(out) if o.requires_grad]
        couts = [o for o in _tensors(ref) if o.requires_grad]
        if info.differentiable and gins and gouts:
            gg = gradlab.grad(sum(o.float().sum() for o in gouts), gins, allow_unused=True)
            cg = gradlab.grad(sum(o.float().sum() for o in couts), cins, allow_unused=True)
            for g, c in zip(gg, cg):
                if g is not None:
                    assert g.is_cuda
                    np.testing.assert_allclose(g.cpu().numpy(), c.numpy(), rtol=2e-4, atol=2e-5, err_msg=str(s))


def test_memory_accounting_and_synchronize():
    gradlab.cuda.synchronize()
    gradlab.cuda.reset_peak_memory_stats()
    before = gradlab.cuda.memory_allocated()
    x = gradlab.zeros(1024, 1024, device="cuda")  # 4 MiB
    assert gradlab.cuda.memory_allocated() - before >= 4 * 2**20
    y = x + 1
    peak = gradlab.cuda.max_memory_allocated()
    assert peak >= before + 8 * 2**20
    del x, y
    assert gradlab.cuda.memory_allocated() <= before + 2**20
    assert gradlab.cuda.max_memory_allocated() == peak
    assert gradlab.cuda.memory_reserved() >= gradlab.cuda.memory_allocated()


def test_training_step_and_checkpoint_round_trip():
    gradlab.manual_seed(0)
    model = nn.GPT(vocab_size=17, block_size=16, n_layer=2, n_head=2, n_embd=32).cuda()
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    idx = gradlab.randint(0, 17, (4, 17), device="cuda")
    losses = []
    for _ in range(3):
        opt.zero_grad()
        _, loss = model(idx[:, :-1], idx[:, 1:])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert all(p.is_cuda and p.grad.is_cuda for p in model.parameters())
    buf = io.BytesIO()
    gradlab.save(model.state_dict(), buf)
    buf.seek(0)
    sd = gradlab.load(buf, map_location="cpu")
    assert all(t.device == "cpu" for t in sd.values())
    cpu_model = nn.GPT(vocab_size=17, block_size=16, n_layer=2, n_head=2, n_embd=32)
    cpu_model.load_state_dict(sd)
    model.eval(), cpu_model.eval()
    np.testing.assert_allclose(cpu_model(idx.cpu()[:, :-1]).detach().numpy(),
                               model(idx[:, :-1]).detach().cpu().numpy(), rtol=1e-3, atol=1e-4)


def test_manual_seed_seeds_cupy_too():
    gradlab.manual_seed(5)
    a = _cupy().random.rand(3)
    gradlab.manual_seed(5)
    b = _cupy().random.rand(3)
    np.testing.assert_array_equal(a.get(), b.get())
    gradlab.manual_seed(5)
    x = gradlab.randn(4, device="cuda")
    gradlab.manual_seed(5)
    np.testing.assert_array_equal(x.cpu().numpy(), gradlab.randn(4).numpy())


def test_conv_and_pool_on_gpu():
    gradlab.manual_seed(1)
    x = gradlab.randn(2, 3, 8, 8)
    conv = nn.Conv2d(3, 4, 3, padding=1)
    ref = F.max_pool2d(conv(x), 2)
    out = F.max_pool2d(conv.cuda()(x.cuda()), 2)
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref.detach().numpy(), rtol=1e-4, atol=1e-5)
