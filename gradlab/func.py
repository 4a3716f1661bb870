"""Functional transforms, as ``torch.func``: derivatives as functions of functions.

``grad(f)`` is a *new function* that returns the gradient of ``f``; the
transforms compose, so ``grad(grad(f))`` is the second derivative and
``jacrev(jacrev(f))`` the Hessian. They are built on the two engines:

* reverse mode (``gradlab.grad``): ``grad``, ``value_and_grad``, ``vjp``,
  ``jacrev`` (one backward pass per *output* element);
* forward mode (``gradlab.autograd.forward_ad``): ``jvp``, ``jacfwd`` (one
  forward pass per *input* element).

Each transform differentiates through a fresh alias of its inputs, so a
tensor used both as an argument and from a closure is differentiated only
through the argument (as in ``torch.func``), and the results stay
differentiable when an enclosing transform (or ordinary autograd) needs them.
"""
from __future__ import annotations

from ._tensor import Tensor
from .autograd import engine as _engine, forward_ad as _fwd
from .autograd.function import AccumulateGrad
from .autograd.grad_mode import state as _grad_state
from .backend import dtypes as _dt, xp_of
from .errors import ArgumentError, GradError, ShapeError, fmt_shape

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "hvp", "vmap"]


# ------------------------------------------------------------------ helpers
def _argnums(argnums, n, what):
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    for a in nums:
        if not isinstance(a, int) or not -n <= a < n:
            raise ArgumentError(f"{what}: argnums {argnums!r} is out of range for {n} positional argument(s)")
    if not single and len({a % n for a in nums}) != len(nums):
        raise ArgumentError(f"{what}: argnums elements must be unique, got {tuple(argnums)!r}; name each argument "
                            "once (its gradient is one tensor)")
    if not single and not nums:
        raise ArgumentError(f"{what}: argnums must be non-empty")
    return tuple(a % n for a in nums), single


def _check_input(x, what, i):
    if not isinstance(x, Tensor):
        raise TypeError(f"{what}: argument {i} must be a Tensor to differentiate with respect to it, "
                        f"got {type(x).__name__}")
    if not _dt.is_floating(x.dtype):
        raise GradError(f"{what}: argument {i} has dtype {_dt.dtype_name(x.dtype)}; only floating tensors "
                        "can be differentiated")


def _prepare(x):
    """A differentiable alias of ``x``: gradients w.r.t. it flow on to ``x`` if ``x`` needs them."""
    if x._requires_grad and _grad_state.enabled:
        t = _fwd._alias(x)
    else:
        t = Tensor._make(x._data, True)
        t._version = x._version
    if x._fw_grad is not None:  # inside jvp/jacfwd: keep the tangent (forward over reverse)
        _fwd._set_tangent(t, x._fw_grad)
    return t


def _outside(tensors, internal):
    """Does any of ``tensors`` depend (through the graph) on a tensor that requires grad
    other than our internal leaves? If not, the results are detached (plain values)."""
    internal_ids = {id(t) for t in internal}
    stack, seen = [], set()
    for t in tensors:
        if isinstance(t, Tensor) and t.grad_fn is not None:
            stack.append(t.grad_fn)
        elif isinstance(t, Tensor) and t._requires_grad and id(t) not in internal_ids:
            return True
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if type(n) is AccumulateGrad:
            if id(n.variable) not in internal_ids:
                return True
            continue
        for e in n.next_functions:
            if e is not None:
                stack.append(e[0])
    return False


def _finish(tree, internal):
    """Detach results (and their tangents) that only depend on our own temporary leaves."""
    if not _grad_state.enabled:
        return _map(tree, lambda t: _detach(t, internal, force=True))
    flat = [t for t in _flatten(tree) if isinstance(t, Tensor)]
    if _outside(flat, internal):
        return tree
    return _map(tree, lambda t: _detach(t, internal))


def _detach(t, internal, force=False):
    if not isinstance(t, Tensor):
        return t
    tan = t._fw_grad
    out = t.detach() if t._requires_grad else t
    if tan is not None:  # a value, but still a dual number for an enclosing jvp
        if tan._requires_grad and (force or not _outside([tan], internal)):
            tan = tan.detach()
        if out is not t or tan is not t._fw_grad:
            _fwd._set_tangent(out, tan)
    return out


def _flatten(tree):
    if isinstance(tree, (tuple, list)):
        return [y for x in tree for y in _flatten(x)]
    if isinstance(tree, dict):
        return [y for x in tree.values() for y in _flatten(x)]
    return [tree]


