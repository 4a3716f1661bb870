"""A simulated second device, so the device plumbing is tested on every machine.

Real GPU tests need a GPU and CuPy. The bugs they would catch are mostly not
about the GPU at all but about *plumbing*: an op that makes a helper array with
``np.zeros`` (on the host) and combines it with a device array, a gradient that
comes back on the wrong device, an optimizer buffer left behind when the model
moved. CuPy refuses to mix its arrays with NumPy arrays; so does this module.

``SimArray`` is a NumPy array subclass that gradlab reports as living on
``cuda:0``. Its ``__array_ufunc__`` / ``__array_function__`` overrides compute
with NumPy underneath but raise :class:`~gradlab.errors.DeviceError` as soon as
a plain (host) ``np.ndarray`` is mixed in -- the way ``cupy.add(gpu, host)``
raises. Results are ``SimArray`` again, including 0-d results, as CuPy returns
0-d arrays where NumPy returns scalars. ``SIM_XP`` plays the role of the
``cupy`` module: ``SIM_XP.zeros(...)`` makes device arrays.

Inside ``gradlab.backend.simulate_device()`` the device name ``"cuda"`` means
this simulated device (only ``cuda:0``), and ``gradlab.cuda.is_available()`` is
True. It also makes ``np.asarray(device_array)`` (and ``np.array``,
``np.ascontiguousarray``) raise while active, as CuPy does, instead of silently
handing back a host array.
"""
from __future__ import annotations

import contextlib
import functools
import types

import numpy as np

from ..errors import DeviceError

_ndarray = np.ndarray


def _mixing_error(what: str) -> DeviceError:
    return DeviceError(
        f"device mismatch: {what} got a host (cpu) NumPy array together with an array on the simulated "
        "cuda:0 device; nothing is copied between host and device implicitly. Create helper arrays with "
        "the input's array module (xp = gradlab.backend.xp_of(x)) or move tensors with .to()"
    )


def _unwrap(x, what):
    """SimArray -> plain view; plain ndarray -> error; containers recursively; anything else as is."""
    t = type(x)
    if t is SimArray:
        return x.view(_ndarray)
    if t is list or t is tuple:
        return t(_unwrap(v, what) for v in x)
    if isinstance(x, SimArray):
        return x.view(_ndarray)
    if isinstance(x, _ndarray):
        raise _mixing_error(what)
    return x


def _unwrap_lenient(x):
    """Unwrap device arrays, leave host arrays alone (``asarray(host)`` is an explicit copy)."""
    if isinstance(x, SimArray):
        return x.view(_ndarray)
    if type(x) is list or type(x) is tuple:
        return type(x)(_unwrap_lenient(v) for v in x)
    return x


def _wrap(r):
    """Results on the device: arrays (and NumPy scalars, as CuPy returns 0-d arrays) become SimArrays."""
    if isinstance(r, _ndarray):
        return r if type(r) is SimArray else r.view(SimArray)
    if isinstance(r, np.generic):
        return np.asarray(r).view(SimArray)
    if type(r) is tuple or type(r) is list:
        return type(r)(_wrap(v) for v in r)
    if isinstance(r, tuple):  # NumPy's named results (linalg.eigh, svd, qr); CuPy returns plain tuples
        return tuple(_wrap(v) for v in r)
    return r


class _SimDeviceId:
    """What ``arr.device`` is for a CuPy array: an object with an ``id``."""

    id = 0

    def __repr__(self):
        return "<simulated CUDA Device 0>"


class SimArray(np.ndarray):
    """A NumPy array presented as living on the (simulated) ``cuda:0`` device."""

    __slots__ = ()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        what = f"numpy.{ufunc.__name__}"
        if method == "at":  # ufunc.at(a, index, b): index arrays may come from the host, as in CuPy indexing
            args = [_unwrap(inputs[0], what), _unwrap_lenient(inputs[1])] + [_unwrap(x, what) for x in inputs[2:]]
        else:
            args = [_unwrap(x, what) for x in inputs]
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(_unwrap(o, what) for o in out)
        result = getattr(ufunc, method)(*args, **kwargs)
        if method == "at":
            return None
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(result)

    def __array_function__(self, func, types, args, kwargs):
        what = f"numpy.{func.__name__}"
        args = _unwrap(args, what)
        kwargs = {k: _unwrap(v, what) for k, v in kwargs.items()}
        return _wrap(func(*args, **kwargs))

    def __setitem__(self, index, value):
        if isinstance(value, _ndarray) and not isinstance(value, SimArray):
            raise _mixing_error("setitem (x[i] = value)")
        super().__setitem__(index, value.view(_ndarray) if isinstance(value, SimArray) else value)

    def get(self) -> np.ndarray:
        """Copy to the host, as ``cupy.ndarray.get()`` does."""
        return np.array(self.view(_ndarray), copy=True)

    @property
    def device(self):
        return _SimDeviceId()

    def __reduce__(self):  # pickles (e.g. deepcopy) as a SimArray
        return (_rebuild, (self.get(),))


