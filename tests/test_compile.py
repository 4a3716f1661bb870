"""gradlab.compile: tracing, guards, passes, fusion, compiled backward, honest limits."""
from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest

import gradlab as G
from gradlab._tensor import Tensor
from gradlab.compile import TraceSpecializationWarning, cuda_source
from gradlab.ops.registry import REGISTRY, SampleSource


def gelu_block(x, b):
    h = x + b
    return (0.5 * h * (1 + G.tanh(0.7978845608 * (h + 0.044715 * h * h * h)))) * 1.5


def _grads(f, *ts):
    for t in ts:
        t.grad = None
    y = f(*ts)
    y.backward(G.ones_like(y) * 0.5)
    return y.detach().numpy().copy(), [t.grad.numpy().copy() for t in ts]


def test_graph_prints_as_text_with_shapes_and_values_equal_eager():
    cf = G.compile(gelu_block)
    x, b = G.randn(8, 16, requires_grad=True), G.randn(16, requires_grad=True)
    y = cf(x, b)
    text = str(cf.entry.traced_forward)
    assert "tanh(" in text and "f32[8,16]" in text and "%x: f32[8,16]" in text
    assert "test_compile.py" in text  # each traced op names the line that made it
    np.testing.assert_allclose(y.detach().numpy(), gelu_block(x, b).detach().numpy(), rtol=1e-6)
    assert "fused_0" in str(cf.graph)


def test_gradients_equal_eager_and_forward_keeps_only_inputs():
    cf = G.compile(gelu_block)
    x, b = G.randn(6, 5, requires_grad=True), G.randn(5, requires_grad=True)
    cf(x, b)
    x2, b2 = G.randn(6, 5, requires_grad=True), G.randn(5, requires_grad=True)  # new values, same signature
    ye, ge = _grads(gelu_block, x2, b2)
    yc, gc = _grads(cf, x2, b2)
    np.testing.assert_allclose(yc, ye, rtol=1e-6)
    for a, e in zip(gc, ge):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
    assert len(cf.log) == 1
    # cheap elementwise ops are recomputed in the backward kernel; only x, b and tanh's result are saved
    saved = [v for v in cf.backward_graph.inputs if v.kind != "grad"]
    assert [v.name for v in saved[:2]] == ["x", "b"] and len(saved) == 3
    made_by = {v: n.op for n in cf.entry.traced.nodes for v in n.outputs}
    assert made_by[saved[2]] == "tanh"
    assert sum(1 for n in cf.backward_graph.nodes if n.group) == 1


def _elementwise_cases():
    for name, info in REGISTRY.items():
        if info.elementwise:
            for k, s in enumerate(info.samples(SampleSource(3))):
                if k >= 2:
                    break
                yield pytest.param(name, s, id=f"{name}-{k}")


@pytest.mark.parametrize("name,sample", list(_elementwise_cases()))
def test_every_registered_elementwise_op_compiles_with_eager_gradients(name, sample):
    info = REGISTRY[name]
    pos = [i for i, a in enumerate(sample.args) if isinstance(a, Tensor)]

    def f(*ts):
        args = list(sample.args)
        for i, t in zip(pos, ts):
            args[i] = t
        return info.fn(*args, **sample.kwargs) * 2.0

    cf = G.compile(f)
    ts = [sample.args[i] for i in pos]
    with warnings.catch_warnings():
        warnings.simplefilter("error", TraceSpecializationWarning)
        cf(*ts)
    # other values with the same signature: the replayed graph must not have baked the first ones in
    ts2 = [Tensor._make(np.asarray(t._data * 0.9 + 0.05)).requires_grad_(t.requires_grad) for t in ts]
    yc, ye = cf(*ts2), f(*ts2)
    np.testing.assert_allclose(yc.detach().numpy(), ye.detach().numpy(), rtol=1e-9, atol=1e-12)
    wrt = [t for t in ts2 if t.requires_grad]
    if yc.requires_grad and wrt:
        g = G.randn(*yc.shape, dtype=yc.dtype)
        for a, e in zip(G.grad(yc, wrt, g, allow_unused=True), G.grad(ye, wrt, g, allow_unused=True)):
            assert (a is None) == (e is None)
            if a is not None:
                np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=1e-9, atol=1e-12)
    assert len(cf.log) == 1


