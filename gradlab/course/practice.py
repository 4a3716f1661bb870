"""``gradlab practice OP``: a drill notebook for any differentiable op of the registry.

The student writes the op's VJP (and its JVP, where the op has a forward-mode rule); ``gradlab grade``
grades it on the registry's own generated inputs (``gradlab/ops/registry.py``: the same samples the op
test suite runs, drawn with several seeds: broadcasting both ways, size-0 and size-1 dims, negative
dims, as the op's sample generator makes them), plus a float64 finite-difference check of the
student's VJP. Hints come from the op's formula, one at a time (``hint()``). The reference answer is
never in the drill: ``gradlab grade`` writes the reference notebook (the registry's own rule, through
gradlab's autograd) into a temporary folder the student's kernel cannot see.

What a drill asks: ``vjp(grad, *inputs, **kwargs)`` returns one gradient per input tensor that
requires grad (in order; ``grad`` is one tensor per floating output: a tuple when the op has several);
``jvp(tangents, *inputs, **kwargs)`` returns the output's tangent (``tangents``: one per such input).

Holds: :func:`drillable` (the ops a drill can check), :func:`refusal` (why another cannot),
:func:`cases` / :class:`Case` (the graded inputs), :func:`reference_vjp` / :func:`reference_jvp`,
:func:`score` (an answer graded in process, as the graded cells grade it), :func:`hint`,
:func:`drill_notebook` / :func:`reference_notebook`, :func:`write_drill` and :func:`grade_drills`.

Also: ``gradlab_float64``, the records the graded cells make (``vjp_record``, ``jvp_record``,
``gradcheck_record``), ``small_cases`` (the finite-difference cases), ``hints`` and ``drill_op(path)``
(the op a drill notebook practises).
"""
from __future__ import annotations

import dataclasses
import functools
import os
import tempfile

import numpy as np

from .. import nn as _nn  # noqa: F401 - registers the nn.functional ops: the drills cover the whole registry
from ..ops.registry import REGISTRY, SampleSource
from .notebook import CourseError

SEEDS = (0, 1, 2, 3)     # each seed draws the op's samples again: more shapes, dims and broadcasts
GRADCHECK_CASES = 2      # cases the float64 finite-difference check runs on (small inputs only)


def _tensor():
    from .._tensor import Tensor
    return Tensor


def _float_outputs(out):
    Tensor = _tensor()
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in outs if isinstance(o, Tensor) and o.is_floating_point()]


def _map_tensors(args, fn):
    """``args`` with every tensor (also inside a list or tuple argument, as ``cat`` takes) replaced by ``fn(t)``."""
    Tensor = _tensor()
    out = []
    for a in args:
        if isinstance(a, Tensor):
            out.append(fn(a))
        elif isinstance(a, (list, tuple)) and any(isinstance(x, Tensor) for x in a):
            out.append(type(a)(fn(x) if isinstance(x, Tensor) else x for x in a))
        else:
            out.append(a)
    return out


def _flat(args):
    """Every tensor of ``args`` in order (also those inside list or tuple arguments)."""
    found = []
    _map_tensors(args, lambda t: found.append(t) or t)
    return found


# ----------------------------------------------------------------------------- the graded inputs
@dataclasses.dataclass
class Case:
    """One graded input of a drill: the sample's args and kwargs (fresh float64 leaves), the upstream
    gradient (one per floating output) and, for the JVP, one tangent per input that requires grad."""
    name: str
    args: tuple
    kwargs: dict
    grads: tuple
    tangents: tuple
    small: bool

    def inputs(self):
        """Fresh copies of the args (so an answer that changes its inputs in place changes nothing else)."""
        def fresh(a):
            c = a.detach().clone()
            return c.requires_grad_(True) if a.requires_grad else c
        return _map_tensors(self.args, fresh)

    @property
    def grad(self):
        return self.grads[0] if len(self.grads) == 1 else tuple(self.grads)


def _describe(args):
    Tensor = _tensor()

    def one(a):
        if isinstance(a, Tensor):
            return f"{tuple(a.shape)}"
        if isinstance(a, (list, tuple)) and any(isinstance(x, Tensor) for x in a):
            return "[" + ", ".join(one(x) for x in a) + "]"
        return repr(a)
    return ", ".join(one(a) for a in args)


