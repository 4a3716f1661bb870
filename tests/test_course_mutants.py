"""`gradlab course mutants`: the mutation operators, the in-process runner, the classes and the CLI.

Everything here runs on small snippets and on tiny synthetic notebooks written by the tests, so it
is fast (well under 30 s) and does not depend on the exercises, which are rewritten independently.

The synthetic exercise: ``scale(x)`` returns ``np.abs(x) * 2.0``, tested on positive inputs only.
Its four mutants and what a *weak* test (``check(..., rtol=0.6)``) makes of them:

* ``np.abs(x) / 2.0``      -> 0.5 vs 2: outside 60% -> killed
* ``0 * (np.abs(x) * 2.0)`` -> zeros                -> killed
* ``np.abs(x) * 3.0``      -> 3 vs 2: inside 60%    -> survived (a different number passed the test)
* ``x * 2.0``              -> the same on positives -> equivalent (the tests cannot tell)

so the weak notebook scores 2/3; a hidden test with the default tolerance kills the survivor (3/3).
"""
from __future__ import annotations

import ast
import json

import nbformat
import pytest

from gradlab.cli import main
from gradlab.course import inprocess as ip, mutants as M

# --------------------------------------------------------------------------- the operators

def _norm(code):
    return ast.unparse(ast.parse(code))


def _mutants(code, operator):
    return {e.code for e in M.mutate_code(code) if e.operator == operator}


