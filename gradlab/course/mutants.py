"""Mutation testing for the graded exercises: do the tests notice when the solution is wrong?

A test that passes on the instructor's solution proves little: it must also
*fail* on wrong solutions. A **mutant** is the solution with one small,
plausible mistake put in automatically (``+`` for ``-``, a dropped
``keepdims=True``, a missing transpose, ``range(n - 1)``...). Each mutant is
graded exactly as a student's notebook would be (hidden tests included,
``check`` records compared with the reference run's) and falls in one of
three classes:

* **killed**: it loses at least one point. The tests caught the mistake.
* **survived**: full marks, yet it behaves differently: a ``check`` record or a
  value the test cell computed (its *probes*, see ``inprocess``) differs from the
  reference beyond a tiny tolerance (rtol=1e-9, atol=1e-12), or some cell raised
  where the reference did not. A student could hand this in and get full marks:
  add a test that tells it apart.
* **equivalent**: full marks and everything the tests looked at is the same
  (``eps`` that never matters, ``a + b`` -> ``b + a``...). The tests cannot tell,
  maybe nothing can; listed, not counted.

The **mutation score** is killed / (killed + survived); the course aims at
>= 90% for every exercise.

Only the code between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` is mutated
(a solution cell without markers is mutated whole, as nbgrader replaces it
whole): the scaffolding (``def`` lines, docstrings) is the instructor's, the
region is what a student writes. Mutants are made with ``ast``: parse the
region, change one node, ``ast.unparse`` it, indent it back. The generator is
deterministic, and at most ``limit`` (120) mutants per exercise are kept, sampled
with a fixed seed.

Contents:

* ``OPERATORS``: name -> a function ``(node, parent) -> [(new node, label)]``;
* ``mutate_code(code)``: every mutant of one piece of code, as ``Edit``\\ s;
* ``notebook_mutants(cells, exercise, limit=120)``: the ``Mutant``\\ s of a notebook's solution regions;
* ``run_exercise(path, ...)`` -> ``ExerciseResult``; ``run_all(paths, ...)``;
* ``table(results)``, ``survivor_lines(result)``, ``to_json(results)``: the report.
"""
from __future__ import annotations

import ast
import copy
import json
import os
import random
import textwrap
import time
from dataclasses import dataclass, field

from . import checks
from .inprocess import grade_notebook, notebook_cells, possible, score
from .notebook import BEGIN_SOLUTION, END_SOLUTION, CourseError, _region, exercise_name, read_notebook

TINY = {"rtol": 1e-9, "atol": 1e-12}   # "the same" for survived vs equivalent
LIMIT = 120                             # mutants per exercise, at most
MODULES = {"np", "numpy", "gradlab", "torch", "F", "math", "nn"}   # f(x, ...) is a function, not a method


# --------------------------------------------------------------------------- small helpers

