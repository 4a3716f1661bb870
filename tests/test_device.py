"""Device semantics, tested on every machine through the simulated device.

``gradlab.backend.simulate_device()`` presents a second device named "cuda"
whose arrays are NumPy underneath but refuse to mix with host arrays (as CuPy's
do). Everything about devices that is not the GPU itself is tested here: moves,
mismatch errors, gradients staying on the device, module and optimizer moves,
checkpoints across devices, and every registered op on the device against the
cpu (tests/test_device_registry.py). Real-GPU tests live in tests/test_gpu.py.
"""
from __future__ import annotations

import io
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import gradlab
import gradlab.nn.functional as F
from gradlab import nn, optim
from gradlab.backend import SimArray, device_of_array, xp_of
from gradlab.errors import DeviceError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def sim(sim_device):  # the conftest fixture, under a short name
    yield sim_device


def on_sim(t):
    return t.device == "cuda:0" and isinstance(t._data, SimArray)


# ------------------------------------------------------------ no GPU here
def test_importing_gradlab_never_imports_cupy():
    code = "import sys, gradlab, gradlab.nn, gradlab.optim, gradlab.amp, gradlab.io, gradlab.data, gradlab.debug, " \
           "gradlab.compile, gradlab.func, gradlab.viz, gradlab.cuda; gradlab.ones(2).sum(); print('cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_cuda_without_cupy_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy -> ImportError, whatever is installed
    assert not gradlab.cuda.is_available() and gradlab.cuda.device_count() == 0
    with pytest.raises(DeviceError, match=r"CuPy is not installed.*pip install 'gradlab\[gpu\]'"):
        gradlab.tensor([1.0, 2.0], device="cuda")
    with pytest.raises(DeviceError, match="CuPy is not installed"):
        gradlab.ones(2).to("cuda")
    with pytest.raises(DeviceError, match="CuPy is not installed"):
        gradlab.zeros(3, device="cuda:0")


def test_cupy_without_a_gpu_says_so(monkeypatch):
    def no_device():
        raise RuntimeError("cudaErrorNoDevice")
    fake = types.ModuleType("cupy")
    fake.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=no_device))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    with pytest.raises(DeviceError, match=r"CuPy is installed but this machine has 0 CUDA device"):
        gradlab.tensor([1.0], device="cuda")
    assert not gradlab.cuda.is_available()


