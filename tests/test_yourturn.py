"""The your-turn checks (gradlab/course/yourturn.py): right, wrong with a hint, and "your turn" when unanswered.

What a student sees matters as much as the verdict: an unanswered cell gives a notice (never an
exception), a wrong prediction does not give the answer away, a broken function is reported by case,
exception and line, never as a traceback.
"""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
from gradlab.course import yourturn
from gradlab.course.yourturn import change_it, predict, write_it


@pytest.fixture(autouse=True)
def _fresh_hints():
    yourturn._tries.clear()
    yield
    yourturn._tries.clear()


def test_predict_unanswered_is_a_notice_not_an_error():
    fb = predict("shape of x @ w", ..., lambda: (2, 5))
    assert fb.status == "your turn" and fb.ok is None and not fb
    assert "Replace ..." in repr(fb) and "gradlab-your-turn" in fb._repr_html_()


def test_predict_expected_is_only_called_when_answered():
    calls = []
    predict("q", ..., lambda: calls.append(1))
    assert calls == []


def test_predict_shape_from_live_objects():
    x, w = gradlab.randn(2, 3), gradlab.randn(3, 5)
    assert predict("shape", (2, 5), lambda: (x @ w).shape).ok is True
    assert predict("shape", [2, 5], lambda: (x @ w).shape).ok is True
    assert predict("shape", (5, 2), lambda: (x @ w).shape).ok is False


def test_predict_wrong_answer_hides_the_answer_and_walks_the_hints():
    hints = ["first hint", "second hint"]
    seen = [predict("loss at init", 1.0, lambda: float(np.log(10)), hints=hints) for _ in range(3)]
    assert [fb.hint for fb in seen] == ["first hint", "second hint", "second hint"]
    for fb in seen:
        assert fb.status == "wrong" and "2.30" not in repr(fb) and "2.3" not in fb.message
    assert predict("loss at init", 2.3, lambda: float(np.log(10)), hints=hints).ok is True
    assert predict("loss at init", 0.5, lambda: float(np.log(10)), hints=hints).hint == "first hint"  # reset when right


def test_predict_strings_and_lists_of_names_ignore_case_and_spaces():
    assert predict("first node", " MulBackward0 ", lambda: "mulbackward0").ok
    assert predict("order", ["a", "B"], lambda: ["A", "b"]).ok
    assert not predict("order", ["b", "a"], lambda: ["a", "b"]).ok
    assert predict("none of these", None, lambda: None).ok
    assert not predict("a number", "three", lambda: 3).ok   # a mismatched kind is wrong, not an error


def _np_sum_to(g, shape):
    lead = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(lead)))
    return g.sum(axis=tuple(i for i, s in enumerate(shape) if s == 1), keepdims=True)


def _cases(rng):
    return [(rng.standard_normal((4, 3)), (3,)), (rng.standard_normal((2, 4, 3)), (4, 1)),
            (rng.standard_normal((5,)), (5,))]


def test_write_it_right_wrong_and_unwritten():
    def todo(g, shape):
        raise NotImplementedError

    def wrong(g, shape):        # forgets the size-1 axes
        return g.sum(axis=tuple(range(g.ndim - len(shape))))

    assert write_it(_np_sum_to, _np_sum_to, _cases).ok is True
    fb = write_it(todo, _np_sum_to, _cases)
    assert fb.status == "your turn" and "todo" in fb.message
    fb = write_it(wrong, _np_sum_to, _cases, hints=["sum the axes where the target has size 1, keepdims"])
    assert fb.status == "wrong" and fb.message.startswith("Case 2 of 3")
    assert "expected shape (4, 1), got shape (4, 3)" in fb.message     # the exercises' own comparison message
    assert fb.hint.startswith("sum the axes")


def test_write_it_reports_an_exception_by_line_without_a_traceback():
    def broken(g, shape):
        total = g.sum()
        return total[0]          # IndexError on a 0-d array

    fb = write_it(broken, _np_sum_to, _cases)
    assert fb.status == "wrong" and "IndexError" in fb.message and "Case 1 of 3" in fb.message
    assert any("return total[0]" in d for d in fb.details)
    assert "Traceback" not in repr(fb)