def _int(node):
    """The int a node spells (``3``, ``-1``), else None. Booleans are not ints here."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant)
            and type(node.operand.value) is int):
        return -node.operand.value
    return None


def _const(v):
    return ast.Constant(v)


def _plus(node, k):
    """``node + k`` with constants folded: ``1 -> 2``, ``n - 1 -> n``, ``n -> n - 1``."""
    v = _int(node)
    if v is not None:
        return _const(v + k)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) and _int(node.right) is not None:
        c = _int(node.right) * (1 if isinstance(node.op, ast.Add) else -1) + k
        if c == 0:
            return copy.deepcopy(node.left)
        return ast.BinOp(copy.deepcopy(node.left), ast.Add() if c > 0 else ast.Sub(), _const(abs(c)))
    return ast.BinOp(copy.deepcopy(node), ast.Add() if k > 0 else ast.Sub(), _const(abs(k)))


def _name(func):
    """The called name: ``np.sum`` -> "sum", ``x.sum`` -> "sum", ``abs`` -> "abs"."""
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _is_function(call):
    """``np.sum(x)`` / ``abs(x)`` (a function of its first argument), not ``x.sum()`` (a method)."""
    f = call.func
    return isinstance(f, ast.Name) or (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                                       and f.value.id in MODULES)


def _with(node, **fields):
    new = copy.deepcopy(node)
    for k, v in fields.items():
        setattr(new, k, v)
    return new


def _is_str(node):
    return isinstance(node, (ast.JoinedStr,)) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


# --------------------------------------------------------------------------- the operators
# Each takes (node, parent) and returns [(replacement, label)]; a replacement of None deletes a statement.

_BINOPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.Pow: ast.Mult,
           ast.MatMult: ast.Mult, ast.FloorDiv: ast.Div}
_CMPOPS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
           ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In}


def op_binop(node, parent):
    """``a + b`` <-> ``a - b``, ``*`` <-> ``/``, ``**`` -> ``*``, ``@`` -> ``*`` (also in ``+=`` and co.)."""
    if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _BINOPS:
        if isinstance(node, ast.BinOp) and (_is_str(node.left) or _is_str(node.right)):
            return []
        return [(_with(node, op=_BINOPS[type(node.op)]()), "operator")]
    return []


def op_compare(node, parent):
    """``<`` <-> ``<=``, ``>`` <-> ``>=``, ``==`` <-> ``!=`` (and ``is``/``in`` with their negations)."""
    out = []
    if isinstance(node, ast.Compare):
        for i, o in enumerate(node.ops):
            if type(o) in _CMPOPS:
                ops = list(node.ops)
                ops[i] = _CMPOPS[type(o)]()
                out.append((_with(node, ops=ops), "comparison"))
    return out


def op_keepdims(node, parent):
    """Drop ``keepdims=True`` / ``keepdim=True`` (flip it when it is ``False``)."""
    out = []
    if isinstance(node, ast.Call):
        for i, kw in enumerate(node.keywords):
            if kw.arg in ("keepdims", "keepdim"):
                if isinstance(kw.value, ast.Constant) and kw.value.value is False:
                    kws = list(node.keywords)
                    kws[i] = ast.keyword(kw.arg, _const(True))
                else:
                    kws = node.keywords[:i] + node.keywords[i + 1:]
                out.append((_with(node, keywords=kws), "keepdims"))
    return out


_AXIS_ALT = {0: [1, -1, None], 1: [0, -1], -1: [0, -2, None], -2: [-1, 0], None: [0, -1]}
_AXIS_METHODS = {"sum", "mean", "max", "min", "prod", "argmax", "argmin", "std", "var", "cumsum", "cumprod",
                 "any", "all", "amax", "amin", "nansum", "logsumexp", "softmax", "log_softmax", "squeeze",
                 "unsqueeze", "expand_dims", "flip", "norm", "median"}


def _axis_alternatives(value):
    v = _int(value)
    if isinstance(value, ast.Constant) and value.value is None:
        return _AXIS_ALT[None]
    if v is not None:
        return _AXIS_ALT.get(v, [0, -1])
    if isinstance(value, ast.Tuple):
        return ["drop-last", None] if len(value.elts) > 1 else [None]
    return [-1, 0, None]


def _axis_node(value, alt):
    if alt == "drop-last":
        return _with(value, elts=value.elts[:-1])
    return _const(alt)


def op_axis(node, parent):
    """Change an ``axis=`` / ``dim=`` argument (0, 1, -1, -2, None), keyword or positional (``x.sum(0)``)."""
    out = []
    if not isinstance(node, ast.Call):
        return out
    for i, kw in enumerate(node.keywords):
        if kw.arg in ("axis", "dim"):
            for alt in _axis_alternatives(kw.value):
                kws = list(node.keywords)
                kws[i] = ast.keyword(kw.arg, _axis_node(kw.value, alt))
                out.append((_with(node, keywords=kws), "axis"))
    if _name(node.func) in _AXIS_METHODS and isinstance(node.func, ast.Attribute):   # not the builtin max(a, b)
        k = 1 if _is_function(node) else 0
        if len(node.args) > k and (_int(node.args[k]) is not None or
                                   (isinstance(node.args[k], ast.Constant) and node.args[k].value is None)):
            for alt in _axis_alternatives(node.args[k]):
                args = list(node.args)
                args[k] = _axis_node(node.args[k], alt)
                out.append((_with(node, args=args), "axis"))
    return out


def op_max_subtraction(node, parent):
    """``x - x.max(...)`` -> ``x``: the softmax / logsumexp stabilisation removed."""
    if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and isinstance(node.right, ast.Call)
            and _name(node.right.func) in ("max", "amax", "nanmax", "logsumexp")):
        return [(copy.deepcopy(node.left), "max-subtraction")]
    return []


def op_off_by_one(node, parent):
    """Off by one: ``a[1:]`` -> ``a[2:]``, ``a[:n]`` -> ``a[:n - 1]``, ``a[0]`` -> ``a[1]``, ``range(n)`` -> ``range(n - 1)``."""
    out = []
    if isinstance(node, ast.Subscript):
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for j, part in enumerate(parts):
            changes = []
            if isinstance(part, ast.Slice):
                if part.lower is not None:
                    changes.append(_with(part, lower=_plus(part.lower, 1)))
                if part.upper is not None:
                    changes.append(_with(part, upper=_plus(part.upper, -1)))
            elif _int(part) is not None:
                v = _int(part)
                changes.append(_const(v + 1 if v >= 0 else v - 1))
            for new_part in changes:
                if isinstance(node.slice, ast.Tuple):
                    elts = list(node.slice.elts)
                    elts[j] = new_part
                    out.append((_with(node, slice=_with(node.slice, elts=elts)), "off-by-one"))
                else:
                    out.append((_with(node, slice=new_part), "off-by-one"))
    if isinstance(node, ast.Call) and _name(node.func) == "range" and isinstance(node.func, ast.Name) and node.args:
        if len(node.args) == 1:
            out.append((_with(node, args=[_plus(node.args[0], -1)]), "off-by-one"))
        else:
            out.append((_with(node, args=[_plus(node.args[0], 1)] + node.args[1:]), "off-by-one"))
            out.append((_with(node, args=[node.args[0], _plus(node.args[1], -1)] + node.args[2:]), "off-by-one"))
    return out


_TRANSPOSES = {"transpose", "swapaxes", "permute", "swapdims", "moveaxis", "movedim"}


def op_transpose(node, parent):
    """Remove a transpose: ``x.T`` / ``x.mT`` / ``x.transpose(...)`` / ``np.swapaxes(x, ...)`` -> ``x``."""
    if isinstance(node, ast.Attribute) and node.attr in ("T", "mT", "H", "mH") and isinstance(node.ctx, ast.Load):
        return [(copy.deepcopy(node.value), "transpose")]
    if isinstance(node, ast.Call) and _name(node.func) in _TRANSPOSES:
        if _is_function(node):
            return [(copy.deepcopy(node.args[0]), "transpose")] if node.args else []
        if isinstance(node.func, ast.Attribute):
            return [(copy.deepcopy(node.func.value), "transpose")]
    return []


def op_sum_term(node, parent):
    """Replace one term of a sum with 0: ``a + b`` -> ``a + 0`` and ``0 + b``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and not (_is_str(node.left)
                                                                              or _is_str(node.right)):
        out = []
        if _int(node.right) != 0:
            out.append((_with(node, right=_const(0)), "term-to-zero"))
        if _int(node.left) != 0:
            out.append((_with(node, left=_const(0)), "term-to-zero"))
        return out
    return []


