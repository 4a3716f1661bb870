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
import threading
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

# a prefix for exploits that go looking for the instructor's code: exec the first solution cell found
STEAL = '''\
import json as _json
def _steal(texts):
    for text in texts:
        try:
            nb = _json.loads(text)
        except Exception:
            continue
        for cell in nb.get("cells", []):
            src = "".join(cell.get("source", ""))
            if "BEGIN SOLUTION" in src and "def softmax" in src:
                exec(src, globals())
                return True
    return False
'''
OR_ZEROS = '''\
if not _steal(texts):
    def softmax(x, dim=-1):
        return np.zeros_like(x)
'''

# the sandbox itself: each must fail (score 0) and leave the trace named
EXPLOITS.update({
    "unmount_hiding": (STEAL + '''\
import ctypes, glob, subprocess
libc = ctypes.CDLL(None, use_errno=True)
for target in ("{solutions}", "{course}", "/", "/proc", "/usr"):
    libc.umount2(target.encode(), 2)
    subprocess.run(["umount", "-l", target], capture_output=True)
texts = [open(p).read() for p in glob.glob("{solutions}/*.ipynb")]
''' + OR_ZEROS, None, "umount2"),
    "remount_rw": ('''\
import ctypes, os, subprocess
subprocess.run(["mount", "-o", "remount,rw", "/"], capture_output=True)
ctypes.CDLL(None, use_errno=True).mount(None, b"/", None, 32, None)   # MS_REMOUNT, read-write
for path in ("{solutions}/planted.txt", "{course}/planted.txt", "/etc/planted.txt", "/usr/planted.txt"):
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"x")
        os.close(fd)
    except OSError:
        pass
def softmax(x, dim=-1):
    return np.zeros_like(x)
''', None, "os.open"),
    "git_show": (STEAL + '''\
import glob, subprocess
texts = []
for repo in ("{course}", "{gradlab}"):
    for path in ("solutions/trust_softmax.ipynb", "solutions/03_softmax.ipynb"):
        p = subprocess.run(["git", "-C", repo, "show", "HEAD:" + path], capture_output=True, text=True)
        texts.append(p.stdout)
for path in glob.glob("{gradlab}/solutions/*.ipynb") + glob.glob("{course}/solutions/*.ipynb"):
    texts.append(open(path).read())
''' + OR_ZEROS, None, "ran a program: git"),
    "run_reference": (STEAL + '''\
import glob
texts = []
for pattern in ("/tmp/gradlab-grade-*/nb*/submission.ipynb", "/tmp/**/submission.ipynb", "/tmp/**/*.ipynb"):
    for path in glob.glob(pattern, recursive=True):
        texts.append(open(path).read())
''' + OR_ZEROS, None, "gradlab-grade"),
    "forge_results_os_open": (ZEROS, '''\
import glob, json, os
line = json.dumps({"kind": "test", "grade_id": "values", "status": "ok", "records": [],
                   "file": "nb001/submission.ipynb"}) + "\\n"
for path in glob.glob("/tmp/**/results.jsonl", recursive=True) + ["/tmp/gradlab-grade-x/results.jsonl",
                                                                  "{course}/results.jsonl"]:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.write(fd, line.encode())
        os.close(fd)
    except OSError:
        pass
''', "os.open"),
    "results_dir": (ZEROS, '''\
import glob, os, shutil
for path in glob.glob("/tmp/**/results.jsonl", recursive=True):
    os.remove(path)
    os.mkdir(path)
for folder in glob.glob("/tmp/gradlab-*"):
    shutil.rmtree(folder, ignore_errors=True)
''', "results.jsonl"),
    "rewrite_kernel_json": (ZEROS, '''\
import glob, json
from ipykernel import get_connection_file
targets = glob.glob("/tmp/**/kernel*.json", recursive=True) + [get_connection_file()]
targets += glob.glob("/tmp/gradlab-grade-*/jupyter/kernels/*/kernel.json")
for t in targets:
    try:
        with open(t) as f:
            spec = json.load(f)
        spec["argv"] = ["/bin/sh", "-c", "echo pwned > {course}/pwned"]
        with open(t, "w") as f:
            json.dump(spec, f)
    except Exception:
        pass
''', "kernel.json"),
    "connect_other_kernel": (ZEROS, '''\
import glob
from jupyter_client import BlockingKernelClient
found = glob.glob("/tmp/**/kernel*.json", recursive=True) + glob.glob("/root/.local/share/jupyter/runtime/*.json")
for cf in found:   # (its own connection file among them: a kernel that stops itself scores nothing either)
    try:
        kc = BlockingKernelClient(connection_file=cf)
        kc.load_connection_file()
        kc.start_channels()
        kc.execute("import os; os._exit(0)")
        kc.stop_channels()
    except Exception:
        pass
''', "jupyter_client"),
    "subscribe_iopub": (ZEROS, '''\
import glob, json, socket, zmq
from IPython.display import display
addrs = ["ipc://" + p for p in glob.glob("/tmp/gradlab-ch-*/*/*/k-*")]
for port in range(32768, 61000, 7):
    s = socket.socket()
    s.settimeout(0.005)
    if s.connect_ex(("127.0.0.1", port)) == 0:
        addrs.append(f"tcp://127.0.0.1:{port}")
    s.close()
sub = zmq.Context.instance().socket(zmq.SUB)
sub.setsockopt(zmq.SUBSCRIBE, b"")
for a in addrs:
    sub.connect(a)
seen = 0
while sub.poll(2000) and seen < 50:
    for part in sub.recv_multipart():
        seen += 1
        if b"vnd.gradlab.check" in part:
            display(json.loads(part)["data"], raw=True)
''', "connected a socket"),
})

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


