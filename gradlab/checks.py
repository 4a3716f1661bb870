"""The one argument-checking layer: every public function checks its arguments with these.

Each check takes the value, the name of the public function the user called (``fn``) and the
argument's name (``arg``), returns the value normalised (a Python ``int``, a tuple of ints...), and
otherwise raises one of gradlab's exception classes (``gradlab/errors.py``) in DESIGN's format: what
happened, the names and values involved, what to do. The classes are chosen so that the ``except``
clause that would catch PyTorch's error catches gradlab's:

* a value of the wrong *kind* (a float or a string where a size belongs, a tensor where a number
  belongs): :class:`ArgumentTypeError` (a ``TypeError``), as PyTorch's argument parser raises;
* a value of the right kind out of its domain (a negative size, ``p=1.5``, ``lr=-1``):
  :class:`ArgumentError` (``ValueError`` and ``RuntimeError``);
* a dim out of range: :class:`IndexOutOfRange` (``IndexError``, as PyTorch).

================================  ==================================================================
check                             accepts
================================  ==================================================================
``size(v, fn, arg, minimum=0)``   one int (an ``operator.index``-able value: int, NumPy int, a 0-d
                                  integer tensor), not a bool/float/str, at least ``minimum``
``sizes(v, n, fn, arg, minimum)`` an int repeated ``n`` times, or a sequence of ``n`` such ints
                                  (``ntuple``: kernel_size, stride, padding...)
``shape(v, fn, arg)``             ``f(2, 3)`` / ``f((2, 3))``: a tuple of sizes >= 0 (``-1`` where
                                  ``infer=True``), bounded (see :data:`MAX_NUMEL`)
``dim(d, ndim, fn)``              one dim, negative counts from the end; returns it >= 0
``dims(d, ndim, fn)``             an int, a sequence of ints or None; sorted tuple, no repeats
``nonempty_dim(shape, d, fn)``    a dim an element-picking reduction (max, mode, kthvalue) can use
``number(v, fn, arg)``            a real Python/NumPy number (not a bool, str, None or a tensor)
``flag(v, fn, arg)``              a Python bool (``keepdim``, ``unbiased``, ``requires_grad``...): not
                                  ``1``, ``'yes'`` or a NumPy bool, as PyTorch's argument parser
``dtype(v, fn, arg)``             a dtype (``gradlab.float32``) or None; a string such as ``'float32'``
                                  is refused, as PyTorch (``dtype=torch.float32``, never a name)
``operand`` (``ops/_util.py``)    a binary op's operand: a Tensor or a number; a list/tuple is refused
                                  as PyTorch refuses it (``add(x, [1, 2])``: wrap it in a tensor)
``numpy_operand(a, fn, arg)``     the error for a NumPy array where a Tensor belongs (``check_tensor``,
                                  ``operand``): PyTorch's "must be Tensor, not numpy.ndarray"
``nonnegative``, ``positive``     a number >= 0 / > 0
``probability(p, fn, arg)``       a number in [0, 1]
``in_range(v, lo, hi, fn, arg)``  a number in [lo, hi]
``choice(v, options, fn, arg)``   one of a fixed set of strings (``reduction``, ``mode``...)
``floating(t, fn, arg)``          a tensor whose dtype is floating (the dtype-category checks)
``device(d, fn)``                 ``'cpu'``, ``'cuda'``, ``'cuda:N'`` (the message lists them)
``output_sizes(v, n, fn, arg)``   adaptive pooling's ``output_size``: an int or ``n`` entries, each an
                                  int or None (keep that size); a float/str/bool is a TypeError
``integer_tensor(t, fn, arg)``    a tensor of integer dtype (indices, offsets; ``int64_only=True``)
``param_dtype(t, like, fn, arg)`` a weight/bias/running statistic: floating, of the input's dtype
                                  (float32 for a 16-bit input), or None
``common_floating(fn, **ts)``     tensors/numbers whose promoted dtype is floating; returns it
``arguments(fn, **given)``        several of the above at once: ``arg=(value, "positive")``, a rule
                                  ending in ``?`` allows None (the nn functions' declarative check)
``same_dtype(fn, **tensors)``     tensors of one dtype, for the ops PyTorch does not promote in
                                  (matrix products, scatter/index writes, meshgrid, isclose, lerp...)
================================  ==================================================================

Messages also name the right function when the error comes from an op that the called function
delegates to (``fmod`` computed with ``div``): :class:`gradlab.errors.GradlabError` puts the
public name the user called in front (see :func:`gradlab.errors.public_name`).
"""
from __future__ import annotations

