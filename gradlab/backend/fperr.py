"""Floating-point errors stay quiet inside gradlab's ops, as in PyTorch.

NumPy warns (``RuntimeWarning: overflow encountered in multiply``, ``invalid value``, ``divide by
zero``) when a ufunc makes an inf or a NaN; PyTorch gives the same inf/nan silently. So gradlab's
computations run with NumPy's floating-point error handling set to *ignore*, in two places only:
``Function.apply``/``Op.apply`` around every op's forward (``gradlab/autograd/function.py``) and the
engine around each backward pass (``gradlab/autograd/engine.py``). The user's own NumPy code keeps
its settings (``np.seterr``, ``warnings.simplefilter('error')``): the setting is NumPy's context
variable, set on entry and reset on exit.

* ``quiet()``: the context manager (``with quiet(): ...``), for code outside those two places;
* ``enter()`` / ``leave(token)``: the same as two calls, for the per-op hot path. Setting NumPy's
  context variable directly costs about 0.1 us; ``np.errstate`` costs about 2 us, as much as half of
  a small op. Where a NumPy has no such variable (before 2.0), they fall back to ``np.seterr``.
"""
from __future__ import annotations

import contextlib
import functools

import numpy as np

try:  # NumPy >= 2: the error state is a context variable (what np.errstate sets)
    from numpy._core.umath import _extobj_contextvar as _var
    with np.errstate(all="ignore"):
        _IGNORE = _var.get()
    enter = functools.partial(_var.set, _IGNORE)  # returns the token for leave (a C call, no Python frame)
    leave = _var.reset
except (ImportError, AttributeError):  # pragma: no cover - NumPy 1.x
    def enter():
        return np.seterr(all="ignore")

    def leave(token):
        np.seterr(**token)


@contextlib.contextmanager
def quiet():
    """NumPy's floating-point errors ignored inside the ``with`` block (inf and nan, silently)."""
    token = enter()
    try:
        yield
    finally:
        leave(token)