GRADLAB_ROOT = str(Path(__file__).resolve().parents[1])   # this checkout: its solutions/ and .git are secrets too


def _git_commit(folder):
    import shutil
    import subprocess
    if shutil.which("git") is None:
        return
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c"]):
        subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)


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
    course = tmp / "course"   # a course repository: solutions/ committed, so `git show HEAD:solutions/...` works
    sol_dir, sub_dir = course / "solutions", tmp / "submissions"
    sol_dir.mkdir(parents=True)
    sub_dir.mkdir()
    sol = _solution_nb()
    nbformat.write(sol, sol_dir / "trust_softmax.ipynb")
    _git_commit(course)
    subs = {"correct": _student(sol, SOLUTION), "correct_too": _student(sol, SOLUTION),
            "stub": _student(sol, STUB), "json_edits": _student(sol, ZEROS, tweak=_json_edits)}
    for name, src in ALTERNATIVES.items():
        subs[name] = _student(sol, src)
    for name, (src, extra, _) in EXPLOITS.items():
        fmt = lambda s: s.replace("{solutions}", str(sol_dir)).replace("{course}", str(course)).replace(  # noqa: E731
            "{gradlab}", GRADLAB_ROOT) if s else s
        subs[name] = _student(sol, fmt(src), fmt(extra))
    paths = []
    for name, nb in subs.items():
        nb.metadata.setdefault("gradlab", {})["exercise"] = "trust_softmax"
        p = sub_dir / f"{name}.ipynb"
        nbformat.write(nb, p)
        paths.append(p)
    rc, res, table = _run(tmp, paths, "--hidden", sol_dir=sol_dir)
    (tmp / "table.txt").write_text(table)
    return {"rc": rc, "res": res, "table": table, "sol_dir": sol_dir, "tmp": tmp, "course": course}


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
    assert not (batch["course"] / "planted.txt").exists() and not (batch["course"] / "pwned").exists()
    assert not (batch["course"] / "results.jsonl").exists()
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