@functools.lru_cache(maxsize=None)
def _cases(name):
    info = REGISTRY[name]
    rng = np.random.default_rng(12345)
    Tensor = _tensor()
    out, seen = [], set()
    for seed in SEEDS:
        try:
            samples = list(info.samples(SampleSource(seed)))
        except Exception:  # noqa: BLE001 - a sample generator that fails cannot be drilled
            return []
        for i, s in enumerate(samples):
            args = tuple(s.args)
            if not any(a.requires_grad for a in _flat(args)):
                continue
            key = (s.desc, _describe(args), repr(sorted(s.kwargs.items(), key=lambda kv: kv[0]))[:200])
            if key in seen:
                continue
            seen.add(key)
            try:
                res = info.fn(*args, **s.kwargs)
            except Exception:  # noqa: BLE001
                continue
            fouts = _float_outputs(res)
            if not fouts or not any(o.requires_grad for o in fouts):
                continue
            grads = tuple(Tensor._make(rng.standard_normal(o.shape).astype(np.float64)) for o in fouts)
            tangents = tuple(Tensor._make(rng.standard_normal(a.shape).astype(np.float64)) for a in _flat(args)
                             if a.requires_grad)
            small = sum(int(np.prod(a.shape)) for a in _flat(args)) <= 64 and all(
                o.dtype == gradlab_float64() for o in fouts)
            label = f"seed {seed} sample {i}: {s.desc or 'inputs'} ({_describe(args)})"
            out.append(Case(label, args, dict(s.kwargs), grads, tangents, small))
    return out


def cases(name):
    """The graded inputs of op ``name``'s drill (the registry's samples over :data:`SEEDS`)."""
    return list(_cases(name))


# ----------------------------------------------------------------------------- the registry's own rules
def _leaves(case_inputs):
    return [a for a in _flat(case_inputs) if a.requires_grad]


def gradlab_float64():
    import gradlab
    return gradlab.float64


def reference_vjp(name):
    """The registry's VJP for op ``name``, through gradlab's autograd: ``vjp(grad, *inputs, **kwargs)``."""
    import gradlab
    info = REGISTRY[name]

    def vjp(grad, *inputs, **kwargs):
        ins = list(inputs)
        leaves = _leaves(ins)
        outs = [o for o in _float_outputs(info.fn(*ins, **kwargs)) if o.requires_grad]
        gs = list(grad) if isinstance(grad, (tuple, list)) else [grad]
        got = gradlab.autograd.grad(outs, leaves, gs[:len(outs)], allow_unused=True)
        return tuple(g if g is not None else gradlab.zeros_like(x) for g, x in zip(got, leaves))
    return vjp


def reference_jvp(name):
    """The registry's JVP for op ``name`` (gradlab's forward mode): ``jvp(tangents, *inputs, **kwargs)``."""
    import gradlab
    info = REGISTRY[name]

    def jvp(tangents, *inputs, **kwargs):
        ins = list(inputs)
        leaves = _leaves(ins)

        def f(*xs):
            swap = {id(a): x for a, x in zip(leaves, xs)}
            outs = _float_outputs(info.fn(*_map_tensors(ins, lambda t: swap.get(id(t), t)), **kwargs))
            return outs[0] if len(outs) == 1 else tuple(outs)
        _, t = gradlab.func.jvp(f, tuple(x.detach() for x in leaves), tuple(tangents))
        return t
    return jvp


@functools.lru_cache(maxsize=None)
def _has_jvp(name) -> bool:
    info = REGISTRY[name]
    if not info.jvp:
        return False
    cs = cases(name)
    try:
        reference_jvp(name)(cs[0].tangents, *cs[0].inputs(), **cs[0].kwargs)
        return True
    except Exception:  # noqa: BLE001 - the registry says it has one, but it does not run here
        return False


def refusal(name):
    """Why op ``name`` cannot be drilled (a sentence), or None when it can."""
    info = REGISTRY.get(name)
    if info is None:
        close = sorted(k for k in REGISTRY if name.lower() in k.lower())[:5]
        return (f"'{name}' is not an op of the registry" + (f" (did you mean {', '.join(close)}?)" if close else "")
                + "; `gradlab practice --list` lists the ops a drill can check")
    if not info.differentiable:
        return f"'{name}' is not differentiable (its outputs carry no gradient), so there is no VJP to write"
    cs = cases(name)
    if not cs:
        return (f"'{name}' has no sample inputs with a floating input that requires grad and a differentiable "
                "output, so a drill could not check an answer")
    try:
        got = _reference_records(name, "vjp")
    except Exception as exc:  # noqa: BLE001
        return f"'{name}''s own VJP does not run on its samples ({type(exc).__name__}), so it cannot grade one"
    if not any(np.any(g) for gs in got for g in gs):
        return (f"'{name}''s gradient is zero on every sample (it is piecewise constant), so a drill could not "
                "tell a right answer from a wrong one")
    return None