import math
import numbers
import operator

import numpy as np

from .errors import ArgumentError, ArgumentTypeError, ArrayOperandError, DTypeError, IndexOutOfRange, ShapeError

#: The largest number of elements a factory or reshape will allocate (2**40 elements ~ 4 TiB of
#: float32): beyond it the request is certainly a mistake, refused before NumPy tries to allocate.
MAX_NUMEL = 2 ** 40


def _kind(v) -> str:
    return type(v).__name__


def _index(v):
    """``operator.index(v)`` or None: ints, NumPy ints, 0-d integer tensors; never bools' floats."""
    if isinstance(v, float):
        return None
    try:
        return operator.index(v)
    except TypeError:
        return None


def size(value, fn: str, arg: str, minimum: int | None = 0) -> int:
    """One integer size (a count, a length, a kernel size); at least ``minimum`` (None: any int)."""
    i = _index(value)
    if i is None:
        hint = f" (write {int(value)} if you meant it)" if isinstance(value, float) and value == int(value) else ""
        raise ArgumentTypeError(f"{fn}: {arg} must be an int, got {_kind(value)} {value!r}{hint}")
    if minimum is not None and i < minimum:
        raise ArgumentError(f"{fn}: {arg} must be at least {minimum}, got {i}")
    return int(i)


def sizes(value, n: int, fn: str, arg: str, minimum: int | None = None) -> tuple:
    """``value`` as a tuple of ``n`` ints (PyTorch's ``_ntuple``): an int repeated, or ``n`` ints."""
    if isinstance(value, (tuple, list)):
        if len(value) != n:
            raise ArgumentError(f"{fn}: {arg} must be an int or a tuple of {n} ints, got {value!r} "
                                f"({len(value)} entries)")
        items = value
    else:
        items = (value,) * n
    out = []
    for v in items:
        i = _index(v)
        if i is None:
            raise ArgumentTypeError(f"{fn}: {arg} must be an int or a tuple of {n} ints, got {value!r} "
                                    f"(a {_kind(v)} inside)")
        if minimum is not None and i < minimum:
            raise ArgumentError(f"{fn}: {arg} must be an int >= {minimum} or a tuple of {n} of them, got {value!r}")
        out.append(int(i))
    return tuple(out)


def single(value, fn: str, arg: str, minimum: int | None = None) -> int:
    """The int of a 1-d size given as an int or a 1-tuple."""
    return sizes(value, 1, fn, arg, minimum)[0]


def shape(value, fn: str, arg: str = "size", infer: bool = False) -> tuple:
    """A shape given as ``f(2, 3)`` (``value`` the tuple of positional args) or ``f((2, 3))``."""
    if isinstance(value, (tuple, list)) and len(value) == 1 and isinstance(value[0], (tuple, list)):
        value = value[0]
    if not isinstance(value, (tuple, list)):
        value = (value,)
    out = []
    for v in value:
        i = _index(v)
        if i is None:
            raise ArgumentTypeError(f"{fn}: {arg} must be a tuple of ints, got {tuple(value)!r} "
                                    f"(a {_kind(v)} inside)")
        out.append(int(i))
    if infer is None:  # any ints (pad amounts: negative crops)
        return tuple(out)
    if infer:
        if sum(1 for i in out if i == -1) > 1:
            raise ShapeError(f"{fn}: only one dimension can be inferred (-1), got {tuple(out)}")
        bad = [i for i in out if i < -1]
    else:
        bad = [i for i in out if i < 0]
    if bad:
        raise ArgumentError(f"{fn}: {arg} {tuple(out)} has a negative size {bad[0]}; sizes must be >= 0"
                            + (" (or -1, inferred)" if infer else ""))
    known = math.prod(i for i in out if i != -1)
    if known > MAX_NUMEL:
        raise ArgumentError(f"{fn}: {arg} {tuple(out)} would hold {known:.3g} elements, more than gradlab allocates "
                            f"({MAX_NUMEL:.3g}, gradlab.checks.MAX_NUMEL); check the sizes")
    return tuple(out)