def _other_number(v):
    """Another plausible value for a constant: eps -> 0 and 1000x, 0.999 -> 0.998, 0.5 -> 1.0, 2 -> 3."""
    if type(v) is int:
        return [v + 1]
    if v == 0.0:
        return [1.0]
    a = abs(v)
    if a < 1e-3:
        return [0.0, v * 1e3]
    if 0.9 <= a < 1.0:
        return [float(f"{(1 - (1 - a) * 2) * (1 if v > 0 else -1):.12g}")]
    if a < 0.9:
        return [v * 2]
    return [v + 1.0]


def op_constant(node, parent):
    """Replace a number with another value (eps, betas, learning rates, 0.5, 2, ...).

    Floats anywhere; ints only where they are arithmetic (operands, comparisons,
    keyword arguments, assignments): an int index, slice bound, axis or range
    argument is the other operators' job.
    """
    if not (isinstance(node, ast.Constant) and type(node.value) in (int, float)):
        return []
    if getattr(node, "_claimed", False):
        return []
    if type(node.value) is int and not isinstance(parent, (ast.BinOp, ast.Compare, ast.keyword, ast.Assign,
                                                           ast.AugAssign, ast.arguments, ast.Return)):
        return []
    return [(_const(alt), "constant") for alt in _other_number(node.value)]