def test_the_kernel_launcher_imports_only_the_standard_library():
    """The launcher (outside the sandbox, one per submission) never imports gradlab, NumPy or ml_dtypes:
    importing them took as long as the rest of a kernel's start, and the kernel inside imports them anyway."""
    import subprocess
    python, *rest = sandbox.launcher_argv()
    p = subprocess.run([python, "-X", "importtime", *rest], capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "usage: python -I sandbox.py" in p.stderr, p.stderr[-500:]
    imported = {line.split("|")[-1].strip().split(".")[0] for line in p.stderr.splitlines() if "|" in line}
    assert "json" in imported and "subprocess" in imported, sorted(imported)
    assert not imported & {"gradlab", "numpy", "ml_dtypes", "IPython", "ipykernel"}, sorted(imported)


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


# --------------------------------------------------------------------------- one kernel per submission, one reference

# a submission that patches whatever the next one in its worker would compute with, were its interpreter reused
PATCHER = '''\
import builtins, os, sys
import numpy as np
import gradlab
np.exp = lambda x, *a, **k: np.zeros_like(x)
np.zeros_like = lambda x, *a, **k: x
builtins.abs = lambda x: 0
builtins.sum = lambda *a, **k: 0
gradlab.Tensor.softmax = lambda self, dim=-1: self
gradlab.tensor = lambda *a, **k: None
sys.modules["gradlab.course.checks"].compare = lambda *a, **k: "patched"
startup = os.path.expanduser("~/.ipython/profile_default/startup")
os.makedirs(startup, exist_ok=True)
with open(os.path.join(startup, "00-patch.py"), "w") as f:
    f.write("import numpy\\nnumpy.exp = lambda x, *a, **k: x * 0\\n")
'''
UNSTABLE = '''\
def softmax(x, dim=-1):
    e = np.exp(x)
    return e / e.sum(axis=dim, keepdims=True)
'''


@pytest.fixture(scope="module")
def in_one_worker(tmp_path_factory):
    """The patcher, then a correct and a wrong submission, in one worker (one after the other), kept."""
    tmp, sol = tmp_path_factory.mktemp("one_worker"), _solution_nb()
    (tmp / "solutions").mkdir()
    nbformat.write(sol, tmp / "solutions" / "trust_softmax.ipynb")
    paths = []
    for name, nb in (("patcher", _student(sol, SOLUTION, PATCHER)), ("correct_next", _student(sol, SOLUTION)),
                     ("unstable_next", _student(sol, UNSTABLE))):
        nb.metadata.setdefault("gradlab", {})["exercise"] = "trust_softmax"
        nbformat.write(nb, tmp / f"{name}.ipynb")
        paths.append(tmp / f"{name}.ipynb")
    _, res, _ = _run(tmp, paths, "-n", "1", "--keep", str(tmp / "kept"), sol_dir=tmp / "solutions")
    return {"res": res, "kept": tmp / "kept"}


@needs_sandbox
def test_a_patching_submission_does_not_change_the_next_ones_result(in_one_worker):
    """Graded after a kernel that patched numpy, gradlab, builtins and IPython's start-up, in one worker,
    the next submissions score as they would alone: each kernel is a new sandboxed process, never reused."""
    res, kept = in_one_worker["res"], in_one_worker["kept"]
    order = list(json.loads((kept / "index.json").read_text()).values())
    assert [Path(p).stem for p in order[1:]] == ["patcher", "correct_next", "unstable_next"], order
    assert res["patcher"]["earned"] == 0, res["patcher"]["parts"]   # its own kernel computes zeros
    assert [(p["grade_id"], p["earned"], p["status"]) for p in res["correct_next"]["parts"]] == [
        ("values", 3, "ok"), ("stable", 2, "ok")], res["correct_next"]["parts"]
    assert [(p["grade_id"], p["earned"]) for p in res["unstable_next"]["parts"]] == [("values", 3), ("stable", 0)]
    assert not res["correct_next"]["tamper"] and not res["unstable_next"]["tamper"]


@needs_sandbox
def test_the_reference_runs_once_per_exercise_per_batch(in_one_worker):
    """Three submissions of one exercise: one reference kernel, run first, then the three submissions'."""
    index = json.loads((in_one_worker["kept"] / "index.json").read_text())
    assert [label.startswith("reference: ") for label in index.values()] == [True, False, False, False], index
    results = (in_one_worker["kept"] / "results.jsonl").read_text().splitlines()
    assert {json.loads(line)["file"].split("/")[0] for line in results} == set(index), "all ran, and only those"


# --------------------------------------------------------------------------- a batch no submission can crash or stall

# name -> (solution-cell source, extra cell before the tests or None, what the report must say)
STALLS = {
    "sigint_printer": (ZEROS, '''\
import signal, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
while True:
    print("still here", flush=True)
    time.sleep(0.2)
''', "ignored the interrupt"),
    "fork_bomb": (ZEROS, '''\
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
''', "too many processes"),
    "huge_memory": (ZEROS, '''\
import os, signal, time
for _ in range(4):
    if os.fork() == 0:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        block = b"x" * (200 * 2**20)   # 200 MB each (under each one's address-space limit), 800 MB together
        time.sleep(60)
        os._exit(0)
time.sleep(60)
''', "MB of memory"),
    "huge_output": (ZEROS, '''\
print("x" * (300 * 2**20))   # 300 MB (the kernel is killed at the output cap or, making it, at --memory)
''', ("printed more than", "MB of memory")),
    "exit_in_graded": ('''\
def softmax(x, dim=-1):
    import os
    os._exit(3)
''', None, "ended its kernel"),
    "system_exit_in_graded": ('''\
def softmax(x, dim=-1):
    raise SystemExit(0)
''', None, "raised SystemExit"),
    "keyboard_interrupt_in_graded": ('''\
def softmax(x, dim=-1):
    raise KeyboardInterrupt
''', None, "raised KeyboardInterrupt"),
}


STALL_TIMEOUT = 30   # (a fork bomb or 800 MB must reach its limit within it, on a busy machine too)


def _our_processes(marker):
    """Processes whose command line names ``marker`` (this batch's temporary folder)."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(pid)
        except OSError:
            continue
    return found


def _our_cgroups():
    """The kernels' pids cgroups left under the ceiling's folder, whose launcher is gone."""
    parent = sandbox.process_ceiling()[0]
    if not parent:
        return []
    names = [n for n in os.listdir(parent) if n.startswith("gradlab-")]
    return [n for n in names if not os.path.exists(f"/proc/{n.split('-')[1]}")]


@pytest.fixture(scope="module")
def stalls(tmp_path_factory):
    import tempfile
    import time
    tmp = tmp_path_factory.mktemp("stalls")
    systmp = tmp / "systmp"   # the grader's temporary folders (and so every kernel's channels) go here
    systmp.mkdir()
    sol_dir, sub_dir = tmp / "solutions", tmp / "submissions"
    sol_dir.mkdir()
    sub_dir.mkdir()
    sol = _solution_nb()
    nbformat.write(sol, sol_dir / "trust_softmax.ipynb")
    subs = {"correct": _student(sol, SOLUTION)}
    for name, (src, extra, _) in STALLS.items():
        subs[name] = _student(sol, src, extra)
    paths = []
    for name, nb in subs.items():
        p = sub_dir / f"{name}.ipynb"
        nbformat.write(nb, p)
        paths.append(p)
    out = tmp / "out.json"
    counts, done = [], threading.Event()

    def sample():   # how many of this batch's processes exist, every 0.2 s (a fork bomb's show here)
        while not done.wait(0.2):
            counts.append((time.monotonic(), len(_our_processes(str(systmp)))))
    sampler = threading.Thread(target=sample, daemon=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tempfile, "tempdir", str(systmp))
        start = time.monotonic()
        sampler.start()
        try:
            with contextlib.redirect_stdout(io.StringIO()) as buf:
                rc = main(["grade", *map(str, paths), "--solutions", str(sol_dir), "--timeout", str(STALL_TIMEOUT),
                           "-n", "2", "--json", str(out), "--sandbox", "on", "--memory", "512"])
        finally:
            done.set()
            sampler.join()
        seconds = time.monotonic() - start
    doc = json.loads(out.read_text())
    left = {"files": sorted(os.listdir(systmp)), "processes": _our_processes(str(systmp)),
            "cgroups": _our_cgroups()}
    return {"rc": rc, "res": {Path(n["notebook"]).stem: n for n in doc["notebooks"]}, "table": buf.getvalue(),
            "seconds": seconds, "left": left, "counts": counts}


@needs_sandbox
def test_no_submission_stalls_the_batch_or_costs_a_classmate(stalls):
    assert set(stalls["res"]) == {"correct", *STALLS}, "every submission has a report"
    nb = stalls["res"]["correct"]
    assert nb["earned"] == nb["possible"] == 5 and not nb["tamper"], nb
    # seven hostile kernels over two workers, each held to its timeout and 5 s of grace (loosely: a loaded machine)
    assert stalls["seconds"] < 8 * (STALL_TIMEOUT + 5) + 120, stalls["seconds"]


@needs_sandbox
@pytest.mark.parametrize("name", sorted(STALLS))
def test_a_stalling_or_crashing_submission_scores_zero_with_its_reason(stalls, name):
    nb = stalls["res"][name]
    assert nb["earned"] == 0 and nb["possible"] == 5, nb
    said = "\n".join(nb["tamper"] + nb["notes"] + [p["message"] for p in nb["parts"]])
    expected = STALLS[name][2]
    assert any(e in said for e in ((expected,) if isinstance(expected, str) else expected)), (name, said)


@needs_sandbox
def test_nothing_is_left_running_or_on_disk(stalls):
    assert stalls["left"] == {"files": [], "processes": [], "cgroups": []}


CEILING_WHY = sandbox.process_ceiling()[1]
if CEILING_WHY and not WHY and os.environ.get("CI"):
    pytest.fail(f"CI must be able to give grading kernels a process ceiling: {CEILING_WHY}", pytrace=False)


@needs_sandbox
@pytest.mark.skipif(bool(CEILING_WHY), reason=f"no process ceiling here: {CEILING_WHY}")
def test_a_fork_bomb_is_held_at_its_ceiling_and_ends_quickly(stalls):
    """The fork bomb's kernel never has more than its ceiling of processes (its pids cgroup's pids.max;
    without it, thousands starved the machine) and is gone within seconds, far inside its cell's timeout."""
    ceiling = sandbox.Limits().tasks
    idle = min(n for _, n in stalls["counts"])
    peak = max(n for _, n in stalls["counts"])
    # (the other worker's kernel, the launchers, bwraps and pytest are the few beside the bomb)
    assert peak <= ceiling + idle + 20, (peak, ceiling, idle)
    # the bomb is killed at its ceiling or its count, mostly before a sample sees it; never after seconds
    crowded = [t for t, n in stalls["counts"] if n > idle + 20]
    assert not crowded or crowded[-1] - crowded[0] < STALL_TIMEOUT / 3, (crowded[0], crowded[-1], stalls["counts"])
    assert "too many processes" in "\n".join(stalls["res"]["fork_bomb"]["tamper"])


