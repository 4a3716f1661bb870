"""memory_report: parameters, gradients, optimizer state, saved activations, and the expected differences."""
from __future__ import annotations

import importlib

import pytest

import gradlab
import gradlab.nn as nn
import gradlab.optim as optim
from gradlab.debug import DebugInputError, MemoryReport, memory_report


def _mlp():
    gradlab.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))


def _x(n=64):
    return gradlab.randn(n, 16)


def test_parts_add_up():
    model = _mlp()
    opt = optim.Adam(model.parameters())
    loss = model(_x()).sum()
    r = memory_report(model, loss, opt)
    assert isinstance(r, MemoryReport)
    n_param_bytes = sum(p.nbytes for p in model.parameters())
    assert r.parameters == n_param_bytes and r.frozen_parameters == 0
    assert r.gradients == 0 and r.optimizer_state == 0
    assert r.activations > 0 and r.total == r.parameters + r.activations
    # per module: the relu outputs (64 x 32 float32) are saved in modules 1 and 3
    assert r.per_module["1"] >= 64 * 32 * 4
    assert r.top_saved[0]["bytes"] == max(e["bytes"] for e in r.top_saved)
    text = repr(r)
    assert text.startswith("memory_report:") and "saved activations" in text
    assert "<table" in r._repr_html_()
    loss.backward()
    opt.step()
    r2 = memory_report(model, optimizer=opt)
    assert r2.gradients == n_param_bytes
    assert r2.optimizer_state >= 2 * n_param_bytes  # Adam: exp_avg and exp_avg_sq per parameter
    assert r2.activations is None and "not measured" in repr(r2)
    # the per-module table splits every part, and the parts add up to the totals
    assert r2.modules["0"]["parameters"] == sum(p.nbytes for p in model[0].parameters())
    for part, total in (("parameters", r2.parameters), ("gradients", r2.gradients),
                        ("optimizer_state", r2.optimizer_state)):
        assert sum(row[part] for row in r2.modules.values()) == total
    assert sum(row["activations"] for row in r.modules.values()) == r.activations
    assert "by module:" in repr(r2)


def test_no_grad_keeps_no_activations():
    model = _mlp()
    with gradlab.no_grad():
        loss = model(_x()).sum()
    r = memory_report(model, loss)
    assert r.activations == 0 and any("no graph" in n for n in r.notes)


def test_frozen_layers_save_less():
    model = _mlp()
    full = memory_report(model, model(_x()).sum())
    model[0].requires_grad_(False)  # freeze the first layer
    opt = optim.Adam([p for p in model.parameters() if p.requires_grad])
    loss = model(_x()).sum()
    frozen = memory_report(model, loss, opt)
    assert frozen.frozen_parameters == sum(p.nbytes for p in model[0].parameters())
    assert frozen.parameters == full.parameters
    # the input batch is no longer saved for the first layer's weight gradient
    assert frozen.activations < full.activations
    loss.backward()
    opt.step()
    after = memory_report(model, optimizer=opt)
    assert after.gradients == frozen.trainable_parameters  # no gradients for frozen weights


def test_lora_trains_far_fewer_bytes():
    gradlab.manual_seed(0)
    dense = nn.Linear(64, 64)
    lora = nn.LoRALinear(nn.Linear(64, 64), r=2)
    x = gradlab.randn(8, 64)
    reports = {}
    for name, m in (("dense", dense), ("lora", lora)):
        opt = optim.Adam([p for p in m.parameters() if p.requires_grad])
        m(x).sum().backward()
        opt.step()
        reports[name] = memory_report(m, optimizer=opt)
    d, lo = reports["dense"], reports["lora"]
    assert lo.trainable_parameters == (2 * 64 + 64 * 2) * 4  # A (2, 64) and B (64, 2), float32
    assert lo.gradients == lo.trainable_parameters and d.gradients == d.trainable_parameters
    assert lo.optimizer_state < d.optimizer_state / 10
    assert lo.frozen_parameters == d.parameters  # the frozen base is the dense layer's size


def test_checkpointing_saves_less():
    ckpt = importlib.import_module("gradlab.utils.checkpoint").checkpoint
    model = _mlp()
    x = _x()
    plain = memory_report(model, model(x).sum())
    checkpointed = memory_report(model, ckpt(model, x).sum())
    # only the block's input stays saved; the activations inside are recomputed in backward
    assert checkpointed.activations == x.nbytes < plain.activations
    assert checkpointed.dropped > 0 and any("recomputed" in n for n in checkpointed.notes)
    assert checkpointed.parameters == plain.parameters


def test_bad_input():
    with pytest.raises(DebugInputError, match="expected a gradlab.nn.Module"):
        memory_report(42)
    with pytest.raises(DebugInputError, match="loss must be a gradlab Tensor"):
        memory_report(_mlp(), loss=3.0)
    with pytest.raises(DebugInputError, match="optimizer"):
        memory_report(_mlp(), optimizer=object())