def test_cuda_module_without_gpu_is_quiet(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    gradlab.cuda.synchronize()
    assert gradlab.cuda.memory_allocated() == 0 and gradlab.cuda.max_memory_allocated() == 0
    with pytest.raises(DeviceError, match="no CUDA device"):
        gradlab.cuda.get_device_name()


def test_device_objects():
    d = gradlab.device("cuda")
    assert d == "cuda:0" and d.type == "cuda" and d.index == 0 and str(d) == "cuda:0"
    assert gradlab.device("cpu") == "cpu" and gradlab.device("cpu") != "cuda"
    with pytest.raises(DeviceError, match="unknown device 'tpu'"):
        gradlab.device("tpu")
    with pytest.raises(DeviceError, match="bad device index"):
        gradlab.device("cuda:x")
    assert gradlab.ones(2).device == "cpu" and not gradlab.ones(2).is_cuda


# ------------------------------------------------------- the simulated device
def test_simarray_refuses_host_arrays(sim):
    a = gradlab.backend.xp_for(gradlab.device(sim)).arange(4.0)
    assert isinstance(a, SimArray) and device_of_array(a) == "cuda:0"
    assert isinstance(a + 1, SimArray) and isinstance(np.exp(a), SimArray)
    assert isinstance(a.sum(), SimArray) and a.sum().shape == ()  # 0-d arrays, as CuPy returns
    for bad in (lambda: a + np.ones(4), lambda: np.ones(4) * a, lambda: np.concatenate([a, np.ones(2)]),
                lambda: np.add(a, np.asarray(1.0)), lambda: a.__setitem__(slice(None), np.zeros(4)),
                lambda: xp_of(a).exp(np.ones(2))):
        with pytest.raises(DeviceError, match="host"):
            bad()
    assert isinstance(xp_of(a).asarray(np.ones(2)), SimArray)  # an explicit copy is fine
    assert type(a.get()) is np.ndarray


def test_simulated_device_is_a_cuda_device(sim):
    assert gradlab.cuda.is_available() and gradlab.cuda.device_count() == 1
    gradlab.cuda.synchronize()
    with pytest.raises(DeviceError, match="cuda:0 only"):
        gradlab.zeros(2, device="cuda:1")


# --------------------------------------------------------------- moves
def test_to_cuda_cpu_and_device_property(sim):
    x = gradlab.tensor([[1.0, 2.0], [3.0, 4.0]])
    y = x.to("cuda")
    assert on_sim(y) and y.is_cuda and x.device == "cpu"
    assert on_sim(x.cuda()) and on_sim(x.to(gradlab.device("cuda:0")))
    assert y.to("cuda") is y  # already there: no copy
    back = y.cpu()
    assert back.device == "cpu" and type(back._data) is np.ndarray
    np.testing.assert_array_equal(back.numpy(), x.numpy())
    z = x.to("cuda", gradlab.float64)
    assert on_sim(z) and z.dtype == gradlab.float64
    assert on_sim(x.to(y)) and "device='cuda:0'" in repr(y)
    for make in (lambda: gradlab.zeros(2, 3, device=sim), lambda: gradlab.randn(2, device=sim),
                 lambda: gradlab.arange(5, device=sim), lambda: gradlab.eye(3, device=sim),
                 lambda: gradlab.full((2,), 1.5, device=sim), lambda: gradlab.zeros_like(y),
                 lambda: gradlab.randint(0, 5, (3,), device=sim)):
        assert on_sim(make())


def test_numpy_on_device_says_call_cpu(sim):
    y = gradlab.ones(3, device=sim)
    with pytest.raises(DeviceError, match=r"is on cuda:0; call \.cpu\(\) first"):
        y.numpy()
    with pytest.raises(DeviceError, match=r"call \.cpu\(\)"):
        np.asarray(y)
    assert y.sum().item() == 3.0  # .item() is an explicit read of one number, as in PyTorch
    with pytest.raises(gradlab.errors.GradError, match=r"call \.detach\(\)\.cpu\(\)\.numpy\(\)"):
        y.requires_grad_().numpy()


def test_mixing_devices_names_both_tensors(sim):
    x = gradlab.tensor(np.ones((2, 3)), device=sim, name="x")
    b = gradlab.tensor(np.ones(3), name="b")
    with pytest.raises(DeviceError, match=r"device mismatch: add got 'x' on cuda:0 and 'b' on cpu; move one with \.to\(\)"):
        x + b
    with pytest.raises(DeviceError, match="device mismatch: matmul got 'x' on cuda:0 and 'w' on cpu"):
        x @ gradlab.tensor(np.ones((3, 4)), name="w")
    with pytest.raises(DeviceError, match="device mismatch: cat"):
        gradlab.cat([x, gradlab.ones(2, 3, dtype=gradlab.float64)])
    with pytest.raises(DeviceError, match="device mismatch"):
        F.linear(x, gradlab.ones(4, 3, dtype=gradlab.float64))
    assert (x + 2.0).device == "cuda:0"  # Python numbers are not tensors: no device to mismatch


def test_gradients_stay_on_the_device_and_cross_moves(sim):
    w = gradlab.randn(3, 2, device=sim, requires_grad=True)
    x_cpu = gradlab.randn(4, 3, dtype=gradlab.float32, requires_grad=True)
    loss = (x_cpu.to(sim) @ w).tanh().sum()
    assert on_sim(loss)
    loss.backward()
    assert on_sim(w.grad) and x_cpu.grad.device == "cpu"  # the move's gradient moves back
    xr = x_cpu.detach().requires_grad_()
    wr = w.detach().cpu().requires_grad_()
    (xr @ wr).tanh().sum().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), wr.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(x_cpu.grad.numpy(), xr.grad.numpy(), rtol=1e-6)


def test_higher_order_and_forward_mode_on_device(sim):
    x = gradlab.tensor([0.3, -1.2, 2.0], dtype=gradlab.float64, device=sim, requires_grad=True)
    (g,) = gradlab.grad(x.tanh().sum(), x, create_graph=True)
    (gg,) = gradlab.grad(g.sum(), x)
    assert on_sim(g) and on_sim(gg)
    xc = x.detach().cpu()
    np.testing.assert_allclose(gg.cpu().numpy(), (-2 * np.tanh(xc.numpy()) * (1 - np.tanh(xc.numpy()) ** 2)))
    import gradlab.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        d = fwAD.make_dual(x.detach(), gradlab.ones(3, dtype=gradlab.float64, device=sim))
        t = fwAD.unpack_dual(d.exp() * 2).tangent
    assert on_sim(t)
    np.testing.assert_allclose(t.cpu().numpy(), 2 * np.exp(xc.numpy()))


def test_manual_seed_gives_the_same_numbers_on_both_devices(sim):
    gradlab.manual_seed(7)
    a = gradlab.randn(5, device=sim)
    gradlab.manual_seed(7)
    b = gradlab.randn(5)
    np.testing.assert_array_equal(a.cpu().numpy(), b.numpy())