def op_sum_mean(node, parent):
    """``sum`` <-> ``mean`` (``x.sum()``, ``np.mean(x)``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("sum", "mean"):
        other = "mean" if node.func.attr == "sum" else "sum"
        return [(_with(node, func=_with(node.func, attr=other)), "sum-mean")]
    return []


_DROPPABLE = {"sqrt", "abs", "exp", "log", "absolute", "fabs", "square", "tanh"}


def op_drop_call(node, parent):
    """Drop a function call: ``np.sqrt(v)`` -> ``v``, ``abs(x)`` -> ``x``, ``x.exp()`` -> ``x``."""
    if not (isinstance(node, ast.Call) and _name(node.func) in _DROPPABLE):
        return []
    if _is_function(node):
        if len(node.args) >= 1 and not isinstance(node.args[0], ast.Starred):
            return [(copy.deepcopy(node.args[0]), "drop-call")]
        return []
    if isinstance(node.func, ast.Attribute) and not node.args:
        return [(copy.deepcopy(node.func.value), "drop-call")]
    return []


def op_negate(node, parent):
    """Remove a unary minus or a ``not``: ``-x`` -> ``x``, ``not done`` -> ``done``."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)) and _int(node) is None \
            and not (isinstance(node.operand, ast.Constant)):
        return [(copy.deepcopy(node.operand), "negate")]
    return []


def op_swap_args(node, parent):
    """Swap two neighbouring positional arguments: ``f(a, b)`` -> ``f(b, a)``."""
    out = []
    if isinstance(node, ast.Call) and _name(node.func) not in ("print", "isinstance", "getattr", "setattr"):
        args = node.args
        for i in range(min(len(args) - 1, 2)):
            if isinstance(args[i], ast.Starred) or isinstance(args[i + 1], ast.Starred):
                continue
            if ast.dump(args[i]) == ast.dump(args[i + 1]):
                continue
            new = list(args)
            new[i], new[i + 1] = new[i + 1], new[i]
            out.append((_with(node, args=new), "swap-args"))
    return out


def _zero_like(value):
    if isinstance(value, ast.Tuple):
        return ast.Tuple([_zero_like(e) for e in value.elts], ast.Load())
    return ast.BinOp(_const(0), ast.Mult(), copy.deepcopy(value))


def op_return(node, parent):
    """``return expr`` -> ``return 0 * expr`` (each element of a tuple): the right shape, all zeros."""
    if isinstance(node, ast.Return) and node.value is not None and not isinstance(node.value, ast.Constant):
        return [(ast.Return(_zero_like(node.value)), "return-zero")]
    return []


def op_delete(node, parent):
    """Delete a statement: an augmented assignment, a call made for its effect (``.zero_()``, ``.append(v)``),
    an assignment into an array or attribute (``out[i] = v``)."""
    if isinstance(node, ast.AugAssign):
        return [(None, "delete")]
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        return [(None, "delete")]
    if isinstance(node, ast.Assign) and all(isinstance(t, (ast.Subscript, ast.Attribute)) for t in node.targets):
        return [(None, "delete")]
    return []


OPERATORS = {
    "operator": op_binop, "comparison": op_compare, "keepdims": op_keepdims, "axis": op_axis,
    "max-subtraction": op_max_subtraction, "off-by-one": op_off_by_one, "transpose": op_transpose,
    "term-to-zero": op_sum_term, "constant": op_constant, "sum-mean": op_sum_mean, "drop-call": op_drop_call,
    "negate": op_negate, "swap-args": op_swap_args, "return-zero": op_return, "delete": op_delete,
}


# --------------------------------------------------------------------------- mutating a piece of code