@pytest.mark.parametrize("operator, code, expected", [
    ("operator", "y = a + b", "y = a - b"),
    ("operator", "y = a * b", "y = a / b"),
    ("operator", "y = a ** 2", "y = a * 2"),
    ("operator", "y = a @ b", "y = a * b"),
    ("operator", "m += g", "m -= g"),
    ("comparison", "ok = a < b", "ok = a <= b"),
    ("comparison", "ok = a >= b", "ok = a > b"),
    ("comparison", "ok = a == b", "ok = a != b"),
    ("keepdims", "s = x.sum(axis=1, keepdims=True)", "s = x.sum(axis=1)"),
    ("keepdims", "s = t.sum(dim=0, keepdim=True)", "s = t.sum(dim=0)"),
    ("keepdims", "s = x.sum(axis=1, keepdims=False)", "s = x.sum(axis=1, keepdims=True)"),
    ("axis", "s = x.sum(axis=-1)", "s = x.sum(axis=0)"),
    ("axis", "s = x.sum(axis=-1)", "s = x.sum(axis=None)"),
    ("axis", "s = x.sum(axis=dim)", "s = x.sum(axis=-1)"),
    ("axis", "s = x.mean(0)", "s = x.mean(1)"),
    ("axis", "s = np.max(x, 1)", "s = np.max(x, 0)"),
    ("max-subtraction", "z = x - x.max(axis=-1, keepdims=True)", "z = x"),
    ("max-subtraction", "z = x - np.max(x)", "z = x"),
    ("off-by-one", "y = a[1:]", "y = a[2:]"),
    ("off-by-one", "y = a[:n - 1]", "y = a[:n - 2]"),
    ("off-by-one", "y = a[:n]", "y = a[:n - 1]"),
    ("off-by-one", "y = a[0]", "y = a[1]"),
    ("off-by-one", "y = a[-1]", "y = a[-2]"),
    ("off-by-one", "for i in range(n):\n    f(i)", "for i in range(n - 1):\n    f(i)"),
    ("off-by-one", "for i in range(1, n):\n    f(i)", "for i in range(2, n):\n    f(i)"),
    ("transpose", "g = a @ w.T", "g = a @ w"),
    ("transpose", "g = a @ w.mT", "g = a @ w"),
    ("transpose", "g = w.transpose(1, 0)", "g = w"),
    ("transpose", "g = w.swapaxes(-1, -2)", "g = w"),
    ("transpose", "g = np.swapaxes(w, -1, -2)", "g = w"),
    ("term-to-zero", "y = a + b", "y = a + 0"),
    ("term-to-zero", "y = a + b", "y = 0 + b"),
    ("constant", "v = m / (np.sqrt(s) + 1e-08)", "v = m / (np.sqrt(s) + 0.0)"),
    ("constant", "b = 0.999", "b = 0.998"),
    ("constant", "h = 0.5 * x", "h = 1.0 * x"),
    ("constant", "y = x ** 2", "y = x ** 3"),
    ("sum-mean", "s = x.sum(axis=0)", "s = x.mean(axis=0)"),
    ("sum-mean", "s = np.mean(x)", "s = np.sum(x)"),
    ("drop-call", "d = np.sqrt(v)", "d = v"),
    ("drop-call", "d = abs(v)", "d = v"),
    ("drop-call", "d = np.exp(z)", "d = z"),
    ("drop-call", "d = t.exp()", "d = t"),
    ("negate", "y = -x", "y = x"),
    ("negate", "ok = not done", "ok = done"),
    ("swap-args", "y = np.matmul(a, b)", "y = np.matmul(b, a)"),
    ("return-zero", "def f(x):\n    return x * 2", "def f(x):\n    return 0 * (x * 2)"),
    ("return-zero", "def f(x):\n    return (a, b)", "def f(x):\n    return (0 * a, 0 * b)"),
    ("delete", "m += g\ny = m", "pass\ny = m"),
    ("delete", "p.grad.zero_()\ny = 1", "pass\ny = 1"),
    ("delete", "out.append(v)\ny = 1", "pass\ny = 1"),
    ("delete", "out[i] = v\ny = 1", "pass\ny = 1"),
    ("flat-traversal", "for m in model.modules():\n    f(m)", "for m in model.children():\n    f(m)"),
    ("flat-traversal", "ps = dict(net.named_modules())", "ps = dict(net.named_children())"),
    ("swap-statements",   # the max taken before the causal mask
     "def f(s, ok):\n    s = where(ok, s, -inf)\n    s = s - s.max(-1)\n    return s",
     "def f(s, ok):\n    s = s - s.max(-1)\n    s = where(ok, s, -inf)\n    return s"),
    ("swap-statements", "s = where(ok, s, -inf)\ns = s - s.max(-1)", "s = s - s.max(-1)\ns = where(ok, s, -inf)"),
])
def test_each_operator_makes_the_expected_mutant(operator, code, expected):
    assert _norm(expected) in _mutants(code, operator)


def test_operators_leave_alone_what_is_not_theirs():
    assert not _mutants("m = max(n, 1)", "axis")                       # the builtin max is no reduction
    assert not _mutants("y = a[1:]", "constant")                       # a slice bound is off-by-one's
    assert not _mutants("s = x.sum(axis=1)", "constant")               # an axis is the axis operator's
    assert not _mutants('msg = "a" + name', "operator")                # string concatenation
    assert not _mutants('def f(x):\n    """Doc: x.sum(axis=0) + 1."""\n    return x', "axis")   # docstrings
    assert "y = a + b" not in {e.code for e in M.mutate_code("y = a + b")}   # never the original
    # independent steps (an equivalent swap) and a swap that would read a name before it is set
    assert not _mutants("def f(a, b):\n    x = g(a)\n    y = h(b)\n    return x, y", "swap-statements")
    assert not _mutants("def f(q, k):\n    s = q @ k\n    s = s - s.max()\n    return s", "swap-statements")
    assert not _mutants("x[j] = x[j] + e\nx[j] = x[j] - e", "swap-statements")   # stores into x, not of x


