"""More reductions: ``var``/``std``, ``logsumexp``, ``prod``, ``cumsum`` (``norm`` is in ``norms.py``).

Each backward is written with gradlab ops, so second derivatives work. The
interesting parts:

* ``logsumexp`` subtracts the max before exponentiating: ``exp(1e4)`` is
  ``inf`` in any float, ``exp(1e4 - 1e4)`` is 1. Its gradient is the softmax.
* ``prod``'s gradient is "the product of all the *other* elements". The
  shortcut ``Y / X`` divides by zero when an element is 0, so the zero cases are
  handled separately (one zero: only that element gets a gradient; two or more:
  every first derivative is 0, yet second derivatives are not).
"""
from __future__ import annotations

import math

import numpy as np

from .. import ops as O
from ..autograd.function import Op
from ..backend import dtypes as _dt
from ..backend.arrays import as_array
from ..backend.device import xp_of
from ..errors import ArgumentError, ArgumentTypeError, DTypeError
from .._tensor import Tensor
from ._util import check_tensor, norm_dim, one_dim
from .reduce import _dim_arg, _expand_back, _keep, _kept_shape
from .registry import Sample, register


def _count(shape, axes):
    return math.prod(shape[a] for a in (range(len(shape)) if axes is None else axes))


def _kept(t, in_shape, axes, keepdim):
    """A reduced tensor reshaped so that it broadcasts against the input (reduced dims as size 1)."""
    return t if keepdim else O.reshape(t, _kept_shape(in_shape, axes))


def _kept_array(a, in_shape, axes, keepdim):
    """``_kept`` on arrays: a reduced array reshaped to broadcast against the input (a view)."""
    return a if keepdim else a.reshape(_kept_shape(in_shape, axes))


def _need_float(x, op):
    if _dt.category(x.dtype) < 2:
        raise DTypeError(f"{op}: input has dtype {x.dtype}; {op} needs a floating tensor, e.g. x.float()")


# ------------------------------------------------------------------ var, std
class Var(Op):
    name = "var"
    formula = "dX = broadcast(dY) * 2 * (X - mean(X)) / (N - correction)"

    @staticmethod
    def forward(ctx, x, axes, correction, keepdim):
        ctx.axes, ctx.correction, ctx.keepdim, ctx.in_shape = axes, correction, keepdim, x.shape
        ctx.denom = _count(x.shape, axes) - correction
        ctx.save_for_backward(x)
        a = x.data
        with np.errstate(invalid="ignore", divide="ignore"):  # too few elements: inf/nan, as PyTorch
            d = a - np.mean(a, axis=axes, keepdims=True)
            return as_array(np.sum(d * d, axis=axes, keepdims=keepdim) / max(ctx.denom, 0), dtype=a.dtype)

    def _dvar_dx(self, x):
        centered = x - O.mean(x, dim=self.axes, keepdim=True)
        return centered * (2.0 / self.denom if self.denom > 0 else float("inf"))

    def vjp(self, g):
        (x,) = self.saved_tensors
        return _expand_back(g, self.in_shape, self.axes, self.keepdim) * self._dvar_dx(x), None, None, None

    def _dx_array(self, g, x):
        """``vjp`` on arrays: one new array for the centered input, scaled and multiplied in place."""
        d = x - np.mean(x, axis=self.axes, keepdims=True)
        d *= 2.0 / self.denom if self.denom > 0 else float("inf")
        gk = _kept_array(g, self.in_shape, self.axes, self.keepdim)
        if d.dtype == np.result_type(gk, d):
            return np.multiply(gk, d, out=d)
        return gk * d

    def vjp_arrays(self, g):
        (x,) = self.saved_arrays
        return self._dx_array(g, x), None, None, None

    def jvp(self, t, *_):
        return O.sum(t * self._dvar_dx(self.args[0]), dim=self.axes, keepdim=self.keepdim)