@dataclass
class Edit:
    """One mutation of a piece of code: where, what it was, what it became, and the whole new code."""
    operator: str
    lineno: int     # line in the code that was mutated (1-based)
    before: str     # the statement it is in, as one line (a compound statement: its first line)
    after: str      # the same statement in the mutant ("(deleted)" for a deleted statement)
    code: str


def _claim(tree):
    """Mark the numbers other operators own (indices, slice bounds, axes, range arguments, keepdims)."""
    def mark(n):
        for sub in ast.walk(n):
            if isinstance(sub, ast.Constant):
                sub._claimed = True

    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            mark(node.slice)
        elif isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg in ("axis", "dim", "keepdims", "keepdim", "axes", "dims"):
                    mark(kw.value)
            if _name(node.func) in {"range", "reshape", "view", "transpose", "permute", "swapaxes", "zeros",
                                    "ones", "empty", "full"} | _AXIS_METHODS:
                for a in node.args:
                    if _int(a) is not None:
                        mark(a)


def _walk(node, path=(), parent=None):
    """(path, node, parent) for every node worth mutating: not docstrings, f-strings or annotations."""
    yield path, node, parent
    for name, value in ast.iter_fields(node):
        if name in ("annotation", "returns", "decorator_list", "type_comment"):
            continue
        if isinstance(value, list):
            for i, item in enumerate(value):
                if not isinstance(item, ast.AST):
                    continue
                if (name == "body" and i == 0 and isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant)
                        and isinstance(item.value.value, str)):
                    continue   # a docstring
                if isinstance(item, ast.JoinedStr):
                    continue
                yield from _walk(item, path + ((name, i),), node)
        elif isinstance(value, ast.AST) and not isinstance(value, ast.JoinedStr):
            yield from _walk(value, path + ((name, None),), node)


def _replace(tree, path, new):
    node = tree
    for name, i in path[:-1]:
        node = getattr(node, name) if i is None else getattr(node, name)[i]
    name, i = path[-1]
    if i is None:
        setattr(node, name, new)
    else:
        getattr(node, name)[i] = new if new is not None else ast.Pass()


def _get(tree, path):
    node = tree
    for name, i in path:
        node = getattr(node, name) if i is None else getattr(node, name)[i]
    return node


def _header(stmt) -> str:
    """A statement as one line: a simple statement whole, a compound one (``for``, ``if``...) by its first line."""
    if isinstance(stmt, ast.Pass):
        return "(deleted)"
    shallow = copy.copy(stmt)
    for name in ("body", "orelse", "finalbody", "handlers"):
        if getattr(shallow, name, None):
            setattr(shallow, name, [ast.Pass()] if name != "handlers" else [])
    text = ast.unparse(shallow).split("\n")[0]
    return text if len(text) <= 100 else text[:97] + "..."


def _statement_path(tree, path):
    """The path of the innermost statement holding the node at ``path``."""
    best = path
    for k in range(len(path), 0, -1):
        if isinstance(_get(tree, path[:k]), ast.stmt):
            return path[:k]
    return best


def mutate_code(code: str) -> list:
    """Every first-order mutant of ``code`` (Python source) as ``Edit``\\ s, deterministic, no duplicates.

    Mutants that ``ast.unparse`` back to the original, or that no longer compile, are dropped.
    """
    tree = ast.parse(code)
    _claim(tree)
    parts = [ast.unparse(stmt) for stmt in tree.body]   # a mutant re-unparses only its top-level statement
    seen, out = {"\n".join(parts)}, []
    for path, node, parent in list(_walk(tree)):
        if not path:
            continue
        for fn in OPERATORS.values():
            for new, label in fn(node, parent):
                if new is None and path[-1][1] is None:
                    continue   # only a statement in a body can be deleted
                at = _statement_path(tree, path)
                before = _header(_get(tree, at))
                _replace(tree, path, new)            # in place, put back below: no copy of the whole tree
                k = path[0][1]
                try:
                    changed = ast.unparse(tree.body[k])
                    ast.parse(changed)
                    text = "\n".join(parts[:k] + [changed] + parts[k + 1:])
                    after = _header(_get(tree, at))
                except (SyntaxError, ValueError, TypeError, AttributeError, RecursionError):
                    continue
                finally:
                    _replace(tree, path, node)
                if text in seen:
                    continue
                seen.add(text)
                out.append(Edit(label, getattr(node, "lineno", 1), before, after, text))
    return out