def test_without_a_ceiling_every_report_says_so(monkeypatch):
    """Where no pids cgroup can be made, sandboxed grading still runs, and each report says what is missing."""
    from gradlab.course.grading import _sandbox_mode
    monkeypatch.setattr(sandbox, "_CEILING", {"it": ("", "cgroup v1: cannot make a cgroup in /x (Read-only file system)")})
    monkeypatch.setattr(sandbox, "_AVAILABLE", {"why": ""})
    use, note = _sandbox_mode("on")
    assert use and note.startswith("no process ceiling: cgroup v1: cannot make a cgroup in /x"), note
    assert "fork bomb" in note and sandbox.plan()["cgroup"] == ""


@pytest.mark.parametrize("cgroup, mountinfo, expected", [
    ("0::/user.slice/grader\n", "41 31 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
     [("2", "/sys/fs/cgroup/user.slice/grader")]),
    ("8:pids:/\n0::/\n", "39 31 0:36 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
     "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
     [("2", "/sys/fs/cgroup/unified"), ("1", "/sys/fs/cgroup/pids")]),
    ("8:pids:/docker/abc\n", "39 31 0:36 /docker/abc /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n",
     [("1", "/sys/fs/cgroup/pids")]),
    ("4:memory:/x\n", "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n", []),
])
def test_where_the_kernels_cgroups_go(cgroup, mountinfo, expected):
    assert sandbox._cgroup_candidates(cgroup, mountinfo) == expected


