"""Layer 4: every op, each in one place (forward, VJP, JVP, formula, samples).

Importing this package also plugs the ops into ``Tensor`` (operators and
methods such as ``x.sum()``), which is how the tensor layer reaches the ops
without importing them.
"""
from __future__ import annotations

from .. import _tensor as _tensor_mod
from ..factories import (  # ops use these inside VJPs
    empty_like, full, full_like, ones, ones_like, zeros, zeros_like,
)
from .._tensor import Tensor
from .registry import REGISTRY, OpInfo, Sample, SampleSource, formula_of, register, samples_of

from .elementwise import add, div, mul, pow, sub  # noqa: E402,A004
from .pointwise import abs, exp, log, neg, relu, sigmoid, sqrt, tanh  # noqa: E402,A004
from .reduce import amax, amin, argmax, argmin, max, mean, min, sum, sum_to  # noqa: E402,A004
from .shape import (  # noqa: E402
    broadcast_to, cat, concat, concatenate, contiguous, expand, expand_as, flatten, permute, reshape, squeeze,
    stack, swapaxes, t, transpose, unsqueeze, view,
)
from .index import gather, getitem  # noqa: E402
from .linalg import dot, matmul, mm  # noqa: E402
from .select import clamp, clip, maximum, minimum, where  # noqa: E402
from .compare import (  # noqa: E402,A004
    all, allclose, any, eq, equal, floor_divide, ge, greater, greater_equal, gt, isfinite, isinf, isnan, le,
    less, less_equal, logical_and, logical_not, logical_or, logical_xor, lt, ne, not_equal, remainder, sign,
)
from .cast import bfloat16, bool, clone, cpu, cuda, double, float, half, int, long, to, type_as  # noqa: E402,A004
from .unary import ceil, cos, erf, expm1, floor, log1p, reciprocal, round, sin, trunc  # noqa: E402,A004
from .activations import gelu, leaky_relu, silu, softplus  # noqa: E402
from .reductions import cumsum, logsumexp, prod, std, var  # noqa: E402
from .norms import norm  # noqa: E402
from .indexing import index_select, masked_fill, scatter, scatter_add, tril, triu  # noqa: E402
from .rearrange import as_strided, chunk, flip, repeat, roll, split, tile  # noqa: E402
from .contract import bmm, einsum, outer, tensordot  # noqa: E402
from .quant import fake_quantize, fake_quantize_per_tensor_affine  # noqa: E402
# (the matrix trace is only the method x.trace(): gradlab.trace is the debugging trace, gradlab.debug.trace)
from .composite import diag, diagonal, masked_select, repeat_interleave  # noqa: E402
from .mathextra import (  # noqa: E402
    addmm, argsort, cosh, count_nonzero, erfc, exp2, fmod, frac, isclose, lerp, log10, log2, log_softmax,
    logaddexp, logit, moveaxis, movedim, mv, narrow, nonzero, ravel, rsqrt, sinh, softmax, sort, tan, topk,
    unbind, unflatten,
)

from .trig import (  # noqa: E402
    TRIG_METHODS, acos, acosh, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, asin, asinh, atan, atan2,
    atanh, deg2rad, hypot, rad2deg,
)
from .arrange_more import (  # noqa: E402
    ARRANGE_METHODS, argwhere, atleast_1d, atleast_2d, atleast_3d, clamp_max, clamp_min, column_stack, diff, dsplit,
    dstack, fliplr, flipud, hsplit, hstack, meshgrid, rot90, row_stack, take_along_dim, tensor_split, vsplit, vstack,
)
from .stats import (  # noqa: E402
    STATS_METHODS, bincount, cummax, cummin, cumprod, isin, kthvalue, median, mode, nan_to_num, nanmean, nansum, unique,
    unique_consecutive, xlogy,
)
from .index_more import INDEX_METHODS, index_add, index_copy, index_fill  # noqa: E402


def true_divide(input, other):
    return div(input, other)


def subtract(input, other):
    return sub(input, other)


def multiply(input, other):
    return mul(input, other)


def negative(input):
    return neg(input)


def absolute(input):
    """Same as ``abs``."""
    return abs(input)


def divide(input, other, *, rounding_mode=None):
    """Same as ``div``."""
    return div(input, other, rounding_mode=rounding_mode) if rounding_mode is not None else div(input, other)


def msort(input):
    """``input`` sorted along dim 0 (the values of ``sort(input, 0)``)."""
    return input.sort(0).values


def square(input):
    """``input * input``."""
    return mul(input, input)


def rsub(input, other):
    return sub(other, input)


# Tensor methods: ``x.exp()`` is ``gradlab.exp(x)``, and so on.
TENSOR_METHODS = [
    "add", "sub", "mul", "div", "pow", "neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "abs",
    "sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "sum_to", "reshape", "view", "permute",
    "transpose", "unsqueeze", "squeeze", "flatten", "expand", "expand_as", "broadcast_to", "matmul", "mm",
    "dot", "clamp", "clip", "maximum", "minimum", "gather", "eq", "ne", "lt", "le", "gt", "ge",
    "logical_and", "logical_or", "logical_not", "isnan", "isinf", "isfinite", "any", "all", "sign", "to",
    "float", "double", "half", "bfloat16", "long", "int", "bool", "type_as", "clone", "cpu", "cuda",
    "square", "swapaxes", "t", "true_divide", "subtract", "multiply", "negative", "equal", "allclose",
]
TENSOR_METHODS += [  # the operator library (activations, reductions, indexing, contractions)
    "sin", "cos", "log1p", "expm1", "reciprocal", "floor", "round", "ceil", "trunc", "erf", "var", "std",
    "logsumexp", "prod", "cumsum", "norm", "scatter", "scatter_add", "index_select", "masked_fill", "tril", "triu",
    "split", "chunk", "repeat", "tile", "flip", "roll", "as_strided", "outer", "bmm",
    "diag", "diagonal", "masked_select", "repeat_interleave",
    "log2", "log10", "exp2", "rsqrt", "sinh", "cosh", "tan", "erfc", "logit", "frac", "lerp", "logaddexp",
    "fmod", "count_nonzero", "isclose", "addmm", "mv",
]


def install(names):
    """Plug more ops into Tensor (used by the op modules of later layers)."""
    from .registry import REGISTRY
    # an op that always records a node through its Function is seen by every tool there: bind it directly
    direct = {n for n in names if n in REGISTRY and REGISTRY[n].op is not None and REGISTRY[n].fn is globals().get(n)}
    from .binding import bind_methods, bind_operators
    bind_methods(names, direct)
    bind_operators(direct)


_tensor_mod._ops = __import__(__name__, fromlist=["*"])
install(TENSOR_METHODS + TRIG_METHODS + ARRANGE_METHODS + STATS_METHODS + INDEX_METHODS
        + ["absolute", "divide", "msort"])
__import__("gradlab.ops.index_more", fromlist=["install_inplace"]).install_inplace()
for _n, _f in __import__("gradlab.ops.cast", fromlist=["_METHOD_ONLY_CASTS"])._METHOD_ONLY_CASTS.items():
    setattr(Tensor, _n, _f)

from .methods import install_methods as _install_more  # noqa: E402 - x.softmax(), x.unbind(), x.new_zeros()...
_install_more()
