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
``shape``             reshape/view, permute/transpose, (un)squeeze, expand, flip, roll, repeat/tile, movedim...;
                      Alias (the identity node forward mode's make_dual records)
``join_split``        cat/stack (and h/v/d/column stacks), split/chunk/tensor_split, unbind
``indexing``          ``x[...]``, select, gather, index_select, index_add/copy/fill, masked_fill/select, nonzero
``assignment``        the nodes of ``x[i] = v`` (SetItem) and of a tensor overwritten whole (``autograd/inplace.py`` records them)
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
``random_draws``      StandardGamma, a gamma draw with its implicit gradient (``gradlab.distributions`` samples with it)
``sparse_ops``        SparseToDense, SparseMM: the ops of sparse COO tensors (``gradlab.sparse``)
====================  =======================================================================

Around them: ``autocast`` (the autocast switch, its policy and the wrapper the registry puts around an op that names one), ``registry`` (the op table the generic tests run over), ``samples`` (shared sample
inputs), ``binding`` and ``methods`` (how ops become ``Tensor`` methods), ``fused_backward``
(one-pass VJP ops), ``_util`` (argument checks and promotion shared by every op).

Nothing here lists op names: importing the files above runs each op's ``register(...)`` (or, for an
alias or a public function with no node of its own, ``export(...)``), and that entry makes the op public
(``gradlab.ops.<name>``, in ``__all__``) and, with ``method=True``, a ``Tensor`` method (``x.sum()``).
Adding an op to one of these files touches that file only. Importing this package also plugs the
operators into ``Tensor`` (``x + y``), which is how the tensor layer reaches the ops without importing them.
"""
from __future__ import annotations

from .. import _tensor as _tensor_mod
from .._tensor import Tensor
from ..factories import (  # ops use these inside VJPs (O.zeros_like...)
    empty_like, full, full_like, ones, ones_like, zeros, zeros_like,
)
# The files by kind (the table above); importing one registers its ops.
from . import (  # noqa: F401
    activations, arithmetic, assignment, cast, compare, contraction, diagonals, indexing, join_split, linalg,
    logical, products, quant, recurrent, reduce, scattering, selection, shape, softmax_ops, sorting, unary,
    vector_norms,
)
from .binding import bind_methods as _bind_methods, bind_operators as _bind_operators
from .cast import _METHOD_ONLY_CASTS
from .methods import install_methods as _install_methods
from .registry import (  # PUBLIC is this package's __all__: each entry appended its op's name
    METHODS as TENSOR_METHODS, PUBLIC as __all__, REGISTRY, OpInfo, Sample, SampleSource, formula_of, register,
    samples_of,
)

#: What ``from gradlab.ops import *`` (and so ``import gradlab``) exports: every op and public function, as
#: its entry made it public (``registry.register``/``export``), then the registry, the factories the ops use
#: and ``linalg`` (the one submodule exported: ``gradlab.linalg.norm``, as torch.linalg). The matrix trace
#: is only the method x.trace(): gradlab.trace is the debugging trace, gradlab.debug.trace.
__all__ += [
    "REGISTRY", "OpInfo", "Sample", "SampleSource", "formula_of", "register", "samples_of", "Tensor",
    "empty_like", "full", "full_like", "ones", "ones_like", "zeros", "zeros_like", "linalg",
]


def install(names):
    """Give ``Tensor`` a method for each public function named (one that has none yet). An op gets its
    method from its entry (``register(..., method=True)``); this is for a name made public otherwise."""
    _bind_methods(names, {n for n in names if n in REGISTRY and REGISTRY[n].op is not None
                          and REGISTRY[n].fn is globals().get(n)})


_tensor_mod._ops = __import__(__name__, fromlist=["*"])  # the tensor layer's handle on the ops (x.exp() looks up here)
_bind_operators({n for n, i in REGISTRY.items() if i.op is not None and i.fn is globals().get(n)},  # x + y
                arithmetic.OPERATOR_APPLY)
for _n, _f in _METHOD_ONLY_CASTS.items():
    setattr(Tensor, _n, _f)
_install_methods()  # x.softmax(), x.unbind(), x.new_zeros()...