# --------------------------------------------------------------------------- mutants of a notebook

@dataclass
class Mutant:
    id: str
    operator: str
    pos: int             # code-cell position (see inprocess.Cell)
    cell: int            # cell index in the notebook
    grade_id: str
    line: int            # line in the cell, 1-based
    before: str
    after: str
    source: str          # the whole mutated cell
    status: str = ""     # killed | survived | equivalent
    why: str = ""
    raised: bool = False  # killed by an exception (not by a wrong value): a cheaper kill, counted apart

    def as_dict(self):
        return {k: getattr(self, k) for k in ("id", "operator", "cell", "grade_id", "line", "before", "after",
                                               "status", "why", "raised")}


def _regions(source):
    """(first line, stop line, code) of each solution region: the lines strictly between the markers."""
    lines = source.split("\n")
    regions = list(_region(lines, BEGIN_SOLUTION, END_SOLUTION, "cell"))
    if not regions:
        return lines, [(-1, len(lines))]
    return lines, [(start, stop) for start, stop, _ in regions]


def cell_mutants(source: str):
    """(line in the cell, Edit, new cell source) for each mutant of a solution cell's regions."""
    lines, regions = _regions(source)
    out = []
    for start, stop in regions:
        body = lines[start + 1: stop]
        code = textwrap.dedent("\n".join(body))
        if not code.strip():
            continue
        first = next((ln for ln in body if ln.strip()), "")
        indent = first[: len(first) - len(first.lstrip())]   # dedent removed this much
        try:
            edits = mutate_code(code)
        except SyntaxError:   # a region that is not Python by itself: leave it alone
            continue
        for e in edits:
            new_body = [indent + ln if ln.strip() else ln for ln in e.code.split("\n")]
            new = "\n".join(lines[: start + 1] + new_body + lines[stop:])
            out.append((start + 1 + e.lineno, e, new))
    return out


def notebook_mutants(cells, exercise: str, limit: int = LIMIT, seed: int = 0) -> list:
    """The mutants of every solution cell, at most ``limit`` (a fixed-seed sample, in notebook order)."""
    found = []
    for cell in cells:
        if cell.kind != "solution":
            continue
        for line, e, new in cell_mutants(cell.source):
            try:
                compile(new, "<mutant>", "exec", dont_inherit=True)
            except (SyntaxError, ValueError):   # e.g. a `return` the region needs to be inside a function
                continue
            found.append((cell, line, e, new))
    if limit and len(found) > limit:
        keep = sorted(random.Random(f"gradlab-mutants:{exercise}:{seed}").sample(range(len(found)), limit))
        found = [found[i] for i in keep]
    return [Mutant(f"m{k:03d}", e.operator, c.pos, c.index, c.label, line, e.before, e.after, new)
            for k, (c, line, e, new) in enumerate(found)]


# --------------------------------------------------------------------------- classifying

def _same(a, b) -> str:
    """'' when two encoded values are equal within the tiny tolerance, else how they differ."""
    try:
        return checks.close(checks.decode(a), checks.decode(b), TINY["rtol"], TINY["atol"])
    except Exception as e:   # an unreadable value: different
        return str(e) or "cannot be compared"


def _noisy(batch) -> set:
    """The records and probes that differ between two runs of the unchanged notebook: nondeterministic."""
    noisy = set()
    if batch.replay is None:
        return noisy
    for ref, rep in zip(batch.reference.cells[batch.start:], batch.replay.cells[batch.start:]):
        for i, (a, b) in enumerate(zip(ref.records, rep.records)):
            if _same(b.get("value"), a.get("value")):
                noisy.add((ref.pos, "record", i))
        for name, doc in ref.probes.items():
            if name not in rep.probes or _same(rep.probes[name], doc):
                noisy.add((ref.pos, "probe", name))
    return noisy


