"""Sparse COO tensors against torch's: construction, coalesce, to_sparse/to_dense, sparse.mm/spmm/mm/@ with
gradients to the dense operand and to the values (gradchecked in float64), show_graph, and the refusals."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
from gradlab.autograd import gradcheck, gradgradcheck
from gradlab.sparse import SparseNotSupported

oracle = pytest.mark.oracle


def _graph(seed, n=6, nnz=10, k=3, duplicates=True, dtype=np.float64):
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, (2, nnz))
    if duplicates:
        idx[:, -1] = idx[:, 0]  # a repeated position: summed, as PyTorch does
    return idx, rng.normal(size=nnz).astype(dtype), rng.normal(size=(n, k)).astype(dtype), n


@oracle
@pytest.mark.parametrize("fn", ["sparse.mm", "spmm", "mm", "matmul", "@"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sparse_times_dense_and_its_gradients_match_pytorch(fn, seed, torch):
    idx, v, d, n = _graph(seed)
    out = {}
    for lib in (gradlab, torch):
        vt = lib.tensor(v, requires_grad=True)
        dt = lib.tensor(d, requires_grad=True)
        S = lib.sparse_coo_tensor(lib.tensor(idx), vt, (n, n))
        call = {"sparse.mm": lambda: lib.sparse.mm(S, dt), "spmm": lambda: lib.spmm(S, dt),
                "mm": lambda: lib.mm(S, dt), "matmul": lambda: lib.matmul(S, dt), "@": lambda: S @ dt}[fn]
        y = call()
        w = np.random.default_rng(seed + 10).normal(size=tuple(y.shape))
        (y * lib.tensor(w)).sum().backward()
        out[lib.__name__] = (y.detach().numpy(), vt.grad.numpy(), dt.grad.numpy())
    for a, b, what in zip(out["gradlab"], out["torch"], ("S @ D", "grad of the values", "grad of the dense matrix")):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=what)


@pytest.mark.parametrize("seed", [0, 1])
def test_sparse_mm_passes_gradcheck_and_gradgradcheck_in_float64(seed):
    idx, v, d, n = _graph(seed, n=4, nnz=6, k=2)
    vt = gradlab.tensor(v, requires_grad=True)
    dt = gradlab.tensor(d, requires_grad=True)

    def f(values, dense):
        return gradlab.sparse.mm(gradlab.sparse_coo_tensor(gradlab.tensor(idx), values, (n, n)), dense)

    assert gradcheck(f, (vt, dt))
    assert gradgradcheck(f, (vt, dt))
    assert gradcheck(lambda values: gradlab.sparse_coo_tensor(gradlab.tensor(idx), values, (n, n)).to_dense(), (vt,))
    assert gradcheck(lambda values: gradlab.sparse_coo_tensor(gradlab.tensor(idx), values, (n, n)).coalesce()
                     .values(), (vt,))


@oracle
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_coalesce_to_dense_and_to_sparse_match_pytorch(seed, torch):
    idx, v, _, n = _graph(seed)
    g = gradlab.sparse_coo_tensor(gradlab.tensor(idx), gradlab.tensor(v), (n, n))
    t = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(v), (n, n))
    assert g.is_coalesced() == t.is_coalesced() is False
    with pytest.raises(RuntimeError, match="uncoalesced"):
        t.indices()
    with pytest.raises(RuntimeError, match="uncoalesced"):
        g.indices()
    gc, tc = g.coalesce(), t.coalesce()
    np.testing.assert_array_equal(gc.indices().numpy(), tc.indices().numpy())
    np.testing.assert_allclose(gc.values().numpy(), tc.values().numpy(), rtol=1e-12)
    assert gc._nnz() == tc._nnz() and tuple(gc.shape) == tuple(tc.shape)
    np.testing.assert_allclose(g.to_dense().numpy(), t.to_dense().numpy(), rtol=1e-12)
    # dense -> sparse -> dense, all dims sparse and a hybrid (sparse rows of dense vectors)
    a = np.where(np.random.default_rng(seed).random((4, 5)) < 0.4, np.random.default_rng(seed).normal(size=(4, 5)), 0)
    for sparse_dim in (None, 1):
        gs = gradlab.tensor(a).to_sparse(sparse_dim) if sparse_dim else gradlab.tensor(a).to_sparse()
        ts = torch.tensor(a).to_sparse(sparse_dim) if sparse_dim else torch.tensor(a).to_sparse()
        np.testing.assert_array_equal(gs.indices().numpy(), ts.indices().numpy())
        np.testing.assert_array_equal(gs.values().numpy(), ts.values().numpy())
        np.testing.assert_array_equal(gs.to_dense().numpy(), a)
        assert (gs.sparse_dim(), gs.dense_dim()) == (ts.sparse_dim(), ts.dense_dim())


@oracle
def test_to_sparse_keeps_the_dense_inputs_gradient_and_a_leaf_gets_a_sparse_grad(torch):
    a = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
    d = np.arange(6.0).reshape(3, 2)
    grads = {}
    for lib in (gradlab, torch):
        x = lib.tensor(a, requires_grad=True)
        lib.sparse.mm(x.to_sparse(), lib.tensor(d)).sum().backward()
        grads[lib.__name__] = x.grad.to_dense().numpy() if x.grad.is_sparse else x.grad.numpy()
    np.testing.assert_allclose(grads["gradlab"], grads["torch"])
    S = gradlab.sparse_coo_tensor(gradlab.tensor([[0, 1], [1, 0]]), gradlab.tensor([1.0, 2.0]), (2, 2),
                                  requires_grad=True)
    assert S.requires_grad and S.is_leaf
    gradlab.sparse.mm(S, gradlab.ones(2, 3)).sum().backward()
    assert S.grad.is_sparse
    np.testing.assert_array_equal(S.grad.to_dense().numpy(), [[0.0, 3.0], [3.0, 0.0]])


def test_show_graph_draws_the_sparse_product_like_any_op():
    from gradlab.viz import build_model
    v = gradlab.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = gradlab.randn(3, 2, requires_grad=True)
    S = gradlab.sparse_coo_tensor(gradlab.tensor([[0, 1, 2], [2, 0, 1]]), v, (3, 3))
    loss = gradlab.sparse.mm(S, w).relu().sum()
    model = build_model(loss)
    names = [n.name for n in model.node_ids if hasattr(n, "name")]
    assert "sparse_mm" in names
    gradlab.show_graph(loss)  # renders


@oracle
def test_construction_errors_are_pytorch_error_classes(torch):
    i = [[0, 1], [1, 0]]
    for lib in (gradlab, torch):
        with pytest.raises(RuntimeError, match="same nnz"):
            lib.sparse_coo_tensor(lib.tensor(i), lib.tensor([1.0, 2.0, 3.0]), (2, 2))
        with pytest.raises(RuntimeError):
            lib.sparse_coo_tensor(lib.tensor([0, 1]), lib.tensor([1.0, 2.0]), (2,))
        with pytest.raises(RuntimeError):
            lib.sparse.mm(lib.sparse_coo_tensor(lib.tensor(i), lib.tensor([1.0, 2.0]), (2, 2)), lib.ones(3, 2))
    # gradlab checks the indices against size (PyTorch leaves that to an opt-in invariant check)
    with pytest.raises(ValueError, match="for dim 0, size is 1 but found index 1"):
        gradlab.sparse_coo_tensor(gradlab.tensor(i), gradlab.tensor([1.0, 2.0]), (1, 2))
    with pytest.raises(ValueError, match="negative"):
        gradlab.sparse_coo_tensor(gradlab.tensor([[0, -1]]), gradlab.tensor([1.0, 2.0]), (2,))
    S = gradlab.sparse_coo_tensor(gradlab.tensor(i), gradlab.tensor([1.0, 2.0]))
    assert S.shape == (2, 2)  # the smallest size holding every index, as PyTorch


@pytest.mark.parametrize("call", [
    lambda S: S + S, lambda S: S * 2.0, lambda S: S.sum(), lambda S: gradlab.relu(S), lambda S: S[0],
    lambda S: gradlab.sparse.mm(S, S), lambda S: gradlab.mm(gradlab.ones(2, 2), S), lambda S: np.asarray(S),
    lambda S: gradlab.sparse.sum(S), lambda S: gradlab.cat([S, S]),
])
def test_everything_else_is_refused_with_a_message_saying_what_to_do(call):
    S = gradlab.sparse_coo_tensor(gradlab.tensor([[0, 1], [1, 0]]), gradlab.tensor([1.0, 2.0]), (2, 2))
    with pytest.raises((SparseNotSupported, TypeError)) as e:
        call(S)
    assert "sparse" in str(e.value) and ("to_dense" in str(e.value) or "S.t()" in str(e.value))