def dims(dim, ndim: int, fn: str, allow_none=True) -> tuple | None:
    """Normalize ``dim`` (int, tuple or None) to a sorted tuple of non-negative axes."""
    if dim is None:
        if allow_none:
            return None
        raise ArgumentError(f"{fn}: dim is required")
    if _index(dim) is not None and not isinstance(dim, (tuple, list)):
        ds = (dim,)
    elif hasattr(dim, "__iter__") and not isinstance(dim, str):
        ds = tuple(dim)
    else:
        raise ArgumentTypeError(f"{fn}: dim must be an int or a tuple of ints, got {dim!r}")
    out = []
    n = max(ndim, 1)
    for d in ds:
        if _index(d) is None or isinstance(d, bool):
            raise ArgumentTypeError(f"{fn}: dim must be an int or a tuple of ints, got {d!r}")
        d = operator.index(d)
        if not -n <= d < n:
            raise IndexOutOfRange(
                f"{fn}: dim {d} is out of range for a tensor with {ndim} dimension(s) (valid: {-n} to {n - 1})")
        out.append(int(d) % n)
    if len(set(out)) != len(out):
        raise ArgumentError(f"{fn}: dim {dim} names the same dimension twice")
    return tuple(sorted(out)) if ndim > 0 else ()


def dim(d, ndim: int, fn: str) -> int:
    """One dim for a tensor of ``ndim`` dims (negative counts from the end); returned >= 0."""
    n = max(ndim, 1)
    if isinstance(d, bool) or _index(d) is None:
        raise ArgumentTypeError(f"{fn}: dim must be an int, got {d!r}")
    d = operator.index(d)
    if not -n <= d < n:
        raise IndexOutOfRange(
            f"{fn}: dim {d} is out of range for a tensor with {ndim} dimension(s) (valid: {-n} to {n - 1})")
    return int(d) % n


def flag(value, fn: str, arg: str) -> bool:
    """A boolean flag. Only ``True``/``False``: ``keepdim='yes'`` or ``requires_grad=1`` is refused
    (a TypeError, as PyTorch's), since a string or a number there is a mistake bool() would hide."""
    if value is True or value is False:
        return value
    raise ArgumentTypeError(f"{fn}: {arg} must be a bool (True or False), got {_kind(value)} {value!r}")


def dtype(value, fn: str, arg: str = "dtype"):
    """A dtype argument: ``gradlab.float32`` (a NumPy dtype or scalar type), or None. A string is
    refused as PyTorch refuses it: ``zeros(2, dtype='float32')`` is a TypeError there."""
    if value is None:
        return None
    if isinstance(value, str):
        raise ArgumentTypeError(f"{fn}: {arg} must be a dtype such as gradlab.{value if value.isidentifier() else 'float32'}"
                                f", not the string {value!r}")
    from .backend.dtypes import as_dtype
    try:
        return as_dtype(value)
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"{fn}: {arg} must be a dtype such as gradlab.float32, got {_kind(value)} "
                                f"{value!r}") from None


def nonempty_dim(shape, d: int, fn: str) -> None:
    """A reduction that picks an element (``max``, ``mode``, ``kthvalue``) over dim ``d`` needs one there:
    an ``IndexError``, as PyTorch's "Expected reduction dim to have non-zero size"."""
    if shape[d] == 0:
        raise IndexOutOfRange(f"{fn}: expected reduction dim {d} to have non-zero size, but the input "
                              f"{tuple(shape)} has none there; there is no element to pick")