def behaviour_change(run, reference, cells, noisy=frozenset()) -> str:
    """'' when a full-marks run did everything the reference did (within TINY), else the first difference."""
    for cell in cells:
        got, want = run.cells[cell.pos], reference.cells[cell.pos]
        if want.status == "ok" and got.status != "ok":
            return f"{cell.label} raised: {got.message}"
        for i, (g, w) in enumerate(zip(got.records, want.records)):
            if (cell.pos, "record", i) in noisy:
                continue
            why = _same(g.get("value"), w.get("value"))
            if why:
                return f"{cell.label}: check {w.get('name')!r} changed within its tolerance ({why})"
        if len(got.records) != len(want.records):
            return f"{cell.label}: {len(got.records)} check records, the reference has {len(want.records)}"
        for name, doc in want.probes.items():
            if (cell.pos, "probe", name) in noisy:
                continue
            if name not in got.probes:
                return f"{cell.label}: `{name}` is no longer a number"
            why = _same(got.probes[name], doc)
            if why:
                return f"{cell.label}: `{name}` changed and the tests passed ({why})"
    return ""


def classify(mutant, run, batch) -> None:
    """Set ``mutant.status`` (killed / survived / equivalent) and ``mutant.why`` from its graded run."""
    parts = score(run, batch.reference, batch.cells)
    lost = [p for p in parts if p.earned < p.points]
    if lost:
        mutant.status, mutant.why = "killed", f"{lost[0].grade_id}: {lost[0].why}"
        # a kill by a wrong value is a check (or expected=) that failed; anything else raised or crashed
        first = next((run.cells[c.pos] for c in batch.cells if c.graded and c.label == lost[0].grade_id), None)
        mutant.raised = run.status != "ok" or (first is not None and first.status != "ok" and
                                               not (first.message or "").startswith("AssertionError"))
        return
    why = behaviour_change(run, batch.reference, batch.cells, _noisy(batch))
    mutant.status, mutant.why = ("survived", why) if why else ("equivalent", "")


# --------------------------------------------------------------------------- one exercise, all exercises

@dataclass
class ExerciseResult:
    exercise: str
    notebook: str
    mutants: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0
    timeout: float = 0.0

    def count(self, status):
        return sum(1 for m in self.mutants if m.status == status)

    @property
    def killed(self):
        return self.count("killed")

    @property
    def raised(self):
        """Killed mutants that raised or crashed rather than computing a wrong value."""
        return sum(1 for m in self.mutants if m.status == "killed" and m.raised)

    @property
    def survived(self):
        return self.count("survived")

    @property
    def equivalent(self):
        return self.count("equivalent")

    @property
    def score(self):
        """killed / (killed + survived); None when there is nothing to count."""
        n = self.killed + self.survived
        return self.killed / n if n else None

    def as_dict(self):
        return {"exercise": self.exercise, "notebook": self.notebook, "mutants": len(self.mutants),
                "killed": self.killed, "killed_by_exception": self.raised, "survived": self.survived, "equivalent": self.equivalent,
                "score": self.score, "seconds": round(self.seconds, 2), "timeout": self.timeout,
                "error": self.error or None, "warnings": list(self.warnings),
                "list": [m.as_dict() for m in self.mutants]}


def run_exercise(path, limit=LIMIT, timeout=None, workers=1, seed=0) -> ExerciseResult:
    """Generate, grade (with hidden tests) and classify the mutants of one solution notebook."""
    t0 = time.monotonic()
    p = os.fspath(path)
    try:
        nb = read_notebook(p)
    except CourseError as e:
        return ExerciseResult(os.path.splitext(os.path.basename(p))[0], p, error=str(e))
    res = ExerciseResult(exercise_name(nb, p), p)
    try:
        cells = notebook_cells(nb, hidden=True, where=p)
        res.mutants = notebook_mutants(cells, res.exercise, limit=limit, seed=seed)
        cells, batch = grade_notebook(nb, [{m.pos: m.source} for m in res.mutants], hidden=True,
                                      timeout=timeout, workers=workers, stop_on_loss=True)
    except CourseError as e:
        res.error = str(e)
        res.mutants = []
        return res
    ref_parts = score(batch.reference, batch.reference, cells)
    failing = [p.grade_id for p in ref_parts if p.earned < p.points]
    if failing:
        res.error = f"the solution itself fails {', '.join(failing)}: fix the notebook first"
        res.mutants = []
        return res
    for cell in cells:
        if batch.reference.cells[cell.pos].status != "ok":
            res.warnings.append(f"{cell.label} raises in the solution: {batch.reference.cells[cell.pos].message}")
    noisy = _noisy(batch)
    if noisy:
        names = sorted({f"{cells[pos].label}:{what}" for pos, _, what in noisy}, key=str)
        res.warnings.append("values that differ between two runs of the solution (ignored): " + ", ".join(names))
    for m, run in zip(res.mutants, batch.runs):
        classify(m, run, batch)
    res.seconds, res.timeout = time.monotonic() - t0, batch.timeout
    if possible(ref_parts) == 0:
        res.warnings.append("no graded points")
    return res