# ------------------------------------------------------- modules, optimizers
def _mlp():
    gradlab.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


def _batch():
    gradlab.manual_seed(1)
    return gradlab.randn(16, 4), gradlab.randint(0, 3, (16,))


@pytest.mark.parametrize("make_opt", [lambda p: optim.SGD(p, lr=0.1, momentum=0.9),
                                      lambda p: optim.AdamW(p, lr=0.01),
                                      lambda p: optim.RMSprop(p, lr=0.01, momentum=0.5)])
def test_module_and_optimizer_state_move_mid_training(sim, make_opt):
    """Train on cpu, move to the device after two steps, go on: identical to an all-cpu run."""
    x, y = _batch()
    ref, model = _mlp(), _mlp()
    ref_opt, opt = make_opt(ref.parameters()), make_opt(model.parameters())
    params = list(model.parameters())
    for step in range(5):
        if step == 2:
            assert model.to(sim) is model
            assert all(p is q for p, q in zip(params, model.parameters()))  # same objects, moved in place
            assert all(on_sim(p) for p in model.parameters())
        for m, o, xb, yb in ((ref, ref_opt, x, y), (model, opt, x.to(next(model.parameters()).device),
                                                    y.to(next(model.parameters()).device))):
            o.zero_grad()
            F.cross_entropy(m(xb), yb).backward()
            o.step()
    for st in opt.state.values():
        for k, v in st.items():
            if k != "step" and isinstance(v, gradlab.Tensor):
                assert on_sim(v), k
    for p, q in zip(model.parameters(), ref.parameters()):
        assert on_sim(p) and on_sim(p.grad)
        np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_module_to_moves_buffers_and_back(sim):
    m = nn.LayerNorm(3)
    m.register_buffer("count", gradlab.zeros(1, dtype=gradlab.int64))
    m.to(sim)
    assert on_sim(m.count) and on_sim(m.weight) and m.count.dtype == gradlab.int64
    m(gradlab.randn(5, 3, device=sim)).sum().backward()
    assert on_sim(m.weight.grad)
    m.cpu()
    assert m.count.device == "cpu" and type(m.weight._data) is np.ndarray and m.weight.grad.device == "cpu"
    with pytest.raises(DeviceError, match="device mismatch"):
        nn.Linear(3, 2).to(sim)(gradlab.ones(1, 3))


def test_gpt_training_step_on_device_matches_cpu(sim):
    def run(device):
        gradlab.manual_seed(3)
        model = nn.GPT(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=16).to(device)
        opt = optim.AdamW(model.parameters(), lr=1e-2)
        gradlab.manual_seed(4)
        idx = gradlab.randint(0, 11, (2, 8), device=device)
        losses = []
        for _ in range(2):
            opt.zero_grad()
            _, loss = model(idx[:, :-1], idx[:, 1:])
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return model, losses
    m_dev, l_dev = run(sim)
    m_cpu, l_cpu = run("cpu")
    np.testing.assert_allclose(l_dev, l_cpu, rtol=1e-5)
    for p, q in zip(m_dev.parameters(), m_cpu.parameters()):
        assert on_sim(p)
        np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------ checkpoints
def test_checkpoint_saved_on_device_loads_on_cpu_and_back(sim):
    model = _mlp().to(sim)
    opt = optim.Adam(model.parameters(), lr=0.01)
    x, y = _batch()
    F.cross_entropy(model(x.to(sim)), y.to(sim)).backward()
    opt.step()
    buf = io.BytesIO()
    gradlab.save({"model": model.state_dict(), "opt": opt.state_dict()}, buf)
    buf.seek(0)
    on_cpu = gradlab.load(buf, map_location="cpu")
    assert all(t.device == "cpu" for t in on_cpu["model"].values())
    cpu_model = _mlp()
    cpu_model.load_state_dict(on_cpu["model"])
    cpu_opt = optim.Adam(cpu_model.parameters(), lr=0.01)
    cpu_opt.load_state_dict(on_cpu["opt"])
    for p, q in zip(cpu_model.parameters(), model.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().cpu().numpy())
    buf.seek(0)
    back = gradlab.load(buf, map_location="cuda")
    assert all(on_sim(t) for t in back["model"].values())
    dev_model = _mlp().to(sim)
    dev_model.load_state_dict(on_cpu["model"])  # a cpu state dict into a device model: copied onto the device
    assert all(on_sim(p) for p in dev_model.parameters())
    # the optimizer restored on cpu continues exactly as the device one does
    for m, o, dev in ((cpu_model, cpu_opt, "cpu"), (model, opt, sim)):
        o.zero_grad()
        F.cross_entropy(m(x.to(dev)), y.to(dev)).backward()
        o.step()
    for p, q in zip(cpu_model.parameters(), model.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().cpu().numpy(), rtol=1e-6, atol=1e-7)