class Std(Var):
    name = "std"
    formula = "dX = broadcast(dY / (2 * Y)) * 2 * (X - mean(X)) / (N - correction)   (0 where Y == 0)"

    @staticmethod
    def forward(ctx, x, axes, correction, keepdim):
        y = np.sqrt(Var.forward(ctx, x, axes, correction, keepdim))
        ctx.save_output(y)
        return y

    def _dvar(self, g, y):
        # d sqrt(v) = dv / (2 sqrt(v)); PyTorch sets it to 0 where the std is 0
        zero = y == 0
        return O.where(zero, 0.0, g / (2 * O.where(zero, 1.0, y)))

    def vjp(self, g):
        x, y = self.saved_tensors
        gv = self._dvar(g, y)
        return _expand_back(gv, self.in_shape, self.axes, self.keepdim) * self._dvar_dx(x), None, None, None

    def vjp_arrays(self, g):
        x, y = self.saved_arrays
        zero = y == 0
        gv = np.where(zero, 0.0, g / (2 * np.where(zero, 1.0, y)))
        return self._dx_array(gv, x), None, None, None

    def jvp(self, t, *_):
        dv = O.sum(t * self._dvar_dx(self.args[0]), dim=self.axes, keepdim=self.keepdim)
        y = self.out
        return self._dvar(dv, y)


def _correction(unbiased, correction, op):
    if correction is not None and unbiased is not None:
        raise ArgumentError(f"{op}: pass correction= or unbiased=, not both")
    if correction is not None:
        return correction
    return 0 if unbiased is False else 1


def _var_std(op_cls, name, input, dim, unbiased, keepdim, correction, axis):
    x = check_tensor(input, name)
    _need_float(x, name)
    if isinstance(dim, bool):  # the old spelling var(x, False)
        dim, unbiased = None, dim
    axes = norm_dim(_dim_arg(dim, axis, name), x.ndim, name)
    return op_cls.apply(x, axes, _correction(unbiased, correction, name), bool(keepdim))


def _var_samples(src):
    shape = src.shape(1, 3, 2, 4)  # at least 2 elements per reduced dim: N - correction > 0
    yield Sample((src.tensor(shape),), desc="all dims, correction=1")
    yield Sample((src.tensor(shape),), dict(dim=src.dim(len(shape)), keepdim=src.boolean()), desc="one dim")
    yield Sample((src.tensor(shape),), dict(dim=src.dim(len(shape)), correction=0), desc="correction=0")
    if len(shape) >= 2:
        yield Sample((src.tensor(shape),), dict(dim=(0, -1), correction=src.choice([0, 1]), keepdim=True),
                     desc="two dims")


def _torch_var(name):
    def ref(torch, x, dim=None, keepdim=False, correction=1):
        return getattr(torch, name)(x, dim=dim, correction=correction, keepdim=keepdim)
    return ref


@register(op=Var, samples=_var_samples, torch=_torch_var("var"))
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None):
    """Variance over ``dim``: ``sum((x - mean)^2) / (N - correction)``; ``correction=1`` by default
    (Bessel's correction, as PyTorch), ``correction=0`` for the population variance."""
    return _var_std(Var, "var", input, dim, unbiased, _keep(keepdim, keepdims), correction, axis)


@register(op=Std, samples=_var_samples, torch=_torch_var("std"))
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None):
    """Standard deviation: ``sqrt(var(...))`` with the same arguments; its gradient is 0 where it is 0."""
    return _var_std(Std, "std", input, dim, unbiased, _keep(keepdim, keepdims), correction, axis)


# ------------------------------------------------------------------ logsumexp
class LogSumExp(Op):
    name = "logsumexp"
    formula = "dX = broadcast(dY) * exp(X - Y)   (the softmax of X)"

    @staticmethod
    def forward(ctx, x, axes, keepdim):
        ctx.axes, ctx.keepdim, ctx.in_shape = axes, keepdim, x.shape
        ctx.save_for_backward(x)
        a = x.data
        m = np.max(a, axis=axes, keepdims=True, initial=-np.inf)
        m = np.where(np.isfinite(m), m, 0)  # rows of -inf (or +inf) stay -inf (+inf) instead of nan
        with np.errstate(divide="ignore", over="ignore"):
            y = np.log(np.sum(np.exp(a - m), axis=axes, keepdims=True)) + m
        y = as_array(y if keepdim else y.reshape(_reduced(a.shape, axes)), dtype=a.dtype)
        ctx.save_output(y)
        return y

    def _softmax(self, x, y):
        return O.exp(x - _kept(y, self.in_shape, self.axes, self.keepdim))

    def vjp(self, g):
        x, y = self.saved_tensors
        return _expand_back(g, self.in_shape, self.axes, self.keepdim) * self._softmax(x, y), None, None

    def vjp_arrays(self, g):
        x, y = self.saved_arrays
        soft = x - _kept_array(y, self.in_shape, self.axes, self.keepdim)
        np.exp(soft, out=soft)
        return _kept_array(g, self.in_shape, self.axes, self.keepdim) * soft, None, None

    def jvp(self, t, *_):
        return O.sum(t * self._softmax(self.args[0], self.out), dim=self.axes, keepdim=self.keepdim)


