"""Layer 4: every op, each in one place (forward, VJP, JVP, formula, samples).

Each file is named for the kind of ops it holds, never for one of them, so that ``gradlab.ops.<file>``
is always the module (a file named ``softmax.py`` would be hidden by the function ``gradlab.ops.softmax``):

====================  =======================================================================
``arithmetic``        ``+ - * / **``, floor_divide, remainder, fmod, lerp, logaddexp, atan2, hypot, xlogy, diff
``unary``             the one-input elementwise functions (exp, log, tanh, sin, asin, erf, floor, sign...)
``activations``       gelu, silu, softplus, leaky_relu
``softmax_ops``       softmax, log_softmax (and their backward ops)
``compare``           eq/ne/lt/le/gt/ge, equal, allclose, isclose, isnan/isinf/isfinite, isin
``logical``           logical_and/or/xor/not
``selection``         where, clamp (clip, clamp_min, clamp_max), maximum, minimum, nan_to_num
``reduce``            sum, mean, max/min, amax/amin, argmax/argmin, var/std, prod, logsumexp, cumulative ops,
                      any/all, count_nonzero, nansum/nanmean, bincount, sum_to
``sorting``           sort, argsort, topk, msort, kthvalue, median, mode, unique(_consecutive)
``shape``             reshape/view, permute/transpose, (un)squeeze, expand, flip, roll, repeat/tile, movedim...
``join_split``        cat/stack (and h/v/d/column stacks), split/chunk/tensor_split, unbind
``indexing``          ``x[...]``, select, gather, index_select, index_add/copy/fill, masked_fill/select, nonzero
``scattering``        scatter, scatter_add
``diagonals``         diagonal, diag, trace, tril, triu
``products``          matmul, mm, bmm, dot, mv, addmm, outer, tensordot
``contraction``       einsum
``vector_norms``      norm (``linalg`` is the ``gradlab.linalg`` namespace: vector_norm, matrix_norm, norm)
``conv``, ``pool``, ``pad``   conv2d (and conv2d_naive, the loops it is checked against), unfold/fold;
                              max/avg_pool2d; pad (conv 1-d/3-d and transposed are nn/_conv.py,
                              built on these)
``cast``, ``quant``           to/float/half/... and clone; fake quantization
``layer_batch_norm``  the LayerNorm and BatchNorm ops (one node each; ``F.layer_norm``/``F.batch_norm`` call them)
``dropout``, ``embedding_lookup``, ``nll_loss``   the Dropout, Embedding and NLLLoss ops behind ``F``'s functions
``recurrent``         fused_lstm_cell, fused_gru_cell, fused_lstm (LSTM/GRU steps after the matmuls; a whole LSTM sequence)
====================  =======================================================================

Around them: ``autocast`` (the autocast switch, its policy and the wrapper the registry puts around an op that names one), ``registry`` (the op table the generic tests run over), ``samples`` (shared sample
inputs), ``binding`` and ``methods`` (how ops become ``Tensor`` methods), ``fused_backward``
(one-pass VJP ops), ``_util`` (argument checks and promotion shared by every op).

Importing this package also plugs the ops into ``Tensor`` (operators and
methods such as ``x.sum()``), which is how the tensor layer reaches the ops
without importing them.
"""
from __future__ import annotations