def _map(tree, f):
    if isinstance(tree, tuple):
        return tuple(_map(x, f) for x in tree)
    if isinstance(tree, list):
        return [_map(x, f) for x in tree]
    if isinstance(tree, dict):
        return {k: _map(v, f) for k, v in tree.items()}
    return f(tree)


def _zeros_like(x):
    return Tensor._make(xp_of(x._data).zeros_like(x._data))


def _split_aux(res, has_aux, what):
    if not has_aux:
        return res, None
    if not (isinstance(res, tuple) and len(res) == 2):
        raise ArgumentError(f"{what}: with has_aux=True the function must return (output, aux)")
    return res


def _grads(outputs, inputs, cotangents, create_graph):
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o._requires_grad]
    if not pairs:
        return [_zeros_like(x) for x in inputs]
    gs = _engine.grad([p[0] for p in pairs], inputs, [p[1] for p in pairs], retain_graph=True,
                      create_graph=create_graph, allow_unused=True)
    return [g if g is not None else _zeros_like(x) for g, x in zip(gs, inputs)]


# ------------------------------------------------------------ reverse mode
def vjp(func, *primals, has_aux=False):
    """``(output, vjp_fn)``: ``vjp_fn(cotangent)`` returns ``cotangent^T J`` for each primal."""
    for i, p in enumerate(primals):
        _check_input(p, "vjp", i)
    xs = [_prepare(p) for p in primals]
    with _enable():
        res = func(*xs)
    out, aux = _split_aux(res, has_aux, "vjp")
    outs = list(out) if isinstance(out, tuple) else [out]
    create = _grad_state.enabled

    def vjp_fn(*cotangents):
        cots = cotangents[0] if len(cotangents) == 1 and isinstance(out, tuple) else cotangents
        cots = list(cots)
        if len(cots) != len(outs):
            raise ArgumentError(f"vjp_fn: got {len(cots)} cotangent(s) for {len(outs)} output(s)")
        for o, c in zip(outs, cots):
            if not isinstance(c, Tensor) or c.shape != o.shape:
                got = fmt_shape(c.shape) if isinstance(c, Tensor) else type(c).__name__
                raise ShapeError(f"vjp_fn: a cotangent has shape {got} but its output has shape "
                                 f"{fmt_shape(o.shape)}; they must match")
        with _enable(create):
            gs = _grads(outs, xs, cots, create_graph=create)
        return tuple(_finish(tuple(gs), xs))

    result = (_finish(out, xs), vjp_fn)
    return result + (_finish(aux, xs),) if has_aux else result


def _run_differentiable(func, args, kwargs, argnums, name, check_name):
    """Call ``func`` with the ``argnums`` arguments replaced by fresh leaves that require grad.

    Returns ``(nums, single, xs, result)``: the argument positions, whether ``argnums`` was a
    single int, the leaves, and what ``func`` returned.
    """
    nums, single = _argnums(argnums, len(args), name)
    for a in nums:
        _check_input(args[a], check_name, a)
    args = list(args)
    xs = [_prepare(args[a]) for a in nums]
    for a, x in zip(nums, xs):
        args[a] = x
    with _enable():
        res = func(*args, **kwargs)
    return nums, single, xs, res


