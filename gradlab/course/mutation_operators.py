"""The mutation operators: the small, plausible mistakes ``gradlab course mutants`` puts into a solution.

Holds:

* ``OPERATORS``: name -> a function ``(node, parent) -> [(new node, label)]`` (``+`` for ``-``, a dropped
  ``keepdims=True``, a missing transpose, ``range(n - 1)``...; a new node of None deletes a statement), and
  two kinds of mistake a one-token change never makes: a flat walk for a recursive one (``modules()`` ->
  ``children()``) and two dependent steps in the other order (the max taken before the mask); one
  function each: ``op_binop``, ``op_compare``, ``op_keepdims``, ``op_axis``, ``op_max_subtraction``,
  ``op_off_by_one``, ``op_transpose``, ``op_sum_term``, ``op_constant``, ``op_sum_mean``, ``op_drop_call``,
  ``op_negate``, ``op_swap_args``, ``op_return``, ``op_delete``, ``op_traversal``, ``op_swap_statements``;
* ``Edit`` and ``mutate_code(code)``: every first-order mutant of one piece of code, made with ``ast``
  (parse, change one node, ``ast.unparse``), deterministic, without duplicates.

What is mutated in a notebook, and how each mutant is run and classified, is ``mutants.py``'s.
"""
from __future__ import annotations

import ast
import copy
from dataclasses import dataclass

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


_FLAT = {"modules": "children", "named_modules": "named_children"}


def op_traversal(node, parent):
    """A recursive walk made flat: ``model.modules()`` -> ``model.children()`` (nested modules are missed)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _FLAT:
        return [(_with(node, func=_with(node.func, attr=_FLAT[node.func.attr])), "flat-traversal")]
    return []


def _stores(stmt):
    """The names an assignment binds (``x = ...``, ``a, b = ...``; not ``x[i] = ...``, which reads ``x``)."""
    return {n.id for t in getattr(stmt, "targets", ()) for n in ast.walk(t)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _loads(stmt):
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _swaps(body):
    """Indices i where ``body[i]`` and ``body[i + 1]`` are two assignments that each transform the same value
    (both read and rebind ``x``), and where swapping them reads no name before it is set."""
    out = []
    for i in range(len(body) - 1):
        a, b = body[i], body[i + 1]
        if not (isinstance(a, ast.Assign) and isinstance(b, ast.Assign)):
            continue
        shared = _stores(a) & _stores(b) & _loads(a) & _loads(b)
        if shared and not (_stores(a) - shared) & _loads(b) and not (_stores(b) - shared) & _loads(a):
            out.append(i)
    return out


def _swapped(body, i):
    new = list(body)
    new[i], new[i + 1] = new[i + 1], new[i]
    return new


def op_swap_statements(node, parent):
    """Two neighbouring steps that each transform the same value, done in the other order
    (``scores = where(mask, scores, -inf)`` then ``scores = scores - scores.max()``: the max taken before the
    mask). Mutants of single tokens never change the order of steps; this one does. The replacement is the
    compound statement (``def``, ``for``...) whose body holds the pair; ``mutate_code`` swaps the pairs of
    the top level itself."""
    body = getattr(node, "body", None)
    if not isinstance(node, (ast.FunctionDef, ast.For, ast.While, ast.If, ast.With)) or not isinstance(body, list):
        return []
    return [(_with(node, body=_swapped(body, i)), "swap-statements") for i in _swaps(body)]


OPERATORS = {
    "operator": op_binop, "comparison": op_compare, "keepdims": op_keepdims, "axis": op_axis,
    "max-subtraction": op_max_subtraction, "off-by-one": op_off_by_one, "transpose": op_transpose,
    "term-to-zero": op_sum_term, "constant": op_constant, "sum-mean": op_sum_mean, "drop-call": op_drop_call,
    "negate": op_negate, "swap-args": op_swap_args, "return-zero": op_return, "delete": op_delete,
    "flat-traversal": op_traversal, "swap-statements": op_swap_statements,
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
    for i in _swaps(tree.body):   # (the top level has no node to replace: swap its statements' text)
        text = "\n".join(_swapped(parts, i))
        if text not in seen:
            seen.add(text)
            out.append(Edit("swap-statements", tree.body[i].lineno, _header(tree.body[i]),
                            _header(tree.body[i + 1]), text))
    return out