def test_write_it_gives_each_call_fresh_arguments():
    def in_place_reference(a):
        a += 1
        return a.copy()

    def student(a):
        return a + 1

    cases = [(np.zeros(3),)]
    assert write_it(student, in_place_reference, cases).ok is True
    assert np.array_equal(cases[0][0], np.zeros(3))


def test_write_it_compares_tensors_and_tuples():
    def ref(x):
        return x * 2, x.sum()

    def mine(x):
        return x + x, x.sum()

    cases = lambda rng: [(gradlab.tensor(rng.standard_normal((2, 3))),)]   # noqa: E731
    assert write_it(mine, ref, cases).ok is True


def test_change_it_asks_for_a_change_then_an_answer_then_checks_against_the_run():
    choices = {"a": "the loss went up", "b": "the loss went down"}
    fb = change_it("lr", 0.1, 0.1, "what happened?", choices, ..., lambda: "a")
    assert fb.status == "your turn" and "still 0.1" in fb.message and "(a) the loss went up" in repr(fb)
    fb = change_it("lr", 1.0, 0.1, "what happened?", choices, ..., lambda: "a")
    assert fb.status == "your turn" and "lr = 1.0" in fb.message
    assert change_it("lr", 1.0, 0.1, "what happened?", choices, "A", lambda: "a").ok is True
    fb = change_it("lr", 1.0, 0.1, "what happened?", choices, "b", lambda: "a", hints=["look at the last loss"])
    assert fb.status == "wrong" and fb.hint == "look at the last loss"
    assert change_it("lr", 1.0, 0.1, "what happened?", choices, "z", lambda: "a").status == "wrong"


def test_write_it_report_compares_properties_not_the_list():
    from gradlab.course.lessons import order_report, topological_order

    def graphs(rng):
        a = gradlab.tensor(rng.standard_normal(2), requires_grad=True)
        b = gradlab.tensor(rng.standard_normal(2), requires_grad=True)
        return [((a * b).sum(),)]

    def other_valid_order(root):          # the two leaves in the other order: just as valid
        order = topological_order(root)
        return order[:2] + order[2:][::-1]

    def reversed_order(root):
        return topological_order(root)[::-1]

    assert other_valid_order(graphs(np.random.default_rng(0))[0][0]) != topological_order(graphs(np.random.default_rng(0))[0][0])
    assert write_it(other_valid_order, topological_order, graphs, report=order_report).ok is True
    fb = write_it(reversed_order, topological_order, graphs, report=order_report)
    assert fb.status == "wrong" and "each node before the nodes it feeds on" in fb.message
    fb = write_it(lambda root: 42, topological_order, graphs, report=order_report)
    assert fb.status == "wrong" and "cannot read" in fb.message       # a nonsense result: said, not raised


def test_written_or_falls_back_only_while_unwritten():
    def todo(x):
        raise NotImplementedError

    def buggy(x):
        raise ValueError("mine")

    assert yourturn.written_or(todo, lambda x: x + 1)(1) == 2
    assert yourturn.written_or(lambda x: x * 10, lambda x: x + 1)(1) == 10
    with pytest.raises(ValueError, match="mine"):
        yourturn.written_or(buggy, lambda x: x + 1)(1)


def test_selftest_mode_runs_the_answer_side_of_unanswered_cells(monkeypatch):
    monkeypatch.setenv("GRADLAB_YOURTURN_SELFTEST", "1")
    assert predict("q", ..., lambda: (2, 3)).status == "your turn"
    with pytest.raises(NameError):
        predict("q", ..., lambda: undefined_name)  # noqa: F821  (a broken expected answer is caught)
    with pytest.raises(AssertionError, match="not one of"):
        change_it("k", 1, 1, "q", {"a": "x"}, ..., lambda: "z")

    def todo(g, shape):
        raise NotImplementedError

    assert write_it(todo, _np_sum_to, _cases).status == "your turn"
    def broken_reference(g, shape):
        raise ValueError("the instructor's bug")

    with pytest.raises(ValueError, match="instructor's bug"):   # the instructor's bug shows in full
        write_it(todo, broken_reference, _cases)
    with pytest.raises(AssertionError, match="reference fails"):  # an answer that differs run to run
        write_it(todo, lambda g, shape: np.random.default_rng().standard_normal(3), _cases)