def number(value, fn: str, arg: str, integer: bool = False, tensor_ok: bool = True):
    """A real number (a Python/NumPy int or float; a 1-element tensor is not one here). A bool is not
    a number here (``lr=True`` is a mistake, not 1.0)."""
    kind = type(value)
    if kind is int or (kind is float and not integer):
        return value  # the usual case, first (``numbers.Real`` is an ABC: its isinstance test is slow)
    if isinstance(value, (bool, np.bool_)):
        raise ArgumentTypeError(f"{fn}: {arg} must be a number, got the bool {value!r}")
    if isinstance(value, (numbers.Real, np.number)) and not isinstance(value, (complex, np.complexfloating)):
        if integer and _index(value) is None:
            raise ArgumentTypeError(f"{fn}: {arg} must be an int, got {_kind(value)} {value!r}")
        return value
    if not integer and tensor_ok and hasattr(value, "item") and hasattr(value, "numel") and value.numel() == 1:
        return value.item()  # lr=gradlab.tensor(0.01): a 1-element tensor stands for its number (as PyTorch)
    raise ArgumentTypeError(f"{fn}: {arg} must be a number, got {_kind(value)} {value!r}")


def nonnegative(value, fn: str, arg: str, hint: str = ""):
    """A number >= 0 (learning rates, eps, weight decay, a standard deviation...)."""
    v = number(value, fn, arg)
    if not v >= 0:  # NaN too
        raise ArgumentError(f"{fn}: {arg} must be >= 0, got {value!r}" + (f"; {hint}" if hint else ""))
    return value


def positive(value, fn: str, arg: str, hint: str = ""):
    v = number(value, fn, arg)
    if not v > 0:
        raise ArgumentError(f"{fn}: {arg} must be > 0, got {value!r}" + (f"; {hint}" if hint else ""))
    return value


def in_range(value, lo, hi, fn: str, arg: str, hint: str = ""):
    """A number in ``[lo, hi]`` (both ends included)."""
    v = number(value, fn, arg)
    if not lo <= v <= hi:
        raise ArgumentError(f"{fn}: {arg} must be in [{lo}, {hi}], got {value!r}" + (f"; {hint}" if hint else ""))
    return value


def probability(p, fn: str, arg: str = "p"):
    """A probability: a number in [0, 1]."""
    return in_range(p, 0, 1, fn, arg)


def choice(value, options, fn: str, arg: str):
    """One of ``options`` (strings such as ``reduction='mean'``)."""
    if not isinstance(value, str) or value not in options:
        raise ArgumentError(f"{fn}: {arg} must be one of {', '.join(repr(o) for o in options)}, got {value!r}")
    return value


def floating(t, fn: str, arg: str = "input", what: str = "a floating dtype"):
    """A tensor (or array) of floating dtype: PyTorch refuses e.g. ``softmax(x, dtype=torch.int64)``."""
    from .backend import dtypes as _dt
    dt = getattr(t, "dtype", t)
    if not _dt.is_floating(dt):
        raise DTypeError(f"{fn}: {arg} must have {what}, got {_dt.dtype_name(dt)}; convert with .float() or "
                         f".double()")
    return t


def device(d, fn: str = "to"):
    """A device spec gradlab knows: ``'cpu'``, ``'cuda'``, ``'cuda:N'`` (or a Device). Returns it parsed."""
    from .backend.device import Device
    return Device.parse(d, fn)


# ---------------------------------------------------------------- deliberate strictness: the one list
#: Where gradlab refuses, on purpose, a call PyTorch accepts, and why. Keys are ``(function, argument)``:
#: the public name and one argument, as the labels of ``tests/fuzz_calls.py`` name them (``"arg 1"``,
#: ``"dim"``). The fuzz suite (``tests/test_fuzz_errors.py``) fails on any refusal of what PyTorch accepts
#: that is not listed here.
_BUILT = ("a module checks its size arguments when it is built, so the mistake is reported on the line that "
          "made it; PyTorch stores them and fails only at the first forward")
