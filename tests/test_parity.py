"""PyTorch parity on programs a PyTorch user writes: keyword spellings, dtype promotion, integer
arithmetic, indexing mixes, factories, tensor methods, autograd API details.

Each case is run once with ``L = torch`` and once with ``L = gradlab`` (the same source text),
and the results (values, dtypes, shapes, gradients) are compared.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import gradlab

pytestmark = pytest.mark.oracle

A = np.arange(24, dtype=np.float64).reshape(2, 3, 4) - 11.5
I = np.array([[-7, 5, 3], [0, -2, 9]])


def _T(L, a=A, **kw):
    return L.tensor(a, **kw)


def _plain(o, torch):
    """Results of either library as (kind, dtype name, ndarray) tuples, recursively."""
    if isinstance(o, gradlab.Tensor):
        return ("T", str(o.dtype).replace("gradlab.", ""), np.asarray(o._data))
    if isinstance(o, torch.Tensor):
        return ("T", str(o.dtype).replace("torch.", ""), o.detach().numpy())
    if isinstance(o, (tuple, list)):
        return tuple(_plain(x, torch) for x in o)
    return o


def _assert_same(a, b, where=""):
    if isinstance(a, tuple) and a and a[0] == "T":
        assert isinstance(b, tuple) and b and b[0] == "T", where
        assert a[1] == b[1], f"{where}: dtype {a[1]} (gradlab) vs {b[1]} (torch)"
        assert a[2].shape == b[2].shape, f"{where}: shape {a[2].shape} vs {b[2].shape}"
        np.testing.assert_allclose(a[2], b[2], rtol=1e-6, atol=1e-9, equal_nan=True, err_msg=where)
    elif isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), f"{where}: {a!r} vs {b!r}"
        for x, y in zip(a, b):
            _assert_same(x, y, where)
    else:
        assert type(a) is type(b) and a == b, f"{where}: {a!r} (gradlab) vs {b!r} (torch)"


def _same_program(torch, f, where):
    _assert_same(_plain(f(gradlab), torch), _plain(f(torch), torch), where)


CASES = {
    # reductions: dim / keepdim / axis / tuple dims / negative dims / namedtuples
    "sum_tuple": lambda L: _T(L).sum((0, 1)),
    "sum_kw": lambda L: _T(L).sum(dim=-1, keepdim=True),
    "sum_axis": lambda L: _T(L).sum(axis=1),
    "sum_list": lambda L: _T(L).sum([-1, 0]),
    "sum_int": lambda L: _T(L, I).sum(),
    "sum_bool": lambda L: (_T(L) > 0).sum(),
    "sum_dtype": lambda L: _T(L, I).sum(dtype=L.float32),
    "mean_tuple": lambda L: _T(L).mean((-1, 0), keepdim=True),
    "max_dim": lambda L: tuple(_T(L).max(1)),
    "max_values": lambda L: _T(L).max(1).values,
    "max_indices_kw": lambda L: _T(L).max(dim=1, keepdim=True).indices,
    "min_neg": lambda L: tuple(_T(L).min(-1)),
    "max_int": lambda L: tuple(_T(L, I).max(0)),
    "max_binary": lambda L: _T(L).max(_T(L) * 0),
    "argmax_kw": lambda L: _T(L).argmax(dim=2, keepdim=True),
    "var_corr": lambda L: _T(L).var(dim=(0, 2), correction=0),
    "var_unbiased": lambda L: _T(L).var(0, unbiased=False),
    "std": lambda L: _T(L).std(-1),
    "norm_dim": lambda L: _T(L).norm(dim=1),
    "norm_p1": lambda L: _T(L).norm(p=1),
    "prod_int": lambda L: _T(L, I).prod(),
    "cumsum_int": lambda L: _T(L, I).cumsum(dim=0),
    "cumsum_half": lambda L: _T(L, np.random.default_rng(0).integers(0, 4, 3000) / 4, dtype=L.float16).cumsum(0),
    "cumsum_half_overflow": lambda L: L.full((3,), 60000.0, dtype=L.float16).cumsum(0),
    "logsumexp": lambda L: L.logsumexp(_T(L), (0, 1)),
    "any_dim": lambda L: (_T(L) > 0).any(1),
    # shapes
    "view": lambda L: _T(L).view(-1, 3),
    "view_tuple": lambda L: _T(L).view((4, 6)),
    "reshape": lambda L: _T(L).reshape(2, -1),
    "permute": lambda L: _T(L).permute(2, 0, 1),
    "permute_tuple": lambda L: _T(L).permute((2, 0, 1)),
    "permute_neg": lambda L: _T(L).permute(-1, 0, 1),
    "transpose": lambda L: _T(L).transpose(0, -1),
    "mT": lambda L: _T(L).mT,
    "expand_minus1": lambda L: _T(L)[:, :1].expand(-1, 4, -1),
    "expand_new_dims": lambda L: _T(L)[0, 0].expand(3, 4),
    "squeeze_dim": lambda L: _T(L)[:, :1].squeeze(1),
    "squeeze_non1": lambda L: _T(L).squeeze(1),
    "squeeze_tuple": lambda L: _T(L)[:1, :1].squeeze((0, 1)),
    "unsqueeze_neg": lambda L: _T(L).unsqueeze(-4),
    "flatten_kw": lambda L: _T(L).flatten(start_dim=0, end_dim=1),
    "repeat": lambda L: _T(L)[0].repeat(2, 1, 3),
    "flip_list": lambda L: _T(L).flip([-1]),
    "roll_tuple": lambda L: _T(L).roll((1, -1), (0, 2)),
    "split_uneven": lambda L: _T(L).split(3, -1),
    "split_list": lambda L: _T(L).split([1, 3], dim=2),
    "chunk_uneven": lambda L: L.arange(6).chunk(4),
    "cat_negdim": lambda L: L.cat([_T(L), _T(L)], dim=-1),
    "cat_empty": lambda L: L.cat([_T(L)[:, :0], _T(L)], 1),
    "cat_legacy_empty": lambda L: L.cat([L.tensor([]), _T(L)[0, 0]]),
    "cat_promote": lambda L: L.cat([_T(L, I), _T(L, I).float()]),
    "stack_neg": lambda L: L.stack([_T(L), _T(L)], dim=-1),
    # tensor methods composed of ops
    "softmax_method": lambda L: _T(L).softmax(-1),
    "log_softmax_method": lambda L: _T(L).log_softmax(dim=1),
    "unbind": lambda L: _T(L).unbind(1),
    "select": lambda L: _T(L).select(-1, -1),
    "narrow": lambda L: _T(L).narrow(2, 1, 2),
    "view_as": lambda L: _T(L).view_as(_T(L).reshape(6, 4)),
    "reshape_as": lambda L: _T(L).reshape_as(_T(L).reshape(6, 4)),
    "movedim": lambda L: _T(L).movedim((0, 1), (2, 0)),
    "unflatten": lambda L: _T(L).unflatten(-1, (2, -1)),
    "new_zeros": lambda L: _T(L).new_zeros(2, 3),
    "new_empty_shape": lambda L: tuple(_T(L).new_empty(2, 3).shape),
    "type_dtype": lambda L: _T(L).type(L.float32),
    "ravel": lambda L: _T(L).transpose(0, 2).ravel(),
    "new_full": lambda L: _T(L).new_full((2,), 3),
    "new_tensor": lambda L: _T(L).new_tensor([1, 2]),
    "nonzero": lambda L: (_T(L) > 0).nonzero(),
    "nonzero_tuple": lambda L: (_T(L) > 0).nonzero(as_tuple=True),
    "sort": lambda L: tuple(_T(L).sort(0, descending=True)),
    "argsort": lambda L: _T(L).argsort(dim=1),
    "topk": lambda L: tuple(_T(L).topk(2, dim=1, largest=False)),
    # indexing
    "idx_mix": lambda L: _T(L)[None, ..., 1:3],
    "idx_int_tensor": lambda L: _T(L)[_T(L, [1, 0, 1])],
    "idx_two_tensors": lambda L: _T(L)[_T(L, [1, 0]), :, _T(L, [3, 2])],
    "idx_mask": lambda L: _T(L)[_T(L) > 0],
    "idx_mask_leading": lambda L: _T(L)[_T(L)[:, :, 0] > -5],
    "idx_list": lambda L: _T(L)[[0, 1, 1]],
    "idx_step": lambda L: _T(L)[:, ::2],
    "idx_0d_tensor": lambda L: _T(L)[_T(L, 1)],
    "idx_none_mid": lambda L: _T(L)[:, None, 1],
    # where / comparisons / clamp
    "where_scalar_other": lambda L: L.where(_T(L) > 0, _T(L), 0.0),
    "where_scalar_input": lambda L: L.where(_T(L) > 0, 1.0, _T(L)),
    "where_indices": lambda L: L.where(_T(L)[0] > 0),
    "cmp_rscalar": lambda L: 1 < _T(L),
    "clamp_min_tensor": lambda L: _T(L).clamp(min=_T(L, [0.0, 1, 2, 3])),
    "clamp_int": lambda L: _T(L, I).clamp(0, 4),
    "clamp_int_float_bound": lambda L: _T(L, I).clamp(0.5, 4),
    # integer arithmetic (Python's sign rule for // and %)
    "int_truediv": lambda L: _T(L, I) / 2,
    "int_truediv_tensor": lambda L: _T(L, I) / _T(L, [2, 3, -4]),
    "int_floordiv_neg": lambda L: _T(L, I) // -4,
    "int_rfloordiv": lambda L: 7 // _T(L, [2, -3, 4]),
    "float_floordiv": lambda L: _T(L) // 3,
    "int_mod_neg": lambda L: _T(L, I) % -4,
    "float_mod_neg": lambda L: _T(L) % -3.5,
    "int_rmod": lambda L: 7 % _T(L, [2, -3, 4]),
    "remainder_method": lambda L: _T(L).remainder(2),
    "div_floor": lambda L: L.div(_T(L, I), 4, rounding_mode="floor"),
    "div_trunc": lambda L: L.div(_T(L, I), -4, rounding_mode="trunc"),
    "div_trunc_float": lambda L: _T(L).div(4, rounding_mode="trunc"),
    "add_alpha": lambda L: _T(L).add(_T(L), alpha=0.5),
    "sub_alpha": lambda L: L.sub(_T(L), _T(L), alpha=2),
    "int_pow": lambda L: _T(L, I) ** 2,
    "rpow_int": lambda L: 2 ** _T(L, [1, 2, 3]),
    "bool_xor": lambda L: (_T(L) > 0) ^ (_T(L) < 3),
    "int_bitwise": lambda L: [_T(L, [6, 3]) & _T(L, [3, 1]), _T(L, [6, 3]) | 1, 5 ^ _T(L, [6, 3])],
    "mean_dtype": lambda L: _T(L, [1, 2, 4]).mean(dtype=L.float64),
    "mean_empty": lambda L: L.zeros(0, 3).mean(0),
    # dtype promotion
    "int_times_float": lambda L: _T(L, I) * 1.5,
    "int32_plus_int64": lambda L: _T(L, I, dtype=L.int32) + _T(L, I),
    "f32_plus_f64": lambda L: _T(L, A.astype(np.float32)) + _T(L, A),
    "f32_plus_0d_f64": lambda L: _T(L, A.astype(np.float32)) + _T(L, 2.5, dtype=L.float64),
    "int_plus_0d_float": lambda L: _T(L, I) + _T(L, 2.5, dtype=L.float64),
    "bool_add": lambda L: (_T(L) > 0) + (_T(L) < 3),
    "exp_int": lambda L: _T(L, [[0, 1, 2]]).exp(),
    "sqrt_int32": lambda L: _T(L, [1, 4], dtype=L.int32).sqrt(),
    "sigmoid_int": lambda L: L.sigmoid(_T(L, [1, 4])),
    "tanh_bool": lambda L: L.tanh(_T(L, [True, False])),
    "sigmoid_half": lambda L: _T(L, [0.0, 1, 2, 3], dtype=L.float16).sigmoid(),
    "size0_broadcast": lambda L: L.zeros(0, 3) + L.ones(1, 3),
    # casts and factories
    "long": lambda L: _T(L).long(),
    "to_other": lambda L: _T(L).to(_T(L, I)),
    "type_as": lambda L: _T(L).type_as(_T(L, I)),
    "arange_float_step": lambda L: L.arange(0, 1, 0.1),
    "arange_float_end": lambda L: L.arange(1.5),
    "arange_neg_step": lambda L: L.arange(5, 0, -1),
    "linspace": lambda L: L.linspace(0, 1, 5),
    "eye_nm": lambda L: L.eye(2, 4),
    "eye_kw": lambda L: L.eye(3, m=2, dtype=L.int64),
    "full_int": lambda L: L.full((2, 3), 7),
    "full_bool": lambda L: L.full((2,), True),
    "zeros_like_dtype": lambda L: L.zeros_like(_T(L), dtype=L.int64),
    "full_like_int": lambda L: L.full_like(_T(L, I), 2.7),
    "tensor_mixed": lambda L: L.tensor([1, 2.0]),
    "tensor_np_int32": lambda L: L.tensor(np.ones(2, dtype=np.int32)),
    "randint_shape": lambda L: L.randint(5, (3,)).shape,
    # Python values
    "item_types": lambda L: [type(_T(L)[0, 0, 0].item()), type(_T(L, I)[0, 0].item()),
                             type((_T(L) > 0)[0, 0, 0].item())],
    "tolist": lambda L: _T(L, I).tolist(),
    "int_of_float": lambda L: int(_T(L, 3.5)),
    "stride_t": lambda L: _T(L).transpose(0, 2).stride(),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_program_matches_pytorch(torch, name):
    _same_program(torch, CASES[name], name)


@pytest.mark.parametrize("a,b", [(a, b) for a in (-7, -6, -1, 0, 1, 6, 7) for b in (-3, -2, 2, 3)])
def test_integer_division_modes_match_pytorch(torch, a, b):
    for mode in ("trunc", "floor"):
        got = gradlab.div(gradlab.tensor([a]), b, rounding_mode=mode).tolist()
        assert got == torch.div(torch.tensor([a]), b, rounding_mode=mode).tolist(), (a, b, mode)
    assert (gradlab.tensor([a]) % b).tolist() == (torch.tensor([a]) % b).tolist()
    assert (gradlab.tensor([a]) // b).tolist() == (torch.tensor([a]) // b).tolist()


# ------------------------------------------------------------- random programs (hypothesis)
_BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow"]


@st.composite
def _broadcast_pair(draw):
    nd = draw(st.integers(0, 3))
    base = draw(st.lists(st.integers(0, 3), min_size=nd, max_size=nd))
    def variant():
        k = draw(st.integers(0, nd))
        return [1 if draw(st.booleans()) else s for s in base[nd - k:]]
    return tuple(variant()), tuple(variant())


@given(shapes=_broadcast_pair(), op=st.sampled_from(_BINARY), seed=st.integers(0, 2**16))
def test_binary_ops_broadcast_values_and_grads(torch, shapes, op, seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.5, 2.0, shapes[0])
    b = rng.uniform(0.5, 2.0, shapes[1])
    out = {}
    for L in (gradlab, torch):
        x = L.tensor(a, requires_grad=True)
        y = L.tensor(b, requires_grad=True)
        z = getattr(L, op)(x, y)
        w = L.tensor(np.random.default_rng(1).standard_normal(tuple(z.shape)))
        (z * w).sum().backward()
        out[L] = [np.asarray(t.detach().numpy() if L is torch else t._data) for t in (z, x.grad, y.grad)]
    for g, t in zip(out[gradlab], out[torch]):
        assert g.shape == t.shape
        np.testing.assert_allclose(g, t, rtol=1e-9, atol=1e-12)


@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), seed=st.integers(0, 2**16),
       data=st.data())
def test_reductions_with_dim_spellings(torch, shape, seed, data):
    a = np.random.default_rng(seed).standard_normal(shape)
    nd = len(shape)
    dims = data.draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=nd,
                              unique_by=lambda d: d % nd))
    keepdim = data.draw(st.booleans())
    op = data.draw(st.sampled_from(["sum", "mean", "amax", "amin", "var", "logsumexp", "norm"]))
    dim = dims[0] if len(dims) == 1 and data.draw(st.booleans()) else tuple(dims)
    res = {}
    for L in (gradlab, torch):
        x = L.tensor(a, requires_grad=True)
        if op == "norm":
            y = x.norm(dim=dim, keepdim=keepdim)
        else:
            y = getattr(x, op)(dim, keepdim=keepdim)
        y.sum().backward()
        res[L] = [np.asarray(t.detach().numpy() if L is torch else t._data) for t in (y, x.grad)]
    for g, t in zip(res[gradlab], res[torch]):
        assert g.shape == t.shape, (op, dim, keepdim)
        np.testing.assert_allclose(g, t, rtol=1e-8, atol=1e-10)


# ------------------------------------------------------------- autograd API details
def test_backward_inputs_retain_graph_and_accumulation(torch):
    def prog(L):
        x = L.tensor([1.0, 2, 3], dtype=L.float64, requires_grad=True)
        z = L.tensor([4.0, 5, 6], dtype=L.float64, requires_grad=True)
        y = (x * z).sum()
        y.backward(inputs=[x], retain_graph=True)
        first = (x.grad.clone(), z.grad)
        y.backward()
        return [first[0], first[1] is None, x.grad, z.grad]
    _same_program(torch, prog, "backward(inputs=...)")


def test_grad_allow_unused_and_grad_outputs(torch):
    def prog(L):
        x = L.tensor([1.0, 2, 3], dtype=L.float64, requires_grad=True)
        z = L.tensor([1.0, 2, 3], dtype=L.float64, requires_grad=True)
        gx, gz = L.autograd.grad((x * 2).sum(), [x, z], allow_unused=True)
        (go,) = L.autograd.grad(x ** 2, x, grad_outputs=L.ones(3, dtype=L.float64) * 3)
        return [gx, gz is None, go]
    _same_program(torch, prog, "grad(allow_unused, grad_outputs)")


def test_create_graph_hooks_and_detach(torch):
    def prog(L):
        x = L.tensor([1.0, 2, 3], dtype=L.float64, requires_grad=True)
        (gx,) = L.autograd.grad((x ** 3).sum(), x, create_graph=True)
        gx.sum().backward()
        h = L.tensor([1.0, -1], dtype=L.float64, requires_grad=True)
        h.register_hook(lambda g: g * 10)
        y = h * 2
        y.retain_grad()
        (y * y).sum().backward()
        d = (h * 2).detach_()
        return [gx, x.grad, h.grad, y.grad, d.requires_grad, d.is_leaf]
    _same_program(torch, prog, "create_graph / hooks / detach_")


def test_zero_grad_set_to_none_and_no_grad_inplace(torch):
    def prog(L):
        m = L.nn.Linear(2, 2)
        m(L.ones(1, 2)).sum().backward()
        m.zero_grad()
        none_after = m.weight.grad is None
        m(L.ones(1, 2)).sum().backward()
        m.zero_grad(set_to_none=False)
        x = L.tensor([1.0, 2], requires_grad=True)
        with L.no_grad():
            y = x * 2
            x.add_(1)
        return [none_after, m.weight.grad, y.requires_grad, x, x.requires_grad, x.is_leaf]
    _same_program(torch, prog, "zero_grad / no_grad in-place")


def test_setitem_variants(torch):
    def prog(L):
        x = L.zeros(3, 4)
        x[0] = 1
        x[:, 1] = L.tensor([5.0, 6, 7])
        x[x > 5] = -1
        x[[0, 2], [3, 3]] = 9
        x[..., -1] += 1
        y = L.zeros(3, 4, dtype=L.int64)
        y[0] = 2.7
        return [x, y]
    _same_program(torch, prog, "__setitem__")


def test_manual_seed_reproducible():
    gradlab.manual_seed(3)
    a, b = gradlab.randn(3), gradlab.randint(0, 10, (4,))
    gradlab.manual_seed(3)
    assert gradlab.equal(a, gradlab.randn(3)) and gradlab.equal(b, gradlab.randint(0, 10, (4,)))
    assert gradlab.randint(5, (2, 3)).shape == (2, 3)


def test_topk_and_sort_gradients(torch):
    a = np.random.default_rng(0).standard_normal((3, 5))
    xg = gradlab.tensor(a, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    (xg.topk(2).values.sum() + xg.sort(0).values[0].sum()).backward()
    (xt.topk(2).values.sum() + xt.sort(0).values[0].sum()).backward()
    np.testing.assert_allclose(xg.grad._data, xt.grad.numpy())


def test_generator_streams_are_independent(torch):
    g1 = gradlab.Generator().manual_seed(1)
    g2 = gradlab.Generator().manual_seed(1)
    gradlab.manual_seed(0)
    a = gradlab.randn(2)
    gradlab.manual_seed(0)
    b = gradlab.randn(3, generator=g1)
    assert gradlab.equal(gradlab.randn(2), a), "drawing from a Generator must not move the global stream"
    assert gradlab.equal(b, gradlab.randn(3, generator=g2))
    assert g1.initial_seed() == 1
    assert gradlab.randint(0, 5, (3,), generator=g1).shape == (3,)
    assert sorted(gradlab.randperm(4, generator=g1).tolist()) == [0, 1, 2, 3]
    assert hasattr(torch.Generator(), "manual_seed")  # the same spelling as PyTorch


# ------------------------------------------------------------- indexing mixes (random)
def _random_index(rnd):
    parts, used_ellipsis = [], False
    for _ in range(rnd.randint(1, 4)):
        k = rnd.choice(["int", "slice", "none", "ellipsis", "list", "tensor", "mask"])
        if k == "ellipsis" and not used_ellipsis:
            parts.append(Ellipsis)
            used_ellipsis = True
        elif k == "int":
            parts.append(rnd.randint(-2, 1))
        elif k == "slice":
            parts.append(slice(rnd.choice([None, 0, 1, -2]), rnd.choice([None, 2, -1, 3]), rnd.choice([None, 1, 2])))
        elif k == "none":
            parts.append(None)
        elif k == "list":
            parts.append([rnd.randint(0, 2) for _ in range(rnd.randint(1, 3))])
        elif k == "tensor":
            parts.append(("T", [rnd.randint(-2, 2) for _ in range(2)]))
        elif k == "mask":
            parts.append(("T", [rnd.random() > 0.5 for _ in range(3)]))
    return parts


def _build_index(L, parts):
    return tuple(L.tensor(p[1]) if isinstance(p, tuple) else p for p in parts)


@pytest.mark.parametrize("seed", range(4))
def test_random_index_mixes_get_and_set_match_pytorch(torch, seed):
    """Slices, None, ..., ints, lists, int tensors and bool masks in one index; integers mixed with
    index arrays follow PyTorch (the integers apply first), for getitem, its gradient and setitem."""
    import random
    rnd = random.Random(seed)
    a = np.random.default_rng(seed).standard_normal((3, 4, 5))
    for _ in range(60):
        parts = _random_index(rnd)
        res = {}
        for L in (gradlab, torch):
            x = L.tensor(a, requires_grad=True)
            try:
                y = x[_build_index(L, parts)]
            except (IndexError, ValueError, TypeError, RuntimeError) as e:
                res[L] = type(e)
                continue
            w = L.tensor(np.random.default_rng(1).standard_normal(tuple(y.shape)))
            (y * w).sum().backward()
            z = L.tensor(a)
            z[_build_index(L, parts)] = w * 2
            res[L] = [np.asarray(t.detach().numpy() if L is torch else t._data) for t in (y, x.grad, z)]
        got, want = res[gradlab], res[torch]
        if isinstance(want, type) or isinstance(got, type):
            assert isinstance(want, type) and isinstance(got, type), (parts, got, want)
            continue
        for g_, t_ in zip(got, want):
            assert g_.shape == t_.shape, parts
            np.testing.assert_allclose(g_, t_, err_msg=str(parts))


def test_autograd_functional_return_conventions(torch):
    """torch.autograd.functional: one input tensor gives one result tensor (not a 1-tuple)."""
    import torch.autograd.functional as taf
    a, v = np.array([0.3, -1.2, 2.0]), np.array([1.0, 0.5, -2.0])
    def f(L):
        return lambda x: (L.tanh(x) * x).sum()
    for name in ("hvp", "vhp", "vjp"):
        tv = getattr(taf, name)(f(torch) if name != "vjp" else (lambda x: torch.tanh(x) * x), torch.tensor(a),
                                torch.tensor(v))
        gv = getattr(gradlab.autograd.functional, name)(f(gradlab) if name != "vjp" else (lambda x: gradlab.tanh(x) * x),
                                                        gradlab.tensor(a), gradlab.tensor(v))
        assert isinstance(gv[1], gradlab.Tensor), name
        np.testing.assert_allclose(gv[1].numpy(), tv[1].numpy(), err_msg=name)
    tj = taf.jacobian(lambda x: torch.tanh(x) * x[0], torch.tensor(a))
    gj = gradlab.autograd.functional.jacobian(lambda x: gradlab.tanh(x) * x[0], gradlab.tensor(a))
    np.testing.assert_allclose(gj.numpy(), tj.numpy())


def test_data_update_idiom_updates_in_place(torch):
    """``p.data -= lr * p.grad`` (the classic hand-written SGD step) updates the values in place."""
    def prog(L):
        p = L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True)
        (p * p).sum().backward()
        p.data -= 0.1 * p.grad  # torch-data
        p.data += -0.1 * p.grad  # torch-data
        return [p.detach(), p.requires_grad, p.is_leaf]
    _same_program(torch, prog, "p.data -= lr * p.grad")
    p = gradlab.tensor([1.0, 2.0], requires_grad=True)
    (p * p).sum().backward()
    p.data -= 0.1 * p.grad  # torch-data
    assert isinstance(p.data, gradlab.Tensor) and not p.data.requires_grad  # torch-data
    assert isinstance(np.ones(2) * p, gradlab.Tensor) and (np.ones(2) * p).requires_grad
