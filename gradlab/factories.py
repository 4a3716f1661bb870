"""Ways to make tensors: ``tensor``, ``zeros``, ``randn``... (PyTorch's names).

Python data becomes float32 when it holds floats (the default dtype), int64 for
ints and bool for bools, as in PyTorch. NumPy arrays keep their dtype.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from . import checks as _c
from ._tensor import Tensor
from .backend import dtypes as _dt, random as _random
from .backend.device import check_dtype_for, factory_device, to_device_array, xp_for
from .backend.memory_limit import check_alloc, out_of_memory
from .errors import ArgumentError, ArgumentTypeError, DTypeError


def _to_array(data, dtype=None, device=None):
    """Convert user data to a fresh array of the right dtype (copies, like torch.tensor)."""
    dtype = _dt.as_dtype(dtype)
    if isinstance(data, np.generic):  # a NumPy scalar keeps its dtype, as an array does (PyTorch too)
        data = np.asarray(data)
    if isinstance(data, Tensor):
        arr = data._data
        out = arr.astype(dtype) if dtype is not None else arr.copy()
    elif isinstance(data, np.ndarray) or hasattr(data, "__cuda_array_interface__"):
        if data.dtype.kind == "c":
            raise DTypeError("gradlab has no complex dtypes; split real and imaginary parts into two tensors")
        if data.dtype.kind not in "biuf" and data.dtype != _dt.bfloat16:
            raise DTypeError(f"cannot make a tensor from an array of dtype {data.dtype}; use numbers")
        out = data.astype(dtype) if dtype is not None else data.copy()
    else:
        if isinstance(data, (list, tuple)):
            data = _unwrap(data)
        try:
            arr = np.array(data)
        except ValueError as e:
            raise ArgumentError(
                f"tensor(): could not build a rectangular array from the data ({e}); "
                "every row must have the same length"
            ) from None
        if arr.dtype.kind == "c":
            raise DTypeError("gradlab has no complex dtypes; split real and imaginary parts into two tensors")
        if arr.dtype.kind not in "biuf":
            raise DTypeError(f"tensor(): cannot make a tensor from {type(data).__name__} data (got NumPy dtype {arr.dtype}); use numbers")
        if dtype is None:
            if arr.dtype.kind == "f":
                dtype = _dt.get_default_dtype()
            elif arr.dtype.kind in "iu":
                if arr.dtype == np.uint64 and arr.size and int(arr.max()) > 2 ** 63 - 1:  # tensor([2**63])
                    raise ArgumentError(f"tensor(): {int(arr.max())} does not fit in int64 (at most 2**63 - 1); "
                                        "it would wrap around. Use a float (dtype=gradlab.float64) for big values")
                dtype = _dt.int64
        elif dtype.kind in "iu" and arr.dtype.kind in "iu" and arr.size:  # tensor([300], dtype=uint8)
            _dt.check_fits(int(arr.min()), dtype, "tensor")
            _dt.check_fits(int(arr.max()), dtype, "tensor")
        out = arr.astype(dtype, copy=False) if dtype is not None else arr
    dev = factory_device(device)
    if dev.type != "cpu":
        out = to_device_array(out, dev)
    return out


def _unwrap(seq):
    return [(_unwrap(x) if isinstance(x, (list, tuple)) else (x._data if isinstance(x, Tensor) else x)) for x in seq]


def tensor(data, dtype=None, device=None, requires_grad=False, name=None) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, numbers, arrays or tensors)."""
    t = Tensor._make(_to_array(data, _c.dtype(dtype, "tensor"), device))
    t.name = name
    if _c.flag(requires_grad, "tensor", "requires_grad"):
        t.requires_grad_(True)
    return t


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor`` but without a copy where none is needed, as PyTorch's: ``data`` itself when it
    already is a matching Tensor, and a tensor sharing memory with a NumPy array of a matching dtype
    (on the cpu), as ``from_numpy`` (changes to one show in the other)."""
    if isinstance(data, Tensor) and (dtype is None or data.dtype == _dt.as_dtype(dtype)):
        return data
    if (isinstance(data, np.ndarray) and (dtype is None or data.dtype == _dt.as_dtype(dtype))
            and (device is None or str(device) == "cpu")):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(arr: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``arr`` (changes to one show in the other)."""
    if not isinstance(arr, np.ndarray):
        raise ArgumentTypeError(f"from_numpy: expected a NumPy array, got {type(arr).__name__}")
    if arr.dtype.kind not in "biuf" and arr.dtype != _dt.bfloat16 or arr.dtype == np.longdouble:
        raise DTypeError(f"from_numpy: arrays of dtype {arr.dtype} cannot be tensors; gradlab holds bool, integer "
                         f"and float16/32/64/bfloat16 numbers")
    return Tensor._make(arr)


