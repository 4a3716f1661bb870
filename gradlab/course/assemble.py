"""Put a student's submission together with the instructor's source of truth.

A student can delete, edit or move cells in their copy. Before grading, the
notebook that is actually run is rebuilt from the instructor's notebook:

* every instructor cell with a grade_id is placed in the instructor's order;
* test cells and locked cells come from the instructor (hidden tests included
  with ``--hidden``), whatever the submission holds under that grade_id, so a
  student who edits or deletes an ``assert`` cannot grade themselves;
* solution cells come from the student, matched by grade_id (a deleted one is
  graded as the unanswered stub);
* the student's own extra cells (helpers, experiments) are kept, each after the
  instructor cell it followed in the submission;
* tamper-probe cells (``probe.py``) run first (a snapshot of the libraries,
  before any student code), before every graded cell and at the end;
* the instructor's cells run in the grader's own namespace (``graded.py``):
  each locked cell once more after it ran for the student, each test cell only
  there, with the names the exercise exports (``exports_of``) taken from the
  student's namespace -- so a solution cell that redefines a helper, ``np`` or
  ``str`` changes nothing the graded cells compute.

``reference_notebook`` builds the same notebook around the instructor's own
solution cells: the grader runs it in its own kernel to get the reference
records every ``check`` is compared with. ``static_tamper`` reads the
submission file itself (in the grader's process, where nothing the student
wrote can run) for edited metadata, duplicated graded cells, a changed
kernelspec and code that reaches for the grader's machinery.

Holds ``assemble(sub_nb, sol_nb, ...)`` -> (the notebook to run, notes), ``reference_notebook``,
``static_tamper``, ``exports_of``, ``parts_of(solution_nb)`` ([(grade_id, points)]), ``answer_ids(nb)``
(the grade_ids that identify an exercise) and ``graded_source(source)`` (the instructor's code a graded
cell of an assembled notebook runs).
"""
from __future__ import annotations

import ast
import copy
import os

from .exercise_build import student_cell
from .notebook import (
    CourseError,
    exercise_name,
    grade_id,
    is_locked,
    is_solution,
    is_test,
    nbgrader_meta,
    points,
    strip_hidden,
)
from .references import reference_hints, reference_seeds, student_taint, without_references

PROBE_SNAPSHOT = ("import gradlab.course.graded  # (its copy of the builtins: taken before any student code)\n"
                  "import gradlab.course.probe as _gradlab_probe\n_gradlab_probe.snapshot()")
GRADED_SETUP = "import gradlab.course.graded as _gradlab_graded\n_gradlab_graded.run_locked({source!r})"
GRADED_TEST = "import gradlab.course.graded as _gradlab_graded\n_gradlab_graded.run_test({label!r}, {exports!r}, {source!r})"
PROBE_REPORT = "import gradlab.course.probe as _gradlab_probe\n_gradlab_probe.report({where!r})"


def _norm(src: str) -> str:
    return "\n".join(line.rstrip() for line in src.strip().split("\n"))


def parts_of(solution_nb):
    """The graded parts: [(grade_id, points)] in notebook order."""
    return [(grade_id(c), points(c)) for c in solution_nb.cells if is_test(c)]


def exports_of(solution_nb):
    """What the exercise exports: the names the instructor's solution cells define at their top level."""
    names = []
    for cell in solution_nb.cells:
        if cell.cell_type != "code" or not is_solution(cell):
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:   # (check_solution_notebook reports it)
            continue
        for stmt in tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found = [stmt.name]
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                found = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            else:
                found = []
            names += [n for n in found if n not in names]
    return names


def graded_source(source: str) -> str:
    """The instructor's code a graded cell of an assembled notebook runs (``GRADED_TEST`` holds it as a literal)."""
    call = ast.parse(source).body[-1].value
    return ast.literal_eval(call.args[-1])


def answer_ids(nb):
    """grade_ids that identify an exercise: its solution and test cells (not generic ones like 'setup')."""
    return [grade_id(c) for c in nb.cells if grade_id(c) and (is_solution(c) or is_test(c))]