def test_mutate_code_is_deterministic_and_without_duplicates():
    code = "z = x - x.max(axis=dim, keepdims=True)\ne = np.exp(z)\nreturn e / e.sum(axis=dim, keepdims=True)"
    a, b = M.mutate_code(code), M.mutate_code(code)
    assert [e.code for e in a] == [e.code for e in b]
    assert len({e.code for e in a}) == len(a)
    line = [e for e in a if e.operator == "max-subtraction"][0]
    assert (line.lineno, line.before, line.after) == (1, "z = x - x.max(axis=dim, keepdims=True)", "z = x")


def test_only_the_solution_region_is_mutated_and_indented_back():
    src = ("def f(x, eps=1e-5):\n    \"\"\"Scaffolding: 0.5.\"\"\"\n    ### BEGIN SOLUTION\n"
           "    y = x * 2.0\n    return y\n    ### END SOLUTION\n\n\nz = 3.0 * 4.0\n")
    muts = M.cell_mutants(src)
    assert muts
    for line, edit, new in muts:
        compile(new, "<m>", "exec")
        assert new.startswith("def f(x, eps=1e-5):\n    \"\"\"Scaffolding: 0.5.\"\"\"\n    ### BEGIN SOLUTION\n")
        assert new.endswith("    ### END SOLUTION\n\n\nz = 3.0 * 4.0\n")
        assert line in (4, 5)
    assert any("    y = x / 2.0\n" in new for _, _, new in muts)


def test_the_count_is_bounded_by_a_fixed_seed_sample(tmp_path):
    body = "\n".join(f"    y{i} = x * {i + 2}.5 + a[1:] - b.T" for i in range(30))
    path = _notebook(tmp_path / "many.ipynb", f"def f(x):\n    ### BEGIN SOLUTION\n{body}\n"
                     "    return x\n    ### END SOLUTION", "check('v', f(1.0))")
    cells = ip.notebook_cells(nbformat.read(path, as_version=4))
    everything = M.notebook_mutants(cells, "many", limit=0)
    a, b = M.notebook_mutants(cells, "many", limit=40), M.notebook_mutants(cells, "many", limit=40)
    assert len(everything) > 40 and len(a) == 40
    assert [m.source for m in a] == [m.source for m in b]
    assert [m.line for m in a] == sorted(m.line for m in a)          # kept in notebook order


# --------------------------------------------------------------------------- synthetic notebooks

SETUP = "import numpy as np\nfrom gradlab.course.checks import check\n"
SOLUTION = "def scale(x):\n    ### BEGIN SOLUTION\n    return np.abs(x) * 2.0\n    ### END SOLUTION"
WEAK = "check('scaled', scale(np.array([1.0, 2.0])), rtol=0.6)"
STRONG_HIDDEN = WEAK + "\n### BEGIN HIDDEN TESTS\ncheck('exact', scale(np.array([1.0, 2.0])))\n### END HIDDEN TESTS"


def _meta(gid, **kw):
    m = {"grade": False, "grade_id": gid, "locked": True, "schema_version": 3, "solution": False, "task": False}
    m.update(kw)
    return {"nbgrader": m}


def _notebook(path, solution, *tests, setup=SETUP):
    nb = nbformat.v4.new_notebook()
    nb.metadata["gradlab"] = {"exercise": path.stem}
    nb.cells = [nbformat.v4.new_code_cell(setup, metadata=_meta("setup")),
                nbformat.v4.new_code_cell(solution, metadata=_meta("sol", solution=True, locked=False))]
    for i, t in enumerate(tests):
        nb.cells.append(nbformat.v4.new_code_cell(t, metadata=_meta(f"test{i}", grade=True, points=2)))
    nbformat.write(nb, str(path))
    return str(path)


def _by_change(result):
    return {m.after.strip(): m.status for m in result.mutants}


