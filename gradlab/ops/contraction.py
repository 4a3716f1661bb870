"""``einsum``: tensor contractions named by letters (``outer``, ``tensordot`` and ``bmm`` are in ``products.py``).

``einsum('ij,jk->ik', A, B)`` names every dim with a letter: letters shared by
operands are multiplied together, letters missing from the output are summed.
Its VJP is the nicest fact in this file: **the gradient of an einsum with
respect to one operand is another einsum**, the output's gradient contracted
with the *other* operands, producing that operand's letters::

    Y = einsum('ij,jk->ik', A, B)   =>   dA = einsum('ik,jk->ij', dY, B)
                                         dB = einsum('ik,ij->jk', dY, A)

Two details make it general: a letter only the operand has (``'ij->i'``) is
broadcast back over, and a repeated letter (``'ii->i'``, the diagonal) puts the
gradient back on the diagonal of a zero matrix.
"""
from __future__ import annotations

import functools
import string

import numpy as np

from .. import checks as _c, ops as O
from .._tensor import Tensor
from ..autograd.function import Op
from ..backend import dtypes as _dt
from ..backend.arrays import as_array
from ..backend.device import xp_of
from ..errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError, fmt_shape
from ._util import OneRule, apply_in, check_tensor
from .indexing import IndexAddZeros
from .registry import Sample, register

_LETTERS = string.ascii_uppercase + string.ascii_lowercase


# -------------------------------------------------------------------- parsing
def _parse(equation, shapes):
    """Check ``equation`` against the operand shapes; return (terms, output), ellipses spelled out as letters."""
    if not isinstance(equation, str):
        raise ArgumentTypeError(f"einsum: the equation must be a string such as 'ij,jk->ik', got {type(equation).__name__}")
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise ArgumentError(f"einsum: equation {equation!r} has more than one '->'")
    lhs, rhs = eq.split("->") if "->" in eq else (eq, None)
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ArgumentError(f"einsum: equation {equation!r} has subscripts for {len(terms)} operand(s) but "
                            f"{len(shapes)} operand(s) were given")
    for part in terms + ([rhs] if rhs is not None else []):
        bad = set(part.replace("...", "")) - set(_LETTERS)
        if bad or part.count("...") > 1:
            raise ArgumentError(f"einsum: equation {equation!r}: subscripts must be letters a-z, A-Z and at most "
                                f"one '...' per operand, got {part!r}")
    free = [c for c in _LETTERS if c not in eq]
    n_ell = 0
    for i, (term, shape) in enumerate(zip(terms, shapes)):
        named = len(term.replace("...", ""))
        if ("..." in term and named > len(shape)) or ("..." not in term and named != len(shape)):
            raise ShapeError(
                f"einsum: operand {i} has {len(shape)} dim(s) {fmt_shape(shape)} but its subscripts {term!r} name "
                f"{named}; give one letter per dim" + (" (or use '...' for the rest)" if "..." not in term else ""))
        if "..." in term:
            n_ell = max(n_ell, len(shape) - named)
    ell = free[:n_ell]
    if len(ell) < n_ell:
        raise ArgumentError(f"einsum: equation {equation!r} uses too many letters")

    def expand(term, ndim):
        if "..." not in term:
            return list(term)
        k = ndim - len(term.replace("...", ""))
        a, b = term.split("...")
        return list(a) + ell[n_ell - k:] + list(b)

    labels = [expand(t, len(s)) for t, s in zip(terms, shapes)]
    counts = {}
    for t in labels:
        for c in t:
            counts[c] = counts.get(c, 0) + 1
    if rhs is None:  # implicit output: the ellipsis dims, then letters seen once, alphabetically
        out = ell + sorted(c for c in counts if counts[c] == 1 and c not in ell)
    else:
        out = list(rhs.replace("...", "".join(ell))) if "..." in rhs else list(rhs)
        for c in out:
            if c not in counts:
                raise ArgumentError(f"einsum: equation {equation!r}: output letter {c!r} appears in no operand")
        if len(set(out)) != len(out):
            raise ArgumentError(f"einsum: equation {equation!r}: an output letter is repeated")
    sizes = {}
    for i, (t, shape) in enumerate(zip(labels, shapes)):
        for c, s in zip(t, shape):
            prev = sizes.get(c)
            if prev is not None and prev[0] != s and s != 1 and prev[0] != 1:
                what = f"'{c}'" if c not in ell else "a '...' dim"
                raise ShapeError(f"einsum: {what} has size {prev[0]} in operand {prev[1]} but {s} in operand {i} "
                                 f"(shapes {', '.join(fmt_shape(s) for s in shapes)}); sizes must match or be 1")
            if prev is None or prev[0] == 1:
                sizes[c] = (s, i)
    return labels, out, {c: s for c, (s, _) in sizes.items()}


