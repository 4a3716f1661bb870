"""The instructor's einsum VJP (solutions/14_einsum_vjp.ipynb) agrees with gradlab's own einsum backward.

The solution cells `parse` and `einsum_vjp` are executed from the notebook as they are, then compared, in
float64, with `gradlab.einsum(...).backward(G)` on every case notebook 12 teaches (diagonals, traces, outer
products, transposes, batch dimensions, indices summed away) and on a few hundred random valid subscript
strings with repeated indices and indices that only one operand has.
"""
from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

import gradlab
from gradlab.course.notebook import grade_id, read_notebook

pytest.importorskip("nbformat")

NOTEBOOK = Path(__file__).resolve().parents[1] / "solutions" / "14_einsum_vjp.ipynb"


@pytest.fixture(scope="module")
def solution():
    nb = read_notebook(NOTEBOOK)
    cells = {grade_id(c): c.source for c in nb.cells if grade_id(c)}
    ns = {"np": np, "__name__": "einsum_solution"}
    for gid in ("parse", "einsum_vjp"):
        exec(compile(cells[gid], f"{NOTEBOOK.name}:{gid}", "exec"), ns)
    return ns["parse"], ns["einsum_vjp"]


def _gradlab_grads(subscripts, ops, G):
    ts = [gradlab.tensor(o, dtype=gradlab.float64, requires_grad=True) for o in ops]
    gradlab.einsum(subscripts, *ts).backward(gradlab.tensor(G, dtype=gradlab.float64))
    return [t.grad.numpy() for t in ts]


def _compare(einsum_vjp, subscripts, ops, G):
    want = _gradlab_grads(subscripts, ops, G)
    for i, w in enumerate(want):
        got = einsum_vjp(subscripts, ops, G, i)
        assert np.shape(got) == np.shape(ops[i]), f"{subscripts}: operand {i} gradient has shape {np.shape(got)}"
        np.testing.assert_allclose(got, w, rtol=1e-10, atol=1e-12, err_msg=f"{subscripts}, operand {i}")


def _operands(rng, subscripts, sizes):
    ins = subscripts.split("->")[0].split(",")
    ops = [rng.standard_normal([sizes[c] for c in s]) for s in ins]
    G = rng.standard_normal(np.einsum(subscripts, *ops).shape)
    return ops, G


NOTEBOOK_11_CASES = [
    "ij,jk->ik", "ij,j->i", "i,i->", "i,j->ij", "ij->ji", "ij->",          # matmul, matvec, dot, outer, transpose, sum
    "ii->i", "ii->", "bij,jk->bik", "bhqd,bhkd->bhqk",                      # diagonal, trace, batch dims, attention
    "ij->i", "ij->j", "ijk->", "ij,jk,kl->il", "bii->b", "ii,i->i", "iji->j", "iii->", "ijij->ij",
]


@pytest.mark.parametrize("subscripts", NOTEBOOK_11_CASES)
def test_notebook_11_cases(solution, subscripts):
    _, einsum_vjp = solution
    rng = np.random.default_rng(zlib.crc32(subscripts.encode()))
    letters = set(subscripts) - set(",->")
    for sizes in ({c: 3 for c in letters}, {c: n for c, n in zip(sorted(letters), (1, 4, 2, 3))}):
        sizes = {c: sizes.get(c, 2) for c in letters}
        _compare(einsum_vjp, subscripts, *_operands(rng, subscripts, sizes))


def test_the_gradlab_reference_agrees_with_finite_differences():
    """The comparison is only as good as gradlab's einsum VJP: check it on the tricky cases."""
    rng = np.random.default_rng(0)
    for subscripts in ("ii->", "ii->i", "iji->j", "ij,j->j", "bii->b"):
        letters = set(subscripts) - set(",->")
        ops, G = _operands(rng, subscripts, {c: 3 for c in letters})
        for i, g in enumerate(_gradlab_grads(subscripts, ops, G)):
            num = np.zeros_like(ops[i])
            for idx in np.ndindex(ops[i].shape):
                plus = [o.copy() for o in ops]
                minus = [o.copy() for o in ops]
                plus[i][idx] += 1e-6
                minus[i][idx] -= 1e-6
                num[idx] = (np.sum(G * np.einsum(subscripts, *plus)) - np.sum(G * np.einsum(subscripts, *minus))) / 2e-6
            np.testing.assert_allclose(g, num, atol=1e-6, err_msg=subscripts)


def _random_subscripts(rng):
    """A random valid explicit einsum: 1-3 operands of rank 1-4 over a few letters (so letters repeat within
    an operand and across operands), an output of distinct letters in random order (others are summed)."""
    pool = list("abcde"[: rng.integers(1, 6)])
    ins = ["".join(rng.choice(pool, size=rng.integers(1, 5))) for _ in range(rng.integers(1, 4))]
    used = sorted(set("".join(ins)))
    out = "".join(rng.permutation(used)[: rng.integers(0, len(used) + 1)])
    return ",".join(ins) + "->" + out, {c: int(rng.integers(1, 4)) for c in used}


def test_random_subscripts(solution):
    parse, einsum_vjp = solution
    rng = np.random.default_rng(20240614)
    seen_repeat = seen_summed_alone = 0
    for _ in range(300):
        subscripts, sizes = _random_subscripts(rng)
        ins, out = parse(subscripts)
        assert ",".join(ins) + "->" + out == subscripts
        seen_repeat += any(len(set(s)) < len(s) for s in ins)
        seen_summed_alone += any(c not in out and sum(c in t for t in ins) == 1 for s in ins for c in s)
        ops, G = _operands(rng, subscripts, sizes)
        if rng.random() < 0.3:   # non-contiguous operands: the same values through transposed / reversed views
            ops = [np.ascontiguousarray(o.T).T if o.ndim > 1 else o[::-1].copy()[::-1] for o in ops]
        _compare(einsum_vjp, subscripts, ops, G)
    assert seen_repeat > 50 and seen_summed_alone > 50, (seen_repeat, seen_summed_alone)