def find_notebooks(paths=(), solutions="solutions"):
    """The notebooks named (files or folders), else every ``*.ipynb`` in ``solutions``."""
    if not paths:
        if not os.path.isdir(solutions):
            raise CourseError(f"no notebooks given and no solutions folder '{solutions}'")
        paths = [solutions]
    out = []
    for p in paths:
        if os.path.isdir(p):
            out.extend(sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".ipynb")))
        else:
            out.append(p)
    return out


def run_all(paths, limit=LIMIT, timeout=None, workers=1, seed=0, progress=None) -> list:
    """``run_exercise`` for each notebook in turn (the mutants of one notebook run ``workers`` at a time)."""
    results = []
    for p in paths:
        r = run_exercise(p, limit=limit, timeout=timeout, workers=workers, seed=seed)
        if progress:
            progress(r)
        results.append(r)
    return results


# --------------------------------------------------------------------------- the report

def _pct(x):
    return "-" if x is None else f"{100 * x:.1f}%"


def table(results, min_score=None) -> str:
    """exercise | mutants | killed (of them, by an exception) | survived | equivalent | score, and a total."""
    w = max([len(r.exercise) for r in results] + [8])
    head = (f"{'exercise':<{w}}  {'mutants':>7}  {'killed':>6}  {'(raised)':>8}  {'survived':>8}  "
            f"{'equivalent':>10}  {'score':>6}")
    out = [head, "-" * len(head)]
    for r in results:
        if r.error:
            out.append(f"{r.exercise:<{w}}  ERROR: {r.error}")
            continue
        flag = "  < min" if min_score is not None and r.score is not None and r.score < min_score else ""
        out.append(f"{r.exercise:<{w}}  {len(r.mutants):>7}  {r.killed:>6}  {r.raised:>8}  {r.survived:>8}  "
                   f"{r.equivalent:>10}  {_pct(r.score):>6}{flag}")
    ok = [r for r in results if not r.error]
    k, s = sum(r.killed for r in ok), sum(r.survived for r in ok)
    out.append("-" * len(head))
    out.append(f"{'total':<{w}}  {sum(len(r.mutants) for r in ok):>7}  {k:>6}  {sum(r.raised for r in ok):>8}  {s:>8}  "
               f"{sum(r.equivalent for r in ok):>10}  {_pct(k / (k + s) if k + s else None):>6}")
    return "\n".join(out)


def survivor_lines(result, equivalent=False) -> list:
    """One line per survived (and with ``equivalent``, equivalent) mutant: file, cell, line, before -> after."""
    out = []
    for m in result.mutants:
        if m.status == "survived" or (equivalent and m.status == "equivalent"):
            tag = "survived" if m.status == "survived" else "equivalent"
            line = (f"{result.notebook}:cell {m.cell} ({m.grade_id}):{m.line}: [{m.operator}] "
                    f"{m.before} -> {m.after}  ({tag}{': ' + m.why if m.why else ''})")
            out.append(line)
    return out


def to_json(results, min_score=None) -> str:
    return json.dumps({"min_score": min_score, "exercises": [r.as_dict() for r in results]}, indent=1) + "\n"


__all__ = ["Edit", "ExerciseResult", "Mutant", "OPERATORS", "behaviour_change", "cell_mutants", "classify",
           "find_notebooks", "mutate_code", "notebook_mutants", "run_all", "run_exercise", "survivor_lines",
           "table", "to_json"]