def _shape(size, fn):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    # operator.index, not int(): zeros(2.5) is a mistake to report, not a size to round down
    size = tuple(int(s.item()) if isinstance(s, Tensor) and s.ndim == 0 and s.dtype.kind in "iu" else s for s in size)
    return _c.shape(size, fn)


def _new(fn, size, dtype, device, requires_grad, make):
    dtype = _c.dtype(dtype, fn) or _dt.get_default_dtype()
    dev = factory_device(device)
    check_dtype_for(dtype, dev)
    shape = _shape(size, fn)
    check_alloc(fn, shape, dtype)  # (refused before NumPy tries: see backend/memory_limit.py)
    try:
        t = Tensor._make(make(xp_for(dev), shape, dtype))
    except MemoryError as e:
        raise out_of_memory(fn, e) from None
    if _c.flag(requires_grad, fn, "requires_grad"):
        t.requires_grad_(True)
    return t


def take_size_keyword(name, size, kwargs):
    """The shape a factory was given: its positional sizes, or ``size=`` popped from ``kwargs`` (PyTorch's
    factories take both spellings; ``zeros(size=(2, 3))`` is common in public code). Giving both, or an int
    for ``size=``, is the TypeError PyTorch raises."""
    if "size" not in kwargs:
        return size
    given = kwargs.pop("size")
    if size:
        raise ArgumentTypeError(f"{name}() got multiple values for argument 'size': give the shape either as "
                                "positional sizes or as size=, not both")
    if not isinstance(given, (tuple, list)):
        raise ArgumentTypeError(f"{name}(): argument 'size' must be tuple of ints, not {type(given).__name__}; "
                                f"write size=({given!r},)")
    return (tuple(given),)


def size_keyword(fn):
    """Decorator: the factory ``fn(*size, ...)`` also takes ``size=`` (``take_size_keyword``)."""
    @functools.wraps(fn)
    def wrapper(*size, **kwargs):
        return fn(*take_size_keyword(fn.__name__, size, kwargs), **kwargs)
    del wrapper.__wrapped__  # (the factory itself, not a wrapper: gradlab.compile records it as a random draw)
    return wrapper


