"""One generic suite over the whole op registry.

For every registered op and hypothesis-generated sample inputs: gradcheck in
float64, gradgradcheck (for ops that claim second order), and comparison of
forward values and gradients with PyTorch where it is installed. A new op
added to the registry is tested here with no new test code.
"""
from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gradlab
import gradlab.nn.functional as F  # noqa: F401 - registers the nn.functional ops
from gradlab.autograd import gradcheck, gradgradcheck
from gradlab.ops import registry
from gradlab.ops.registry import REGISTRY, SampleSource

from .oracle import assert_close, first_output, leaves, to_torch, torch_leaves

NAMES = sorted(REGISTRY)
DIFF = [n for n in NAMES if REGISTRY[n].differentiable]
SECOND = [n for n in DIFF if REGISTRY[n].order >= 2]
ORACLE = [n for n in NAMES if REGISTRY[n].torch is not None]


class HypothesisSource(SampleSource):
    """Every structural choice (shapes, dims, flags) is a hypothesis draw, so it shrinks."""

    def __init__(self, data):
        super().__init__(data.draw(st.integers(0, 2**31 - 1), label="value seed"))
        self._data = data

    def integers(self, lo, hi):
        return self._data.draw(st.integers(lo, hi))


def _samples(name, data):
    return list(REGISTRY[name].samples(HypothesisSource(data)))


def _call(info, s):
    return info.fn(*s.args, **s.kwargs)


@pytest.mark.parametrize("name", DIFF)
@given(data=st.data())
def test_gradcheck(name, data):
    info = REGISTRY[name]
    for s in _samples(name, data):
        ins = leaves((s.args, s.kwargs))
        if not ins:
            continue
        assert gradcheck(lambda *_: _call(info, s), tuple(ins), eps=info.eps, atol=info.atol, rtol=info.rtol), s


@pytest.mark.parametrize("name", SECOND)
@settings(max_examples=4)
@given(data=st.data())
def test_gradgradcheck(name, data):
    info = REGISTRY[name]
    for s in _samples(name, data)[:3]:
        ins = leaves((s.args, s.kwargs))
        if not ins or sum(x.numel() for x in ins) > 40:
            continue
        assert gradgradcheck(lambda *_: _call(info, s), tuple(ins), eps=info.eps, atol=max(info.atol, 1e-4),
                             rtol=max(info.rtol, 1e-3)), s


@pytest.mark.oracle
@pytest.mark.parametrize("name", ORACLE)
@given(data=st.data())
def test_matches_pytorch(name, data, torch):
    info = REGISTRY[name]
    for s in _samples(name, data):
        out = first_output(_call(info, s))
        targs, tkwargs = to_torch(torch, s.args), to_torch(torch, s.kwargs)
        tout = first_output(info.torch(torch, *targs, **tkwargs))
        assert_close(out._data, tout.detach().numpy(), what=f"{name} forward on {s}")
        ins, tins = leaves((s.args, s.kwargs)), torch_leaves(torch, (targs, tkwargs))
        if not info.differentiable or not ins or not out.requires_grad:
            continue
        cot = np.random.default_rng(0).standard_normal(out.shape)
        grads = gradlab.grad(out, ins, gradlab.tensor(cot, dtype=out.dtype), allow_unused=True)
        tgrads = torch.autograd.grad(tout, tins, torch.from_numpy(cot).to(tout.dtype), allow_unused=True)
        for i, (g, tg) in enumerate(zip(grads, tgrads)):
            if tg is None:
                assert g is None or not np.any(g._data), f"{name}: torch gives no grad for input {i}"
                continue
            assert g is not None, f"{name}: no gradient for input {i} but torch has one"
            assert_close(g._data, tg.numpy(), what=f"{name} grad of input {i} on {s}")


# ---------------------------------------------------------------- the table itself
def _public_functions(module):
    for attr, obj in vars(module).items():
        if attr.startswith("_") or not inspect.isfunction(obj):
            continue
        if not (obj.__module__ or "").startswith(module.__name__.rsplit(".", 0)[0]):
            continue
        yield attr, obj


def test_every_exported_op_is_registered():
    """A public op missing from the registry would escape the suite: fail loudly."""
    import gradlab.nn.functional as Fmod
    missing = []
    for module, prefix in ((gradlab.ops, ""), (Fmod, "functional.")):
        for attr, obj in _public_functions(module):
            if not obj.__module__.startswith(("gradlab.ops", "gradlab.nn.functional")):
                continue
            key = prefix + attr
            if key in REGISTRY or attr in registry.ALIASES or attr in registry.UTILITIES:
                continue
            if any(info.fn is obj for info in REGISTRY.values()):
                continue  # an alias of a registered op
            missing.append(key)
    assert not missing, f"ops exported but not in the registry (register them, or list as alias/utility): {missing}"


def test_registry_entries_are_complete():
    for name, info in REGISTRY.items():
        assert callable(info.fn), name
        assert info.samples is not None, name
        if info.differentiable:
            assert info.formula and ("d" in info.formula), f"{name} needs a formula string"
        samples = list(info.samples(SampleSource(1)))
        assert samples, f"{name} yields no samples"


def test_formulas_reach_the_nodes():
    x = gradlab.randn(3, 3, dtype=gradlab.float64, requires_grad=True)
    y = (x.exp() * x).sum()
    assert registry.formula_of(y.grad_fn) == REGISTRY["sum"].formula
    assert registry.formula_of(y.grad_fn.next_functions[0][0]) == REGISTRY["mul"].formula
