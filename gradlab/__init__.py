"""gradlab: a Jupyter-first teaching lab for the machinery under deep learning.

The layers, bottom to top (each imports only from those below it)::

    backend -> tensor -> autograd -> ops -> nn/optim -> viz/debug -> course/cli

``import gradlab`` gives the PyTorch-shaped API: ``gradlab.tensor``,
``gradlab.randn``, ``x.backward()``, ``gradlab.no_grad()``, ``gradlab.grad``...
"""
__version__ = "0.1.0"

import warnings as _warnings

# NumPy reports floating-point events (inf * 0, exp overflowing to inf, 1 / 0) as
# RuntimeWarnings. PyTorch returns inf/nan quietly, and so does gradlab: every op's
# forward and every backward pass runs with NumPy's errors ignored (backend/fperr.py,
# the one place that does it). This filter is the net under that, for gradlab code
# outside an op; a user's warnings.simplefilter("error") still wins. find_nonfinite
# and detect_anomaly are the tools for hunting the resulting NaNs.
_warnings.filterwarnings("ignore", message=r"(overflow|invalid value|divide by zero|underflow) encountered",
                         category=RuntimeWarning, module=r"gradlab\.")

from .backend import dtypes as _dtypes
from .backend.device import Device as device
from .backend.dtypes import (
    bfloat16, bool_ as bool, double, float, float16, float32, float64, get_default_dtype, half, int8, int16,
    int32, int64, long, set_default_dtype, short, uint8,
)
from .backend.dtypes import int as int  # noqa: PLC0414 - torch.int is int32
from .backend.random import Generator, get_rng_state, initial_seed, manual_seed, set_rng_state
from .backend.threads import get_num_threads, set_num_threads
from .errors import (
    ArgumentError, ArgumentTypeError, DeviceError, DTypeError, GradcheckError, GradError, GradlabError,
    IndexOutOfRange, OutOfMemoryError, ShapeError,
)
from ._tensor import Tensor
from .factories import (
    arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like, linspace, logspace, ones, ones_like, rand,
    rand_like, randint, randint_like, randn, randn_like, randperm, tensor, zeros, zeros_like,
)
from .factories import BoolTensor, DoubleTensor, FloatTensor, IntTensor, LongTensor  # noqa: E402 - legacy
from .sampling import bernoulli, multinomial, normal  # noqa: E402 - draws from a tensor's distribution
from . import autograd
from .autograd import enable_grad, grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled
from . import ops
from .ops import *  # noqa: F401,F403 - every op as gradlab.<name>
from .ops import REGISTRY as _REGISTRY
# ``from .ops import *`` brought the cast functions float/int/bool...; at the
# top level those names are dtypes, as ``torch.float32`` and ``torch.bool`` are.
from .backend.dtypes import bfloat16, bool_ as bool, double, float, half, int, long  # noqa: E402,A001
from .factories import full, full_like, ones, ones_like, zeros, zeros_like  # noqa: E402 - the full factories
del cuda  # ``from .ops import *`` brought the cast function; gradlab.cuda is the module, as torch.cuda
from .torch_compat import cuda  # noqa: E402 - CuPy itself loads only on demand; the other PyTorch paths on first use
from . import sparse  # noqa: E402 - sparse COO tensors (it installs Tensor.to_sparse)
from .sparse import sparse_coo, sparse_coo_tensor, spmm, strided  # noqa: E402

#: ``from gradlab import *``: the ops (``gradlab.ops.__all__``, where each op is listed by file) and
#: the names defined above. Subpackages are reached as attributes (``gradlab.nn``, loaded on first
#: use by ``__getattr__`` below); ``gradlab.linalg`` is the one namespace ``gradlab.ops`` exports.
__all__ = [
    # tensors, dtypes, devices
    "Tensor", "tensor", "as_tensor", "from_numpy", "is_tensor", "is_floating_point", "numel", "device",
    "float16", "float32", "float64", "bfloat16", "half", "float", "double", "int8", "int16", "int32", "int64",
    "uint8", "short", "int", "long", "bool", "get_default_dtype", "set_default_dtype",
    "FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "BoolTensor",
    # factories and random numbers
    "arange", "empty", "empty_like", "eye", "full", "full_like", "linspace", "logspace", "ones", "ones_like",
    "zeros", "zeros_like", "rand", "rand_like", "randint", "randint_like", "randn", "randn_like", "randperm",
    "bernoulli", "multinomial", "normal", "Generator", "manual_seed", "initial_seed", "get_rng_state",
    "set_rng_state",
    # sparse COO tensors (gradlab/sparse/)
    "sparse_coo_tensor", "spmm", "sparse_coo", "strided",
    # threads (large arrays are split across them: gradlab/backend/threads.py)
    "get_num_threads", "set_num_threads",
    # autograd
    "grad", "no_grad", "enable_grad", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "set_grad_enabled",
    # errors
    "GradlabError", "ArgumentError", "ArgumentTypeError", "DeviceError", "DTypeError", "GradcheckError",
    "GradError", "IndexOutOfRange", "OutOfMemoryError", "ShapeError",
]
__all__ += [n for n in ops.__all__ if n not in __all__ and n != "cuda"]  # every op (gradlab.cuda is the module)