@size_keyword
def zeros(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _new("zeros", size, dtype, device, requires_grad, lambda xp, s, d: xp.zeros(s, dtype=d))


@size_keyword
def ones(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _new("ones", size, dtype, device, requires_grad, lambda xp, s, d: xp.ones(s, dtype=d))


@size_keyword
def empty(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _new("empty", size, dtype, device, requires_grad, lambda xp, s, d: xp.empty(s, dtype=d))


def full(size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if fill_value is None or isinstance(fill_value, (str, bytes, dict, list, tuple)):
        raise ArgumentTypeError(f"full: fill_value must be a number, got {type(fill_value).__name__} {fill_value!r}")
    if dtype is None:
        dtype = _dt.result_type(fill_value)
    _dt.check_fits(fill_value, _c.dtype(dtype, "full"), "full")
    return _new("full", (size,) if not isinstance(size, int) else (size,), dtype, device, requires_grad,
                lambda xp, s, d: xp.full(s, fill_value, dtype=d))


def _float_draw(fn, dtype):
    if dtype is not None and not _dt.is_floating(_c.dtype(dtype, fn)):
        raise DTypeError(f"{fn}: draws floats, so dtype must be a floating dtype, got {_c.dtype(dtype, fn)} "
                         f"(for an integer tensor use randint; for a *_like call pass dtype=gradlab.float32)")


@size_keyword
def rand(*size, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform on [0, 1), drawn from the generator ``manual_seed`` controls (or from ``generator``)."""
    _float_draw("rand", dtype)
    def make(xp, s, d):
        return xp.asarray(_random.generator(generator).random(s).astype(d))
    return _new("rand", size, dtype, device, requires_grad, make)


@size_keyword
def randn(*size, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal, drawn from the generator ``manual_seed`` controls (or from ``generator``)."""
    _float_draw("randn", dtype)
    def make(xp, s, d):
        return xp.asarray(_random.generator(generator).standard_normal(s).astype(d))
    return _new("randn", size, dtype, device, requires_grad, make)


def randint(low=None, high=None, size=(), *, generator=None, dtype=None, device=None) -> Tensor:
    """Integers in [low, high) (or [0, low) when ``high`` is omitted; ``randint(high=5, size=(3,))`` as PyTorch)."""
    if isinstance(high, (tuple, list)):  # randint(high, size): PyTorch's two-argument form
        high, size = None, high
    if low is None and high is not None:  # randint(high=5, size=...)
        low = 0
    elif low is None:
        raise ArgumentTypeError("randint() missing 1 required positional argument: 'high' (the values are drawn "
                                "from [low, high); randint(10, (3,)) draws from [0, 10))")
    if high is None:
        low, high = 0, low
    low, high = _c.size(low, "randint", "low", None), _c.size(high, "randint", "high", None)
    if not low < high:
        raise ArgumentError(f"randint: need low < high, got low={low}, high={high}; "
                            f"values are drawn from [low, high)")
    dtype = _c.dtype(dtype, "randint") or _dt.int64
    size = _shape((size,), "randint")
    arr = _random.generator(generator).integers(low, high, size=size).astype(dtype)
    return Tensor._make(xp_for(factory_device(device)).asarray(arr))


def randperm(n, *, generator=None, dtype=None, device=None) -> Tensor:
    """A random permutation of ``0 .. n-1``."""
    (n,) = _shape((n,), "randperm")
    arr = _random.generator(generator).permutation(n).astype(_c.dtype(dtype, "randperm") or _dt.int64)
    return Tensor._make(xp_for(factory_device(device)).asarray(arr))


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive); int64 unless a bound is a float."""
    if end is None:
        start, end = 0, start
    for v in (start, end, step):
        if isinstance(v, Tensor):
            v = v.item()
        if isinstance(v, (str, bytes)) or not np.isscalar(v):
            raise ArgumentTypeError(f"arange: start, end and step must be numbers, got {v!r}")
    if dtype is None:
        dtype = _dt.result_type(start, end, step)
    if step == 0:
        raise ArgumentError("arange: step must not be zero")
    if not all(np.isfinite(float(v)) for v in (start, end, step)):
        raise ArgumentError(f"arange: start, end and step must be finite, got {start}, {end}, {step}")
    if (end - start) * step < 0:
        raise ArgumentError(f"arange: step {step} points away from end: start={start}, end={end}; "
                            f"use a {'negative' if step > 0 else 'positive'} step to count from {start} to {end}")
    dtype = _c.dtype(dtype, "arange")
    xp = xp_for(factory_device(device))
    check_alloc("arange", (max(0, math.ceil((end - start) / step)),), dtype)
    t = Tensor._make(xp.arange(start, end, step).astype(dtype))
    if _c.flag(requires_grad, "arange", "requires_grad"):
        t.requires_grad_(True)
    return t


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False) -> Tensor:
    dtype = _c.dtype(dtype, "linspace") or _dt.get_default_dtype()
    steps = _c.size(steps, "linspace", "steps", None)
    start, end = _c.number(start, "linspace", "start"), _c.number(end, "linspace", "end")
    if int(steps) < 0:
        raise ArgumentError(f"linspace: steps must be >= 0 (the number of points), got {steps}")
    xp = xp_for(factory_device(device))
    if dtype in (np.float32, np.float64):
        t = Tensor._make(xp.asarray(_linspace_like_pytorch(start, end, int(steps), np.dtype(dtype))))
    else:
        t = Tensor._make(xp.linspace(start, end, int(steps)).astype(dtype))
    if _c.flag(requires_grad, "linspace", "requires_grad"):
        t.requires_grad_(True)
    return t


def _fma(a, b, c, dt):
    """``a * b + c`` with (nearly always) one rounding, as a fused multiply-add (PyTorch's CPU kernels use one)."""
    if dt == np.float32:  # the float64 product of two float32 values is exact
        return (a.astype(np.float64) * b + c).astype(np.float32)
    p = a * b  # Dekker's two-product: p + e == a * b exactly
    split = 134217729.0  # 2**27 + 1

    def halves(v):
        t = split * v
        hi = t - (t - v)
        return hi, v - hi
    ah, al = halves(a)
    bh, bl = halves(np.broadcast_to(np.asarray(b, np.float64), np.shape(a)))
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c  # Knuth's two-sum: s + r == p + c exactly
    bb = s - p
    r = (p - (s - bb)) + (c - bb)
    return s + (r + e)


def _linspace_like_pytorch(start, end, steps, dt):
    """PyTorch's linspace, bit for bit: the first half counts up from ``start`` and the second half down from
    ``end`` (so both ends are exact and the points are symmetric), each point one fused multiply-add."""
    if steps <= 1:
        return np.full(steps, start, dtype=dt)
    s, e = dt.type(start), dt.type(end)
    step = (e - s) / dt.type(steps - 1)
    i = np.arange(steps)
    half = steps // 2
    up = _fma(np.full(half, step, dt), i[:half].astype(dt), s, dt)
    down = _fma(np.full(steps - half, -step, dt), (steps - 1 - i[half:]).astype(dt), e, dt)
    return np.concatenate([up, down]).astype(dt)


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` points from ``base ** start`` to ``base ** end``, evenly spaced in the exponent."""
    dtype = _c.dtype(dtype, "logspace") or _dt.get_default_dtype()
    steps = _c.size(steps, "logspace", "steps", None)
    start, end = _c.number(start, "logspace", "start"), _c.number(end, "logspace", "end")
    _c.number(base, "logspace", "base")
    if int(steps) < 0:
        raise ArgumentError(f"logspace: steps must be >= 0 (the number of points), got {steps}")
    xp = xp_for(factory_device(device))
    exps = _linspace_like_pytorch(start, end, int(steps), np.dtype(np.float64))  # in float64, as PyTorch
    t = Tensor._make(xp.asarray((float(base) ** exps).astype(dtype)))
    if _c.flag(requires_grad, "logspace", "requires_grad"):
        t.requires_grad_(True)
    return t


def eye(n, m=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    dtype = _c.dtype(dtype, "eye") or _dt.get_default_dtype()
    for v in (n, m):
        if v is not None and not isinstance(v, (int, np.integer)):
            raise ArgumentTypeError(f"eye: n and m must be integers, got n={n!r}, m={m!r}")
    if int(n) < 0 or (m is not None and int(m) < 0):
        raise ArgumentError(f"eye: n and m must be >= 0, got n={n}, m={m}")
    xp = xp_for(factory_device(device))
    check_alloc("eye", (int(n), int(n) if m is None else int(m)), dtype)
    t = Tensor._make(xp.eye(int(n), None if m is None else int(m), dtype=dtype))
    if _c.flag(requires_grad, "eye", "requires_grad"):
        t.requires_grad_(True)
    return t


def _like(fn, t, dtype, device, requires_grad, **kw):
    if not isinstance(t, Tensor):
        raise ArgumentError(f"{fn.__name__}_like: expected a Tensor, got {type(t).__name__}")
    return fn(t.shape, dtype=dtype or t.dtype, device=device or t.device, requires_grad=requires_grad, **kw)


def zeros_like(t, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like(zeros, t, dtype, device, requires_grad)


def ones_like(t, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like(ones, t, dtype, device, requires_grad)


def empty_like(t, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like(empty, t, dtype, device, requires_grad)


def rand_like(t, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like(rand, t, dtype, device, requires_grad)


def randn_like(t, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like(randn, t, dtype, device, requires_grad)


def randint_like(t, low=0, high=None, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Integers in [low, high) (or [0, low) when ``high`` is omitted) with ``t``'s shape and dtype."""
    if not isinstance(t, Tensor):
        raise ArgumentError(f"randint_like: expected a Tensor, got {type(t).__name__}")
    if high is None:
        low, high = 0, low
    out = randint(low, high, t.shape, dtype=dtype or t.dtype, device=device or t.device)
    if _c.flag(requires_grad, "randint_like", "requires_grad"):
        out.requires_grad_(True)
    return out


def full_like(t, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    return full(t.shape, fill_value, dtype=dtype or t.dtype, device=device or t.device, requires_grad=requires_grad)


def _legacy_type(name, dtype):
    def make(*args, **kwargs):
        return Tensor(*args, dtype=dtype, **kwargs)
    make.__name__ = name
    make.__doc__ = (f"PyTorch's legacy ``{name}(data)`` / ``{name}(*sizes)``: a tensor of dtype {dtype} "
                    f"(prefer ``gradlab.tensor(data, dtype=...)``).")
    return make


FloatTensor = _legacy_type("FloatTensor", np.dtype(np.float32))
DoubleTensor = _legacy_type("DoubleTensor", np.dtype(np.float64))
LongTensor = _legacy_type("LongTensor", np.dtype(np.int64))
IntTensor = _legacy_type("IntTensor", np.dtype(np.int32))
BoolTensor = _legacy_type("BoolTensor", np.dtype(np.bool_))