def _eq(ins, out) -> str:
    return ",".join("".join(t) for t in ins) + "->" + "".join(out)


def _from_sublists(args):
    """NumPy's other spelling: ``einsum(A, [0, 1], B, [1, 2], [0, 2])``."""
    args = list(args)
    out = args.pop() if len(args) % 2 == 1 else None

    def letters(sub):
        return "".join("..." if s is Ellipsis else _LETTERS[int(s)] for s in sub)
    eq = ",".join(letters(s) for s in args[1::2]) + ("" if out is None else "->" + letters(out))
    return eq, args[0::2]


# ------------------------------------------------------------------------ op
class Einsum(OneRule, Op):
    name = "einsum"
    formula = "dA_k = einsum('<Y's letters>,<other operands' letters> -> <A_k's letters>', dY, *others)"

    @staticmethod
    def forward(ctx, equation, *operands):
        ctx.labels, ctx.out, ctx.sizes, ctx.equation, ctx.formula = _plan(equation, tuple(x.shape for x in operands))
        ctx.save_for_backward(*operands)
        return _einsum_arrays(ctx.equation, [x._data for x in operands])

    def rule(self, ns, g, *xs):  # the VJP, on tensors and arrays alike (OneRule)
        nf = self.next_functions
        return (None,) + tuple(None if nf[1 + k] is None else self._grad(ns, g, xs, k) for k in range(len(xs)))

    def _grad(self, ns, g, xs, k):
        """The gradient of operand ``k``: an einsum of ``dY`` with the other operands."""
        x = xs[k]
        eq, keep = _grad_eq(self.labels, self.out, self.sizes, x.shape, k)
        others = [xs[j] for j in range(len(xs)) if j != k]
        trivial = not others and tuple(keep) == self.out
        r = g if trivial else O.einsum(eq, g, *others) if ns is O else _einsum_arrays(eq, [g] + others)
        uniq = list(dict.fromkeys(self.labels[k]))
        usize = tuple(dict(zip(self.labels[k], x.shape))[c] for c in uniq)
        shape = tuple(r.shape[keep.index(c)] if c in keep else 1 for c in uniq)
        if shape != tuple(r.shape):  # (a reshape to the same shape would add a node for nothing)
            r = r.reshape(shape)
        if tuple(r.shape) != usize:  # letters only this operand has: every element got dY
            r = O.broadcast_to(r, usize) if ns is O else xp_of(r).broadcast_to(r, usize)
        if len(uniq) == len(self.labels[k]):
            return r
        # a repeated letter ('ii'): only the diagonal was read, so only it gets a gradient
        grid = np.indices(usize, sparse=True)
        return apply_in(ns, IndexAddZeros, r, tuple(grid[uniq.index(c)] for c in self.labels[k]), x.shape)

    def jvp(self, _, *ts):
        xs = self.args[1:]
        total = None
        for k, t in enumerate(ts):
            if t is None:
                continue
            term = O.einsum(self.equation, *[t if j == k else x for j, x in enumerate(xs)])
            total = term if total is None else total + term
        return total


def _einsum_arrays(equation, arrays):
    """``np.einsum`` in the operands' promoted dtype; 16-bit floats are summed in float32 (as PyTorch
    does; NumPy's einsum has no bfloat16 at all)."""
    dt = _dt.result_type(*arrays)
    work = _dt.float32 if dt in (_dt.float16, _dt.bfloat16) else dt
    arrays = [a if a.dtype == work else a.astype(work) for a in arrays]
    return as_array(np.einsum(equation, *arrays, optimize=len(arrays) > 2), dtype=dt)


@functools.lru_cache(maxsize=512)
def _plan(equation, shapes):
    """Parse once per (equation, shapes): a training loop calls the same einsum thousands of times."""
    labels, out, sizes = _parse(equation, shapes)
    labels, out = tuple(tuple(t) for t in labels), tuple(out)  # shared by every call: immutable
    formula = " ; ".join(f"d{_name(k)} = einsum('{_grad_eq(labels, out, sizes, shape, k)[0]}', dY, ...)"
                         for k, shape in enumerate(shapes))
    return labels, out, sizes, _eq(labels, out), formula


def _name(k):
    return "ABCDEFGH"[k] if k < 8 else f"X{k}"


