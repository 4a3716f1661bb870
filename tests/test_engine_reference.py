"""The engine against the twenty-line loop at the top of ``engine.py`` (``reference_backward``).

Generated programs (``tests/random_programs.py``: broadcasting, a float64 leaf beside float32
ones, an integer input, leaves used many times, reductions, views, multi-output ops) are
differentiated on one graph three times: by ``reference_backward``, by ``backward()`` (its
loop, each everyday node run inline in ``_run_nodes``) and by ``backward()`` with every node sent
through the general node runner (``_run_node``). The leaves' gradients must be the same.

Bit for bit, where the additions happen in the same order. Floating-point addition is
commutative but not associative: two gradients that meet at one place give the same bits in
either order (``a + b == b + a``), three or more may differ in the last bits when added in
another order (``(a + b) + c`` vs ``(a + c) + b``). The engine adds them in the order it runs
the nodes (the highest sequence number first, as PyTorch does); the reference in the reverse
of a depth-first sort. For each program the test works out, at every place where gradients
meet, the order in which each loop adds them. Where all agree the gradients must be identical;
where some place gets three or more in another order, they must agree to a few units in the
last place (relative 1e-5 in float32, 1e-12 in float64, measured against the gradient's
largest entry). ``inspect.getsource`` must show every engine function: there is no compiled
copy.
"""
from __future__ import annotations

import inspect
import pathlib
import types

import numpy as np
from hypothesis import event, given, settings, strategies as st

import gradlab
from gradlab import autograd
from gradlab.autograd import engine

from .random_programs import build, steps_strategy


class _Quiet:
    """Watches backward and does nothing: its presence sends every node through ``_run_node``."""

    def node_start(self, node, grads):
        pass

    def node_end(self, node, grads_in, grads_out):
        pass


def _additions(order):
    """For each place a gradient goes to, ``(node, output number)``, who adds to it in turn."""
    into = {}
    for node in order:
        for pos, e in enumerate(node.next_functions):
            if e is not None:
                into.setdefault(e, []).append((id(node), pos))
    return into


def _same_sums(order_a, order_b):
    """Do both orders add the same gradients in the same order wherever three or more meet?"""
    a, b = _additions(order_a), _additions(order_b)
    return all(a[k] == b.get(k) for k in a if len(a[k]) > 2)


def _grads(leaves):
    out = [None if t.grad is None else t.grad.numpy().copy() for t in leaves]
    for t in leaves:
        t.grad = None
    return out


def _three_ways(steps, dtype):
    (x, w), pool, _ = build(steps, set(), dtype)
    loss = sum(t.sum() for t in pool[2:])
    ran = engine.depth_first_order(loss.grad_fn)[::-1]  # the order the reference runs the nodes in
    engine.reference_backward(loss)
    ref = _grads([x, w])
    order = engine.schedule([loss.grad_fn])
    engine.backward_observers.append(quiet := _Quiet())
    try:
        loss.backward(retain_graph=True)
    finally:
        engine.backward_observers.remove(quiet)
    general = _grads([x, w])
    loss.backward()
    fast = _grads([x, w])
    return ref, fast, general, _same_sums(order, ran)


@settings(max_examples=150, deadline=None)
@given(steps=steps_strategy(14), dtype=st.sampled_from([gradlab.float32, gradlab.float64]))
def test_the_engine_gives_the_reference_loops_gradients(steps, dtype):
    ref, fast, general, same_order = _three_ways(steps, dtype)
    event("same order of additions: bit for bit" if same_order else "another order of additions: a few ulps")
    for r, f, g in zip(ref, fast, general):
        assert (r is None) == (f is None) == (g is None)
        if r is None:
            continue
        assert r.dtype == f.dtype == g.dtype and r.shape == f.shape == g.shape
        np.testing.assert_array_equal(f, g)  # the engine's two loops: always the same order
        if same_order:
            np.testing.assert_array_equal(r, f)
        else:
            tol = 1e-5 if r.dtype == np.float32 else 1e-12
            scale = max(1.0, float(np.nanmax(np.abs(r)))) if r.size and np.isfinite(r).any() else 1.0
            np.testing.assert_allclose(f, r, rtol=tol, atol=tol * scale)


def test_a_chain_and_a_tree_agree_bit_for_bit():
    # at most two gradients meet anywhere: the order cannot matter
    for dtype in (gradlab.float32, gradlab.float64):
        gradlab.manual_seed(0)
        x = gradlab.randn(4, 3, dtype=dtype, requires_grad=True)
        w = gradlab.randn(3, dtype=dtype, requires_grad=True)
        h = x
        for _ in range(30):
            h = (h * 1.01 + w).tanh() - 0.05
        loss = (h.exp() * h.sigmoid()).sum() + (x * x).mean()
        engine.reference_backward(loss)
        ref = _grads([x, w])
        loss.backward()
        for r, f in zip(ref, _grads([x, w])):
            assert r.tobytes() == f.tobytes()


def test_the_reference_loop_reads_in_one_sitting():
    src = inspect.getsource(engine.reference_backward)
    body = src.split('"""')[2]  # after the docstring
    lines = [ln for ln in body.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    assert len(lines) <= 25, f"reference_backward has {len(lines)} lines of code; it is meant to stay short"
    assert inspect.getsourcefile(engine.reference_backward).endswith("engine.py")


def _engine_functions():
    """Every function and method written in the autograd layer's modules (not the ones that
    ``namedtuple``/``dataclass`` generate, which have no file)."""
    for path in sorted(pathlib.Path(autograd.__file__).parent.glob("*.py")):
        mod = __import__(f"gradlab.autograd.{path.stem}", fromlist=["_"]) if path.stem != "__init__" else autograd
        for name, obj in vars(mod).items():
            if isinstance(obj, types.FunctionType) and obj.__module__ == mod.__name__:
                yield f"{mod.__name__}.{name}", obj
            elif isinstance(obj, type) and obj.__module__ == mod.__name__:
                for attr, member in vars(obj).items():
                    f = member.__func__ if isinstance(member, (classmethod, staticmethod)) else (
                        member.fget if isinstance(member, property) else member)
                    if isinstance(f, types.FunctionType) and f.__code__.co_filename != "<string>":
                        yield f"{mod.__name__}.{name}.{attr}", f


def test_inspect_getsource_shows_every_engine_function():
    names = []
    for name, f in _engine_functions():
        src = inspect.getsource(f)
        assert f"def {f.__name__}" in src or "lambda" in src, name
        names.append(name)
    for must in ("gradlab.autograd.engine._run_nodes", "gradlab.autograd.engine.run_backward",
                 "gradlab.autograd.function.Op.apply", "gradlab.autograd.function._record",
                 "gradlab.autograd.engine.schedule", "gradlab.autograd.engine.call_vjp", "gradlab.autograd.function.Function.saved_arrays"):
        assert must in names
    # what runs is what the source shows: no compiled module in the autograd package
    here = pathlib.Path(autograd.__file__).parent
    assert not [p.name for p in here.iterdir() if p.suffix in (".so", ".pyd", ".c")]
    assert "def apply" in inspect.getsource(gradlab.autograd.Op.apply)
    assert gradlab.autograd.function.Op.__dict__["apply"].__func__.__code__.co_filename.endswith("function.py")