@functools.lru_cache(maxsize=1)
def drillable():
    """The names of every op a drill can check, sorted."""
    return [n for n in sorted(REGISTRY) if refusal(n) is None]


# ----------------------------------------------------------------------------- grading an answer
def _arrays(x):
    Tensor = _tensor()
    if isinstance(x, Tensor):
        return np.asarray(x.detach().numpy(), dtype=np.float64)
    return np.asarray(x, dtype=np.float64)


def vjp_record(name, answer, case):
    """What the graded cell records for one case: the answer's gradients as float64 arrays."""
    got = answer(case.grad, *case.inputs(), **case.kwargs)
    got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
    n = len(case.tangents)
    if len(got) != n:
        raise ValueError(f"vjp returned {len(got)} gradient(s) for {n} input(s) that require grad")
    return [_arrays(g) for g in got]


def jvp_record(name, answer, case):
    got = answer(case.tangents, *case.inputs(), **case.kwargs)
    got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
    return [_arrays(g) for g in got]


def gradcheck_record(name, answer, case, eps=1e-6):
    """The answer's VJP against central differences of the op (float64): the largest relative error.

    A gradient of the wrong shape, or one holding a nan, is infinitely wrong (``inf``): a nan must
    never slip through a ``<`` test (``max(0.0, nan)`` is ``0.0``)."""
    got = vjp_record(name, answer, case)
    worst = 0.0
    for k, num in enumerate(_central_differences(name, case, eps)):
        if got[k].shape != num.shape:
            return float("inf")
        if num.size:
            err = np.abs(num - got[k]) / (1.0 + np.abs(num))
            worst = max(worst, float(np.max(np.where(np.isnan(err), np.inf, err))))
    return worst


_DIFFERENCES = {}


def _central_differences(name, case, eps):
    """The op's VJP on ``case`` by central differences in float64, one array per input that requires grad.

    It depends on the op and the case only, never on the answer, so it is computed once per case
    (``_DIFFERENCES``) however many answers are checked against it."""
    key = (name, case.name, eps)
    if key not in _DIFFERENCES:
        info = REGISTRY[name]
        Tensor = _tensor()
        ins = case.inputs()
        leaves = _leaves(ins)

        def f(vals):
            swap = {id(a): Tensor._make(v) for a, v in zip(leaves, vals)}
            outs = _float_outputs(info.fn(*_map_tensors(ins, lambda t: swap.get(id(t), t)), **case.kwargs))
            return sum(float(np.sum(_arrays(o) * _arrays(g))) for o, g in zip(outs, case.grads))
        base = [_arrays(x).copy() for x in leaves]
        nums = [np.zeros(x.shape) for x in base]
        for k, x in enumerate(base):
            for idx in np.ndindex(x.shape):
                plus = [b.copy() for b in base]
                minus = [b.copy() for b in base]
                plus[k][idx] += eps
                minus[k][idx] -= eps
                nums[k][idx] = (f(plus) - f(minus)) / (2 * eps)
        _DIFFERENCES[key] = nums
    return _DIFFERENCES[key]


def _same(a, b, rtol=1e-6, atol=1e-8) -> bool:
    a, b = list(a), list(b)
    return len(a) == len(b) and all(x.shape == y.shape and np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True)
                                    for x, y in zip(a, b))


def score(name, vjp, jvp=None):
    """Grade answers in process, part by part as the drill's graded cells do: ``(earned, possible, parts)``.

    A part earns its point when every case gives what the registry's own rule gives (the graded
    cells record the same values and the grader compares them with the reference kernel's)."""
    parts = {}
    cs = cases(name)

    def part(key, fn):
        try:
            parts[key] = bool(fn())
        except Exception:  # noqa: BLE001 - an answer that raises loses the part
            parts[key] = False
    part("vjp", lambda: all(_same(vjp_record(name, vjp, c), r) for c, r in zip(cs, _reference_records(name, "vjp"))))
    if small_cases(name):
        part("gradcheck", lambda: all(gradcheck_record(name, vjp, c) < 1e-4 for c in small_cases(name)))
    if _has_jvp(name):
        part("jvp", lambda: jvp is not None and all(
            _same(jvp_record(name, jvp, c), r) for c, r in zip(cs, _reference_records(name, "jvp"))))
    return sum(parts.values()), len(parts), parts