def value_and_grad(func, argnums=0, has_aux=False):
    """A function returning ``(value, gradient)`` (``((value, aux), gradient)`` with has_aux)."""
    def wrapper(*args, **kwargs):
        nums, single, xs, res = _run_differentiable(func, args, kwargs, argnums, "value_and_grad", "grad")
        out, aux = _split_aux(res, has_aux, "grad")
        if not isinstance(out, Tensor) or out.numel() != 1:
            got = fmt_shape(out.shape) if isinstance(out, Tensor) else type(out).__name__
            raise GradError(f"grad: the function must return a one-element tensor (a scalar loss), got {got}; "
                            "reduce it with .sum() or .mean(), or use gradlab.func.vjp / jacrev")
        create = _grad_state.enabled
        with _enable(create):
            gs = _grads([out], xs, [Tensor._make(xp_of(out._data).ones_like(out._data))], create_graph=create)
        g = gs[0] if single else tuple(gs)
        value = out if not has_aux else (out, aux)
        return _finish(value, xs), _finish(g, xs)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of scalar-valued ``func`` w.r.t. argument(s) ``argnums``."""
    vg = value_and_grad(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def jacrev(func, argnums=0, *, has_aux=False):
    """The Jacobian by reverse mode: one backward pass per output element.

    Shape: ``output.shape + input.shape`` (a tuple over outputs and/or argnums).
    """
    def wrapper(*args, **kwargs):
        nums, single, xs, res = _run_differentiable(func, args, kwargs, argnums, "jacrev", "jacrev")
        out, aux = _split_aux(res, has_aux, "jacrev")
        outs = out if isinstance(out, tuple) else (out,)
        create = _grad_state.enabled
        from . import ops as O
        jac = []
        for o in outs:
            if not isinstance(o, Tensor):
                raise ArgumentError(f"jacrev: the function must return a Tensor (or a tuple of them), got "
                                        f"{type(o).__name__}; compute the result with gradlab ops on the inputs")
            n = o.numel()
            rows = [[] for _ in xs]
            for k in range(n):
                basis = xp_of(o._data).zeros(n, dtype=o.dtype)
                basis[k] = 1
                with _enable(create):
                    gs = _grads([o], xs, [Tensor._make(basis.reshape(o.shape))], create_graph=create)
                for r, g in zip(rows, gs):
                    r.append(g)
            per_in = []
            for x, r in zip(xs, rows):
                if n == 0:
                    per_in.append(Tensor._make(xp_of(x._data).zeros(o.shape + x.shape, dtype=x.dtype)))
                else:
                    per_in.append(O.reshape(O.stack(r), o.shape + x.shape))
            jac.append(per_in[0] if single else tuple(per_in))
        j = jac[0] if not isinstance(out, tuple) else tuple(jac)
        j = _finish(j, xs)
        return (j, _finish(aux, xs)) if has_aux else j
    return wrapper


# ------------------------------------------------------------ forward mode
def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J @ tangents)`` in one forward pass (forward-mode AD)."""
    primals = tuple(primals) if isinstance(primals, (tuple, list)) else (primals,)
    tangents = tuple(tangents) if isinstance(tangents, (tuple, list)) else (tangents,)
    if len(primals) != len(tangents):
        raise ArgumentError(f"jvp: got {len(primals)} primal(s) but {len(tangents)} tangent(s); "
                            "give one tangent per primal")
    for i, (p, t) in enumerate(zip(primals, tangents)):
        _check_input(p, "jvp", i)
        if not isinstance(t, Tensor):
            raise TypeError(f"jvp: tangent {i} must be a Tensor, got {type(t).__name__}")
        _fwd.check_tangent("jvp", p, t, label=f"tangent {i}")
    with _fwd.dual_level():
        duals = [_fwd.make_dual(p, t) for p, t in zip(primals, tangents)]
        res = func(*duals)
        out, aux = _split_aux(res, has_aux, "jvp")
        outs = out if isinstance(out, tuple) else (out,)
        prim, tans = [], []
        for o in outs:
            if not isinstance(o, Tensor):
                raise TypeError(f"jvp: the function must return Tensors, got {type(o).__name__}")
            p, t = _fwd.unpack_dual(o)
            prim.append(p)
            tans.append(t if t is not None else _zeros_like(o))
    if isinstance(out, tuple):
        result = (tuple(prim), tuple(tans))
    else:
        result = (prim[0], tans[0])
    return result + (aux,) if has_aux else result


def jacfwd(func, argnums=0, *, has_aux=False):
    """The Jacobian by forward mode: one JVP per input element. Same shape as :func:`jacrev`."""
    def wrapper(*args, **kwargs):
        nums, single = _argnums(argnums, len(args), "jacfwd")
        for a in nums:
            _check_input(args[a], "jacfwd", a)
        from . import ops as O
        cols = None   # cols[input][output] = list of tangent columns
        outs = aux = None
        multi = False
        for ii, a in enumerate(nums):
            x = args[a]
            n = x.numel()
            for k in range(n):
                basis = xp_of(x._data).zeros(n, dtype=x.dtype)
                basis[k] = 1

                def f(xx, _a=a):
                    call = list(args)
                    call[_a] = xx
                    return func(*call, **kwargs)
                res = jvp(f, (x,), (Tensor._make(basis.reshape(x.shape)),), has_aux=has_aux)
                out, tan = res[0], res[1]
                if has_aux:
                    aux = res[2]
                multi = isinstance(out, tuple)
                outs = out if multi else (out,)
                tans = tan if multi else (tan,)
                if cols is None:
                    cols = [[[] for _ in outs] for _ in nums]
                for oi, t in enumerate(tans):
                    cols[ii][oi].append(t)
        if outs is None:  # every input empty: evaluate once for the output shapes
            res = func(*args, **kwargs)
            out, aux = _split_aux(res, has_aux, "jacfwd")
            multi = isinstance(out, tuple)
            outs = out if multi else (out,)
        jac = []
        for oi, o in enumerate(outs):
            per_in = []
            for ii, a in enumerate(nums):
                x = args[a]
                c = cols[ii][oi] if cols is not None and cols[ii][oi] else []
                if not c:
                    per_in.append(Tensor._make(xp_of(x._data).zeros(o.shape + x.shape, dtype=o.dtype)))
                else:
                    per_in.append(O.reshape(O.stack(c, dim=-1), o.shape + x.shape))
            jac.append(per_in[0] if single else tuple(per_in))
        j = tuple(jac) if multi else jac[0]
        return (j, aux) if has_aux else j
    return wrapper