def test_a_weak_test_lets_a_mutant_survive_and_a_strong_one_kills_it(tmp_path):
    weak = M.run_exercise(_notebook(tmp_path / "weak.ipynb", SOLUTION, WEAK), workers=2)
    assert not weak.error, weak.error
    assert _by_change(weak) == {"return np.abs(x) / 2.0": "killed", "return 0 * (np.abs(x) * 2.0)": "killed",
                                "return np.abs(x) * 3.0": "survived", "return x * 2.0": "equivalent"}
    assert (weak.killed, weak.survived, weak.equivalent) == (2, 1, 1)
    assert weak.score == pytest.approx(2 / 3)
    survivor = [m for m in weak.mutants if m.status == "survived"][0]
    assert "scaled" in survivor.why
    line = M.survivor_lines(weak)[0]
    assert "weak.ipynb:cell 1 (sol):3: [constant] return np.abs(x) * 2.0 -> return np.abs(x) * 3.0" in line

    strong = M.run_exercise(_notebook(tmp_path / "strong.ipynb", SOLUTION, STRONG_HIDDEN), workers=2)
    assert (strong.killed, strong.survived, strong.equivalent) == (3, 0, 1)
    assert strong.score == 1.0
    assert "exact" in [m for m in strong.mutants if m.after.endswith("3.0")][0].why   # the hidden test did it


def test_plain_asserts_score_by_status_and_probes_tell_survivors(tmp_path):
    """Without check(), a cell scores by its status; a changed `got` that the assert let pass is a survivor."""
    weak_assert = "got = scale(np.array([1.0, 2.0]))\nassert got.shape == (2,)"
    r = M.run_exercise(_notebook(tmp_path / "asserts.ipynb", SOLUTION, weak_assert))
    assert _by_change(r)["return np.abs(x) * 3.0"] == "survived"
    assert _by_change(r)["return x * 2.0"] == "equivalent"
    assert "`got` changed" in [m for m in r.mutants if m.status == "survived"][0].why


def test_hidden_regions_are_stripped_unless_asked_for(tmp_path):
    path = _notebook(tmp_path / "h.ipynb", SOLUTION, STRONG_HIDDEN)
    nb = nbformat.read(path, as_version=4)
    plain, with_hidden = ip.notebook_cells(nb), ip.notebook_cells(nb, hidden=True)
    assert "exact" not in plain[2].source and "exact" in with_hidden[2].source
    mutant = {1: plain[1].source.replace("* 2.0", "* 3.0")}
    for cells, expect in ((plain, 2.0), (with_hidden, 0.0)):
        batch = ip.run_variants(cells, [mutant])
        assert ip.earned(ip.score(batch.runs[0], batch.reference, cells)) == expect


# --------------------------------------------------------------------------- the runner

def test_runner_timeout_crash_and_error_score_zero_but_the_rest_still_runs(tmp_path):
    path = _notebook(tmp_path / "r.ipynb", SOLUTION, WEAK, "check('two', scale(np.array([-1.0])))")
    cells = ip.notebook_cells(nbformat.read(path, as_version=4))
    variants = [{2: "while True:\n    pass"},                              # loops forever
                {2: "import os\nos._exit(3)"},                              # the process dies
                {1: SOLUTION + "\nimport numpy\nnumpy.ones(1 << 40)"},      # 8 TB: a MemoryError, not the machine
                {3: "raise ValueError('nope')"},                            # an error in one part
                {}]
    batch = ip.run_variants(cells, variants, timeout=1.5, workers=2)
    loop, died, memory, error, same = batch.runs
    assert loop.status == "timeout" and "timed out after 1.5 s" in loop.message
    assert died.status == "crashed" and "exited with code 3" in died.message
    for run in (loop, died):
        assert ip.earned(ip.score(run, batch.reference, cells)) == 0
    assert memory.status == "ok" and memory.cells[1].status == "error" and "MemoryError" in memory.cells[1].message
    parts = ip.score(error, batch.reference, cells)
    assert [p.earned for p in parts] == [2.0, 0.0] and parts[1].message == "ValueError: nope"
    assert ip.earned(ip.score(same, batch.reference, cells)) == 4.0
    assert same.cells[2].records == batch.reference.cells[2].records


