"""gradlab.compile reads every tensor input afresh on every call, whatever its dtype.

Ops receive integer tensors (token ids, class indices, gather/index positions) as raw arrays; the
tracer once baked the first call's arrays into the graph as constants, so a compiled embedding
or a compiled GPT kept computing on the first batch. Each test calls a compiled function with
changing values and compares with the same function run eagerly.
"""
from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import gradlab
import gradlab.nn.functional as F
from gradlab import nn
from gradlab.compile import TraceSpecializationWarning


def _compare(fn, calls, traces=None):
    """Run ``fn`` compiled and eagerly on each argument tuple; values and gradients must agree."""
    cf = gradlab.compile(fn)
    for args in calls:
        eager_args = [a.detach().requires_grad_() if a.requires_grad else a for a in args]
        comp_args = [a.detach().requires_grad_() if a.requires_grad else a for a in args]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TraceSpecializationWarning)
            got = cf(*comp_args)
        want = fn(*eager_args)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)
        if want.requires_grad:
            got.sum().backward()
            want.sum().backward()
            for c, e in zip(comp_args, eager_args):
                if e.requires_grad:
                    np.testing.assert_allclose(c.grad.numpy(), e.grad.numpy(), rtol=1e-6, atol=1e-6)
    if traces is not None:
        assert len(cf.log) == traces, cf.log
    return cf


def test_embedding_reads_each_calls_ids():
    """The issue's repro: the second call returned the first batch's value (-0.474 for -3.928)."""
    gradlab.manual_seed(0)
    emb = nn.Embedding(10, 4)
    f = gradlab.compile(lambda i: emb(i).sum())
    first = f(gradlab.tensor([1, 2]))
    second = f(gradlab.tensor([3, 4]))
    assert first.item() == pytest.approx(emb(gradlab.tensor([1, 2])).sum().item())
    assert second.item() == pytest.approx(emb(gradlab.tensor([3, 4])).sum().item())
    assert len(f.log) == 1  # one trace: the ids are a graph input, not a guard


@pytest.mark.parametrize("dtype", [gradlab.int64, gradlab.int32, gradlab.uint8])
def test_integer_inputs_index_gather_and_embed(dtype):
    x = gradlab.arange(10.0).requires_grad_()
    ids = [gradlab.tensor(v, dtype=dtype) for v in ([1, 2, 5], [3, 4, 0], [9, 9, 2])]
    w = gradlab.randn(10, 3)
    _compare(lambda x, i: x.index_select(0, i.long()) * 2, [(x, i) for i in ids])
    _compare(lambda x, i: x[i.long()] + gradlab.gather(x, 0, i.long()), [(x, i) for i in ids])
    _compare(lambda x, i: F.embedding(i.long(), w * x[0]), [(x, i) for i in ids])
    _compare(lambda x, i: F.one_hot(i.long(), 10).float() * x, [(x, i) for i in ids])
    _compare(lambda x, i: x[:3] * i, [(x, i) for i in ids], traces=1)  # arithmetic with an integer tensor


def test_integer_index_into_a_tensor_directly_is_one_trace():
    x = gradlab.arange(10.0).requires_grad_()
    _compare(lambda x, i: x[i] * 3, [(x, gradlab.tensor(v)) for v in ([1, 2], [3, 4], [0, 0])], traces=1)


def test_bool_inputs_as_masks_and_operands():
    x = gradlab.arange(6.0).requires_grad_()
    masks = [gradlab.tensor(m) for m in ([True, False] * 3, [False, True] * 3, [True] * 6)]
    _compare(lambda x, m: gradlab.where(m, x, -x), [(x, m) for m in masks], traces=1)
    _compare(lambda x, m: x * m, [(x, m) for m in masks], traces=1)
    _compare(lambda x, m: x.masked_fill(m, 0.0), [(x, m) for m in masks], traces=1)
    # a mask index sets the result's shape: correct on every call (a retrace when the mask changes)
    _compare(lambda x, m: x[m].sum() * x[0], [(x, m) for m in masks])


@pytest.mark.parametrize("dtype", [gradlab.float32, gradlab.float64])
def test_float_inputs(dtype):
    x = gradlab.randn(4, dtype=dtype).requires_grad_()
    _compare(lambda x, y: (x * y).tanh(), [(x, gradlab.randn(4, dtype=dtype)) for _ in range(3)], traces=1)


def test_a_compiled_gpt_trains_like_the_eager_one_on_changing_batches():
    gradlab.manual_seed(0)
    eager = nn.GPT(vocab_size=11, block_size=6, n_layer=1, n_head=2, n_embd=8)
    comp = copy.deepcopy(eager)
    step = gradlab.compile(lambda idx, tgt: comp(idx, tgt)[1])
    # SGD, not Adam: the key projection's bias gets a gradient that is zero in exact arithmetic (softmax
    # ignores a shift shared by every score), so both runs hold float32 rounding noise there (~1e-9), and
    # Adam's m / sqrt(v) scales any such noise up to +-lr per step: the comparison would be of noise
    opts = [gradlab.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (eager, comp)]
    rng = np.random.default_rng(0)
    for _ in range(5):
        idx = gradlab.from_numpy(rng.integers(0, 11, (3, 6)))
        tgt = gradlab.from_numpy(rng.integers(0, 11, (3, 6)))
        losses = []
        for loss_of, opt in ((lambda: eager(idx, tgt)[1], opts[0]), (lambda: step(idx, tgt), opts[1])):
            opt.zero_grad()
            loss = loss_of()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert losses[1] == pytest.approx(losses[0], rel=1e-5, abs=1e-6)
    for (name, pe), pc in zip(eager.named_parameters(), comp.parameters()):
        np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    assert len(step.log) == 1, step.log  # the batches are graph inputs: traced once


def test_a_mask_computed_from_a_float_input_follows_its_values():
    xs = [gradlab.tensor(v).requires_grad_() for v in ([1.0, 3.0, 5.0], [4.0, 0.0, 9.0], [0.0, 0.0, 3.0])]
    _compare(lambda x: x[x > 2].sum() * 2, [(x,) for x in xs])


def test_a_loss_with_ignored_targets_follows_each_calls_targets():
    """cross_entropy keeps target-derived arrays (positions, weights, the count) for its backward."""
    logits = gradlab.randn(4, 5).requires_grad_()
    targets = [gradlab.tensor(t) for t in ([0, 1, -100, 4], [-100, -100, 2, 3], [1, 1, 1, 1])]
    _compare(lambda z, t: F.cross_entropy(z, t, ignore_index=-100), [(logits, t) for t in targets], traces=1)