@functools.lru_cache(maxsize=None)
def _reference_records(name, kind):
    """What the registry's own rule records on every case (``kind``: "vjp" or "jvp"): the values every answer
    is compared with, computed once per op (it raises where the rule does not run, and is then not kept)."""
    if kind == "vjp":
        return [vjp_record(name, reference_vjp(name), c) for c in cases(name)]
    return [jvp_record(name, reference_jvp(name), c) for c in cases(name)]


def small_cases(name):
    """The cases the finite-difference check runs on: small, with float64 outputs (none: no such part)."""
    return [c for c in cases(name) if c.small][:GRADCHECK_CASES]


# ----------------------------------------------------------------------------- hints
def hints(name):
    """The hints of op ``name``'s drill, from its formula, in the order ``hint()`` gives them."""
    info = REGISTRY[name]
    out = []
    if info.formula:
        out.append(f"the rule, as gradlab writes it: {info.formula}")
    else:
        out.append(f"gradlab composes {name} from other ops: write its forward as those ops and apply the chain "
                   "rule through them (the VJP of a composition is the VJPs in reverse order)")
    out.append("return one gradient per input that requires grad, each with that input's shape: where an input "
               "was broadcast, sum the gradient over the broadcast axes (keepdim for size-1 axes)")
    out.append("an op that picks or moves elements (indexing, reshape, transpose, cat) sends each gradient "
               "element back to where it came from; a reduction broadcasts the gradient back over the reduced dims "
               "(put them back with unsqueeze when keepdim=False, and count a negative dim from the end)")
    if info.doc:
        out.append(f"what {name} computes: {info.doc}")
    return out


_hint_state = {}


def hint(name):
    """Print the next hint of op ``name``'s drill (one at a time, on request)."""
    hs = hints(name)
    k = _hint_state.get(name, 0)
    if k >= len(hs):
        print(f"no more hints for {name}: {len(hs)} given. gradlab.autograd.gradcheck checks an answer numerically")
        return None
    _hint_state[name] = k + 1
    print(f"hint {k + 1}/{len(hs)}: {hs[k]}")
    return hs[k]


# ----------------------------------------------------------------------------- the notebooks
def _meta(gid, grade=False, solution=False, points=None):
    m = {"grade": grade, "grade_id": gid, "locked": not solution, "schema_version": 3, "solution": solution,
         "task": False}
    if points is not None:
        m["points"] = points
    return {"nbgrader": m}


STUB = "    # YOUR CODE HERE\n    raise NotImplementedError()"


def _answer_cells(name, vjp_body, jvp_body):
    c = cases(name)[0]
    sig = ", ".join(f"x{i}" if isinstance(a, _tensor()) else f"a{i}" for i, a in enumerate(c.args))
    kw = ", **kwargs"
    vjp_body, jvp_body = vjp_body.format(sig=sig), jvp_body.format(sig=sig)
    src = (f"def vjp(grad, {sig}{kw}):\n"
           f'    """The gradient of {name} for each input that requires grad, given the output\'s `grad`."""\n'
           f"{vjp_body}")
    cells = [("vjp_answer", src)]
    if _has_jvp(name):
        cells.append(("jvp_answer", f"def jvp(tangents, {sig}{kw}):\n"
                                    f'    """The tangent of {name}\'s output for the inputs\' `tangents`."""\n'
                                    f"{jvp_body}"))
    return cells


