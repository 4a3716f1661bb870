"""Gradient checking: compare autograd with central finite differences.

For each input element ``x_i`` the numeric derivative of every output is

    (f(x + eps e_i) - f(x - eps e_i)) / (2 eps)

which is accurate to O(eps^2) -- in float64. In float32 the rounding error
(about 1e-7 / eps) swamps it, which is why gradcheck insists on float64.
The analytic side is one backward pass per output element (rows of the
Jacobian); for large outputs random cotangents are used instead.
"""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from ..backend import dtypes as _dt
from ..backend.device import to_device_array, to_host
from ..errors import ArgumentError, GradcheckError
from . import engine

_MAX_ROWS = 64  # outputs with more elements are checked through random projections


def _as_tuple(x):
    return x if isinstance(x, tuple) else (tuple(x) if isinstance(x, list) else (x,))


def _outputs(fn, inputs):
    out = fn(*inputs)
    outs = _as_tuple(out)
    return [o for o in outs if isinstance(o, Tensor) and _dt.is_floating(o.dtype)]


def _loc(shape, flat):
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


def _numeric_column(fn, inputs, x, flat, eps, n_out):
    data = x._data.reshape(-1) if x._data.flags.c_contiguous else None
    if data is None:
        raise ArgumentError("gradcheck: inputs must be contiguous tensors")
    orig = data[flat]
    # (grad mode stays on: fn may itself differentiate, as in gradgradcheck)
    try:
        data[flat] = orig + eps
        plus = [to_host(o._data).astype(np.float64).reshape(-1) for o in _outputs(fn, inputs)]  # host copies
        data[flat] = orig - eps
        minus = [to_host(o._data).astype(np.float64).reshape(-1) for o in _outputs(fn, inputs)]
    finally:
        data[flat] = orig
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus)]


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined=False, seed=0):
    """Check ``fn``'s gradients against central differences.

    ``inputs``: a tensor or tuple of tensors (and other arguments passed as is);
    floating inputs that require grad are checked and must be float64.
    Returns True, or raises :class:`GradcheckError` naming the input, the element,
    and both values (returns False instead when ``raise_exception=False``).
    """
    inputs = _as_tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x._requires_grad]
    if not diff:
        raise ArgumentError("gradcheck: no input requires grad; pass tensors made with requires_grad=True")
    for i in diff:
        if inputs[i].dtype != _dt.float64:
            raise ArgumentError(
                f"gradcheck: input {i} has dtype {_dt.dtype_name(inputs[i].dtype)}; finite differences need "
                "float64 (in float32 rounding error swamps them). Pass x.double().detach().requires_grad_()")
    outs = _outputs(fn, inputs)
    try:
        for oi, out in enumerate(outs):
            _check_output(fn, inputs, diff, oi, out, eps, atol, rtol, seed)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def _check_output(fn, inputs, diff, oi, out, eps, atol, rtol, seed):
    n_out = out._data.size
    # (an output with no graph is checked too: every numeric derivative must then be zero)
    rng = np.random.default_rng(seed)
    if n_out <= _MAX_ROWS:
        cotangents = [np.eye(n_out, dtype=np.float64)[j].reshape(out.shape) for j in range(n_out)]
        labels = [f"output element {_loc(out.shape, j)}" for j in range(n_out)]
    else:
        cotangents = [rng.standard_normal(out.shape) for _ in range(3)]
        labels = [f"random projection {k} of the output" for k in range(3)]
    # analytic: rows v^T J for each cotangent v
    analytic = []
    for v in cotangents:
        if out._requires_grad:
            res = engine.grad([out], [inputs[i] for i in diff], [Tensor._make(to_device_array(v.astype(out.dtype),
                                                                                              out.device))],
                              retain_graph=True, allow_unused=True)
            analytic.append([np.zeros(inputs[i].shape) if g is None else to_host(g._data).astype(np.float64)
                             for i, g in zip(diff, res)])
        else:
            analytic.append([np.zeros(inputs[i].shape) for i in diff])
    for k, i in enumerate(diff):
        x = inputs[i]
        for flat in range(x._data.size):
            cols = _numeric_column(fn, inputs, x, flat, eps, n_out)
            numeric_col = cols[oi]
            for r, v in enumerate(cotangents):
                num = float(v.reshape(-1) @ numeric_col)
                ana = float(analytic[r][k].reshape(-1)[flat])
                if not (abs(ana - num) <= atol + rtol * abs(num)) or np.isnan(ana) != np.isnan(num):
                    name = f" ('{x.name}')" if x.name else ""
                    raise GradcheckError(
                        f"gradcheck: gradient of output {oi} with respect to input {i}{name} is wrong at input "
                        f"element {_loc(x.shape, flat)}, {labels[r]}: analytic {ana:.6g} vs numeric {num:.6g} "
                        f"(|difference| {abs(ana - num):.3g} > atol {atol} + rtol {rtol} * |numeric|)")


def gradgradcheck(fn, inputs, grad_outputs=None, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, seed=0):
    """Check second derivatives: gradcheck the function ``(inputs, v) -> v^T J``.

    The backward pass is run with ``create_graph=True``, so this checks that
    each op's VJP is itself correctly differentiable.
    """
    inputs = _as_tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x._requires_grad]
    outs = _outputs(fn, inputs)
    rng = np.random.default_rng(seed)
    if grad_outputs is None:
        grad_outputs = [Tensor._make(to_device_array(rng.standard_normal(o.shape), o.device)).requires_grad_()
                        for o in outs]
    else:
        grad_outputs = list(_as_tuple(grad_outputs))
    n = len(inputs)

    def first_derivative(*args):
        ins, vs = args[:n], args[n:]
        os = _outputs(fn, ins)
        pairs = [(o, v) for o, v in zip(os, vs) if o._requires_grad]
        if not pairs:
            return tuple(Tensor._make(to_device_array(np.zeros(ins[i].shape), ins[i].device)) for i in diff)
        gs = engine.grad([p[0] for p in pairs], [ins[i] for i in diff], [p[1] for p in pairs],
                         create_graph=True, allow_unused=True)
        return tuple(g if g is not None else Tensor._make(to_device_array(np.zeros(ins[i].shape), ins[i].device))
                     for i, g in zip(diff, gs))

    return gradcheck(first_derivative, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, seed=seed)
