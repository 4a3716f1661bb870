"""Layer 6: from a dynamic graph to a compiled one (``gradlab.compile``).

Eager gradlab runs one op at a time and records a fresh graph on every call:
easy to debug, but every op makes a whole new array and Python runs between
ops. ``gradlab.compile(fn)`` shows what frameworks do about it
(``torch.compile``, ``jax.jit``): **trace** the function once into a static
graph (``trace.py``, ``ir.py``), **optimise** it with passes that each say what
they changed (``passes.py``), **fuse** chains of elementwise ops into single
kernels (``fuse.py``), and replay it (``runtime.py``). The backward is traced
and optimised the same way, so ``loss.backward()`` runs compiled too.

    @gradlab.compile
    def block(x, b):
        h = x + b
        return 0.5 * h * (1 + gradlab.tanh(0.7978845608 * (h + 0.044715 * h * h * h)))

    y = block(x, b)            # first call: traced, optimised, then run
    print(block.graph)         # the graph as text, one op per line
    print(block.explain())     # traces (and why), what every pass did
    block.show_graph()         # before/after the passes, side by side

The engine never imports this package.
"""
from .api import CompiledFunction, Entry, compile, optimize
from .draw import CompiledGraphView
from .fuse import find_groups, fuse_elementwise
from .kernels import CHUNK, CUDA_RULES, NUMPY_RULES, cuda_source, numpy_kernel
from .ir import Graph, Node, Value
from .passes import eliminate_common_subexpressions, eliminate_dead_code, fold_constants, partition
from .runtime import execute
from .trace import TraceSpecializationWarning, Tracer

__all__ = [
    "compile", "CompiledFunction", "CompiledGraphView", "Entry", "optimize", "Graph", "Node", "Value",
    "TraceSpecializationWarning", "Tracer", "execute", "fold_constants", "eliminate_common_subexpressions",
    "eliminate_dead_code", "partition", "fuse_elementwise", "find_groups", "numpy_kernel", "cuda_source",
    "NUMPY_RULES", "CUDA_RULES", "CHUNK",
]


# ``import gradlab.compile`` makes the attribute ``gradlab.compile`` this *package*
# (Python sets a submodule as an attribute of its parent), so the package itself
# is callable: ``gradlab.compile(fn)`` works either way. (``gradlab.compile`` before any import is this
# package too, from gradlab/__init__.py's ``_LAZY``: were it the function, it would hide the package, and
# ``gradlab.compile.kernels`` would fail or not by what had been imported first.)
import sys as _sys
import types as _types


class _CallableModule(_types.ModuleType):
    def __call__(self, fn=None, **kw):
        return compile(fn, **kw)


_sys.modules[__name__].__class__ = _CallableModule
