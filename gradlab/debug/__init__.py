"""Layer 6: debugging tools. Each says a short, plain verdict first, then the evidence.

* :func:`explain_grad` -- why is ``t.grad`` None or zero?
* :func:`find_nonfinite` -- which op (forward or backward) made the first NaN/Inf, on which line?
* :class:`trace_shapes` -- a table of every op's input and output shapes, and the module it ran in.
* :func:`memory_report` -- bytes in parameters, gradients, optimizer state and saved activations.
* :mod:`plots <gradlab.debug.plots>` -- gradient norms, histograms, activation statistics, update
  ratios, loss curves (matplotlib Figures).
* :class:`trace` -- the training trace evidence pack (JSON Lines); ``trace.load(path)`` reads one.
* :class:`watch` -- record every op call (what ``explain_grad`` uses to find a cut path).
* :func:`source` -- where an op lives (``file:line``) and its forward, vjp, vjp_arrays, jvp, formula.

The profiler is :mod:`gradlab.profiler`. The engine never imports this package;
it reads the graph through the extension points in ``gradlab.autograd.function``
and ``gradlab.autograd.engine``.
"""
from ._common import DebugInputError
from .explain import Explanation, explain_grad, track_grads
from .memory import MemoryReport, memory_report
from .nonfinite import NonfiniteReport, find_nonfinite
from .plots import (UpdateRatioTracker, activation_stats, grad_histograms, grad_norm_bars, loss_curve,
                    update_ratio_plot)
from .provenance import watch
from .shapes import trace_shapes
from .op_source import OpSource, source
from .tracepack import TraceError, TracePack, trace  # noqa: F401 - and its OSError subclasses

__all__ = [
    "DebugInputError", "Explanation", "explain_grad", "track_grads", "MemoryReport", "memory_report",
    "NonfiniteReport", "find_nonfinite", "UpdateRatioTracker", "activation_stats", "grad_histograms",
    "grad_norm_bars", "loss_curve", "update_ratio_plot", "watch", "trace_shapes", "TraceError", "TracePack", "trace",
    "OpSource", "source",
]