def hessian(func, argnums=0):
    """The Hessian of scalar ``func``: the Jacobian of its gradient.

    Computed as ``jacrev(jacrev(func))`` (reverse over reverse); PyTorch uses
    forward over reverse, which gives the same matrix.
    """
    return jacrev(jacrev(func, argnums), argnums)


def hvp(func, primals, tangents):
    """``(func(*primals), H @ tangents)``: a Hessian-vector product without forming ``H``.

    Reverse over reverse: the gradient ``g(x)`` is built with ``create_graph``,
    then ``v^T dg/dx`` is one more backward pass (H is symmetric, so this is
    ``H v``). Same return convention as ``torch.autograd.functional.hvp``.
    """
    as_tuple = isinstance(primals, (tuple, list))
    primals = tuple(primals) if as_tuple else (primals,)
    tangents = tuple(tangents) if isinstance(tangents, (tuple, list)) else (tangents,)
    if len(primals) != len(tangents):
        raise ArgumentError(f"hvp: got {len(primals)} primal(s) but {len(tangents)} tangent(s)")
    for i, (p, t) in enumerate(zip(primals, tangents)):
        _check_input(p, "hvp", i)
        _fwd.check_tangent("hvp", p, t, label=f"tangent {i}")
    xs = [_prepare(p) for p in primals]
    with _enable():
        out = func(*xs)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise GradError("hvp: the function must return a one-element tensor (a scalar)")
        gs = _grads([out], xs, [Tensor._make(xp_of(out._data).ones_like(out._data))], create_graph=True)
        hv = _grads(gs, xs, list(tangents), create_graph=_grad_state.enabled)
    hv = tuple(hv) if as_tuple else hv[0]
    return _finish(out, xs), _finish(hv, xs)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """Map ``func`` over a batch dimension, as ``torch.func.vmap`` (e.g. per-sample gradients).

    gradlab's version is honest rather than fast: it slices the batched
    arguments, calls ``func`` once per example and stacks the results along
    ``out_dims``. ``in_dims``: an int (every tensor argument), ``None`` (not
    batched) or a tuple with one entry per positional argument.
    """
    def wrapper(*args):
        from . import ops as O
        dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise ArgumentError(f"vmap: in_dims has {len(dims)} entries for {len(args)} positional argument(s)")
        for i, (a, d) in enumerate(zip(args, dims)):
            if d is not None and isinstance(a, Tensor):
                if isinstance(d, bool) or not isinstance(d, int) or not -max(a.ndim, 1) <= d < max(a.ndim, 1):
                    raise ArgumentError(f"vmap: in_dims[{i}] = {d!r} is not a dim of argument {i}, a tensor of shape "
                                        f"{fmt_shape(a.shape)}; give an int in [-{max(a.ndim, 1)}, {a.ndim - 1}] or None")
        sizes = {a.shape[d] for a, d in zip(args, dims) if d is not None and isinstance(a, Tensor)}
        if not sizes:
            raise ArgumentError("vmap: no argument is batched (every in_dim is None or not a Tensor)")
        if len(sizes) > 1:
            raise ShapeError(f"vmap: the batched arguments have different batch sizes {sorted(sizes)}; "
                             "they must all be equal")
        n = sizes.pop()
        results = []
        for i in range(n):
            call = [O.getitem(a, (slice(None),) * (d % a.ndim) + (i,)) if d is not None and isinstance(a, Tensor)
                    else a for a, d in zip(args, dims)]
            results.append(func(*call))
        first = results[0]
        if isinstance(first, tuple):
            od = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(first)
            return tuple(O.stack([r[k] for r in results], dim=od[k]) for k in range(len(first)))
        return O.stack(results, dim=out_dims)
    return wrapper


class _enable:
    """Grad mode on inside a transform (``enable_grad``), or the given mode."""

    def __init__(self, mode=True):
        self.mode = mode

    def __enter__(self):
        self.prev = _grad_state.enabled
        _grad_state.enabled = bool(self.mode)
        return self

    def __exit__(self, *exc):
        _grad_state.enabled = self.prev
        return False