def _code_cell(source, info, tags=()):
    import nbformat
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata = {"gradlab": info}
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def assemble(sub_nb, sol_nb, sub_path, sol_path, hidden=False):
    """Return (notebook to run, notes) for one submission.

    Raises CourseError when the submission shares no grade_id with the
    solution notebook (a notebook from a different exercise).
    """
    sub_path, sol_path = os.fspath(sub_path), os.fspath(sol_path)
    instr_ids = [grade_id(c) for c in sol_nb.cells if grade_id(c)]
    sub_ids = {grade_id(c) for c in sub_nb.cells if grade_id(c)}
    if not sub_ids & set(answer_ids(sol_nb)):
        raise CourseError(
            f"{sub_path}: none of its cells match the exercise {os.path.basename(sol_path)} "
            f"(expected grade_ids such as {', '.join(repr(i) for i in answer_ids(sol_nb)[:3])}); "
            "is it a notebook from a different exercise? Pass the right one with --against"
        )
    known = set(instr_ids)
    # the student's cells by grade_id (first occurrence wins) and their extra cells by anchor
    by_id, extras, anchor, notes = {}, {None: []}, None, []
    for cell in sub_nb.cells:
        gid = grade_id(cell)
        if gid in known and gid not in by_id:
            by_id[gid] = cell
            anchor = gid
            extras.setdefault(gid, [])
        elif cell.cell_type == "code" and cell.source.strip():
            extras.setdefault(anchor, []).append(cell)

    name = os.path.basename(sol_path)
    tainted, shipped_taint = student_taint(sol_nb, hidden=hidden), student_taint(sol_nb, hidden=False)
    ex_name = exercise_name(sol_nb, sol_path)
    cells = [_code_cell(c.source, {"kind": "extra", "after": None}, c.get("metadata", {}).get("tags", ()))
             for c in extras[None]]
    for i, icell in enumerate(sol_nb.cells):
        gid = grade_id(icell)
        if gid is None or icell.cell_type != "code":
            continue
        scell = by_id.get(gid)
        if is_solution(icell):
            if scell is None:
                notes.append(f"solution cell '{gid}' is missing from the submission; graded as unanswered")
                source = student_cell(icell, name, i, sol_path).source
            else:
                source = scell.source
            cells.append(_code_cell(source, {"kind": "solution", "grade_id": gid}))
        elif is_test(icell) or is_locked(icell):
            kind = "test" if is_test(icell) else "locked"
            expected = strip_hidden(icell.source, f"{sol_path} '{gid}'")
            shipped = student_cell(icell, ex_name, i, sol_path, shipped_taint).source   # as the exercise has it
            if scell is None:
                notes.append(f"{kind} cell '{gid}' was deleted; the instructor's version was run")
            elif _norm(scell.source) not in (_norm(expected), _norm(icell.source), _norm(shipped)):
                notes.append(f"{kind} cell '{gid}' was edited; the instructor's version was run")
            source = strip_hidden(icell.source, f"{sol_path} '{gid}'", keep=True) if hidden else expected
            # the student's kernel gets no reference helper and no value computed from one
            source = without_references(source, tainted, f"{sol_path} cell '{gid}'")
            info = {"kind": kind, "grade_id": gid}
            if kind == "test":
                info["points"] = points(icell)
            cells.append(_code_cell(source, info, icell.get("metadata", {}).get("tags", ())))
        else:
            source = scell.source if scell is not None else icell.source
            cells.append(_code_cell(source, {"kind": "extra", "grade_id": gid}))
        for extra in extras.get(gid, ()):
            tags = extra.get("metadata", {}).get("tags", ())
            cells.append(_code_cell(extra.source, {"kind": "extra", "after": gid}, tags))
    return _finish(cells, sol_nb), notes


