"""The grader's integrity boundary, tried as a student who wants marks without the work would try.

One small exercise (a stable softmax, graded only through ``check``) is written
here; every submission below is its unanswered stub plus one exploit. Each must
score zero and, where the exploit leaves a trace, be named in the report's
``tamper`` notes; the correct solution (and correct alternatives) keep full
marks; a batch with hostile submissions leaves everyone else's score unchanged.
The batch runs through the real ``gradlab grade`` (nbval, sandboxed kernels).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import textwrap
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbval", reason="gradlab grade needs nbval (pip install 'gradlab[dev]')")
pytest.importorskip("ipykernel", reason="gradlab grade needs ipykernel (pip install 'gradlab[dev]')")

from gradlab.cli import main  # noqa: E402
from gradlab.course import sandbox  # noqa: E402
from gradlab.course.assemble import static_tamper  # noqa: E402
from gradlab.course.notebook import CourseError  # noqa: E402
from gradlab.course.references import check_references, without_references  # noqa: E402

pytestmark = pytest.mark.slow

WHY = sandbox.available()
if WHY and os.environ.get("CI"):
    pytest.fail(f"CI must be able to sandbox grading kernels: {WHY}", pytrace=False)
needs_sandbox = pytest.mark.skipif(bool(WHY), reason=f"grading sandbox unavailable here: {WHY}")


def _meta(gid, **kw):
    m = {"grade": False, "grade_id": gid, "locked": False, "schema_version": 3, "solution": False, "task": False}
    m.update(kw)
    return {"nbgrader": m}


SETUP = '''\
import numpy as np
import gradlab
from gradlab.course import check, check_raises
'''
REFERENCE = '''\
def _reference_softmax(x, dim=-1):
    """gradlab's own softmax: the students' feedback, never in their graded kernel."""
    return gradlab.tensor(x, dtype=gradlab.float64).softmax(dim).numpy()
'''
SOLUTION = '''\
def softmax(x, dim=-1):
    """Softmax of the NumPy array x along dim, stable for large logits."""
    ### BEGIN SOLUTION
    z = x - x.max(axis=dim, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=dim, keepdims=True)
    ### END SOLUTION
'''
TEST_VALUES = '''\
rng = np.random.default_rng(1)
for shape, dim in [((4,), -1), ((3, 5), -1), ((3, 5), 0), ((2, 1, 6), 2), ((1, 7), 1)]:
    x = rng.standard_normal(shape)
    check(f"softmax {shape} dim={dim}", softmax(x, dim), expected=_reference_softmax(x, dim))
'''
TEST_STABLE = '''\
rng = np.random.default_rng(2)
x = rng.standard_normal((3, 6)) * 4 + np.array([[0.0], [800.0], [-900.0]])
check("softmax of rows far apart", softmax(x), expected=_reference_softmax(x))
### BEGIN HIDDEN TESTS
check("softmax on a strided view", softmax(x[:, ::-2]), expected=_reference_softmax(x[:, ::-2]))
### END HIDDEN TESTS
'''


def _solution_nb():
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                   "gradlab": {"exercise": "trust_softmax"}}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Softmax"),
        nbformat.v4.new_code_cell(SETUP, metadata=_meta("setup", locked=True)),
        nbformat.v4.new_code_cell(REFERENCE, metadata=_meta("reference", locked=True)),
        nbformat.v4.new_code_cell(SOLUTION, metadata=_meta("softmax", solution=True)),
        nbformat.v4.new_code_cell(TEST_VALUES, metadata=_meta("values", grade=True, locked=True, points=3)),
        nbformat.v4.new_code_cell(TEST_STABLE, metadata=_meta("stable", grade=True, locked=True, points=2)),
    ]
    return nb


STUB = '''\
def softmax(x, dim=-1):
    """Softmax of the NumPy array x along dim, stable for large logits."""
    # YOUR CODE HERE
    raise NotImplementedError()
'''
ZEROS = '''\
def softmax(x, dim=-1):
    return np.zeros_like(x)
'''

# name -> (solution-cell source, extra cell placed before the tests or None, expected tamper substring or None)
EXPLOITS = {
    "forge_results": (ZEROS, '''\
import glob, json, os
from IPython.display import display
fake = {"kind": "test", "status": "ok", "message": "", "records": []}
hits = 0
for root in ("/tmp", os.environ.get("TMPDIR", "/tmp"), "/var/tmp"):
    for path in glob.glob(os.path.join(root, "**", "results.jsonl"), recursive=True):
        hits += 1
        for gid in ("values", "stable"):
            with open(path, "a") as f:
                f.write(json.dumps(dict(fake, grade_id=gid, file="nb000/submission.ipynb")) + "\\n")
# and records of its own, made up, displayed as the checks would
display({"application/vnd.gradlab.check+json": {"name": "softmax (4,) dim=-1", "value": {"t": "none"},
         "spec": {"rtol": 1e9, "atol": 1e9, "exact": False}}}, raw=True)
''', None),
    "sabotage_batch": (ZEROS, '''\
import glob, json, os, signal
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != os.getpid():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
for path in glob.glob("/tmp/**/results.jsonl", recursive=True):
    with open(path, "a") as f:
        for i in range(10):
            f.write(json.dumps({"kind": "test", "grade_id": "values", "status": "error",
                                "message": "sabotaged", "file": f"nb{i:03d}/submission.ipynb"}) + "\\n")
''', None),
    "read_solutions": ('''\
import glob, json, os
SRC = None
for pattern in ("{solutions}/*.ipynb", "{solutions}/../*/*.ipynb", "/tmp/**/*.ipynb", "/root/*.ipynb"):
    for path in glob.glob(pattern, recursive=True):
        try:
            nb = json.load(open(path))
        except Exception:
            continue
        for cell in nb.get("cells", []):
            src = "".join(cell.get("source", ""))
            if "BEGIN SOLUTION" in src and "def softmax" in src:
                SRC = src
exec(SRC if SRC else "def softmax(x, dim=-1):\\n    return np.zeros_like(x)")
''', None, None),
    "patch_numpy": (ZEROS, '''\
np.allclose = lambda *a, **k: True
np.isclose = lambda a, b, *r, **k: np.ones(np.broadcast(a, b).shape, bool)
np.array_equal = lambda *a, **k: True
''', "numpy.allclose was replaced"),
    "patch_builtins": (ZEROS, '''\
import builtins
builtins.all = lambda *a, **k: True
builtins.any = lambda *a, **k: True
''', "builtins.all was replaced"),
    "ast_transformer": (ZEROS, '''\
import ast
class NoAsserts(ast.NodeTransformer):
    def visit_Assert(self, node):
        return ast.Pass()
    def visit_Raise(self, node):
        return ast.Pass()
get_ipython().ast_transformers.append(NoAsserts())
''', "AST transformer"),
    "custom_exc": (STUB, '''\
def _swallow(shell, etype, evalue, tb, tb_offset=None):
    return None
get_ipython().set_custom_exc((Exception,), _swallow)
''', "custom exception handler"),
    "patch_check": (ZEROS, '''\
import gradlab.course.checks as C
_real = C.check
def check(name, value, expected=None, **kw):   # record what the reference says, not my own value
    return _real(name, value if expected is None else expected, **kw)
C.check = check
import gradlab.course
gradlab.course.check = check
''', "gradlab.course.checks.check was replaced"),
    "call_reference": ('''\
def softmax(x, dim=-1):
    return _reference_softmax(x, dim)
''', None, "uses the instructor's helper '_reference_softmax'"),
    "patch_gradlab": (ZEROS, '''\
import gradlab
gradlab.Tensor.softmax = lambda self, dim=-1: gradlab.zeros(self.shape)
gradlab.tensor = lambda *a, **k: gradlab.zeros(3)
''', "gradlab.Tensor.softmax was replaced"),
    "write_outside": (ZEROS, '''\
import os
for path in ("{solutions}/planted.txt", os.path.expanduser("~root/planted.txt"), "/etc/planted.txt"):
    try:
        with open(path, "w") as f:
            f.write("x")
    except OSError:
        pass
''', "tried to write outside its folder"),
    "trace_hook": (ZEROS, '''\
import sys
def _tracer(frame, event, arg):
    return None
sys.settrace(_tracer)
''', "tracing function"),
}

ALTERNATIVES = {
    "alt_loops": '''\
def softmax(x, dim=-1):
    x = np.moveaxis(np.asarray(x, dtype=float), dim, -1)
    out = np.empty_like(x)
    for idx in np.ndindex(*x.shape[:-1]):
        row = x[idx]
        m = max(row)
        e = [np.exp(v - m) for v in row]
        s = sum(e)
        out[idx] = [v / s for v in e]
    return np.moveaxis(out, -1, dim)
''',
    "alt_logsumexp": '''\
def softmax(x, dim=-1):
    m = np.max(x, axis=dim, keepdims=True)
    lse = m + np.log(np.sum(np.exp(x - m), axis=dim, keepdims=True))
    return np.exp(x - lse).astype(np.float32)   # float32 is within the tolerance
''',
}


def _student(sol, solution_src, extra=None, tweak=None):
    """The generated exercise with the solution cell replaced (and an extra cell before the tests)."""
    from gradlab.course import student_notebook
    nb = student_notebook(sol, "trust_softmax.ipynb")
    for i, cell in enumerate(nb.cells):
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "softmax":
            cell.source = solution_src
            if extra:
                nb.cells.insert(i + 1, nbformat.v4.new_code_cell(extra))
            break
    if tweak:
        tweak(nb)
    return nb


def _run(tmp, paths, *flags, sol_dir):
    out = tmp / f"out{len(list(tmp.glob('out*.json')))}.json"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["grade", *map(str, paths), "--solutions", str(sol_dir), "--timeout", "60", "-n", "2",
                   "--json", str(out), "--sandbox", "on", *flags])
    doc = json.loads(out.read_text())
    return rc, {Path(n["notebook"]).stem: n for n in doc["notebooks"]}, buf.getvalue()


def _json_edits(nb):
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade_id") == "values":
            meta["points"] = 100
        if meta.get("grade_id") == "stable":
            meta["grade"] = False
    nb.metadata["kernelspec"] = {"name": "my-own-kernel", "display_name": "mine", "language": "python"}
    dup = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "values"][0]
    nb.cells.append(nbformat.from_dict(json.loads(json.dumps(dup))))


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("trust")
    sol_dir, sub_dir = tmp / "solutions", tmp / "submissions"
    sol_dir.mkdir()
    sub_dir.mkdir()
    sol = _solution_nb()
    nbformat.write(sol, sol_dir / "trust_softmax.ipynb")
    subs = {"correct": _student(sol, SOLUTION), "correct_too": _student(sol, SOLUTION),
            "stub": _student(sol, STUB), "json_edits": _student(sol, ZEROS, tweak=_json_edits)}
    for name, src in ALTERNATIVES.items():
        subs[name] = _student(sol, src)
    for name, (src, extra, _) in EXPLOITS.items():
        fmt = lambda s: s.replace("{solutions}", str(sol_dir)) if s else s  # noqa: E731
        subs[name] = _student(sol, fmt(src), fmt(extra))
    paths = []
    for name, nb in subs.items():
        nb.metadata.setdefault("gradlab", {})["exercise"] = "trust_softmax"
        p = sub_dir / f"{name}.ipynb"
        nbformat.write(nb, p)
        paths.append(p)
    rc, res, table = _run(tmp, paths, "--hidden", sol_dir=sol_dir)
    (tmp / "table.txt").write_text(table)
    return {"rc": rc, "res": res, "table": table, "sol_dir": sol_dir, "tmp": tmp}


@needs_sandbox
def test_correct_solutions_and_alternatives_get_full_marks(batch):
    for name in ("correct", "correct_too", *ALTERNATIVES):
        nb = batch["res"][name]
        assert nb["earned"] == nb["possible"] == 5, (name, nb["parts"])
        assert not nb["tamper"], (name, nb["tamper"])


@needs_sandbox
def test_a_batch_with_hostile_submissions_changes_no_one_elses_score(batch):
    # graded alone, a correct submission gets every part with status ok and no message: so it must here
    for name in ("correct", "correct_too"):
        parts = batch["res"][name]["parts"]
        assert [(p["grade_id"], p["earned"], p["status"], p["message"]) for p in parts] == [
            ("values", 3, "ok", ""), ("stable", 2, "ok", "")], parts


@needs_sandbox
def test_the_unanswered_stub_scores_zero(batch):
    assert batch["res"]["stub"]["earned"] == 0


@needs_sandbox
@pytest.mark.parametrize("name", sorted(EXPLOITS))
def test_exploit_scores_zero_and_is_reported(batch, name):
    nb = batch["res"][name]
    assert nb["earned"] == 0, (name, nb["parts"], nb["tamper"])
    trace = EXPLOITS[name][2]
    if trace:
        assert any(trace in t for t in nb["tamper"]), (name, nb["tamper"])
        assert "tamper:" in batch["table"]


@needs_sandbox
def test_json_edits_are_noted_and_ignored(batch):
    nb = batch["res"]["json_edits"]
    assert nb["possible"] == 5 and nb["earned"] == 0
    text = "\n".join(nb["tamper"])
    for what in ("points were changed", "'grade' was changed", "kernelspec was changed", "appears 2 times"):
        assert what in text, (what, nb["tamper"])


@needs_sandbox
def test_solutions_folder_and_submissions_are_not_on_disk_for_the_kernel(batch):
    # the write attempts never reached the instructor's folder, and the read attempt found nothing
    assert not (batch["sol_dir"] / "planted.txt").exists()
    assert batch["res"]["read_solutions"]["earned"] == 0


def test_static_tamper_reads_the_file_not_the_kernel():
    sol = _solution_nb()
    sub = _student(sol, ZEROS + "\nnp.allclose = lambda *a, **k: True\n", tweak=_json_edits)
    found = "\n".join(static_tamper(sub, sol))
    assert "assigns to np.allclose" in found
    assert "points were changed" in found and "kernelspec was changed" in found


def test_references_and_expected_never_reach_the_students_kernel():
    tainted = {"_reference_softmax"}
    src = without_references(REFERENCE + TEST_VALUES, tainted, "cell")
    assert "_reference_softmax" not in src and "expected" not in src
    assert "check(f'softmax {shape} dim={dim}', softmax(x, dim))" in src
    # an input computed from a reference would fail for every student: the instructor is told at build time
    bad = _solution_nb()
    bad.cells[4].source = "x = _reference_softmax(np.ones(3))\ncheck('a', softmax(x), expected=x)\n"
    with pytest.raises(CourseError, match="reference helper"):
        check_references(bad, "bad.ipynb")


def test_sandbox_self_test_reports_a_reason_or_nothing():
    assert isinstance(WHY, str)
    if not WHY:
        assert sandbox.available() == ""


def test_sandbox_off_is_noted_on_every_report(tmp_path):
    sol_dir = tmp_path / "solutions"
    sol_dir.mkdir()
    sol = _solution_nb()
    nbformat.write(sol, sol_dir / "trust_softmax.ipynb")
    sub = tmp_path / "s.ipynb"
    nbformat.write(_student(sol, SOLUTION), sub)
    out = tmp_path / "o.json"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = main(["grade", str(sub), "--solutions", str(sol_dir), "--sandbox", "off", "--json", str(out)])
    doc = json.loads(out.read_text())["notebooks"][0]
    assert rc == 0 and doc["earned"] == 5
    assert any("not isolated" in n for n in doc["notes"])


def test_textwrap_sources_parse():
    for src, extra, _ in EXPLOITS.values():
        compile(textwrap.dedent(src), "<s>", "exec")
        if extra:
            compile(textwrap.dedent(extra), "<e>", "exec")


@needs_sandbox
def test_sandboxed_kernels_leave_no_folders_behind(tmp_path, monkeypatch):
    """Each kernel's working folder is made under one folder per batch, which the grader removes."""
    import tempfile

    import nbformat

    from gradlab.course.runner import run_notebooks
    tmp_root = tmp_path / "systmp"
    tmp_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_root))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import os\nprint(os.getcwd())")])
    records, problem = run_notebooks([("one", nb)], timeout=60, sandbox=True)
    assert problem is None, problem
    assert [r["status"] for r in records["one"]] == ["ok"], records
    sandbox.available()
    assert sorted(os.listdir(tmp_root)) == [], "grading left folders in the system temp folder"