def test_records_must_match_the_reference_one_for_one(tmp_path):
    path = _notebook(tmp_path / "rec.ipynb", SOLUTION, "check('a', scale(1.0))\ncheck('b', scale(2.0))")
    cells = ip.notebook_cells(nbformat.read(path, as_version=4))
    batch = ip.run_variants(cells, [{2: "check('a', scale(1.0))"},                        # one record missing
                                    {2: "check('b', scale(2.0))\ncheck('a', scale(1.0))"},  # names out of order
                                    {2: "check('a', scale(1.0))\ncheck('b', 4.0000001)"}])  # within rtol=1e-6
    whys = [ip.score(r, batch.reference, cells)[0].message for r in batch.runs]
    assert "recorded 1 of the 2 checked values; first missing: 'b'" in whys[0]
    assert "expected the check 'a' next, got 'b'" in whys[1]
    assert whys[2] == ""


def test_stop_on_loss_skips_the_rest_of_a_killed_variant(tmp_path):
    path = _notebook(tmp_path / "s.ipynb", SOLUTION, WEAK, WEAK.replace("'scaled'", "'again'"))
    cells = ip.notebook_cells(nbformat.read(path, as_version=4))
    batch = ip.run_variants(cells, [{1: SOLUTION.replace("* 2.0", "* 0.0")}], stop_on_loss=True)
    run = batch.runs[0]
    assert run.stopped and run.cells[3].status == "not run"


def test_without_fork_every_run_starts_from_the_top_in_a_subprocess(tmp_path):
    path = _notebook(tmp_path / "nofork.ipynb", SOLUTION, WEAK)
    cells = ip.notebook_cells(nbformat.read(path, as_version=4))
    batch = ip.run_variants(cells, [{1: SOLUTION.replace("* 2.0", "/ 2.0")}], timeout=60, workers=3,
                            use_fork=False)
    assert batch.replay is not None and batch.replay.cells[2].records == batch.reference.cells[2].records
    assert ip.earned(ip.score(batch.runs[0], batch.reference, cells)) == 0.0


def test_magics_are_skipped(tmp_path):
    path = _notebook(tmp_path / "magic.ipynb", SOLUTION, WEAK, setup="%matplotlib inline\n!echo hi\n" + SETUP)
    cells = ip.notebook_cells(nbformat.read(path, as_version=4))
    assert ip.run_variants(cells).reference.cells[0].status == "ok"


# --------------------------------------------------------------------------- the command

def test_cli_exit_code_follows_min_score(tmp_path, capsys):
    weak = _notebook(tmp_path / "weak.ipynb", SOLUTION, WEAK)
    strong = _notebook(tmp_path / "strong.ipynb", SOLUTION, STRONG_HIDDEN)
    out = tmp_path / "m.json"
    assert main(["course", "mutants", weak, strong, "--min-score", "0.9", "--json", str(out), "-n", "2", "-v"]) == 1
    text = capsys.readouterr().out
    assert "weak " in text and "66.7%" in text and "100.0%" in text and "< min" in text
    assert "[constant] return np.abs(x) * 2.0 -> return np.abs(x) * 3.0" in text
    doc = json.loads(out.read_text())
    assert [e["score"] for e in doc["exercises"]] == [pytest.approx(2 / 3), 1.0]
    assert {m["status"] for m in doc["exercises"][0]["list"]} == {"killed", "survived", "equivalent"}
    assert main(["course", "mutants", weak, "--min-score", "0.5"]) == 0
    assert main(["course", "mutants", "--solutions", str(tmp_path), "--min-score", "0.5"]) == 0
    broken = _notebook(tmp_path / "broken.ipynb", SOLUTION, "assert False, 'the reference fails'")
    assert main(["course", "mutants", broken]) == 2
    assert "the solution itself fails test0" in capsys.readouterr().out