def test_comparisons_and_argmax_are_recorded_not_baked_in():
    cf = G.compile(lambda x: (G.where(G.gt(x, 0), x, -x) * (x < 0.5), x.argmax(dim=1)))
    cf(G.randn(4, 6))
    x2 = G.randn(4, 6)
    a, i = cf(x2)
    assert "gt(" in str(cf.graph) and "argmax(" in str(cf.graph)
    np.testing.assert_array_equal(a.numpy(), np.where(x2._data > 0, x2._data, -x2._data) * (x2._data < 0.5))
    np.testing.assert_array_equal(i.numpy(), x2._data.argmax(axis=1))


def test_small_mlp_parameters_are_lifted_and_trained():
    G.manual_seed(0)
    model = G.nn.Sequential(G.nn.Linear(4, 8), G.nn.Tanh(), G.nn.Linear(8, 3))

    def loss_fn(x, t):
        return ((model(x) - t) ** 2).mean()

    closs = G.compile(loss_fn)
    opt = G.optim.SGD(model.parameters(), lr=0.1)
    x, t = G.randn(5, 4), G.randn(5, 3)
    for _ in range(3):
        opt.zero_grad()
        le = loss_fn(x, t)
        le.backward()
        ge = [p.grad.numpy().copy() for p in model.parameters()]
        opt.zero_grad()
        lc = closs(x, t)
        lc.backward()
        np.testing.assert_allclose(lc.item(), le.item(), rtol=1e-5)
        for p, e in zip(model.parameters(), ge):
            np.testing.assert_allclose(p.grad.numpy(), e, rtol=1e-4, atol=1e-6)
        opt.step()  # the compiled graph reads the parameters afresh each call
    assert len(closs.log) == 1
    assert sum(1 for v in closs.entry.traced.inputs if v.kind == "param") == 4
    cmodel = G.compile(model)  # a compiled module still answers as the module
    assert len(list(cmodel.parameters())) == 4
    np.testing.assert_allclose(cmodel(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-5)


def test_retraces_when_shape_or_dtype_changes_and_says_why():
    cf = G.compile(lambda x: G.exp(x) * 2)
    cf(G.randn(3, 4))
    cf(G.randn(3, 4))
    assert len(cf.log) == 1
    cf(G.randn(2, 4))
    cf(G.randn(2, 4, dtype=G.float64))
    assert len(cf.log) == 3
    text = cf.explain()
    assert "'x' shape changed: (3, 4) -> (2, 4)" in text
    assert "'x' dtype changed: float32 -> float64" in text
    cf(G.randn(3, 4))  # cached: no new trace
    assert len(cf.log) == 3
    # non-tensor arguments are part of the guard, by value
    scale = G.compile(lambda x, n: x * n, cache_limit=2)
    x = G.randn(2)
    scale(x, 2)
    np.testing.assert_allclose(scale(x, 3).numpy(), x.numpy() * 3)
    assert "'n' value changed: 2 -> 3" in scale.explain()
    with pytest.warns(RuntimeWarning, match="traced 3 times"):
        scale(x, 4)


def test_passes_report_cse_dce_and_constant_folding():
    c = G.tensor(2.0)

    def f(x):
        a = G.exp(x)
        b = G.exp(x)          # same as a
        unused = G.sin(x)     # dead  # noqa: F841
        k = G.exp(c) * 3.0    # only constants: folded
        return a * b + k

    cf = G.compile(f)
    x = G.randn(4, requires_grad=True)
    y = cf(x)
    text = cf.explain()
    assert "common subexpressions:" in text and "is the same as" in text
    assert "dead code:" in text and "sin(%x) is never used" in text
    assert "constant folding:" in text and "computed once" in text
    np.testing.assert_allclose(y.detach().numpy(), f(x).detach().numpy(), rtol=1e-6)
    ops = [m.op for n in cf.graph.nodes for m in (n.group or [n])]
    assert ops.count("exp") == 1 and "sin" not in ops


def test_fused_kernel_allocates_no_full_size_intermediates(monkeypatch):
    from gradlab.compile import kernels
    monkeypatch.setattr(kernels, "CHUNK", 1 << 12)  # small scratch buffers, so only the output is big
    x, b = G.randn(512, 1024), G.randn(1024)
    cf = G.compile(gelu_block)
    with G.no_grad():
        cf(x, b)
        node = cf.graph.nodes[0]
        assert node.group and len(node.group) == 11 and "out=" in node.source
        assert "def chunk(i, bufs)" in node.source and "_parallel(chunk, 128, scratch" in node.source  # 4 rows a chunk
        tracemalloc.start()
        gelu_block(x, b)
        eager = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        tracemalloc.start()
        y = cf(x, b)
        compiled = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        # the chunks were shared among threads (when there are several cores) and agree with eager
        np.testing.assert_allclose(y.numpy(), gelu_block(x, b).numpy(), rtol=1e-6, atol=1e-7)
    out_bytes = 512 * 1024 * 4
    assert compiled < 1.5 * out_bytes and eager > 3 * out_bytes  # the output + a few chunk-sized buffers


def test_cuda_elementwise_kernel_source_is_generated():
    cf = G.compile(gelu_block)
    with G.no_grad():
        cf(G.randn(4, 8), G.randn(8))
    src = cuda_source(cf.graph.nodes[0])
    assert src["in_params"] == "float32 in0, float32 in1" and src["out_params"] == "float32 out0"
    assert "tanh(" in src["operation"] and "out0 = " in src["operation"]
    assert src["operation"].count(";") >= 11 and "0.044715f" in src["operation"]
    # the backward graph fuses for cuda too (tanh's VJP has a C rule); the CuPy kernel is built on first call
    from gradlab.compile import fuse_elementwise
    cg = G.compile(gelu_block)
    cg(G.randn(4, 8, requires_grad=True), G.randn(8, requires_grad=True))
    report = []
    fused = fuse_elementwise(cg.entry.traced_backward, report, device="cuda")
    kernels = [n for n in fused.nodes if n.group]
    assert len(kernels) == 1 and "tanh_backward" in kernels[0].source["operation"]
    assert callable(kernels[0].kernel) and "fusion:" in report[0]


def test_data_dependent_control_flow_warns_naming_the_line():
    def f(x):
        if x.sum() > 0:   # a Python branch on a traced value
            return x * 2
        return x * 3

    cf = G.compile(f)
    with pytest.warns(TraceSpecializationWarning, match=r"bool\(\).*test_compile.py:\d+.*if x.sum\(\) > 0"):
        cf(G.ones(3))
    assert "specialised to values read while tracing" in cf.explain()

    def g(x):
        return x * x.max().item()

    with pytest.warns(TraceSpecializationWarning, match=r"\.item\(\)"):
        G.compile(g)(G.ones(3))
    with pytest.raises(G.GradError, match="fullgraph=True forbids"):   # as torch.compile(fullgraph=True)
        G.compile(g, fullgraph=True)(G.ones(3))
    assert G.compile(g, disable=True) is g


def test_in_place_changes_are_traced_functionally():
    def f(x):
        h = x * 2
        h.add_(1)
        h[0] = 5.0
        return h.exp()

    cf = G.compile(f)
    cf(G.randn(3, requires_grad=True))
    x2 = G.randn(3, requires_grad=True)
    yc, ye = cf(x2), f(x2)
    np.testing.assert_allclose(yc.detach().numpy(), ye.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(G.grad(yc.sum(), x2)[0].numpy(), G.grad(ye.sum(), x2)[0].numpy(), rtol=1e-6)

    def g(x):
        x.mul_(2)
        return x + 1

    x = G.ones(3)
    with pytest.warns(TraceSpecializationWarning, match="changes its input 'x' in place"):
        y = G.compile(g)(x)
    np.testing.assert_array_equal(y.numpy(), [3.0, 3.0, 3.0])  # computed once from the caller's values


def test_random_numbers_are_drawn_afresh_on_every_call():
    import gradlab.nn.functional as F
    drop = G.compile(lambda x: F.dropout(x, 0.5, training=True) * 3)
    x = G.ones(2000, requires_grad=True)
    y1, y2 = drop(x), drop(x)
    assert not np.array_equal(y1.detach().numpy(), y2.detach().numpy())  # a new mask each call
    assert 0.4 < (y2.detach().numpy() == 0).mean() < 0.6
    (g,) = G.grad(y2.sum(), x)   # the backward uses the mask of its own call
    np.testing.assert_array_equal(g.numpy(), (y2.detach().numpy() != 0) * 6.0)
    noisy = G.compile(lambda x: x + G.randn(5))
    assert not np.array_equal(noisy(G.zeros(5)).numpy(), noisy(G.zeros(5)).numpy())
    from gradlab.backend.random import generator

    def raw(x):
        return x + G.tensor(generator().standard_normal(3).astype(np.float32))

    with pytest.warns(TraceSpecializationWarning, match="random numbers"):
        G.compile(raw)(G.zeros(3))


def test_show_graph_draws_before_and_after_with_fused_box():
    cf = G.compile(gelu_block)
    cf(G.randn(4, 8, requires_grad=True), G.randn(8, requires_grad=True))
    view = G.show_graph(cf)
    assert "cluster_before" in view.source and "cluster_after" in view.source
    assert "fused_0" in view.source and "11 ops, one kernel" in view.source
    bview = cf.show_graph("backward")
    assert "incoming grad" in bview.source
    svg = view.svg()
    assert "<svg" in svg and "after_n0" in svg


def test_multiple_outputs_inference_mode_and_higher_order():
    cf = G.compile(lambda x: (G.tanh(x) * 2, G.exp(x) + 1))
    x = G.randn(5, requires_grad=True)
    a, b = cf(x)
    (a.sum() * 3 + b.sum()).backward()
    expect = 6 * (1 - np.tanh(x._data) ** 2) + np.exp(x._data)
    np.testing.assert_allclose(x.grad.numpy(), expect, rtol=1e-5)
    with G.no_grad():
        a2, _ = cf(x)
    assert not a2.requires_grad and "grad mode changed: on -> off" in cf.explain()
    # second derivatives: the compiled backward hands over to the eager program under create_graph
    sq = G.compile(lambda x: x * x * x)
    x = G.randn(3, dtype=G.float64, requires_grad=True)
    (g,) = G.grad(sq(x).sum(), [x], create_graph=True)
    (gg,) = G.grad(g.sum(), [x])
    np.testing.assert_allclose(gg.numpy(), 6 * x._data, rtol=1e-10)


_UNARY_SAFE = ["exp", "tanh", "sigmoid", "sin", "cos", "relu", "abs", "neg", "erf", "gelu", "silu"]
_BINARY = ["add", "sub", "mul", "maximum", "minimum"]


def test_random_elementwise_programs_fuse_correctly():
    """Random DAGs of elementwise ops with broadcasting and reductions in between: compiled == eager."""
    from hypothesis import given, strategies as st

    @given(st.data())
    def check(data):
        shapes = [(3, 4), (4,), (3, 1), ()]
        n_in = data.draw(st.integers(1, 3))
        in_shapes = [data.draw(st.sampled_from(shapes[:3])) for _ in range(n_in)]
        steps = data.draw(st.lists(st.tuples(st.sampled_from(_UNARY_SAFE + _BINARY + ["sum", "scale"]),
                                             st.integers(0, 99), st.integers(0, 99)), min_size=2, max_size=12))

        def program(*xs):
            vals = list(xs)
            for op, i, j in steps:
                a, b = vals[i % len(vals)], vals[j % len(vals)]
                if op == "sum":
                    vals.append(a.sum(dim=-1, keepdim=True) if a.ndim else a * 1.0)
                elif op == "scale":
                    vals.append(a * 0.5 + 1.0)
                elif op in _BINARY:
                    vals.append(getattr(G, op)(a, b))
                else:
                    vals.append(getattr(G, op)(a))
            return sum(v.sum() for v in vals[len(xs):]) + vals[-1].sum()

        cf = G.compile(program)
        cf(*[G.randn(*s, dtype=G.float64, requires_grad=True) for s in in_shapes])
        xs = [G.randn(*s, dtype=G.float64, requires_grad=True) for s in in_shapes]
        yc, ye = cf(*xs), program(*xs)
        np.testing.assert_allclose(yc.item(), ye.item(), rtol=1e-10)
        for a, e in zip(G.grad(yc, xs, allow_unused=True), G.grad(ye, xs, allow_unused=True)):
            if e is None:
                assert a is None or np.allclose(a.numpy(), 0)
            else:
                np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=1e-9, atol=1e-12)
        assert len(cf.log) == 1

    check()


def test_infinite_and_nan_constants_compile():
    """A fused kernel has no literal for inf/nan: they are spelt float('inf') (a causal mask needs -inf)."""
    def f(x):
        return G.where(x > 0, x, float("-inf")).exp() + G.clamp(x, max=float("inf")) * 1.0
    x = G.randn(4, 5, dtype=G.float64)
    np.testing.assert_array_equal(G.compile(f)(x).numpy(), f(x).numpy())


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_numbers_in_a_kernel_give_eager_bits_in_every_dtype(dtype):
    """A number beside float arrays becomes a 0-d array of their dtype in the kernel (made once): the same
    rounding as NumPy's for the Python number, so the same bits as eager."""
    from gradlab.compile import kernels
    old = kernels.CHUNK
    kernels.CHUNK = 1 << 10   # several chunks
    try:
        x = (G.randn(64, 100) * 50).to(getattr(G, dtype))

        def f(x):
            return (x * 0.1 + 3) * 1.7 - 1e-3 / (x * x + 1)
        cf = G.compile(f)
        with G.no_grad():
            got, want = cf(x), f(x)
        src = "".join(n.source or "" for n in cf.graph.nodes)
        assert "_c0 = " + dtype + "(0.1)" in src
    finally:
        kernels.CHUNK = old
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want.numpy())