_FLOAT_ONLY = ("pooling and losses are defined on floating tensors here (they exist to be differentiated); "
               "PyTorch also runs them on integer tensors")
_NEG_SMOOTHING = ("label_smoothing mixes the one-hot target with the uniform one and must be in [0, 1]; PyTorch "
                  "checks only the upper bound, and a negative weight on the uniform part makes the loss unbounded "
                  "below (it falls to -inf as the wrong classes' logits do)")
_BUILT_NUMBERS = ("a layer or loss module checks its number arguments (a slope, eps, momentum, a margin, p, a size, "
                  "the reduction) when it is built, so the mistake is reported on the line that made it; PyTorch "
                  "stores most of them and fails only at the first forward")

#: The one list of deliberate strictness: ``(public name, argument) -> reason``. Each entry names one op
#: (exactly as the user calls it) and one argument (``"arg 0"``, ``"stride"``, ``"forward arg 0"`` for a
#: module's forward, ``"hand"`` for a hand-written case): no patterns, so a new refusal is never covered
#: by an old entry's reason unseen. ``stricter_reason`` looks an exact pair up.
STRICTER_THAN_PYTORCH: dict[tuple[str, str], str] = {
    **{(op, arg): _BUILT for op, arg in [
        ("Conv1d", "stride"), ("Conv2d", "stride"), ("ConvTranspose2d", "stride"),
        ("Conv1d", "padding"), ("Conv2d", "padding"), ("ConvTranspose2d", "padding"), ("Conv2d", "dilation"),
        ("AvgPool1d", "arg 0"), ("ZeroPad2d", "arg 0"), ("Unflatten", "arg 1"), ("Upsample", "scale_factor")]},
    **{(op, arg): _FLOAT_ONLY for op, arg in [
        ("avg_pool1d", "arg 0"), ("avg_pool2d", "arg 0"), ("avg_pool3d", "arg 0"), ("lp_pool1d", "arg 0"),
        ("lp_pool2d", "arg 0"), ("lp_pool3d", "arg 0"), ("max_pool2d", "arg 0"), ("max_pool3d", "arg 0"),
        ("AvgPool1d", "forward arg 0"), ("AvgPool2d", "forward arg 0"), ("MaxPool2d", "forward arg 0")]},
    **{(op, arg): _BUILT_NUMBERS for op, arg in [
        ("BatchNorm1d", "eps"), ("BatchNorm1d", "momentum"), ("LayerNorm", "eps"), ("LeakyReLU", "arg 0"),
        ("ELU", "arg 0"), ("Softshrink", "arg 0"), ("HuberLoss", "delta")]},
    **{(op, "forward arg 0"): "a layer checks that its input has its parameters' dtype before it looks at the "
                              "batch; PyTorch skips that check for an empty batch (0 samples) and returns an "
                              "empty result" for op in ("BatchNorm1d", "BatchNorm2d", "ConvTranspose2d")},
    ("cross_entropy", "label_smoothing"): _NEG_SMOOTHING, ("CrossEntropyLoss", "label_smoothing"): _NEG_SMOOTHING,
    ("conv_zero_out", "hand"): "a convolution with 0 output channels computes nothing; PyTorch builds it and "
                               "returns empty tensors",
    ("fake_quantize_per_tensor_affine", "arg 1"): "a scale <= 0 does not define a quantization grid; "
                                                  "PyTorch accepts it and returns a mirrored or nan grid",
    ("SGD", "dampening"): "dampening is checked to be a number; PyTorch accepts any object until step()",
    ("hinge_embedding_loss", "arg 0"): "a loss scores floating predictions; on an integer input PyTorch computes "
                                       "in integers (the margin truncated) for reduction='none'/'sum' and refuses "
                                       "'mean'",
    ("local_response_norm", "arg 0"): "PyTorch averages the integer squares with integer (truncating) division, a "
                                      "different normalization from the float one; convert the input with .float()",
    **{(op, arg): "the fused recurrent cells take float gate pre-activations (what nn.LSTM/nn.GRU give them); "
                  "PyTorch's composite reference promotes integers silently"
       for op, arg in [("fused_gru_cell", "arg 0"), ("fused_gru_cell", "arg 1"), ("fused_gru_cell", "arg 2"),
                       ("fused_lstm_cell", "arg 0"), ("fused_lstm_cell", "arg 1")]},
    **{(op, arg): "the fused LSTM sequence takes float gate pre-activations, states and weights (what nn.LSTM "
                  "gives it); PyTorch's composite reference promotes some integers silently"
       for op, arg in [("fused_lstm", "arg 0"), ("fused_lstm", "arg 2"), ("fused_lstm", "arg 4")]},
    ("index_add", "arg 0"): "an index outside the input's dim is refused whatever the input's size; PyTorch checks "
                            "the indices only when the input has elements, so an empty input takes any index",
    ("scaled_dot_product_attention", "arg 2"): "a value whose batch size does not match the query's is a shape "
                                               "error, as PyTorch says for any size but 0; for an empty value "
                                               "PyTorch returns zeros of the query's shape instead",
}


