"""One generic suite over the whole op registry.

For every registered op and hypothesis-generated sample inputs: gradcheck in
float64, gradgradcheck (for ops that claim second order), and comparison of
forward values and gradients with PyTorch where it is installed. A new op
added to the registry is tested here with no new test code.
"""
from __future__ import annotations

import ast
import inspect
import os
import subprocess
import sys

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
        if "throwaway_doubled" in gradlab.ops.__all__:  # (its entry made it public: gradlab.ops.throwaway_doubled)
            gradlab.ops.__all__.remove("throwaway_doubled")
            delattr(gradlab.ops, "throwaway_doubled")


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


# ------------------------------------------------ the entry is the one place an op is named
def _arrays(out):
    """An op's result as a list of arrays (a tensor, or a tuple/namedtuple of them)."""
    if isinstance(out, gradlab.Tensor):
        return [out._data]
    return [a for o in out for a in _arrays(o)]


def test_every_method_flag_gives_the_tensor_method_of_its_op():
    """``register(..., method=True)`` is the only statement of ``x.<op>()``: every entry that says so has the
    Tensor method, and on the entry's samples ``x.<op>(*rest)`` computes what ``gradlab.<op>(x, *rest)`` does.
    Every name given a method (by an entry or by ``export``, for an alias) is a Tensor attribute."""
    methods = [info for info in REGISTRY.values() if info.method]
    assert len(methods) >= 100
    for info in methods:
        assert info.namespace == "gradlab" and info.name in registry.METHODS, info.name
        for s in list(info.samples(SampleSource(0)))[:2]:
            x, *rest = s.args
            want, got = _arrays(info.fn(x, *rest, **s.kwargs)), _arrays(getattr(x, info.name)(*rest, **s.kwargs))
            assert len(want) == len(got), info.name
            for a, b in zip(want, got):
                np.testing.assert_array_equal(a, b, err_msg=f"x.{info.name}() on {s}")
    not_methods = [n for n in registry.METHODS if not callable(getattr(gradlab.Tensor, n, None))]
    assert not not_methods, f"names with method=True that Tensor lacks: {not_methods}"
    # an entry without the flag gets no method from the registry (x.gelu() does not exist, as in PyTorch)
    assert not hasattr(gradlab.Tensor, "gelu") and not REGISTRY["gelu"].method


def test_the_public_names_of_the_ops_come_from_their_entries():
    """``gradlab.ops.__all__`` is made by the entries: each public op of the registry is ``gradlab.ops.<name>``
    and ``gradlab.<name>``, listed once; and ``gradlab/ops/__init__.py`` names no op (it imports the files by
    kind), so adding an op edits its own file only."""
    ops = gradlab.ops
    assert len(ops.__all__) == len(set(ops.__all__))
    assert all(hasattr(ops, n) for n in ops.__all__)
    public = {info.name: info.fn for info in REGISTRY.values() if info.namespace == "gradlab" and info.name != "trace"}
    assert len(public) >= 150
    for name, fn in public.items():
        assert name in ops.__all__ and getattr(ops, name) is fn, name
        assert getattr(gradlab, name) is fn, name
    assert not hasattr(ops, "trace") and gradlab.trace is gradlab.debug.trace  # the one op kept off (public=False)
    tree = ast.parse(inspect.getsource(ops))
    named = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    named |= {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    listed = sorted(named & (set(public) | set(registry.METHODS)))
    assert not listed, f"gradlab/ops/__init__.py names ops (their entries make them public): {listed}"


_NEW_OP_FILE = '''
"""A new op, written in one file: its class (forward and rule) and its registry entry. Nothing else is edited."""
from gradlab.autograd.function import Op
from gradlab.ops.registry import Sample, register


class Squared(Op):
    """``x * x``."""
    name, formula = "squared", "dX = 2 X dY"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x._data * x._data

    def vjp(self, g):
        (x,) = self.saved_tensors
        return (g * 2.0 * x,)


@register(op=Squared, samples=lambda src: [Sample((src.tensor((3, 2)),))], elementwise=True, method=True,
          inplace=True, autocast="float32", kernel=("square", "({0} * {0})"))
def squared(input):
    """``input * input``, as a new op."""
    return Squared.apply(input)
'''

_USE_NEW_OP = '''
import inspect
import numpy as np
import gradlab
import squared_op                     # the user's new file: registering is importing it
from gradlab.ops import autocast as policy
from gradlab.ops.registry import REGISTRY, SampleSource
from gradlab.autograd import gradcheck

x = gradlab.tensor([[1.0, -2.0], [3.0, 0.5]], dtype=gradlab.float64, requires_grad=True)
assert gradlab.ops.squared is squared_op.squared and "squared" in gradlab.ops.__all__
assert x.squared().tolist() == [[1.0, 4.0], [9.0, 0.25]]                         # the Tensor method
x.squared().sum().backward()
assert x.grad.tolist() == [[2.0, -4.0], [6.0, 1.0]]
assert gradcheck(gradlab.ops.squared, (x,))
y = x.detach().clone()
assert y.squared_() is y and y.tolist() == [[1.0, 4.0], [9.0, 0.25]]            # its in-place variant
assert "squared" in policy.FLOAT32                                                # its autocast policy
with gradlab.autocast("cpu", dtype=gradlab.bfloat16):
    assert gradlab.ops.squared(gradlab.ones(2, dtype=gradlab.bfloat16)).dtype == gradlab.float32
assert "Squared" in inspect.getsource(REGISTRY["squared"].op)

f = gradlab.compile(lambda a: (a * 2.0).squared().exp())                          # its fused kernel
a = gradlab.tensor(np.linspace(-1.0, 1.0, 6).astype(np.float32))
assert np.allclose(f(a).numpy(), np.exp((a.numpy() * 2.0) ** 2), rtol=1e-6)
src = "\\n".join(n.source for n in f.graph.nodes if getattr(n, "source", None))
assert "_np.square(" in src, src
from gradlab.compile import kernels
assert "squared" in kernels.NUMPY_RULES and "squared" in kernels.CUDA_RULES
print("NEW OP OK")
'''


def test_an_op_added_in_one_new_file_gets_everything_its_entry_states(tmp_path):
    """Adding an op is one file: a new module defining an op class and registering it, imported after
    gradlab, makes ``gradlab.ops.squared``, ``x.squared()``, ``x.squared_()``, its autocast policy and its
    fused kernel in ``gradlab.compile`` (which reads the entries when first used), with no other file edited."""
    (tmp_path / "squared_op.py").write_text(_NEW_OP_FILE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", _USE_NEW_OP], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0 and "NEW OP OK" in out.stdout, out.stderr[-3000:]