def _grad_eq(labels, out, sizes, shape, k):
    """The einsum giving operand k's gradient (before broadcasting and diagonals), and its output letters."""
    mine = dict(zip(labels[k], shape))
    avail = set(out).union(*[set(t) for j, t in enumerate(labels) if j != k])
    # a letter of size 1 here but larger elsewhere was broadcast: sum over it (it stays size 1)
    keep = [c for c in dict.fromkeys(labels[k]) if c in avail and not (mine[c] == 1 and sizes[c] > 1)]
    ins = [out] + [t for j, t in enumerate(labels) if j != k]
    return _eq(ins, keep), keep


def _einsum_samples(src):
    n, m, p = src.integers(1, 3), src.integers(1, 3), src.integers(1, 3)
    t = src.tensor
    yield Sample(("ij,jk->ik", t((n, m)), t((m, p))), desc="matmul")
    yield Sample(("ii->i", t((3, 3))), desc="diagonal")
    yield Sample(("ii", t((3, 3))), desc="trace (implicit output)")
    yield Sample(("bij,bjk->bik", t((2, n, m)), t((2, m, p))), desc="batched matmul")
    yield Sample(("...ij,...jk", t((2, 1, n, m)), t((3, m, p))), desc="broadcast ellipsis, implicit")
    yield Sample(("i,j", t((n,)), t((m,))), desc="outer (implicit)")
    yield Sample(("ij->", t((n, m))), desc="sum")
    yield Sample(("iij->ji", t((2, 2, 3))), desc="repeated letter and transpose")
    yield Sample(("i,i,i->", t((3,)), t((3,)), t((3,))), desc="three operands")
    yield Sample(("ba", t((n, m))), desc="implicit transpose")
    yield Sample(("ij,ij->ij", t((3, 1)), t((3, 2))), desc="size-1 letter broadcasts")
    yield Sample(("bhqd,bhkd->bhqk", t((1, 2, 2, 3)), t((1, 2, 3, 3))), desc="attention scores")
    yield Sample(("i...->...", t((2, 3))), desc="ellipsis in the output")
    yield Sample((",ij->ij", t(()), t((n, m))), desc="0-d operand")


@register(op=Einsum, samples=_einsum_samples, torch=lambda torch, eq, *ops: torch.einsum(eq, *ops))
def einsum(equation, *operands):
    """Einstein summation, with any subscripts NumPy accepts: ``'ij,jk->ik'``, implicit output
    (``'ij,jk'``: letters seen once, alphabetically), ``'...'`` for leading dims, repeated letters
    (``'ii->i'`` the diagonal, ``'ii'`` the trace). Operands may also be passed as one list
    (``einsum('ij,jk', [a, b])``) or in NumPy's sublist form (``einsum(a, [0, 1], b, [1, 2])``).

    Its gradient with respect to each operand is itself an einsum (see the module notes).
    """
    if isinstance(equation, Tensor):
        equation, operands = _from_sublists((equation,) + operands)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ArgumentError("einsum: give at least one operand")
    xs = [check_tensor(x, "einsum", f"operand {i}") for i, x in enumerate(operands)]
    if len(xs) > 1 and any(x.dtype != xs[0].dtype for x in xs):
        _check_dtypes(equation, xs)
    return Einsum.apply(equation, *xs)


def _check_dtypes(equation, xs):
    """PyTorch's rule for mixed dtypes in einsum: it works through the operands left to right, and a step
    that sums over a letter shared by the two sides (a matrix product) needs one dtype; a step that only
    multiplies (``'i,j->ij'``, ``'i,i->i'``) promotes, as ``*`` does."""
    labels, out, _ = _parse(equation, tuple(x.shape for x in xs))
    have, dt = set(labels[0]), xs[0].dtype
    for k in range(1, len(xs)):
        keep = set(out).union(*(set(t) for t in labels[k + 1:]))  # letters still needed after this step
        if (have & set(labels[k])) - keep and xs[k].dtype != dt:
            src = next((j for j in range(k) if xs[j].dtype == dt), None)
            if src is not None:
                _c.same_dtype("einsum", **{f"operand {src}": xs[src], f"operand {k}": xs[k]})
            raise DTypeError(f"einsum: operands 0 to {k - 1} multiply to dtype {_dt.dtype_name(dt)} but operand {k} "
                             f"has dtype {_dt.dtype_name(xs[k].dtype)}; a contraction needs one dtype: convert "
                             "the operands with .to(...) first")
        dt = _dt._promote_two(dt, xs[k].dtype)
        have = (have | set(labels[k])) & keep