def stricter_reason(fn: str, what: str):
    """The reason gradlab deliberately refuses ``fn`` called with ``what`` (``"stride -> 1.5"``: the
    argument, then the wrong value), or None if it does not: an exact (op, argument) lookup."""
    return STRICTER_THAN_PYTORCH.get((fn, what.split(" -> ")[0]))


# ---------------------------------------------------------------- pooling, convolution, resampling (issue #24)
def output_sizes(value, n: int, fn: str, arg: str = "output_size", none_ok: bool = True,
                 minimum: int | None = 1) -> tuple:
    """Adaptive pooling's ``output_size``: an int repeated ``n`` times, or a sequence of ``n`` entries, each
    an int or (where ``none_ok``) ``None`` (keep the input's size there). Returns the tuple, ``None`` kept.

    A float, a string or a bool where a size belongs is an :class:`ArgumentTypeError` (PyTorch's "must be
    tuple of ints"); the wrong number of entries or a size below ``minimum`` is an :class:`ArgumentError`.
    """
    want = ("an int or a tuple of one int" if n == 1 else
            f"an int or a tuple of {n} ints" + (" (None keeps a size)" if none_ok else ""))
    if isinstance(value, (tuple, list)):
        items = tuple(value)
    elif value is None and not none_ok:
        raise ArgumentTypeError(f"{fn}: {arg} must be {want}, got None")
    else:
        items = (value,) * n
    out = []
    for v in items:
        if v is None and none_ok:
            out.append(None)
            continue
        i = None if isinstance(v, (bool, np.bool_)) else _index(v)
        if i is None:
            hint = f"; write {int(v)} if you meant it" if isinstance(v, float) and v == int(v) else ""
            raise ArgumentTypeError(f"{fn}: {arg} must be {want}, got {value!r} (a {_kind(v)} inside){hint}")
        out.append(int(i))
    if len(out) != n:
        raise ArgumentError(f"{fn}: {arg} must be {want}, got {value!r} ({len(out)} entries)")
    if minimum is not None and any(o is not None and o < minimum for o in out):
        raise ArgumentError(f"{fn}: {arg} must be {want} >= {minimum}, got {value!r}")
    return tuple(out)


#: what to do when a layer's parameters and its input differ in dtype (float64 NumPy data into a float32 layer)
PARAMS_HINT = ("a layer's parameters are float32 unless made otherwise: convert the input with x.float(), or "
               "the layer with .double()")


