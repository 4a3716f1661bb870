"""The core pointwise functions of one tensor: neg, exp, log, sqrt, tanh, sigmoid, relu, abs.

Each keeps its forward (on arrays), its VJP (with gradlab ops, differentiable
again), the VJP's array twin, its JVP and its formula together. Where a rule
needs the op's own output (``exp``: dY * Y; ``tanh``: dY * (1 - Y^2)) the op
saves its output instead of its input. More pointwise ops are in ``unary.py``
(sin, erf, ...) and ``activations.py`` (gelu, silu, ...).
"""
from __future__ import annotations

import numpy as np

from .. import ops as O
from ..autograd.function import Op
from ..backend.device import xp_of
from .._tensor import Tensor
from ._util import as_weak, check_tensor
from .fused_backward import SigmoidBackward, TanhBackward
from .registry import register
from .samples import unary_samples


class Neg(Op):
    name = "neg"
    formula = "dX = -dY"

    @staticmethod
    def forward(ctx, x):
        try:
            return np.negative(x.data)
        except TypeError:  # NumPy refuses -bool, as PyTorch does
            from ..errors import DTypeError
            raise DTypeError("neg: -x on a bool tensor is not supported; to invert a mask use ~x "
                             "or x.logical_not()") from None

    def vjp(self, g):
        return (O.neg(g),)

    def vjp_arrays(self, g):
        return (-g,)

    def jvp(self, t):
        return O.neg(t)


class Exp(Op):
    name = "exp"
    formula = "dX = dY * Y   (Y = exp(X))"

    @staticmethod
    def forward(ctx, x):
        with np.errstate(over="ignore"):
            y = np.exp(x.data)
        ctx.save_output(y)
        return y

    def vjp(self, g):
        (y,) = self.saved_tensors
        return (g * y,)

    def vjp_arrays(self, g):
        (y,) = self.saved_arrays
        return (g * y,)

    def jvp(self, t):
        return t * self.out


class Log(Op):
    name = "log"
    formula = "dX = dY / X"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(x.data)

    def vjp(self, g):
        (x,) = self.saved_tensors
        return (g / x,)

    def vjp_arrays(self, g):
        (x,) = self.saved_arrays
        with np.errstate(divide="ignore", invalid="ignore"):
            return (g / x,)

    def jvp(self, t):
        return t / self.args[0]


class Sqrt(Op):
    name = "sqrt"
    formula = "dX = dY / (2 * Y)   (Y = sqrt(X))"

    @staticmethod
    def forward(ctx, x):
        with np.errstate(invalid="ignore"):
            y = np.sqrt(x.data)
        ctx.save_output(y)
        return y

    def vjp(self, g):
        (y,) = self.saved_tensors
        return (g / (2 * y),)

    def vjp_arrays(self, g):
        (y,) = self.saved_arrays
        with np.errstate(divide="ignore", invalid="ignore"):
            return (g / (2 * y),)

    def jvp(self, t):
        return t / (2 * self.out)


class Tanh(Op):
    name = "tanh"
    formula = "dX = dY * (1 - Y^2)   (Y = tanh(X))"

    @staticmethod
    def forward(ctx, x):
        y = np.tanh(x.data)
        ctx.save_output(y)
        return y

    def vjp(self, g):
        (y,) = self.saved_tensors
        return (TanhBackward.apply(g, y),)

    def vjp_arrays(self, g):
        (y,) = self.saved_arrays
        return (g * (as_weak(1.0, y) - y * y),)  # (as_weak: the 1 as a cached 0-d array, for speed)

    def jvp(self, t):
        y = self.out
        return t * (1 - y * y)


class Sigmoid(Op):
    name = "sigmoid"
    formula = "dX = dY * Y * (1 - Y)   (Y = sigmoid(X))"

    @staticmethod
    def forward(ctx, x):
        # exp(-|x|) never overflows: the stable form for both signs of x
        a = x.data
        dt = a.dtype
        if dt.itemsize <= 2:  # float16/bfloat16: compute in float32 and round once, as PyTorch does
            a = a.astype(np.float32)
        if type(a) is np.ndarray and a.ndim:  # the same formula in place: three arrays instead of eight
            # (not 0-d: NumPy returns a 0-d result as a scalar, which cannot be written in place)
            y = np.abs(a)
            np.negative(y, out=y)
            e = np.exp(y, out=y)
            d = e + 1
            np.divide(e, d, out=e)               # e / (1 + e)
            np.divide(1, d, out=d)               # 1 / (1 + e)
            np.copyto(y, d, where=a >= 0)
            y = y.astype(dt, copy=False)
        else:
            e = np.exp(-np.abs(a))
            y = np.where(a >= 0, 1 / (1 + e), e / (1 + e)).astype(dt, copy=False)
        ctx.save_output(y)
        return y

    def vjp(self, g):
        (y,) = self.saved_tensors
        return (SigmoidBackward.apply(g, y),)

    def vjp_arrays(self, g):
        (y,) = self.saved_arrays
        return (g * y * (as_weak(1.0, y) - y),)

    def jvp(self, t):
        y = self.out
        return t * y * (1 - y)


class Relu(Op):
    name = "relu"
    formula = "dX = dY * (X > 0)"

    @staticmethod
    def forward(ctx, x):
        y = np.maximum(x.data, 0)
        ctx.save_output(y)
        return y

    def vjp(self, g):
        (y,) = self.saved_tensors
        return (g * (y > 0),)

    def vjp_arrays(self, g):
        (y,) = self.saved_arrays
        return (g * (y > 0),)

    def jvp(self, t):
        return t * (self.out > 0)


class Abs(Op):
    name = "abs"
    formula = "dX = dY * sign(X)"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.abs(x.data)

    def vjp(self, g):
        (x,) = self.saved_tensors
        return (g * O.sign(x),)

    def vjp_arrays(self, g):
        (x,) = self.saved_arrays
        return (g * xp_of(x).sign(x),)

    def jvp(self, t):
        return t * O.sign(self.args[0])


def _unary(op_cls, name, torch_name=None, floating=False, **sample_kw):
    def fn(input):
        x = input if type(input) is Tensor else check_tensor(input, name)
        if floating and x.data.dtype.kind in "biu":  # torch.exp(int_tensor) is float32 (the default dtype)
            from ..backend import dtypes as _dt
            x = O.to(x, _dt.get_default_dtype())
        return op_cls.apply(x)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name}. Backward: {op_cls.formula}"
    tn = torch_name or name
    return register(name, op=op_cls, samples=unary_samples(**sample_kw), elementwise=True,
                    torch=lambda torch, x: getattr(torch, tn)(x))(fn)


neg = _unary(Neg, "neg")
exp = _unary(Exp, "exp", floating=True)
log = _unary(Log, "log", floating=True, low=0.2, high=3.0)
sqrt = _unary(Sqrt, "sqrt", floating=True, low=0.2, high=3.0)
tanh = _unary(Tanh, "tanh", floating=True)
sigmoid = _unary(Sigmoid, "sigmoid", floating=True)
relu = _unary(Relu, "relu", away_from=0.0)
abs = _unary(Abs, "abs", away_from=0.0)  # noqa: A001 - PyTorch's name
