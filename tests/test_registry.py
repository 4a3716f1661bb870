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


def test_an_entry_is_all_an_op_needs_for_its_inplace_variant_and_autocast_policy():
    """Adding an op touches its own file: a throwaway op registered here gets ``x.<name>_()`` and its
    autocast policy from the entry alone."""
    from gradlab.errors import GradError
    from gradlab.ops import autocast as policy

    def doubled(input):
        return input * 2
    try:
        fn = registry.register("throwaway_doubled", samples=lambda src: [], formula="dX = 2 dY",
                               inplace=True, autocast="float32")(doubled)
        x = gradlab.tensor([1.0, 2.0])
        assert x.throwaway_doubled_() is x and x.tolist() == [2.0, 4.0] and x._version.value == 1
        w = gradlab.tensor([1.0, -3.0], requires_grad=True)
        y = w * 1
        y.throwaway_doubled_()
        y.sum().backward()
        assert w.grad.tolist() == [2.0, 2.0]  # the graph follows the in-place change
        with pytest.raises(GradError, match="throwaway_doubled_: .* leaf that requires grad"):
            w.throwaway_doubled_()
        assert REGISTRY["throwaway_doubled"].inplace is gradlab.Tensor.throwaway_doubled_
        assert "throwaway_doubled" in policy.FLOAT32
        with gradlab.autocast("cpu", dtype=gradlab.bfloat16):
            assert fn(gradlab.ones(2, dtype=gradlab.bfloat16)).dtype == gradlab.float32
        assert fn(gradlab.ones(2, dtype=gradlab.bfloat16)).dtype == gradlab.bfloat16
    finally:
        REGISTRY.pop("throwaway_doubled", None)
        policy.FLOAT32.discard("throwaway_doubled")
        if "throwaway_doubled_" in gradlab.Tensor.__dict__:
            delattr(gradlab.Tensor, "throwaway_doubled_")


def test_every_inplace_variant_and_kernel_of_an_op_comes_from_its_entry():
    """No list of in-place variants or kernels beside the registry: each ``x.<op>_`` of a registered op is
    its entry's, and each entry's kernel is one that ``gradlab.compile`` knows."""
    from gradlab.compile import kernels
    for info in REGISTRY.values():
        if info.inplace is not None:
            assert gradlab.Tensor.__dict__[info.name + "_"] is info.inplace, info.name
        if info.kernel and info.kernel[0]:
            assert info.name in kernels.NUMPY_RULES, info.name
        if info.kernel and info.kernel[1]:
            assert info.name in kernels.CUDA_RULES, info.name
    stray = [name for name, attr in vars(gradlab.Tensor).items()
             if name.endswith("_") and not name.startswith("_") and name[:-1] in REGISTRY
             and REGISTRY[name[:-1]].inplace is not attr]
    assert not stray, f"in-place methods of registered ops not stated by their entries: {stray}"
    assert len([i for i in REGISTRY.values() if i.inplace is not None]) >= 50