def test_random_fills_dropout_and_generation_stay_on_the_device(sim):
    t = gradlab.zeros(3, 4, device=sim)
    assert on_sim(t.normal_()) and on_sim(t.uniform_()) and on_sim(nn.init.kaiming_uniform_(t))
    x = gradlab.randn(4, 8, device=sim, requires_grad=True)
    y = F.dropout(x, 0.5, training=True)
    y.sum().backward()
    assert on_sim(y) and on_sim(x.grad)
    model = nn.GPT(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=16).to(sim)
    gradlab.manual_seed(0)
    a = model.generate(gradlab.zeros(1, 2, dtype=gradlab.int64, device=sim), 4)
    model.cpu()
    gradlab.manual_seed(0)
    b = model.generate(gradlab.zeros(1, 2, dtype=gradlab.int64), 4)
    assert on_sim(a)
    np.testing.assert_array_equal(a.cpu().numpy(), b.numpy())


def test_numpy_conversions_of_device_arrays_are_refused_while_simulating(sim):
    a = gradlab.ones(2, 3, device=sim).T  # not contiguous
    with pytest.raises(DeviceError, match=r"numpy\.asarray\(\) got an array on the simulated cuda:0 device"):
        np.asarray(a._data)
    assert on_sim(a.contiguous()) and a.contiguous().is_contiguous()
    assert on_sim(gradlab.cumsum(gradlab.tensor(2.0, device=sim), 0))


def test_bench_gpu_runs_without_a_gpu_and_on_the_simulated_device():
    script = str(ROOT / "benchmarks" / "bench_gpu.py")
    if not gradlab.cuda.is_available():
        out = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and "no GPU here" in out.stdout, out.stderr
    out = subprocess.run([sys.executable, script, "--simulate"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "GPU speedup over cpu" in out.stdout and "float16" in out.stdout


def test_gradcheck_and_gradgradcheck_run_on_the_device(sim):
    from gradlab.autograd import gradcheck, gradgradcheck
    gradlab.manual_seed(2)
    x = gradlab.randn(3, dtype=gradlab.float64, device=sim, requires_grad=True)
    w = gradlab.randn(3, 2, dtype=gradlab.float64, device=sim, requires_grad=True)
    assert gradcheck(lambda a, b: F.softmax(a @ b, -1), (x, w))
    assert gradgradcheck(lambda a, b: (a @ b).tanh(), (x, w))


def test_bfloat16_cannot_go_to_the_gpu(sim):
    for make in (lambda: gradlab.ones(2, dtype=gradlab.bfloat16).cuda(),
                 lambda: gradlab.zeros(2, dtype=gradlab.bfloat16, device=sim),
                 lambda: gradlab.ones(2, device=sim).to(gradlab.bfloat16)):
        with pytest.raises(DeviceError, match="CuPy has no bfloat16 dtype; use float16"):
            make()
    assert on_sim(gradlab.ones(2, device=sim).half())


def test_integer_division_on_device(sim):
    a, b = gradlab.tensor([7, -7, 5]), gradlab.tensor([2, 2, -3])
    ad, bd = a.to(sim), b.to(sim)
    for f in (lambda x, y: gradlab.div(x, y, rounding_mode="trunc"), lambda x, y: gradlab.div(x, y, rounding_mode="floor"),
              lambda x, y: x // y, lambda x, y: x % 3, lambda x, y: gradlab.div(x, 2, rounding_mode="trunc")):
        out = f(ad, bd)
        assert on_sim(out)
        np.testing.assert_array_equal(out.cpu().numpy(), f(a, b).numpy())
    with pytest.raises(gradlab.errors.ArgumentError, match="integer division by zero"):
        ad // gradlab.tensor([1, 0, 1], device=sim)


def test_load_state_dict_copies_onto_each_models_device(sim):
    dev_model, cpu_model = _mlp().to(sim), _mlp()
    for p in dev_model.parameters():
        p._data = p._data * 2
    cpu_model.load_state_dict(dev_model.state_dict())  # device values into a cpu model: copied to the host
    assert all(type(p._data) is np.ndarray for p in cpu_model.parameters())
    back = _mlp().to(sim)
    back.load_state_dict(cpu_model.state_dict())
    for p, q in zip(back.parameters(), dev_model.parameters()):
        assert on_sim(p)
        np.testing.assert_array_equal(p.detach().cpu().numpy(), q.detach().cpu().numpy())