from .. import _tensor as _tensor_mod
from .._tensor import Tensor
from ..factories import (  # ops use these inside VJPs (O.zeros_like...)
    empty_like, full, full_like, ones, ones_like, zeros, zeros_like,
)
from . import linalg
from .activations import gelu, leaky_relu, silu, softplus
from .arithmetic import (  # noqa: A004 - PyTorch's names
    add, atan2, diff, div, divide, floor_divide, fmod, hypot, lerp, logaddexp, mul, multiply, pow, remainder,
    rsub, square, sub, subtract, true_divide, xlogy,
)
from .cast import _METHOD_ONLY_CASTS, bfloat16, bool, clone, cpu, cuda, double, float, half, int, long, to, type_as
from .compare import (
    allclose, eq, equal, ge, greater, greater_equal, gt, isclose, isfinite, isin, isinf, isnan, le, less, less_equal,
    lt, ne, not_equal,
)
from .diagonals import diag, diagonal, tril, triu
from .contraction import einsum
from .indexing import (
    argwhere, gather, getitem, index_add, index_copy, index_fill, index_select, masked_fill,
    masked_select, nonzero, select, take_along_dim,
)
from .join_split import (
    cat, chunk, column_stack, concat, concatenate, dsplit, dstack, hsplit, hstack, row_stack, split, stack,
    tensor_split, unbind, vsplit, vstack,
)
from .logical import logical_and, logical_not, logical_or, logical_xor
from .products import addmm, bmm, dot, matmul, mm, mv, outer, tensordot
from .vector_norms import norm
from .quant import fake_quantize, fake_quantize_per_tensor_affine
from .reduce import (  # noqa: A004
    all, amax, amin, any, argmax, argmin, bincount, count_nonzero, cummax, cummin, cumprod, cumsum, logsumexp, max,
    histc, mean, min, nanmean, nansum, prod, std, sum, sum_to, var,
)
from .recurrent import fused_gru_cell, fused_lstm, fused_lstm_cell
from .registry import REGISTRY, OpInfo, Sample, SampleSource, formula_of, register, samples_of
from .scattering import scatter, scatter_add
from .shape import (
    as_strided, atleast_1d, atleast_2d, atleast_3d, broadcast_to, contiguous, expand, expand_as, flatten, flip, fliplr,
    flipud, meshgrid, moveaxis, movedim, narrow, permute, ravel, repeat, repeat_interleave, reshape, roll, rot90,
    squeeze, swapaxes, t, tile, transpose, unflatten, unsqueeze, view,
)
from .softmax_ops import top_level_log_softmax as log_softmax, top_level_softmax as softmax
from .sorting import argsort, kthvalue, median, mode, msort, nanmedian, sort, topk, unique, unique_consecutive
from .unary import (  # noqa: A004
    abs, absolute, acos, acosh, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, asin, asinh, atan, atanh,
    ceil, cos, cosh, deg2rad, digamma, erf, erfc, exp, exp2, expm1, floor, frac, lgamma, log, log1p, log2, log10, logit,
    neg, negative, polygamma, rad2deg, reciprocal, relu, round, rsqrt, sigmoid, sign, sin, sinh, sqrt, tan, tanh, trunc,
)
from .methods import install_methods as _install_methods
from .selection import clamp, clamp_max, clamp_min, clip, fmax, fmin, maximum, minimum, nan_to_num, where

# (the matrix trace is only the method x.trace(): gradlab.trace is the debugging trace, gradlab.debug.trace)

