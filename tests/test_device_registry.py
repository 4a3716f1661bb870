"""Every registered op on the simulated device against the cpu: forward values, gradients,
forward-mode tangents and second derivatives.

A new op added to the registry is checked here for device leaks (a helper array made on the
host, a result or gradient that comes back on the cpu) with no new test code. See
tests/test_device.py for the device semantics themselves.
"""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
import gradlab.nn.functional as F  # noqa: F401 - registers the nn.functional ops
from gradlab.backend import SimArray, simulate_device
from gradlab.ops.registry import REGISTRY, SampleSource


@pytest.fixture
def sim():
    with simulate_device():
        yield "cuda"


def on_sim(t):
    return t.device == "cuda:0" and isinstance(t._data, SimArray)


def _move(o, dev):
    if isinstance(o, gradlab.Tensor):
        t = o.detach().to(dev)
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
    if isinstance(o, dict):
        return [t for v in o.values() for t in _tensors(v)]
    return []


def _loss(outs):
    outs = [o for o in outs if o.requires_grad]
    return sum((o.double() * (1.0 + gradlab.arange(o.numel(), dtype=gradlab.float64, device=o.device)
                               .reshape(o.shape) / 7)).sum() for o in outs) if outs else None


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_registry_op_on_device_matches_cpu(sim, name):
    """Forward values and gradients of every registered op, on the device vs on the cpu."""
    info = REGISTRY[name]
    ran = 0
    for s in info.samples(SampleSource(0)):
        try:
            ref = info.fn(*s.args, **s.kwargs)
        except Exception:  # noqa: BLE001 - a sample that shows an error case
            continue
        args, kwargs = _move(s.args, sim), _move(s.kwargs, sim)
        out = info.fn(*args, **kwargs)
        for o, r in zip(_tensors(out), _tensors(ref)):
            assert on_sim(o), f"{name}: output on {o.device}, {s}"
            np.testing.assert_allclose(o.detach().cpu().numpy().astype(np.float64),
                                       r.detach().numpy().astype(np.float64), rtol=1e-6, atol=1e-9, err_msg=str(s))
        ins, ins_ref = [t for t in _tensors((args, kwargs)) if t.requires_grad], \
            [t for t in _tensors((s.args, s.kwargs)) if t.requires_grad]
        loss, loss_ref = _loss(_tensors(out)), _loss(_tensors(ref))
        if info.differentiable and ins and loss is not None:
            grads = gradlab.grad(loss, ins, allow_unused=True)
            grads_ref = gradlab.grad(loss_ref, ins_ref, allow_unused=True)
            for g, gr in zip(grads, grads_ref):
                if g is None:
                    assert gr is None
                    continue
                assert on_sim(g), f"{name}: gradient on {g.device}, {s}"
                np.testing.assert_allclose(g.cpu().numpy(), gr.numpy(), rtol=1e-6, atol=1e-9, err_msg=str(s))
        ran += 1
    if not ran:
        pytest.skip(f"{name}: none of its samples runs on the cpu (the registry suite reports that)")


@pytest.mark.parametrize("name", sorted(n for n in REGISTRY if REGISTRY[n].differentiable and REGISTRY[n].jvp))
def test_registry_jvp_on_device_matches_cpu(sim, name):
    """Forward-mode tangents of every op with a JVP, on the device vs on the cpu."""
    import gradlab.autograd.forward_ad as fwAD
    info = REGISTRY[name]

    def tangents(args, kwargs, dev):
        with fwAD.dual_level():
            def dual(o):
                if isinstance(o, gradlab.Tensor) and o.requires_grad:
                    t = gradlab.arange(o.numel(), dtype=o.dtype, device=dev).reshape(o.shape) / 5 - 0.3
                    return fwAD.make_dual(o.detach(), t)
                if isinstance(o, (list, tuple)):
                    return type(o)(dual(v) for v in o)
                return o
            out = info.fn(*dual(args), **{k: dual(v) for k, v in kwargs.items()})
            return [fwAD.unpack_dual(o).tangent for o in _tensors(out)]

    for s in info.samples(SampleSource(0)):
        try:
            ref = tangents(s.args, s.kwargs, "cpu")
        except Exception:  # noqa: BLE001 - error-case samples, or no JVP for this argument
            continue
        got = tangents(_move(s.args, sim), _move(s.kwargs, sim), sim)
        for t, r in zip(got, ref):
            if r is None:
                continue
            assert on_sim(t), f"{name}: tangent on {t.device}, {s}"
            np.testing.assert_allclose(t.cpu().numpy(), r.numpy(), rtol=1e-6, atol=1e-9, err_msg=str(s))


def test_registry_second_derivatives_on_device_match_cpu(sim):
    """Double backward (the VJPs of the VJPs) of every op claiming second order, device vs cpu."""
    checked = 0
    for name in sorted(REGISTRY):
        info = REGISTRY[name]
        if not info.differentiable or info.order < 2:
            continue
        for s in list(info.samples(SampleSource(0)))[:2]:
            try:
                ref = info.fn(*s.args, **s.kwargs)
                ins_r = [t for t in _tensors((s.args, s.kwargs)) if t.requires_grad]
                loss_r = _loss(_tensors(ref))
                if loss_r is None or not ins_r:
                    continue
                g_r = [g for g in gradlab.grad(loss_r, ins_r, create_graph=True, allow_unused=True)
                       if g is not None and g.requires_grad]
                if not g_r:
                    continue
                gg_r = gradlab.grad(sum((g * g).sum() for g in g_r), ins_r, allow_unused=True)
            except Exception:  # noqa: BLE001 - error-case samples
                continue
            args, kwargs = _move(s.args, sim), _move(s.kwargs, sim)
            ins = [t for t in _tensors((args, kwargs)) if t.requires_grad]
            g = [x for x in gradlab.grad(_loss(_tensors(info.fn(*args, **kwargs))), ins, create_graph=True,
                                         allow_unused=True) if x is not None and x.requires_grad]
            gg = gradlab.grad(sum((x * x).sum() for x in g), ins, allow_unused=True)
            for u, v in zip(gg, gg_r):
                if u is not None:
                    assert on_sim(u), f"{name}: second derivative on {u.device}"
                    np.testing.assert_allclose(u.cpu().numpy(), v.numpy(), rtol=1e-6, atol=1e-9, err_msg=name)
            checked += 1
    assert checked > 50
