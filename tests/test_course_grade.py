"""Proof that `gradlab grade` has teeth, with real nbval runs.

Three `gradlab grade` invocations (each one pytest+nbval process, notebooks spread over two xdist workers)
cover everything: every solution scores full marks (with hidden tests); every generated exercise scores
zero on every part; each deliberately wrong but plausible implementation in tests/fixtures/submissions
loses points on the part it gets wrong; and the grader survives an exception, an infinite loop, a crashed
kernel, megabytes of output, edited/deleted test cells and a bad file in the same batch.
"""
from __future__ import annotations

import contextlib
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("nbval", reason="gradlab grade needs nbval (pip install 'gradlab[dev]')")
pytest.importorskip("ipykernel", reason="gradlab grade needs ipykernel (pip install 'gradlab[dev]')")
pytest.importorskip("xdist", reason="gradlab grade -n needs pytest-xdist (pip install 'gradlab[dev]')")

from gradlab.cli import main  # noqa: E402

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "submissions"
SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))
EXERCISES = sorted((ROOT / "exercises").glob("*.ipynb"))
# seconds per cell: the slowest legitimate cell takes about a second on an idle machine; generous so that a
# loaded CI machine never times out a correct cell, short where a submission loops forever on purpose
TIMEOUT, LOOP_TIMEOUT = "60", "30"

# fixture -> the parts its bug must cost (every other part of it must still pass)
WRONG = {
    "wrong_unbroadcast_not_reduced": {"size_one_axes", "model_shapes"},
    "wrong_matmul_missing_transpose": {"vjp_shapes", "vjp_values", "batched"},
    "wrong_softmax_no_max_subtraction": {"softmax_stable"},
    "wrong_layer_norm_constant_stats": {"backward_dx"},
    "wrong_layer_norm_eps_outside_sqrt": {"forward", "backward_dx"},
    "wrong_col2im_overwrites": {"conv_backward_dx"},
    "wrong_topo_sort_preorder": {"topo_order", "backward_values"},
    "wrong_gradcheck_forward_difference": {"jacobian_accuracy"},
    "wrong_adamw_coupled_decay": {"adamw_decoupled_decay"},
    "wrong_attention_mask_after_softmax": {"matches_loop", "causal", "large_scores_and_grad"},
    "wrong_einsum_vjp_no_broadcast": {"reductions_and_transposes"},
}


def _grade(tmp, name, paths, *flags, timeout=TIMEOUT):
    out_json, out_xml = tmp / f"{name}.json", tmp / f"{name}.xml"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["grade", *map(str, paths), "--solutions", str(ROOT / "solutions"), "--timeout", timeout,
                   "-n", "2", "--json", str(out_json), "--junit", str(out_xml), *flags])
    doc = json.loads(out_json.read_text())
    by_name = {Path(n["notebook"]).name: n for n in doc["notebooks"]}
    return {"rc": rc, "table": buf.getvalue(), "doc": doc, "nb": by_name, "junit": out_xml}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grade")
    bad = tmp / "not_a_notebook.ipynb"
    bad.write_text("{ this is not json")
    return {
        "solutions": _grade(tmp, "solutions", SOLUTIONS, "--hidden"),
        "students": _grade(tmp, "students", [*EXERCISES, *sorted(FIXTURES.glob("*.ipynb")), bad],
                           timeout=LOOP_TIMEOUT),
        "hidden": _grade(tmp, "hidden", [FIXTURES / "wrong_softmax_no_max_subtraction.ipynb"], "--hidden",
                         "--keep", str(tmp / "kept")),
        "kept": tmp / "kept",
    }


def _parts(nb):
    return {p["grade_id"]: p for p in nb["parts"]}


def test_every_solution_scores_full_marks_with_hidden_tests(runs):
    r = runs["solutions"]
    assert r["rc"] == 0, r["table"]
    assert set(r["nb"]) == {p.name for p in SOLUTIONS}
    for name, nb in r["nb"].items():
        failed = {g: p["message"] for g, p in _parts(nb).items() if p["status"] != "ok"}
        assert not failed and nb["earned"] == nb["possible"] > 0, f"{name}: {failed}"
    assert f"TOTAL {len(SOLUTIONS)} notebooks graded: " in r["table"]


def test_junit_report_has_one_testcase_per_part(runs):
    root = ET.parse(runs["solutions"]["junit"]).getroot()
    suites = root.findall("testsuite")
    assert len(suites) == len(SOLUTIONS)
    n_parts = sum(len(nb["parts"]) for nb in runs["solutions"]["doc"]["notebooks"])
    assert len(root.findall("testsuite/testcase")) == n_parts
    assert not root.findall(".//failure")
    students = ET.parse(runs["students"]["junit"]).getroot()
    assert students.findall(".//failure") and students.findall(".//error")