def _reduced(shape, axes):
    return () if axes is None else tuple(s for i, s in enumerate(shape) if i not in axes)


def _lse_samples(src):
    shape = src.shape(1, 3, 1, 4)
    yield Sample((src.tensor(shape, low=-5, high=5), src.dim(len(shape))), dict(keepdim=src.boolean()), desc="one dim")
    if len(shape) >= 2:
        yield Sample((src.tensor(shape), (0, 1)), desc="two dims")
    yield Sample((src.tensor((2, 3), low=-3e3, high=3e3), 1), desc="large logits")


@register(op=LogSumExp, samples=_lse_samples,
          torch=lambda torch, x, dim, keepdim=False: torch.logsumexp(x, dim, keepdim=keepdim))
def logsumexp(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """``log(sum(exp(x)))`` over ``dim``, computed stably as ``m + log(sum(exp(x - m)))`` with ``m = max(x)``.

    ``dim=None`` reduces every dim (PyTorch requires ``dim``)."""
    x = check_tensor(input, "logsumexp")
    if _dt.category(x.dtype) < 2:  # as PyTorch: integers are summed as the default float dtype
        x = O.to(x, _dt.get_default_dtype())
    axes = norm_dim(_dim_arg(dim, axis, "logsumexp"), x.ndim, "logsumexp")
    return LogSumExp.apply(x, axes, bool(_keep(keepdim, keepdims)))


# ----------------------------------------------------------------------- prod
class Prod(Op):
    name = "prod"
    formula = "dX_i = broadcast(dY) * prod_{j != i} X_j   (= Y / X_i when no element is 0)"

    @staticmethod
    def forward(ctx, x, axes, keepdim, dtype):
        ctx.axes, ctx.keepdim, ctx.in_shape = axes, keepdim, x.shape
        ctx.save_for_backward(x)
        y = as_array(np.prod(x.data, axis=axes, keepdims=keepdim, dtype=dtype))
        ctx.save_output(y)
        return y

    def _others(self, x, y):
        """prod_{j != i} x_j for every i, written with gradlab ops (so it is differentiable)."""
        if self.axes == ():  # a 0-d input: the product of nothing else is 1
            return O.ones_like(x)
        dim = None if self.axes is None else self.axes[0]
        yk = _kept(y, self.in_shape, self.axes, self.keepdim)
        zero = x.data == 0
        if not zero.any():
            return yk / x
        # y is 0 wherever a slice holds a zero; then y / x_safe gives the right 0 (and its
        # derivative, through y, the right product of the others) at the non-zero places.
        z = Tensor._make(zero)
        x_safe = O.where(z, 1.0, x)
        count = np.sum(zero, axis=self.axes, keepdims=True)
        p_nonzero = O.prod(x_safe, dim=dim, keepdim=True) if dim is not None else O.prod(x_safe)
        # at a zero: the product of the others is p_nonzero times the *other* zeros, which is
        # 1 for a lone zero, the other zero (value 0, derivative 1) for a pair, 0 beyond that
        zeros_sum = O.sum(O.where(z, x, 0.0), dim=self.axes, keepdim=True)
        other_zeros = O.where(Tensor._make(count == 1), 1.0,
                              O.where(Tensor._make(count == 2), zeros_sum - x, 0.0))
        return O.where(z, p_nonzero * other_zeros, yk / x_safe)

    def vjp(self, g):
        x, y = self.saved_tensors
        return _expand_back(g, self.in_shape, self.axes, self.keepdim) * self._others(x, y), None, None, None

    def vjp_arrays(self, g):
        x, y = self.saved_arrays
        if self.axes == ():  # a 0-d input: the product of nothing else is 1
            others = xp_of(x).ones_like(x)
        else:
            yk = _kept_array(y, self.in_shape, self.axes, self.keepdim)
            zero = x == 0
            if not zero.any():
                others = yk / x
            else:  # the values of ``_others``: at a lone zero the product of the rest, at 2+ zeros 0
                x_safe = np.where(zero, 1.0, x)
                lone = np.sum(zero, axis=self.axes, keepdims=True) == 1
                p_nonzero = np.prod(x_safe, axis=self.axes, keepdims=True)
                others = np.where(zero, p_nonzero * lone, yk / x_safe)
        return _kept_array(g, self.in_shape, self.axes, self.keepdim) * others, None, None, None

    def jvp(self, t, *_):
        return O.sum(t * self._others(self.args[0], self.out), dim=self.axes, keepdim=self.keepdim)


def _prod_samples(src):
    shape = src.shape(1, 3, 1, 4)
    yield Sample((src.tensor(shape, low=0.5, high=1.5),), desc="all dims")
    yield Sample((src.tensor(shape),), dict(dim=src.dim(len(shape)), keepdim=src.boolean()), desc="one dim")
    for nz in (1, 2, 3):
        v = src.values((3, 4))
        v[:, :nz] = 0.0
        v = np.ascontiguousarray(v[:, src.rng.permutation(4)])
        yield Sample((Tensor._make(v).requires_grad_(), 1), desc=f"{nz} zero(s) per row")
    v = src.values((5,))
    v[src.integers(0, 4)] = 0.0
    yield Sample((Tensor._make(v).requires_grad_(),), desc="one zero, all dims")


@register(op=Prod, samples=_prod_samples,
          torch=lambda torch, x, dim=None, keepdim=False: torch.prod(x) if dim is None else torch.prod(x, dim, keepdim))
def prod(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    """The product of the elements (all, or along one ``dim``); integer and bool inputs give int64."""
    x = check_tensor(input, "prod")
    dim = _dim_arg(dim, axis, "prod")
    axes = None if dim is None else (one_dim(dim, x.ndim, "prod"),) if x.ndim else ()
    if dtype is not None:
        dtype = _dt.as_dtype(dtype)
    elif _dt.category(x.dtype) < 2:
        dtype = _dt.int64
    return Prod.apply(x, axes, bool(_keep(keepdim, keepdims)), dtype)


# --------------------------------------------------------------------- cumsum
class CumSum(Op):
    name = "cumsum"
    formula = "dX = flip(cumsum(flip(dY)))   (each X_i feeds every Y_j with j >= i)"

    @staticmethod
    def forward(ctx, x, dim, dtype):
        ctx.dim = dim
        a = x.data
        if a.ndim == 0:
            return a.astype(dtype or a.dtype)  # a copy, on a's device
        if dtype is None and a.dtype.itemsize <= 2 and a.dtype.kind not in "biu":
            # float16/bfloat16: accumulate in float32 as PyTorch does (a float16 running sum stops growing)
            with np.errstate(over="ignore"):  # a sum past float16's range is inf, quietly, as in PyTorch
                return np.cumsum(a.astype(np.float32), axis=dim).astype(a.dtype)
        return np.cumsum(a, axis=dim, dtype=dtype)

    def vjp(self, g):
        if g.ndim == 0:
            return g, None, None
        return O.flip(O.cumsum(O.flip(g, self.dim), self.dim), self.dim), None, None

    def vjp_arrays(self, g):
        if g.ndim == 0:
            return g, None, None
        xp, d = xp_of(g), self.dim
        r = xp.flip(g, axis=d)
        if g.dtype.itemsize <= 2 and g.dtype.kind not in "biu":  # float16: a float32 running sum, as forward
            with np.errstate(over="ignore"):
                return xp.flip(np.cumsum(r.astype(np.float32), axis=d).astype(g.dtype), axis=d), None, None
        return xp.flip(np.cumsum(r, axis=d), axis=d), None, None

    def jvp(self, t, *_):
        return O.cumsum(t, self.dim)


def _cumsum_samples(src):
    shape = src.shape(0, 3, 0, 4)
    yield Sample((src.tensor(shape), src.dim(len(shape))))
    yield Sample((src.tensor((5,)), 0), desc="1-D")


@register(op=CumSum, samples=_cumsum_samples, torch=lambda torch, x, dim: torch.cumsum(x, dim))
def cumsum(input, dim=None, *, dtype=None, axis=None):
    """Running sum along ``dim``: ``y[i] = x[0] + ... + x[i]``; integer and bool inputs give int64."""
    x = check_tensor(input, "cumsum")
    dim = _dim_arg(dim, axis, "cumsum")
    if dim is None:
        raise ArgumentTypeError("cumsum: dim is required (the dim to run along, e.g. x.cumsum(dim=0))")
    d = one_dim(dim, x.ndim, "cumsum")
    if dtype is not None:
        dtype = _dt.as_dtype(dtype)
    elif _dt.category(x.dtype) < 2:
        dtype = _dt.int64
    return CumSum.apply(x, d, dtype)