def integer_tensor(t, fn: str, arg: str, int64_only: bool = False):
    """A tensor of integer dtype (indices, offsets): ``int64`` (or, unless ``int64_only``, any integer dtype),
    never bool or floating. Raises :class:`DTypeError` naming the dtype and how to convert."""
    from .backend import dtypes as _dt
    dt = getattr(t, "dtype", None)
    ok = dt is not None and _dt.category(dt) == 1 and (not int64_only or dt == np.int64)
    if not ok:
        want = "dtype int64" if int64_only else "an integer dtype"
        raise DTypeError(f"{fn}: {arg} must have {want}, got {_dt.dtype_name(dt) if dt is not None else _kind(t)}; "
                         f"convert with .long()")
    return t


def conv_weight(w, groups: int, fn: str):
    """A convolution's ``weight`` ``(out_channels, in_channels/groups, *kernel)`` has at least ``groups``
    output channels: with none there is nothing to compute (PyTorch: "expected weight to be at least
    ``groups`` at dimension 0"), and NumPy would fail deep inside with a bare reshape error."""
    from .errors import fmt_shape
    if w.shape[0] < groups:
        raise ShapeError(f"{fn}: weight {fmt_shape(w.shape)} has {w.shape[0]} output channels (dim 0); with "
                         f"groups={groups} it needs at least {groups}")
    return w


# ---------------------------------------------------------------- tensor arguments of the nn functions
def numpy_operand(a, fn: str, arg: str) -> ArrayOperandError:
    """The error for a NumPy array given where a Tensor belongs (``gradlab.tanh(array)``), to raise.

    PyTorch refuses one there ("must be Tensor, not numpy.ndarray") rather than guess whether the
    result should share the array's memory: the user says so, with ``gradlab.from_numpy(a)`` (shared,
    as ``torch.from_numpy``) or ``gradlab.tensor(a)`` (a copy). Only the operators take an array as it
    is (``x + array``, as PyTorch computes it too; see ``Tensor.__add__``)."""
    return ArrayOperandError(f"{fn}: {arg} must be a Tensor, got a NumPy array of shape {tuple(a.shape)}; wrap "
                             f"it with gradlab.from_numpy(a) (shares its memory) or gradlab.tensor(a) (a copy)")


def _tensor_arg(t, fn: str, arg: str):
    """``t`` if it is a tensor (anything with a dtype and a shape, but not a NumPy array: see
    :func:`numpy_operand`); else the wrong-kind error."""
    if isinstance(t, np.ndarray):
        raise numpy_operand(t, fn, arg)
    if getattr(t, "dtype", None) is None or not hasattr(t, "shape"):
        raise ArgumentTypeError(f"{fn}: {arg} must be a Tensor, got {_kind(t)} {t!r}; wrap data with "
                                f"gradlab.tensor(...)")
    return t


def param_dtype(t, like, fn: str, arg: str):
    """A parameter tensor of a normalization or a loss (``weight``, ``bias``, running statistics) used with
    the input ``like``: floating, and of ``like``'s dtype, as PyTorch's CPU kernels require
    ("expected scalar type Double but found Float"); a float32 parameter may serve a 16-bit input (PyTorch's
    mixed-precision rule). ``None`` passes (the parameter is optional)."""
    if t is None:
        return t
    if type(t) is type(like) and t.dtype == like.dtype and t.dtype.kind == "f":
        return t  # the usual case, first: a tensor of the input's own float dtype (no import, no messages)
    from .backend import dtypes as _dt
    _tensor_arg(t, fn, arg)
    want = like.dtype
    ok = t.dtype == want or (_dt.is_floating(want) and want.itemsize == 2 and t.dtype == _dt.float32)
    if not _dt.is_floating(t.dtype) or not ok:
        raise DTypeError(f"{fn}: {arg} has dtype {_dt.dtype_name(t.dtype)} but the input has dtype "
                         f"{_dt.dtype_name(want)}; they must match: convert with {arg}.to(input.dtype)")
    return t