def test_every_generated_exercise_scores_zero_on_every_part(runs):
    r = runs["students"]
    for path in EXERCISES:
        nb = r["nb"][path.name]
        assert nb["possible"] > 0 and nb["earned"] == 0, f"{path.name} earned {nb['earned']} as generated"
        for gid, p in _parts(nb).items():
            assert p["status"] != "ok" and p["earned"] == 0, f"{path.name}: part {gid} passes with no code written"
            assert "NotImplementedError" in p["message"], f"{path.name}/{gid}: {p['message']}"


@pytest.mark.parametrize("fixture", sorted(WRONG))
def test_wrong_implementation_loses_points(runs, fixture):
    nb = runs["students"]["nb"][f"{fixture}.ipynb"]
    parts = _parts(nb)
    failed = {g for g, p in parts.items() if p["status"] != "ok"}
    assert failed == WRONG[fixture], f"{fixture}: failed {sorted(failed)}, expected {sorted(WRONG[fixture])}"
    assert nb["earned"] < nb["possible"]
    for g in failed:
        assert parts[g]["earned"] == 0 and parts[g]["message"], f"{fixture}/{g} has no reason"


def test_hidden_tests_only_run_with_hidden(runs):
    name = "wrong_softmax_no_max_subtraction.ipynb"
    plain, hidden = _parts(runs["students"]["nb"][name]), _parts(runs["hidden"]["nb"][name])
    assert plain["softmax_vjp_values"]["status"] == "ok"
    assert hidden["softmax_vjp_values"]["status"] != "ok", "the hidden test catches the overflowing softmax"
    assert runs["hidden"]["nb"][name]["earned"] < runs["students"]["nb"][name]["earned"]
    assert runs["hidden"]["rc"] == 1


def test_keep_shows_exactly_what_ran(runs):
    kept = runs["kept"]
    index = json.loads((kept / "index.json").read_text())
    assert list(index.values()) == [str(FIXTURES / "wrong_softmax_no_max_subtraction.ipynb")]
    ran = (kept / next(iter(index)) / "submission.ipynb").read_text()
    assert "np.array([[1000.0, 0.0]])" in ran, "the hidden test was part of the notebook nbval ran"
    assert (kept / "pytest.log").read_text().strip()


def test_survives_an_exception_in_student_code(runs):
    parts = _parts(runs["students"]["nb"]["survive_exception.ipynb"])
    assert parts["scalar_and_noop"]["message"] == "ValueError: scalars are not supported yet"
    assert all(p["status"] == "ok" for g, p in parts.items() if g != "scalar_and_noop")


def test_survives_an_infinite_loop(runs):
    parts = _parts(runs["students"]["nb"]["survive_infinite_loop.ipynb"])
    assert parts["leading_axes"]["status"] == "timeout"
    assert f"timed out after {LOOP_TIMEOUT} s" in parts["leading_axes"]["message"]
    assert all(p["status"] == "ok" for g, p in parts.items() if g != "leading_axes"), "later cells still graded"


def test_survives_a_crashed_kernel(runs):
    nb = runs["students"]["nb"]["survive_kernel_crash.ipynb"]
    parts = _parts(nb)
    assert parts["leading_axes"]["status"] == parts["size_one_axes"]["status"] == "ok"
    assert parts["model_shapes"]["status"] == "not-run" and "kernel died" in parts["model_shapes"]["message"]
    assert any("the kernel died" in n and "after 'size_one_axes'" in n for n in nb["notes"])
    # the other notebooks of the same batch (same xdist workers) were unaffected
    assert runs["students"]["nb"]["survive_huge_output.ipynb"]["earned"] == 8


def test_survives_megabytes_of_output(runs):
    nb = runs["students"]["nb"]["survive_huge_output.ipynb"]
    assert nb["earned"] == nb["possible"]
    assert len(runs["students"]["table"]) < 50_000, "printed output must not end up in the report"


def test_edited_and_deleted_test_cells_are_reinserted(runs):
    nb = runs["students"]["nb"]["survive_edited_tests.ipynb"]
    assert nb["earned"] == 0 and len(nb["parts"]) == 4, "`assert True` must not earn the points"
    notes = " | ".join(nb["notes"])
    assert "'leading_axes' was edited" in notes and "'model_shapes' was deleted" in notes


def test_bad_file_in_a_batch_is_reported_and_the_rest_graded(runs):
    r = runs["students"]
    assert r["rc"] == 2, "bad input makes the exit code 2"
    assert "not_a_notebook.ipynb: NOT GRADED" in r["table"] and "malformed JSON" in r["table"]
    assert "Traceback" not in r["table"]
    assert len(r["nb"]) == len(EXERCISES) + len(list(FIXTURES.glob("*.ipynb"))) + 1