def _notebook(name, vjp_body, jvp_body):
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
    info = REGISTRY[name]
    c = cases(name)[0]
    Tensor = _tensor()
    where = "gradlab" if info.namespace == "gradlab" else info.namespace
    how = "gradlab writes its rule" if info.op is not None else "gradlab composes it from other ops"
    cells = [new_markdown_cell(
        f"# Practice: the VJP of `{where}.{info.name}`\n\n{info.doc or ''}\n\n"
        f"({how}.) Write `vjp(grad, ...)`: given the gradient of the output (`grad`, shape of the output) and the "
        f"op's inputs, return the gradient for each input that requires grad, in order, each with its input's "
        f"shape. The first graded case calls `{info.name}({_describe(c.args)})`"
        + (f" with {', '.join(f'{k}={v!r}' for k, v in c.kwargs.items() if not isinstance(v, Tensor))}"
           if c.kwargs else "")
        + ". Run `hint()` for a hint (one at a time). `gradlab grade` checks your answer on "
        f"{len(cases(name))} generated inputs of the registry, and by float64 finite differences."
        + (" Then write `jvp(tangents, ...)`: forward mode, the output's tangent." if _has_jvp(name) else ""))]
    cells.append(new_code_cell(
        "import numpy as np\nimport gradlab\nfrom gradlab.course import check\n"
        "from gradlab.course import practice\n"
        f"OP = {name!r}\n\n\ndef hint():\n    return practice.hint(OP)",
        metadata=_meta("setup")))
    for gid, src in _answer_cells(name, vjp_body, jvp_body):
        cells.append(new_code_cell(src, metadata=_meta(gid, solution=True)))
    def graded(gid, points, which, label, value, msg):
        cells.append(new_code_cell(f"for case in practice.{which}(OP):\n    check(f\"{label}, {{case.name}}\", {value},\n"
                                   f"          msg={msg!r})", metadata=_meta(gid, grade=True, points=points)))
    graded("vjp", 2, "cases", "vjp", "practice.vjp_record(OP, vjp, case)",
           "one gradient per input that requires grad, with its input's shape (sum over broadcast axes)")
    if small_cases(name):
        graded("gradcheck", 1, "small_cases", "finite differences agree",
               "bool(practice.gradcheck_record(OP, vjp, case) < 1e-4)",
               "your VJP disagrees with central differences of the op in float64")
    if _has_jvp(name):
        graded("jvp", 1, "cases", "jvp", "practice.jvp_record(OP, jvp, case)",
               "the output's tangent: the op's derivative applied to the inputs' tangents")
    return new_notebook(cells=cells, metadata={
        "gradlab": {"practice": name},
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"}}), nbformat


def drill_notebook(name):
    """The drill a student fills in (no reference anywhere in it)."""
    why = refusal(name)
    if why:
        raise CourseError(f"gradlab practice: {why}")
    return _notebook(name, STUB, STUB)[0]


def reference_notebook(name):
    """The instructor side of a drill: the same cells, answered with the registry's own rules."""
    body = "    return practice.reference_vjp(OP)(grad, {sig}, **kwargs)"
    jbody = "    return practice.reference_jvp(OP)(tangents, {sig}, **kwargs)"
    return _notebook(name, body, jbody)[0]


def write_drill(name, out_dir="practice", force=False):
    """Write ``practice/<op>.ipynb``; an existing file is kept unless ``force`` (then backed up to ``.bak``)."""
    import nbformat
    nb = drill_notebook(name)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{name}.ipynb")
    if os.path.exists(path):
        if not force:
            raise CourseError(f"gradlab practice: {path} exists (your work); pass --force to write a fresh drill "
                              "(the old file is kept as .bak)")
        os.replace(path, path + ".bak")
    nbformat.write(nb, path)
    return path


def drill_op(path):
    """The op a drill notebook practises (its ``metadata.gradlab.practice``), or None."""
    from .notebook import read_notebook
    try:
        nb = read_notebook(path)
    except Exception:  # noqa: BLE001 - not a notebook: the grader reports it
        return None
    return ((nb.metadata.get("gradlab") or {}).get("practice")) if hasattr(nb, "metadata") else None


def grade_drills(grade, submissions, **kw):
    """``gradlab grade`` for drills: each is graded against its op's reference notebook, written to a
    temporary folder (hidden from the student's kernel by the grader). Other notebooks pass through to
    ``grade`` (the instructor's grader, or a students' copy's self-check); a drill always goes to the
    grader itself, since its reference is made here and needs no solutions folder."""
    import nbformat

    from .grading import grade as grade_against
    drills, others = {}, []
    for s in submissions:
        op = drill_op(s)
        (drills.setdefault(op, []) if op else others).append(s)
    results = []
    if others:
        results += grade(others, **kw)
    if drills:
        with tempfile.TemporaryDirectory(prefix="gradlab-practice-") as tmp:
            for op, subs in sorted(drills.items()):
                why = refusal(op)
                if why:
                    raise CourseError(f"{subs[0]}: {why}")
                ref = os.path.join(tmp, f"{op}.ipynb")
                nbformat.write(reference_notebook(op), ref)
                results += grade_against(subs, **{**kw, "against": ref})
    return results


__all__ = ["drillable", "refusal", "cases", "Case", "reference_vjp", "reference_jvp", "score", "hint", "hints",
           "drill_notebook", "reference_notebook", "write_drill", "grade_drills", "vjp_record", "jvp_record",
           "gradcheck_record", "small_cases"]