def _finish(cells, sol_nb):
    """The notebook to run: probe cells around ``cells``, the instructor's cells also (locked) or only
    (test) in the grader's namespace, the instructor's kernelspec, stable cell ids."""
    import nbformat
    exports = exports_of(sol_nb)
    out = [_code_cell(PROBE_SNAPSHOT, {"kind": "probe"})]
    for cell in cells:
        info = cell.metadata["gradlab"]
        if info.get("kind") == "test":
            out.append(_code_cell(PROBE_REPORT.format(where=f"before '{info['grade_id']}'"), {"kind": "probe"}))
            cell.source = GRADED_TEST.format(label=info["grade_id"], exports=exports, source=cell.source)
        out.append(cell)
        if info.get("kind") == "locked":
            out.append(_code_cell(GRADED_SETUP.format(source=cell.source),
                                  {"kind": "grader", "grade_id": info.get("grade_id")}))
    out.append(_code_cell(PROBE_REPORT.format(where="at the end"), {"kind": "probe"}))
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": copy.deepcopy(dict(sol_nb.metadata.get("kernelspec") or {})) or
                   {"display_name": "Python 3", "language": "python", "name": "python3"}}
    for k, cell in enumerate(out):
        cell.id = f"cell{k:03d}"
    nb.cells = out
    return nb


def reference_notebook(sol_nb, sol_path, hidden=False):
    """The instructor's notebook as the grader runs it for the reference records (same cells, same order)."""
    cells = []
    for icell in sol_nb.cells:
        gid = grade_id(icell)
        if icell.cell_type != "code" or (gid is None and not icell.source.strip()):
            continue
        if gid is None:
            continue   # (the instructor's untagged cells are not run for students either)
        if is_test(icell):
            source = strip_hidden(icell.source, f"{sol_path} '{gid}'", keep=True) if hidden else \
                strip_hidden(icell.source, f"{sol_path} '{gid}'")
            cells.append(_code_cell(reference_hints(source), {"kind": "test", "grade_id": gid, "points": points(icell)},
                                    icell.get("metadata", {}).get("tags", ())))
        else:
            kind = "solution" if is_solution(icell) else ("locked" if is_locked(icell) else "extra")
            cells.append(_code_cell(icell.source, {"kind": kind, "grade_id": gid}))
    return _finish(cells, sol_nb)


# what a solution cell has no reason to touch: the kernel's machinery and the grader's files
_SUSPICIOUS_NAMES = {
    "get_ipython": "uses get_ipython()",
    "set_custom_exc": "installs a custom exception handler",
    "ast_transformers": "touches IPython's AST transformers",
    "input_transformers_post": "touches IPython's input transformers",
    "input_transformers_cleanup": "touches IPython's input transformers",
    "settrace": "installs a tracing function",
    "setprofile": "installs a profiling hook",
    "__builtins__": "touches __builtins__",
    "builtins": "touches the builtins module",
    "_gradlab_probe": "touches the grader's tamper probe",
    "_gradlab_graded": "touches the grader's namespace",
    "_sink": "touches the grader's check records",
    "addaudithook": "installs an audit hook",
}
# modules a solution has no reason to import: they reach the kernel's channels, other processes or mounts
_REACHING_MODULES = {"ctypes": "native calls", "subprocess": "programs", "socket": "sockets", "zmq": "kernel channels",
                     "jupyter_client": "kernel channels", "multiprocessing": "processes", "signal": "signal handlers",
                     "pty": "programs", "resource": "resource limits"}
# file names of the grader's machinery: a solution that names one is looking for it
_GRADER_FILES = (".ipynb", "results.jsonl", "kernel.json", "solutions/", "/.git", "gradlab-grade", "gradlab-ch-",
                 "kernel-", "/proc/", "mountinfo")
_LIBRARY_ROOTS = {"np", "numpy", "gradlab", "torch", "math", "builtins", "sys", "IPython", "F", "nn", "optim"}