#: What ``from gradlab.ops import *`` (and so ``import gradlab``) exports: every op, grouped by file,
#: and the registry. No submodule is exported except ``linalg`` (``gradlab.linalg.norm``, as torch.linalg).
__all__ = [
    # arithmetic
    "add", "sub", "mul", "div", "pow", "true_divide", "divide", "subtract", "multiply", "rsub", "square",
    "floor_divide", "remainder", "fmod", "lerp", "logaddexp", "atan2", "hypot", "xlogy", "diff",
    # unary
    "neg", "negative", "abs", "absolute", "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt",
    "reciprocal", "tanh", "sigmoid", "relu", "sin", "cos", "tan", "sinh", "cosh", "asin", "acos", "atan", "asinh",
    "acosh", "atanh", "arcsin", "arccos", "arctan", "arctan2", "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg",
    "erf", "erfc", "logit", "frac", "floor", "ceil", "trunc", "round", "sign", "lgamma", "digamma", "polygamma",
    # activations, softmax
    "gelu", "silu", "softplus", "leaky_relu", "softmax", "log_softmax",
    # recurrent (fused cells)
    "fused_lstm_cell", "fused_gru_cell", "fused_lstm",
    # compare, logical, where
    "eq", "ne", "lt", "le", "gt", "ge", "less", "less_equal", "greater", "greater_equal", "not_equal", "equal",
    "allclose", "isclose", "isnan", "isinf", "isfinite", "isin",
    "logical_and", "logical_or", "logical_xor", "logical_not",
    "where", "clamp", "clip", "clamp_min", "clamp_max", "maximum", "minimum", "nan_to_num", "fmax", "fmin",
    # reduce, sort
    "sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "var", "std", "prod", "logsumexp", "cumsum",
    "cumprod", "cummax", "cummin", "any", "all", "count_nonzero", "nansum", "nanmean", "bincount", "sum_to", "histc",
    "sort", "argsort", "topk", "msort", "kthvalue", "median", "mode", "unique", "unique_consecutive", "nanmedian",
    # shape, join_split
    "reshape", "view", "permute", "transpose", "swapaxes", "t", "squeeze", "unsqueeze", "flatten", "unflatten",
    "ravel", "expand", "expand_as", "broadcast_to", "contiguous", "as_strided", "movedim", "moveaxis", "narrow",
    "flip", "fliplr", "flipud", "rot90", "roll", "repeat", "tile", "repeat_interleave", "meshgrid",
    "atleast_1d", "atleast_2d", "atleast_3d",
    "cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack", "row_stack",
    "split", "chunk", "tensor_split", "hsplit", "vsplit", "dsplit", "unbind",
    # indexing, scatter, diagonal
    "getitem", "select", "gather", "index_select", "index_add", "index_copy", "index_fill", "masked_fill",
    "masked_select", "take_along_dim", "nonzero", "argwhere", "scatter", "scatter_add",
    "diag", "diagonal", "tril", "triu",
    # matmul, einsum, norm
    "matmul", "mm", "bmm", "dot", "mv", "addmm", "outer", "tensordot", "einsum", "norm", "linalg",
    # cast, quant
    "to", "float", "double", "half", "bfloat16", "long", "int", "bool", "type_as", "clone", "cpu", "cuda",
    "fake_quantize", "fake_quantize_per_tensor_affine",
    # the registry, and the factories ops use
    "REGISTRY", "OpInfo", "Sample", "SampleSource", "formula_of", "register", "samples_of", "Tensor",
    "empty_like", "full", "full_like", "ones", "ones_like", "zeros", "zeros_like",
]

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
TENSOR_METHODS += [  # trigonometry, joining and cutting, order statistics, slice indexing
    "asin", "acos", "atan", "atan2", "asinh", "acosh", "atanh", "arcsin", "arccos", "arctan",
    "arctan2", "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg", "hypot",
    "tensor_split", "hsplit", "vsplit", "dsplit", "fliplr", "flipud", "rot90", "diff",
    "take_along_dim", "argwhere", "clamp_min", "clamp_max",
    "cumprod", "kthvalue", "median", "mode", "unique", "unique_consecutive", "bincount",
    "nansum", "nanmean", "nan_to_num", "xlogy", "cummax", "cummin",
    "index_add", "index_copy", "index_fill",
    "absolute", "divide", "msort",
    "fmax", "fmin", "nanmedian", "histc",
    "lgamma", "digamma",
]


def install(names):
    """Plug more ops into Tensor (used by the op modules of later layers)."""
    # an op that always records a node through its Function is seen by every tool there: bind it directly
    direct = {n for n in names if n in REGISTRY and REGISTRY[n].op is not None and REGISTRY[n].fn is globals().get(n)}
    from .binding import bind_methods, bind_operators
    bind_methods(names, direct)
    bind_operators(direct)


_tensor_mod._ops = __import__(__name__, fromlist=["*"])
install(TENSOR_METHODS)
for _n, _f in _METHOD_ONLY_CASTS.items():
    setattr(Tensor, _n, _f)
_install_methods()  # x.softmax(), x.unbind(), x.new_zeros()...