def _rebuild(arr):
    return arr.view(SimArray)


_LENIENT = frozenset({"asarray", "array", "ascontiguousarray", "asanyarray"})


class _SimModule:
    """A stand-in for the ``cupy`` module: NumPy's functions, returning device arrays.

    Functions reject host arrays (as ``cupy.exp(numpy_array)`` does), except the
    explicit copies ``asarray`` / ``array``. Attributes are wrapped on first use
    and cached.
    """

    def __init__(self, mod, name):
        self._mod, self.__name__ = mod, name

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        obj = getattr(self._mod, name)
        if name == "ndarray":
            wrapped = SimArray
        elif isinstance(obj, types.ModuleType):
            wrapped = _SimModule(obj, f"{self.__name__}.{name}")
        elif isinstance(obj, np.ufunc):
            wrapped = _SimUfunc(obj)
        elif isinstance(obj, type) or not callable(obj):
            wrapped = obj  # dtypes, constants
        else:
            wrapped = _sim_function(obj, name in _LENIENT)
        setattr(self, name, wrapped)
        return wrapped

    def __repr__(self):
        return f"<simulated device module {self.__name__} (NumPy underneath)>"


def _sim_function(fn, lenient):
    what = f"{getattr(fn, '__name__', 'function')}"

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if lenient:
            args = _unwrap_lenient(args)
            kwargs = {k: _unwrap_lenient(v) for k, v in kwargs.items()}
        else:
            args = _unwrap(args, what)
            kwargs = {k: _unwrap(v, what) for k, v in kwargs.items()}
        return _wrap(fn(*args, **kwargs))
    return call


class _SimUfunc:
    """``SIM_XP.exp`` and friends: the NumPy ufunc, refusing host arrays (as ``cupy.exp`` does)."""

    def __init__(self, ufunc):
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__
        self._call = _sim_function(ufunc, False)

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __getattr__(self, name):  # reduce, accumulate, outer, at...
        return _sim_function(getattr(self._ufunc, name), False)


SIM_XP = _SimModule(np, "sim")

# ----------------------------------------------------------- activation
_active = [0]


def is_active() -> bool:
    return _active[0] > 0


_GUARDED = ("asarray", "array", "ascontiguousarray", "asfortranarray")
_originals: dict = {}


def _guard(name, fn):
    """``np.asarray(device_array)`` raises, as it does for a CuPy array (it would be a hidden copy)."""
    @functools.wraps(fn)
    def guarded(a, *args, **kwargs):
        if isinstance(a, SimArray) and not kwargs.get("subok"):
            raise DeviceError(
                f"numpy.{name}() got an array on the simulated cuda:0 device: that would copy it to the host "
                f"implicitly (CuPy refuses it too). Use xp = gradlab.backend.xp_of(a) and xp.{name}(...) to stay "
                "on the device, or a.get() / tensor.cpu() for an explicit copy")
        return fn(a, *args, **kwargs)
    return guarded


@contextlib.contextmanager
def simulate_device():
    """While active, ``"cuda"`` / ``"cuda:0"`` is the simulated device (NumPy underneath).

    Use it in tests (``with gradlab.backend.simulate_device(): ...``) to run the
    device code paths -- moves, mismatches, module and optimizer moves,
    checkpoints -- on a machine without a GPU. Only one simulated device exists.
    While it is active, ``np.asarray`` / ``np.array`` / ``np.ascontiguousarray``
    refuse device arrays, as they refuse CuPy arrays.
    """
    if _active[0] == 0:
        for name in _GUARDED:
            _originals[name] = getattr(np, name)
            setattr(np, name, _guard(name, _originals[name]))
    _active[0] += 1
    try:
        yield
    finally:
        _active[0] -= 1
        if _active[0] == 0:
            for name, fn in _originals.items():
                setattr(np, name, fn)
            _originals.clear()


def host_view(a):
    """The plain NumPy array behind a SimArray (for backend helpers that compute with NumPy)."""
    return a.view(_ndarray)
