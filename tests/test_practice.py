"""``gradlab practice``: a drill for every differentiable op of the registry (gradlab/course/practice.py).

For every listed op the registry's own VJP (and JVP) as the answer gets full marks, and wrong answers get
less: a sign flip, a doubled gradient, a zero gradient, a dropped reduction (the gradient of one broadcast
copy instead of the sum over the copies) and a transposed operand, at least three of them for every op.
The answers are graded in process (``practice.score``: the graded cells' own comparisons), so the ~150
ops take seconds; one drill goes through the real ``gradlab grade`` (reference full marks, stub zero).
"""
from __future__ import annotations

import contextlib
import io
import json
import time

import numpy as np
import pytest

import gradlab
from gradlab.course import practice
from gradlab.course.notebook import CourseError
from gradlab.ops.registry import REGISTRY


@pytest.fixture(scope="module")
def ops():
    """Every drillable op. Found on first use, not at import: finding them runs each op's rule on its samples
    (about 1 CPU-s), which every xdist worker would otherwise pay while collecting, though one runs the file."""
    return practice.drillable()


def _wrongs(name):
    ref = practice.reference_vjp(name)
    info = REGISTRY[name]

    def sign_flip(grad, *xs, **kw):
        return tuple(-g for g in ref(grad, *xs, **kw))

    def doubled(grad, *xs, **kw):
        return tuple(2 * g for g in ref(grad, *xs, **kw))

    def zero(grad, *xs, **kw):
        return tuple(gradlab.zeros_like(g) for g in ref(grad, *xs, **kw))

    def dropped_reduction(grad, *xs, **kw):
        """The gradient of the first broadcast copy of each input, not the sum over every copy."""
        outs = practice._float_outputs(info.fn(*xs, **kw))
        shape = tuple(outs[0].shape)
        leaves = practice._leaves(xs)
        grads = list(ref(grad, *xs, **kw))
        for k, x in enumerate(leaves):
            s = tuple(x.shape)
            try:
                if s == shape or np.broadcast_shapes(s, shape) != shape:
                    continue
            except ValueError:
                continue
            big = x.detach().expand(*shape).clone().requires_grad_(True)
            swap = {id(x): big}
            args = practice._map_tensors(xs, lambda t: swap.get(id(t), t))
            o = [y for y in practice._float_outputs(info.fn(*args, **kw)) if y.requires_grad]
            gs = list(grad) if isinstance(grad, tuple) else [grad]
            (full,) = gradlab.autograd.grad(o, [big], gs[:len(o)], allow_unused=True)
            if full is None:
                continue
            a = full.numpy()
            lead = a.ndim - len(s)
            a = a[(0,) * lead]
            a = a[tuple(slice(0, 1) if n == 1 else slice(None) for n in s)]
            grads[k] = gradlab.tensor(np.ascontiguousarray(a))
        return tuple(grads)

    def transposed(grad, *xs, **kw):
        gs = list(ref(grad, *xs, **kw))
        if len(gs) >= 2:
            return tuple(gs[1:] + gs[:1])             # each gradient given to the next operand
        return tuple(g.transpose(-2, -1) if g.ndim >= 2 else g.flip(0) if g.ndim == 1 else g for g in gs)

    return {"sign_flip": sign_flip, "doubled": doubled, "zero": zero, "dropped_reduction": dropped_reduction,
            "transposed": transposed}


def test_the_list_is_the_registrys_differentiable_ops(ops):
    assert len(ops) >= 150
    assert {"add", "mul", "matmul", "relu", "sum", "cat", "softmax", "nn.functional.conv2d"} <= set(ops) or \
        {"add", "mul", "matmul", "relu", "sum", "cat"} <= set(ops)
    composed = [n for n in ops if REGISTRY[n].op is None]
    written = [n for n in ops if REGISTRY[n].op is not None]
    assert composed and written                 # both kinds of op are drilled
    assert all(REGISTRY[n].differentiable for n in ops)


