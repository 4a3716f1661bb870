"""Reference helpers: what the instructor's notebook computes for feedback, and the student's kernel never gets.

A test cell may compare with an in-notebook reference for the student's
feedback in JupyterLab: ``check("grad", my_grad(x), expected=_reference_grad(x))``.
Under ``gradlab grade`` that reference must not exist in the student's kernel
-- otherwise a submission could call it, or replace ``check`` by one that
records ``expected`` instead of its own value. So the grader rewrites the
instructor's locked and test cells for the student's run:

* reference helpers (``reference_seeds``: private or "ref"-named functions and
  classes in locked cells, every definition in a cell tagged ``reference``)
  are removed, with every statement that computes something from them;
* ``expected=`` arguments of ``check``/``check_raises`` are dropped, and of a
  ``msg=`` hint every part computed from a reference becomes ``...`` (hints are
  shown in grade reports; ``reference_hints`` does the same for the reference run,
  where every computed part is elided).

A reference name used anywhere else (say, as an *input* to the student's
function) is the instructor's error: ``without_references`` raises a
CourseError saying so, and ``check_references`` runs that check over a whole
notebook (``gradlab course build`` calls it).

* values the instructor's cells compute only for ``expected=`` (``expected_only``)
  are not computed there either.

Functions: ``reference_seeds``, ``expected_only``, ``student_taint``, ``without_references``, ``reference_hints``,
``check_references``; ``without_references_text`` (the same, keeping the instructor's text: the students'
exercises, ``gradlab course build``).
"""
from __future__ import annotations

import ast

from .notebook import CourseError, grade_id, is_locked, is_solution, is_test, strip_hidden

_CHECKS = ("check", "check_raises")


def _is_reference_name(name):
    return name.startswith("_") or "ref" in name.lower()


def reference_seeds(sol_nb):
    """The instructor's reference helpers: the names the student's graded kernel must not have.

    Functions and classes defined in locked (non-solution) cells whose name is
    private or says "ref" (``_reference_grads``, ``ref_softmax``), and every
    definition in a cell tagged ``reference``.
    """
    seeds = {}
    for cell in sol_nb.cells:
        if cell.cell_type != "code" or is_solution(cell) or not (is_locked(cell) or is_test(cell)):
            continue
        tagged = "reference" in (cell.get("metadata", {}).get("tags") or ())
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and (
                    tagged or _is_reference_name(node.name)):
                seeds[node.name] = grade_id(cell)
    return seeds


