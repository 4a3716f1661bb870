"""The engine's hottest paths, compiled -- when the C extension is built.

gradlab's engine is Python you can read and step through. On a small tensor
almost all of its time goes to bookkeeping, not math: a 4x4 ``tanh`` costs
about 0.3 us in NumPy and several microseconds of Python around it (making the
node, keeping what it saves, ordering the backward pass, handing gradients
on). The C extension ``gradlab.autograd._speedups`` (sources in ``csrc/``)
translates five functions, line for line:

=============================  ==========================================
``function.Op.apply``          every built-in op call
``function._record``           the forward: turn ``ctx`` into a graph node
                               (with ``_keep_saved`` and ``SavedTensor``)
``Function.saved_arrays``      what an array VJP reads back
``schedule.schedule``          the order of the backward pass
``engine._run_plain``          the everyday backward loop (no hooks, no observers)
=============================  ==========================================

Everything else -- each op's forward and VJP, every check that can fail, every
rare case -- stays in Python, and the C calls back into the same Python helpers
the Python versions call. It is the pattern of CPython's ``heapq``/``_heapq``:
the Python is the definition, the C a faster copy, and the tests
(``tests/test_speedups.py``) run both on generated programs and require the
same graphs, gradients and errors; ``make test`` runs the whole suite on each.

* ``GRADLAB_PURE_PYTHON=1`` in the environment (before import) runs the Python
  versions: what a student reads is then exactly what runs.
* :func:`pure_python` does the same for a block of code.
* ``ACTIVE`` says which is in use. When the extension could not be built (no
  C compiler at install), gradlab runs the Python versions: slower, otherwise
  the same.
"""
from __future__ import annotations

import contextlib
import os

import numpy

try:
    from . import _speedups
except ImportError:  # not built (pip install without a C compiler): the Python versions run
    _speedups = None

#: The Python versions (the definitions), filled in by :func:`install`.
PYTHON: dict = {}
#: True while the compiled loops are in use.
ACTIVE = False


def _wanted() -> bool:
    return _speedups is not None and os.environ.get("GRADLAB_PURE_PYTHON", "").strip() in ("", "0")


def install() -> None:
    """Hand the C extension the Python objects it uses and, unless GRADLAB_PURE_PYTHON is set, swap its
    functions in (called once, on import)."""
    from .. import _tensor
    from . import engine, function, grad_mode, saved, schedule, views
    PYTHON.update(record=function._record, schedule=engine._schedule, run_plain=engine._run_plain,
                  apply=function.Op.__dict__["apply"], saved_arrays=function.Function.__dict__["saved_arrays"])
    if _speedups is None:
        return
    _speedups.configure(
        Tensor=function.Tensor, AccumulateGrad=function.AccumulateGrad, ndarray=function._ndarray,
        floating=function._FLOATING, seq_counter=function._seq, node_observers=function.node_observers,
        new_tensor=function._new_tensor, record_py=function._record,
        function=function, engine=engine, views=views, schedule=schedule, op_observers=function.op_observers,
        forward_ad_hook=function.forward_ad_hook, grad_state=grad_mode.state, generic=numpy.generic,
        asarray=numpy.asarray, apply_py=function.Function.apply.__func__, SavedTensor=saved.SavedTensor,
        Version=_tensor._Version, saved_hooks=saved.saved_tensor_hooks,
        saved_arrays_py=function.Function.saved_arrays.fget,
    )
    if _wanted():
        _use(compiled=True)


def _use(compiled: bool) -> None:
    global ACTIVE
    from . import engine, function
    src = _speedups if compiled else None
    function._record = src.record if src else PYTHON["record"]
    engine._schedule = src.schedule if src else PYTHON["schedule"]
    engine._run_plain = src.run_plain if src else PYTHON["run_plain"]
    function.Op.apply = classmethod(src.op_apply) if src else PYTHON["apply"]
    function.Function.saved_arrays = property(src.saved_arrays, doc=PYTHON["saved_arrays"].__doc__) if src \
        else PYTHON["saved_arrays"]
    ACTIVE = compiled


@contextlib.contextmanager
def pure_python():
    """Run the block on the Python versions of the compiled paths (a no-op when they already run)."""
    was = ACTIVE
    _use(compiled=False)
    try:
        yield
    finally:
        _use(compiled=was)


@contextlib.contextmanager
def compiled():
    """Run the block on the compiled paths; raises RuntimeError when the extension is not built."""
    if _speedups is None:
        raise RuntimeError("gradlab's C extension (gradlab/autograd/csrc/) is not built: "
                           "reinstall with a C compiler present (pip install -e .)")
    was = ACTIVE
    _use(compiled=True)
    try:
        yield
    finally:
        _use(compiled=was)