def test_every_op_full_marks_for_its_own_rule_and_less_for_wrong_answers(ops):
    t0 = time.perf_counter()
    weak = {}
    for name in ops:
        earned, possible, parts = practice.score(name, practice.reference_vjp(name), practice.reference_jvp(name))
        assert earned == possible > 0, f"{name}: the registry's own rule scored {parts}"
        lost = {}
        for kind, wrong in _wrongs(name).items():
            e, p, _ = practice.score(name, wrong, practice.reference_jvp(name))
            lost[kind] = e < p
        assert lost["sign_flip"] and lost["doubled"], f"{name}: {lost}"
        if sum(lost.values()) < 3:
            weak[name] = lost
    assert not weak, f"ops where fewer than three wrong answers lose points: {weak}"
    assert time.perf_counter() - t0 < 240


def test_a_drill_holds_no_reference_and_hints_one_at_a_time(capsys):
    nb = practice.drill_notebook("mul")
    text = json.dumps(nb)
    assert "reference_vjp" not in text and "reference_jvp" not in text and "autograd.grad" not in text
    assert "NotImplementedError" in text
    hs = practice.hints("mul")
    practice._hint_state.pop("mul", None)
    assert practice.hint("mul") == hs[0] and practice.hint("mul") == hs[1]
    assert "hint 1/" in capsys.readouterr().out


def test_an_op_the_registry_cannot_check_is_refused():
    with pytest.raises(CourseError, match="not differentiable"):
        practice.drill_notebook("argsort")
    with pytest.raises(CourseError, match="no sample inputs"):
        practice.drill_notebook("nansum")
    with pytest.raises(CourseError, match="not an op of the registry"):
        practice.drill_notebook("no_such_op")


def test_cli_lists_writes_refuses_and_keeps_work(tmp_path, ops):
    from gradlab.cli import main
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["practice", "--list"]) == 0
    out = buf.getvalue()
    assert f"{len(ops)} ops" in out and "\nmatmul" in out
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["practice", "relu", "--out", str(tmp_path)]) == 0
        assert main(["practice", "relu", "--out", str(tmp_path)]) == 2          # the student's file is kept
        assert main(["practice", "argsort", "--out", str(tmp_path)]) == 2
    assert (tmp_path / "relu.ipynb").exists() and not (tmp_path / "argsort.ipynb").exists()


@pytest.mark.slow
def test_gradlab_grade_grades_a_drill(tmp_path):
    pytest.importorskip("nbval")
    import nbformat

    from gradlab.cli import main
    drill = practice.write_drill("mul", str(tmp_path / "stub"))
    done = tmp_path / "done" / "mul.ipynb"
    done.parent.mkdir()
    nbformat.write(practice.reference_notebook("mul"), done)     # what a correct answer computes
    out = tmp_path / "g.json"
    with contextlib.redirect_stdout(io.StringIO()):
        main(["grade", drill, str(done), "--json", str(out), "-n", "2"])
    doc = {n["notebook"].split("/")[-2]: n for n in json.loads(out.read_text())["notebooks"]}
    assert doc["done"]["earned"] == doc["done"]["possible"] > 0
    assert doc["stub"]["earned"] == 0


@pytest.mark.parametrize("spoil", ["nan", "wrong_shape"])
def test_a_nan_or_misshapen_gradient_fails_the_finite_difference_part(spoil):
    """The finite-difference part compares with ``<``: a nan error must count as wrong, never as 0.0
    (``max(0.0, nan)`` is ``0.0``), and a gradient of another shape is wrong whatever its values."""
    ref = practice.reference_vjp("mul")

    def spoiled(grad, *xs, **kw):
        gs = [g.detach().numpy().copy() for g in ref(grad, *xs, **kw)]
        gs[0] = gs[0].ravel()[:, None] if spoil == "wrong_shape" else np.where(gs[0] == gs[0].flat[0], np.nan, gs[0])
        return tuple(gradlab.tensor(g) for g in gs)

    for case in practice.small_cases("mul"):
        assert practice.gradcheck_record("mul", ref, case) < 1e-4      # the rule itself passes
        assert not practice.gradcheck_record("mul", spoiled, case) < 1e-4
    earned, possible, parts = practice.score("mul", spoiled, practice.reference_jvp("mul"))
    assert parts["gradcheck"] is False and earned < possible