def _names(node):
    """The names ``node`` reads (Store targets are not uses)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)}


def _targets(stmt):
    out = set()
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        out.add(stmt.name)
    for t in getattr(stmt, "targets", None) or ([stmt.target] if getattr(stmt, "target", None) else []):
        out |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        out |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
    return out


ELIDED = "..."


def _hint(expr, tainted):
    """A check's ``msg=`` as a graded kernel may compute it, or None to drop it.

    The hint is the instructor's text and is shown in grade reports, so it must
    not carry a reference value: parts of an f-string computed from a ``tainted``
    name become ``...`` (with ``tainted=None``, every computed part does: the
    reference run's hints, where every value is the solution's). A hint that is
    no string literal is kept only when it reads no tainted name.
    """
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr
    if isinstance(expr, ast.JoinedStr):
        return ast.JoinedStr(values=[
            ast.Constant(ELIDED) if isinstance(v, ast.FormattedValue) and (tainted is None or _names(v) & tainted)
            else v for v in expr.values])
    if tainted is not None and not _names(expr) & tainted:
        return expr
    return None


class _StripExpected(ast.NodeTransformer):
    """Drop ``expected=`` from every check()/check_raises() call (it is only the student's local feedback),
    and keep of ``msg=`` only what ``_hint`` allows. With ``keep_expected`` (the reference run) only the hints
    change."""

    def __init__(self, tainted, keep_expected=False):
        self.tainted = tainted
        self.keep_expected = keep_expected

    def visit_Call(self, node):
        self.generic_visit(node)
        fn = node.func
        name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else None
        if name in _CHECKS:
            keywords = []
            for k in node.keywords:
                if k.arg == "msg":
                    k.value = _hint(k.value, self.tainted)
                    if k.value is None:
                        continue
                elif k.arg == "expected" and not self.keep_expected:
                    continue
                keywords.append(k)
            node.keywords = keywords
            if name == "check" and not self.keep_expected:
                node.args = node.args[:2]   # check(name, value, expected): the third is expected
        return node


def reference_hints(source):
    """``source`` for the reference run: each ``msg=`` with its computed parts shown as ``...``.

    The grader shows the reference run's hint when the student's run recorded
    none (its code raised first); the reference's own values must not be in it.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    tree = _StripExpected(None, keep_expected=True).visit(tree)
    return ast.unparse(ast.fix_missing_locations(tree))


def without_references(source, tainted, where):
    """``source`` for the student's graded kernel: no reference helpers and nothing computed from them.

    ``tainted`` (a set, updated in place) starts with the reference helpers'
    names. Statements that define or use a tainted name are dropped (their
    targets become tainted too), ``expected=`` arguments of ``check`` are
    removed. A tainted name used anywhere else means the student's run would
    fail for a reason that is not theirs: a CourseError for the instructor.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    return ast.unparse(ast.fix_missing_locations(_strip(tree, tainted, where)))


_COMPOUND = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try)


def _strip(tree, tainted, where):
    """``without_references`` on a parsed cell: ``tree`` changed in place (kept statements are the same
    objects) and returned."""

    def refuse(name, what):
        raise CourseError(f"{where}: uses '{name}' (a reference helper, or computed from one) {what}; the "
                          "student's graded kernel does not have it. Compute inputs without reference helpers "
                          "and pass references only as check(..., expected=...), or give a helper that is not "
                          "a reference a public name")

    def block(stmts):
        out = []
        for stmt in stmts:
            if not isinstance(stmt, _COMPOUND):
                stmt = _StripExpected(tainted).visit(stmt)   # (compound statements: statement by statement below)
            used = _names(stmt) & tainted
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if stmt.name in tainted or used:   # a reference helper, or a function built on one
                    tainted.add(stmt.name)
                    continue
                out.append(stmt)
            elif isinstance(stmt, _COMPOUND):
                heads = [getattr(stmt, "iter", None), getattr(stmt, "test", None)]
                heads += [i.context_expr for i in getattr(stmt, "items", ())]
                bad = set().union(*(_names(h) for h in heads if h is not None)) & tainted
                if bad:
                    refuse(sorted(bad)[0], f"in the head of a {type(stmt).__name__.lower()} statement")
                for field in ("body", "orelse", "finalbody"):
                    if getattr(stmt, field, None):
                        setattr(stmt, field, block(getattr(stmt, field)) or [ast.Pass()])
                for h in getattr(stmt, "handlers", ()):
                    h.body = block(h.body) or [ast.Pass()]
                out.append(stmt)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and (
                    used or (_targets(stmt) and _targets(stmt) <= tainted)):
                tainted.update(_targets(stmt))   # a reference value: only expected= may use it
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and _targets(stmt) & tainted:
                out.append(stmt)   # computes an input and a reference at once: the input is needed
                tainted.difference_update(_targets(stmt))
            elif used:
                refuse(sorted(used)[0], "outside check(..., expected=...)")
            else:
                out.append(stmt)
        return out

    tree.body = block(tree.body)
    return tree


def without_references_text(source, tainted, where):
    """``without_references`` for a notebook the student reads: the same statements dropped and the same
    calls changed, and everything else (comments, blank lines, line breaks) as the instructor wrote it.

    A changed statement (a ``check`` that loses its ``expected=``) is written anew, at its indentation.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    units, bodies = [], []   # (statement, first line, last line, its dump before); compound bodies

    def collect(stmts):
        for st in stmts:
            if isinstance(st, _COMPOUND):
                for owner, field in [(st, f) for f in ("body", "orelse", "finalbody")] + [
                        (h, "body") for h in getattr(st, "handlers", ())]:
                    body = getattr(owner, field, None) or []
                    if body:
                        bodies.append((owner, field, body[0].col_offset, body[0].lineno))
                    collect(body)
            else:
                first = min([st.lineno] + [d.lineno for d in getattr(st, "decorator_list", ())])
                units.append((st, first, st.end_lineno, ast.dump(st)))
    collect(tree.body)
    _strip(tree, tainted, where)
    kept = {id(n) for n in ast.walk(tree)}
    lines = source.split("\n")
    new = {i: [ln] for i, ln in enumerate(lines, 1)}
    for st, first, last, before in units:
        if id(st) in kept and ast.dump(st) == before:
            continue
        for i in range(first, last + 1):
            new[i] = []
        if id(st) in kept:
            pad = lines[st.lineno - 1][:st.col_offset]
            new[first] = [pad + ln for ln in ast.unparse(ast.fix_missing_locations(st)).split("\n")]
    before = {id(u[0]) for u in units}
    for owner, field, col, line in bodies:   # a body left empty gets the ``pass`` the parsed version got
        body = getattr(owner, field)
        if id(owner) in kept and len(body) == 1 and isinstance(body[0], ast.Pass) and id(body[0]) not in before:
            new[line] = [" " * col + "pass"] + new[line]
    out, blank = [], 0
    for i in sorted(new):
        for ln in new[i]:
            blank = blank + 1 if not ln.strip() else 0
            if blank <= 2:
                out.append(ln)
    return "\n".join(out).strip("\n")


def _expected_args(tree):
    """The expected=/msg= argument expressions of every check call in ``tree``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            fn = node.func
            name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else None
            if name in _CHECKS:
                out += [k.value for k in node.keywords if k.arg in ("expected", "msg")]
                if name == "check":
                    out += node.args[2:]
    return out


def expected_only(sources, seeds=()):
    """Names the instructor's cells compute only for ``expected=``: reference values, never inputs.

    A variable assigned in the instructor's cells whose every use is inside an
    ``expected=`` argument (or in another such assignment) is a reference value
    even when no helper computed it (``ref = x.softmax(-1)``): it is not computed
    in the student's kernel either, where the student's code could read it.
    (What such a value is computed *from* may still be there: keep reference
    computations inside a helper function or inside ``expected=``.)
    """
    trees = []
    for src in sources:
        try:
            trees.append(ast.parse(src))
        except SyntaxError:
            continue
    in_expected = {}   # id(Name node) -> True for Loads inside expected= arguments
    for tree in trees:
        for arg in _expected_args(tree):
            for n in ast.walk(arg):
                if isinstance(n, ast.Name):
                    in_expected[id(n)] = True
    assigns = []       # (targets, [Load names in the statement])
    other_loads = []   # (statement, names) for every simple statement that is not an assignment
    for tree in trees:
        for stmt in ast.walk(tree):
            if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                loads = [n for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
                assigns.append((_targets(stmt), loads))
    loads_by_name = {}
    for tree in trees:
        for n in ast.walk(tree):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                loads_by_name.setdefault(n.id, []).append(n)
    del other_loads
    tainted = set(seeds)
    while True:
        dropped = {id(ld) for targets, loads in assigns if targets and targets <= tainted for ld in loads}
        new = set()
        for targets, _ in assigns:
            for name in targets - tainted:
                uses = loads_by_name.get(name, [])
                if uses and all(in_expected.get(id(u)) or id(u) in dropped for u in uses):
                    new.add(name)
        if not new:
            return tainted - set(seeds)
        tainted |= new


def student_taint(sol_nb, hidden=True):
    """The names the student's graded kernel must not have: reference helpers and reference values."""
    seeds = set(reference_seeds(sol_nb))
    sources = [strip_hidden(c.source, "cell", keep=True) if hidden else strip_hidden(c.source, "cell")
               for c in sol_nb.cells
               if c.cell_type == "code" and not is_solution(c) and (is_locked(c) or is_test(c))]
    return seeds | expected_only(sources, seeds)


def check_references(sol_nb, where):
    """Raise a CourseError when an instructor notebook uses a reference helper where students' runs cannot."""
    tainted = student_taint(sol_nb)
    for cell in sol_nb.cells:
        if cell.cell_type != "code" or is_solution(cell) or not (is_locked(cell) or is_test(cell)):
            continue
        gid = grade_id(cell)
        without_references(strip_hidden(cell.source, f"{where} '{gid}'", keep=True), tainted,
                           f"{where} cell '{gid}'")
