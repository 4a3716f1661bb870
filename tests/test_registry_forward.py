"""Forward mode over the whole op registry: JVP vs finite differences, jacrev == jacfwd.

Like tests/test_registry.py, this iterates ``REGISTRY``: a new op is covered
here with no new test code. Samples come from ``SampleSource`` with a few
seeds (few examples per op keeps the whole file fast).
"""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
import gradlab.nn.functional as F  # noqa: F401 - registers the nn.functional ops
from gradlab import func
from gradlab.autograd import forward_ad as fwAD
from gradlab.autograd.function import Op
from gradlab.errors import GradError
from gradlab.ops.registry import REGISTRY, SampleSource

NAMES = sorted(REGISTRY)
FWD = [n for n in NAMES if REGISTRY[n].differentiable and REGISTRY[n].jvp]
NONDIFF = [n for n in NAMES if not REGISTRY[n].differentiable]
SEEDS = (0, 1)


def _subst(tree, mapping):
    """Replace tensors found (by identity) in mapping, inside nested args/kwargs."""
    if isinstance(tree, gradlab.Tensor):
        return mapping.get(id(tree), tree)
    if isinstance(tree, tuple):
        return tuple(_subst(x, mapping) for x in tree)
    if isinstance(tree, list):
        return [_subst(x, mapping) for x in tree]
    if isinstance(tree, dict):
        return {k: _subst(v, mapping) for k, v in tree.items()}
    return tree


def _leaves(tree, out=None):
    out = [] if out is None else out
    if isinstance(tree, gradlab.Tensor):
        if tree.requires_grad and all(t is not tree for t in out):
            out.append(tree)
    elif isinstance(tree, (list, tuple)):
        for x in tree:
            _leaves(x, out)
    elif isinstance(tree, dict):
        for x in tree.values():
            _leaves(x, out)
    return out


def _floating(out):
    outs = out if isinstance(out, tuple) else (out,)
    return [i for i, o in enumerate(outs) if isinstance(o, gradlab.Tensor) and o.is_floating_point()]


def _call(info, s, values):
    """Call the op with each leaf replaced by the matching tensor in ``values``."""
    leaves = _leaves((s.args, s.kwargs))
    mapping = {id(l): v for l, v in zip(leaves, values)}
    args, kwargs = _subst((s.args, s.kwargs), mapping)
    return info.fn(*args, **kwargs)


def _cases(name):
    info = REGISTRY[name]
    for seed in SEEDS:
        for s in info.samples(SampleSource(seed)):
            leaves = _leaves((s.args, s.kwargs))
            if leaves:
                yield info, s, leaves


@pytest.mark.parametrize("name", FWD)
def test_jvp_matches_finite_differences(name):
    rng = np.random.default_rng(0)
    for info, s, leaves in _cases(name):
        primals = [l.detach() for l in leaves]
        tangents = [gradlab.tensor(rng.standard_normal(l.shape), dtype=l.dtype) for l in leaves]
        with fwAD.dual_level():
            duals = [fwAD.make_dual(p, t) for p, t in zip(primals, tangents)]
            out = _call(info, s, duals)
            outs = out if isinstance(out, tuple) else (out,)
            jvps = {i: fwAD.unpack_dual(outs[i]).tangent for i in _floating(out)}
        eps = info.eps
        plus = _call(info, s, [gradlab.tensor(p._data + eps * t._data, dtype=p.dtype) for p, t in zip(primals, tangents)])
        minus = _call(info, s, [gradlab.tensor(p._data - eps * t._data, dtype=p.dtype) for p, t in zip(primals, tangents)])
        mid = _call(info, s, primals)
        plus, minus, mid = (o if isinstance(o, tuple) else (o,) for o in (plus, minus, mid))
        for i, jv in jvps.items():
            p_, m_, c_ = (o[i]._data.astype(np.float64) for o in (plus, minus, mid))
            numeric = (p_ - m_) / (2 * eps)
            got = np.zeros_like(numeric) if jv is None else jv._data.astype(np.float64)
            assert got.shape == numeric.shape, f"{name}: tangent shape {got.shape} vs output {numeric.shape} on {s}"
            # at a kink (e.g. a tie inside max) one-sided slopes differ and no derivative exists: skip there
            smooth = np.abs((p_ - c_) - (c_ - m_)) / eps <= 1e-3 * (1 + np.abs(numeric))
            np.testing.assert_allclose(got[smooth], numeric[smooth], atol=max(info.atol, 1e-5),
                                       rtol=max(info.rtol, 1e-3),
                                       err_msg=f"{name}: JVP of output {i} vs finite differences on {s}")


def _small_output(info, s, leaves):
    """The index of the first floating output when the sample is small enough for full Jacobians."""
    probe = _call(info, s, [l.detach() for l in leaves])
    fl = _floating(probe)
    if not fl:
        return None
    first = fl[0]
    n_out = (probe[first] if isinstance(probe, tuple) else probe).numel()
    if n_out > 24 or sum(l.numel() for l in leaves) > 24:
        return None
    return first


@pytest.mark.parametrize("name", FWD)
def test_jacrev_equals_jacfwd(name):
    for info, s, leaves in _cases(name):
        first = _small_output(info, s, leaves)
        if first is None:
            continue

        def f(*values):
            out = _call(info, s, values)
            return out[first] if isinstance(out, tuple) else out
        argnums = tuple(range(len(leaves)))
        primals = [l.detach() for l in leaves]
        jr = func.jacrev(f, argnums=argnums)(*primals)
        jf = func.jacfwd(f, argnums=argnums)(*primals)
        for k, (a, b) in enumerate(zip(jr, jf)):
            assert a.shape == b.shape, f"{name}: jacrev {a.shape} vs jacfwd {b.shape} for input {k} on {s}"
            np.testing.assert_allclose(a._data, b._data, atol=1e-8, rtol=1e-6,
                                       err_msg=f"{name}: jacrev != jacfwd for input {k} on {s}")


def test_jacobians_are_compared_for_most_ops():
    """Samples too large for full Jacobians are skipped above; make sure that stays the exception."""
    missing = sorted(n for n in FWD
                     if not any(_small_output(info, s, leaves) is not None for info, s, leaves in _cases(n)))
    assert len(missing) <= len(FWD) // 5, f"no sample small enough for jacrev == jacfwd: {missing}"


@pytest.mark.parametrize("name", NONDIFF)
def test_non_differentiable_ops_carry_no_tangent(name):
    info = REGISTRY[name]
    for s in info.samples(SampleSource(0)):
        leaves = [l for l in _leaves((s.args, s.kwargs)) if l.is_floating_point()]
        if not leaves:
            continue
        with fwAD.dual_level():
            duals = [fwAD.make_dual(l.detach(), gradlab.ones_like(l.detach())) for l in leaves]
            out = _call(info, s, duals)
            for o in (out if isinstance(out, tuple) else (out,)):
                if isinstance(o, gradlab.Tensor) and not o.is_floating_point():
                    assert fwAD.unpack_dual(o).tangent is None, name


def test_op_without_jvp_names_itself():
    class NoJvp(Op):
        name = "mystery_op"
        formula = "dX = dY"

        @staticmethod
        def forward(ctx, x):
            return x._data * 2

        def vjp(self, g):
            return (g * 2,)

    x = gradlab.randn(3, dtype=gradlab.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, gradlab.ones_like(x))
        with pytest.raises(GradError, match="mystery_op has no JVP rule"):
            NoJvp.apply(d)