def _root_name(node):
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _scan(source, helpers, where):
    """Findings for one cell's source: patched libraries, IPython machinery, instructor helpers called."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                if isinstance(t, ast.Attribute) and _root_name(t) in _LIBRARY_ROOTS:
                    found.append(f"{where} assigns to {ast.unparse(t)} (patches a library)")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                "setattr", "delattr") and node.args and _root_name(node.args[0]) in _LIBRARY_ROOTS:
            found.append(f"{where} calls {node.func.id}({ast.unparse(node.args[0])}, ...) (patches a library)")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open" and any(
                isinstance(a, ast.Constant) and isinstance(a.value, str) and (
                    "solution" in a.value or a.value.endswith((".ipynb", ".jsonl"))) for a in node.args):
            found.append(f"{where} opens {ast.unparse(node.args[0])}")
        names = set()
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] + ([node.module] + [f"{node.module}.{a.name}" for a in node.names]
                                                   if isinstance(node, ast.ImportFrom) and node.module else [])
            for m in mods:
                if m.split(".")[0] in ("solutions", "builtins") or m in ("gradlab.course.probe",
                                                                         "gradlab.course.sandbox",
                                                                         "gradlab.course.graded"):
                    found.append(f"{where} imports {m}")
                elif m.split(".")[0] in _REACHING_MODULES:
                    found.append(f"{where} imports {m} ({_REACHING_MODULES[m.split('.')[0]]})")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and any(
                f in node.value for f in _GRADER_FILES):
            found.append(f"{where} names {node.value[:60]!r} (the grader's or the course's files)")
        for n in names:
            if n in _SUSPICIOUS_NAMES:
                found.append(f"{where} {_SUSPICIOUS_NAMES[n]}")
            if n in helpers:
                found.append(f"{where} uses the instructor's helper '{n}' (defined in cell '{helpers[n]}')")
    return found


def static_tamper(sub_nb, sol_nb):
    """What the submission file shows that it should not: a list of one-line findings.

    Read in the grader's process from the file as submitted, so nothing the
    student's code does at run time can hide it.
    """
    found = []
    instr = {grade_id(c): c for c in sol_nb.cells if grade_id(c)}
    seen = {}
    for cell in sub_nb.cells:
        gid = grade_id(cell)
        if gid is None:
            continue
        seen[gid] = seen.get(gid, 0) + 1
        icell = instr.get(gid)
        if icell is None:
            found.append(f"cell '{gid}' is not one of the exercise's cells (a made-up grade_id)")
            continue
        mine, theirs = nbgrader_meta(cell), nbgrader_meta(icell)
        for key in ("grade", "solution", "locked"):
            if bool(mine.get(key)) != bool(theirs.get(key)):
                found.append(f"cell '{gid}': nbgrader metadata '{key}' was changed "
                             f"({bool(theirs.get(key))} -> {bool(mine.get(key))})")
        if is_test(icell) and points(cell) != points(icell):
            found.append(f"cell '{gid}': its points were changed ({points(icell):g} -> {points(cell):g})")
    for gid, n in seen.items():
        if n > 1 and gid in instr and (is_test(instr[gid]) or is_locked(instr[gid])):
            found.append(f"cell '{gid}' appears {n} times (a duplicated instructor cell)")
    k_sub = (sub_nb.metadata.get("kernelspec") or {}).get("name")
    k_sol = (sol_nb.metadata.get("kernelspec") or {}).get("name")
    if k_sub and k_sol and k_sub != k_sol:
        found.append(f"the kernelspec was changed ('{k_sol}' -> '{k_sub}'); the instructor's was used")
    helpers = reference_seeds(sol_nb)   # the same helpers the student's graded kernel goes without
    for i, cell in enumerate(sub_nb.cells):
        if cell.cell_type != "code":
            continue
        gid = grade_id(cell)
        icell = instr.get(gid) if gid else None
        if icell is not None and not is_solution(icell):
            continue   # an instructor cell: the instructor's version is what runs
        where = f"solution cell '{gid}'" if icell is not None else f"your own cell {i}"
        found.extend(_scan(cell.source, helpers, where))
    return list(dict.fromkeys(found))
