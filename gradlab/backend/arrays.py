"""The few array operations whose spelling differs between NumPy and CuPy.

Everything else is the same call on either module (``xp.exp``, ``xp.where``,
``xp.zeros``...), so ops simply ask ``xp = xp_of(x._data)``. These helpers hide
the differences that remain:

* ``scatter_add``: NumPy's ``np.add.at`` (unbuffered: repeated indices add up)
  is ``cupyx.scatter_add`` on the GPU;
* ``as_strided``: a read-only strided view (im2col); CuPy's has no ``writeable``;
* ``erf``: gradlab's NumPy kernels (``special.py``) / ``cupyx.scipy.special`` on the GPU.
"""
from __future__ import annotations

import numpy as np

from .simulated import SimArray, host_view


def scatter_add(out, index, values) -> None:
    """``out[index] += values`` in place, where repeated indices all add up (``np.add.at``)."""
    if type(out) is np.ndarray or isinstance(out, SimArray):
        np.add.at(out, index, values)  # a SimArray checks that index and values are on its device
        return
    import cupy  # pragma: no cover - GPU only
    import cupyx  # pragma: no cover
    if type(index) is not tuple:  # pragma: no cover
        index = (index,)
    index = tuple(cupy.asarray(i) if isinstance(i, np.ndarray) else i for i in index)  # pragma: no cover
    cupyx.scatter_add(out, index, values)  # pragma: no cover


def as_strided(a, shape, strides):
    """A read-only view of ``a`` with the given shape and (byte) strides."""
    if type(a) is np.ndarray:
        return np.lib.stride_tricks.as_strided(a, shape, strides, writeable=False)
    if isinstance(a, SimArray):
        return np.lib.stride_tricks.as_strided(host_view(a), shape, strides, writeable=False).view(SimArray)
    import cupy  # pragma: no cover - GPU only
    return cupy.lib.stride_tricks.as_strided(a, shape, strides)  # pragma: no cover


def erf(a):
    """The error function elementwise, on ``a``'s device and dtype.

    NumPy: gradlab's own kernels (``backend/special.py``: no SciPy needed, and faster than SciPy's);
    CuPy: ``cupyx.scipy.special.erf`` (CuPy's own kernel: SciPy is not needed there either).
    """
    if type(a) is np.ndarray or isinstance(a, np.generic):
        from .special import erf as _erf
        return _erf(a)
    if isinstance(a, SimArray):
        return erf(host_view(a)).view(SimArray)
    from cupyx.scipy.special import erf as _erf  # pragma: no cover - GPU only
    return _erf(a).astype(a.dtype, copy=False)  # pragma: no cover


def erfc(a):
    """``1 - erf`` elementwise, computed as itself (relative precision in the tail), on ``a``'s device and dtype."""
    if type(a) is np.ndarray or isinstance(a, np.generic):
        from .special import erfc as _erfc
        return _erfc(a)
    if isinstance(a, SimArray):
        return erfc(host_view(a)).view(SimArray)
    from cupyx.scipy.special import erfc as _erfc  # pragma: no cover - GPU only
    return _erfc(a).astype(a.dtype, copy=False)  # pragma: no cover


def gamma_family(name, a, n=0):
    """``lgamma``, ``digamma`` or ``polygamma`` (order ``n``) elementwise, on ``a``'s device and dtype.

    NumPy: gradlab's own kernels (``backend/gamma_functions.py``, no SciPy); CuPy: ``cupyx.scipy.special``'s.
    """
    if type(a) is np.ndarray or isinstance(a, np.generic):
        from . import gamma_functions as _g
        return _g.lgamma(a) if name == "lgamma" else _g.polygamma(n, a)
    if isinstance(a, SimArray):
        return gamma_family(name, host_view(a), n).view(SimArray)
    from cupyx.scipy import special as _s  # pragma: no cover - GPU only
    out = _s.gammaln(a) if name == "lgamma" else _s.polygamma(n, a) if n else _s.digamma(a)  # pragma: no cover
    return out.astype(a.dtype if a.dtype.kind == "f" else "float32", copy=False)  # pragma: no cover


def as_array(v, dtype=None):
    """``np.asarray(v, dtype)`` that keeps a device array on its device.

    ``np.asarray`` on a CuPy array raises (it would be a hidden device -> host
    copy); ops that turn a NumPy scalar result back into an array use this.
    """
    if type(v) is np.ndarray or isinstance(v, (np.generic, int, float, bool)):
        return np.asarray(v, dtype=dtype)
    if isinstance(v, SimArray):
        return v if dtype is None or v.dtype == dtype else v.astype(dtype)
    if isinstance(v, np.ndarray):
        return np.asarray(v, dtype=dtype)
    from .device import xp_of
    return xp_of(v).asarray(v, dtype=dtype)