is_tensor = lambda obj: isinstance(obj, Tensor)  # noqa: E731


def is_floating_point(t) -> bool:
    return t.is_floating_point()


def numel(t) -> int:
    return t.numel()


# Loaded on first use (``gradlab.explain_grad(...)`` imports gradlab.debug then):
# name -> (module, attribute or None for the module itself). Other layers may add entries.
_LAZY = {
    "debug": ("gradlab.debug", None),
    "func": ("gradlab.func", None),
    "utils": ("gradlab.torch_compat.utils", None),
    "profiler": ("gradlab.profiler", None),
    "explain_grad": ("gradlab.debug", "explain_grad"),
    "memory_report": ("gradlab.debug", "memory_report"),
    "trace": ("gradlab.debug", "trace"),
    "source": ("gradlab.debug", "source"),
    "viz": ("gradlab.viz", None),
    "show_graph": ("gradlab.viz", "show_graph"),
    "compile": ("gradlab.compile", None),  # the package, callable (compile/__init__.py): gradlab.compile.kernels works too
    "animate_backward": ("gradlab.viz.widgets", "animate_backward"),
    "animate_forward": ("gradlab.viz.widgets", "animate_forward"),
    "nn": ("gradlab.nn", None),
    "optim": ("gradlab.optim", None),
    "amp": ("gradlab.amp", None),
    "data": ("gradlab.data", None),
    "distributions": ("gradlab.distributions", None),
    "io": ("gradlab.io", None),
    "save": ("gradlab.io", "save"),
    "load": ("gradlab.io", "load"),
    # PyTorch's module paths (torch.accelerator, torch.distributed, torch.backends...): gradlab/torch_compat/
    "accelerator": ("gradlab.torch_compat.accelerator", None),
    "distributed": ("gradlab.torch_compat.distributed", None),
    "backends": ("gradlab.torch_compat.backends", None),
    "onnx": ("gradlab.torch_compat.onnx", None),
    "serialization": ("gradlab.torch_compat.serialization", None),
    "autocast": ("gradlab.amp", "autocast"),
}

from .backend.device import get_default_device, set_default_device  # noqa: E402,F401

_MATMUL_PRECISION = ["highest"]


def set_float32_matmul_precision(precision: str) -> None:
    """``torch.set_float32_matmul_precision``: accepted ('highest', 'high', 'medium') and remembered; gradlab's
    float32 matmuls are NumPy's/CuPy's full float32 either way (no TF32)."""
    if precision not in ("highest", "high", "medium"):
        raise ArgumentError(f"set_float32_matmul_precision: precision must be 'highest', 'high' or 'medium', "
                            f"got {precision!r}")
    _MATMUL_PRECISION[0] = precision


def get_float32_matmul_precision() -> str:
    return _MATMUL_PRECISION[0]


# set_num_threads / get_num_threads: gradlab/backend/threads.py (imported above)


_DETERMINISTIC = [False]


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """``torch.use_deterministic_algorithms``: gradlab's ops are deterministic already (NumPy on one thread
    order); the flag is remembered."""
    _DETERMINISTIC[0] = bool(mode)


def are_deterministic_algorithms_enabled() -> bool:
    return _DETERMINISTIC[0]


def finfo(type=None):  # noqa: A002 - PyTorch's name
    """``torch.finfo``: the limits of a float dtype (``.min``, ``.max``, ``.eps``, ``.tiny``, ``.bits``)."""
    from .backend.dtypes import finfo as _finfo
    return _finfo(type or get_default_dtype())


def iinfo(type):  # noqa: A002
    """``torch.iinfo``: the limits of an integer dtype."""
    import numpy as _np
    return _np.iinfo(_np.dtype(type))


def __getattr__(name):
    entry = _LAZY.get(name)
    if entry is None:
        raise AttributeError(f"module 'gradlab' has no attribute {name!r}")
    import importlib
    mod = importlib.import_module(entry[0])
    value = mod if entry[1] is None else getattr(mod, entry[1])
    globals()[name] = value
    return value

from .autograd import cell_origin as _cell_origin  # noqa: E402

_cell_origin.install()  # in a notebook: note which cell makes which nodes (the inspectors' "created at"; no cost per op)