def test_the_watcher_reads_the_exact_memory_only_near_the_limit():
    """The launcher's memory look: far below the limit the cheap resident sum (RSS), near it the exact
    proportional share (PSS), which counts a forked child's shared pages once. PSS <= RSS, so the kill
    happens at the same point; a forked copy of this process shows the two apart."""
    import signal
    import time
    child = os.fork()
    if child == 0:
        time.sleep(30)
        os._exit(0)
    try:
        pids = [os.getpid(), child]
        rss = sandbox._resident_mb(pids)
        pss = sandbox._memory_mb(pids)
        assert 10 < pss < 0.9 * rss, (pss, rss)
        assert sandbox._memory_mb(pids, limit_mb=100 * rss) == pytest.approx(rss, rel=0.05)
        assert sandbox._memory_mb(pids, limit_mb=rss) == pytest.approx(pss, rel=0.05)
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)


@pytest.mark.skipif(bool(CEILING_WHY), reason=f"no process ceiling here: {CEILING_WHY}")
def test_the_watcher_counts_the_processes_in_the_kernels_cgroup():
    """What the watcher counts is its cgroup's list: the process that joined it and what that one starts."""
    import subprocess
    folder = sandbox._cgroup_make(sandbox.process_ceiling()[0], sandbox.Limits())
    assert folder and sandbox._cgroup_pids(folder) == []
    p = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30"], preexec_fn=lambda: sandbox._cgroup_join(folder))
    try:
        for _ in range(50):
            pids = sandbox._cgroup_pids(folder)
            if len(pids) == 3:
                break
            threading.Event().wait(0.05)
        assert p.pid in pids and len(pids) == 3, pids
    finally:
        p.kill()
        sandbox._cgroup_remove(folder)
    assert sandbox._cgroup_pids(folder) is None, "a removed cgroup reads as none"