def common_floating(fn: str, **tensors):
    """The dtype two or more tensors (or numbers) promote to, which must be floating: PyTorch's "expected
    common dtype to be floating point" (``l1_loss(int_input, float_target)`` is fine, both int is not).
    ``common_floating("l1_loss", input=x, target=t)`` returns the dtype to compute in."""
    from .backend import dtypes as _dt
    dt = _dt.result_type(*tensors.values())
    if not _dt.is_floating(dt):
        named = ", ".join(f"{k} {_dt.dtype_name(getattr(v, 'dtype', type(v)))}" for k, v in tensors.items())
        raise DTypeError(f"{fn}: {named} promote to {_dt.dtype_name(dt)}, but it needs a floating dtype; "
                         f"convert one with .float()")
    return dt


#: The rules :func:`arguments` knows: a name, and the check it runs as ``check(value, fn, arg)``.
_RULES = {
    "number": number, "nonnegative": nonnegative, "positive": positive, "probability": probability,
    "int": lambda v, fn, arg: size(v, fn, arg, None), "size": size,
    "count": lambda v, fn, arg: size(v, fn, arg, 1),
    "tensor": _tensor_arg, "floating": lambda v, fn, arg: floating(_tensor_arg(v, fn, arg), fn, arg),
    "flag": flag,
}


def arguments(fn: str, **given):
    """Check several arguments of ``fn`` at once, declaratively, at the top of a public function::

        checks.arguments("huber_loss", input=(input, "floating"), delta=(delta, "positive"))

    Each keyword is an argument's name and ``(value, rule)``; a rule is a name of :data:`_RULES`
    (``number``, ``nonnegative``, ``positive``, ``probability``, ``int``, ``size`` (>= 0), ``count``
    (>= 1), ``tensor``, ``floating``, ``flag`` (True or False)), ending in ``?`` where ``None`` is allowed too (``"floating?"``
    for an optional weight). Returns the checked values, in order (one value alone when one is given).
    """
    out = []
    for arg, (value, rule) in given.items():
        if rule.endswith("?"):
            if value is None:
                out.append(None)
                continue
            rule = rule[:-1]
        out.append(_RULES[rule](value, fn, arg))
    return out[0] if len(out) == 1 else tuple(out)
# ---------------------------------------------------------------- one dtype where PyTorch does not promote
def same_dtype(fn: str, /, *, hint: str = "", **tensors):
    """Tensors that must share one dtype: ``same_dtype("addmm", input=i, mat1=a, mat2=b)``.

    PyTorch promotes in elementwise arithmetic (``int + float`` is float), but a family of ops takes
    its operands as they are and refuses a mix: the matrix products (``matmul``, ``mm``, ``addmm``,
    ``linear``, ``bilinear``, ``einsum``, ``tensordot``...), the ops that write one tensor's values into
    another (``index_add``, ``index_copy``, ``index_put``, ``scatter``, ``masked_scatter``...) and a few
    others (``meshgrid``, ``isclose``, ``lerp``, ``cross``...). Arguments given as None (an optional bias)
    are skipped; anything else without a dtype is left to the op's other checks. ``hint`` replaces the
    message's advice on what to convert. Returns the dtype (None if no argument has one).
    """
    first_name, first = None, None
    for name, t in tensors.items():
        dt = getattr(t, "dtype", None)
        if dt is None:
            continue
        if first is None:
            first_name, first = name, t
        elif dt != first.dtype:
            from .backend import dtypes as _dt
            from .errors import DTypeError, fmt_shape
            a, b = _dt.dtype_name(first.dtype), _dt.dtype_name(dt)
            raise DTypeError(
                f"{fn}: {first_name} {fmt_shape(first.shape)} has dtype {a} but {name} {fmt_shape(t.shape)} "
                f"has dtype {b}; they must have the same dtype (no promotion here, unlike + and *): " + (hint or
                f"give it one dtype, e.g. {name}.to(gradlab.{a}) (NumPy data is float64: x.float() makes float32)"))
    return None if first is None else first.dtype
