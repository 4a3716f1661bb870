"""gradlab's exception types.

A teaching tool is judged by its error messages. Every error a user can cause
says what happened, names the arguments and shapes involved, and says what to
do. Each class subclasses the matching built-in, so ``except ValueError`` in
user code still works. PyTorch reports most shape, dtype, value and index problems
found inside its C++ kernels as ``RuntimeError`` (``mat1 and mat2 shapes cannot be
multiplied``); so ShapeError, DTypeError, ArgumentError and IndexOutOfRange subclass
``RuntimeError`` as well, and a student's ``except RuntimeError`` catches them as it
would catch PyTorch's.
"""


import re as _re
import sys as _sys

_PREFIX = _re.compile(r"([A-Za-z_][A-Za-z0-9_.]*): ")


class GradlabError(Exception):
    """Base class of every error gradlab raises on purpose.

    A message starts with the name of the function at fault (``"matmul: cannot multiply..."``). When
    that is an op the function the user called delegates to (``fmod`` computed with ``div``), the
    prefix is replaced by the public name the user called (:func:`public_name`), so the message
    names the function in the user's own code.
    """

    def __init__(self, *args):
        if len(args) == 1 and isinstance(args[0], str):
            m = _PREFIX.match(args[0])
            if m is not None:
                called = public_name()
                said = m.group(1)
                # (a prefix that already names the call, dotted as the user wrote it -- "linalg.inv" for
                # inv -- stays)
                if called is not None and called.lower() not in (said.lower(), said.rsplit(".", 1)[-1].lower()):
                    args = (f"{called}: {args[0][m.end():]}",)
        super().__init__(*args)


class ShapeError(GradlabError, ValueError, RuntimeError):
    """Shapes that cannot be combined (broadcasting, matmul, reshape...)."""


class DTypeError(GradlabError, TypeError, ValueError, RuntimeError):
    """A dtype that cannot be used here (e.g. requires_grad on an integer tensor). PyTorch reports these
    as ``RuntimeError``, ``TypeError`` or ``ValueError`` depending on the function: all three catch it."""


class DeviceError(GradlabError, RuntimeError):
    """Tensors on different devices, or a device that is not available."""


class GradError(GradlabError, RuntimeError):
    """Misuse of autograd: backward twice, non-scalar backward, in-place change..."""


class IndexOutOfRange(GradlabError, IndexError, RuntimeError):
    """An index outside a tensor's bounds."""


class IndexTypeError(DTypeError, IndexError):
    """An index of the wrong dtype (``x[float_tensor]``): PyTorch raises ``IndexError`` for it."""


class ArgumentError(GradlabError, ValueError, RuntimeError):
    """A bad value for an argument that is not a shape or dtype problem."""


class ArgumentTypeError(GradlabError, TypeError, ValueError):
    """An argument of the wrong kind: a string where a tensor or a number is expected, a missing argument.
    PyTorch reports these as ``TypeError`` from its argument parser but as ``ValueError`` from the checks
    in its Python code (``nn.Conv2d(2.5, 3, 3)``): both catch it."""


class ArrayOperandError(ArgumentTypeError, RuntimeError):
    """A NumPy array where a Tensor belongs (``gradlab.tanh(array)``). PyTorch's functions raise a
    ``TypeError`` ("must be Tensor, not numpy.ndarray"); its functions written in Python raise a
    ``RuntimeError`` when NumPy meets a tensor that requires grad ("Can't call numpy() on Tensor that
    requires grad"): either ``except`` clause catches this."""


class ValueRuntimeError(ArgumentError):
    """A bad argument value that PyTorch reports as a ``RuntimeError`` (``bincount`` of negative numbers...):
    both ``except ValueError`` and ``except RuntimeError`` catch it (as every ArgumentError)."""


class OutOfMemoryError(GradlabError, RuntimeError, MemoryError):
    """A result too big for this machine, refused before it is allocated. As ``torch.OutOfMemoryError``
    it is a ``RuntimeError`` (what torch-style code catches); it is also a ``MemoryError``."""


OutOfMemory = OutOfMemoryError  # (the older name)


class GradcheckError(GradlabError, AssertionError):
    """Analytic and numeric gradients disagree."""


#: Entry points whose frames are gradlab's plumbing, not a function the user called by name.
_PLUMBING = frozenset({"__call__", "_call_impl", "apply", "wrapper", "fn", "f", "inner", "<lambda>",
                       "<listcomp>", "<genexpr>", "<dictcomp>", "<module>"})


#: Entry points that run other code (a backward pass, a transform, a check): inside them the inner
#: op's own name (the node whose backward failed) says more than the entry's, so it is kept.
_TRANSPARENT = frozenset({"backward", "grad", "gradcheck", "gradgradcheck", "jvp", "vjp", "jacrev", "jacfwd",
                          "hessian", "vmap", "checkpoint", "functional_call", "run_backward", "compile",
                          "trace", "profile", "explain_grad", "show_graph", "animate_backward"})


def public_name(start=None):
    """The public name of the gradlab function the user called, read from the call stack.

    Walks out from ``start`` (default: the caller) to the outermost frame of gradlab's own code whose
    caller is not gradlab (the user's call). A method ``Linear.__init__``/``Linear.forward`` is named by
    its class (``Linear``), a function by its name (``fmod``, ``avg_pool1d``). Returns None when there is
    no such frame, or it is a private helper or generic plumbing (``__call__``, a dunder): then the
    message's own prefix stays. Only runs when an error is built (never on the fast path).
    """
    f = start or _sys._getframe(2)
    entry = None
    depth = 0
    while f is not None and depth < 200:
        mod = f.f_globals.get("__name__", "")
        if mod == "gradlab" or mod.startswith("gradlab."):
            entry = f
        elif entry is not None:
            break
        f = f.f_back
        depth += 1
    if entry is None:
        return None
    code = entry.f_code
    name = code.co_name
    qual = getattr(code, "co_qualname", name)
    if name in ("__init__", "forward", "__call__", "module_call"):
        self = entry.f_locals.get("self")
        cls = type(self).__name__ if self is not None else qual.rpartition(".")[0].rpartition(".")[2]
        if cls in ("Module", ""):
            return None
        return cls or None
    if name.startswith("_") and not name.startswith("__"):
        name = name.lstrip("_")  # a method installed from a private implementation (Tensor.narrow is _narrow)
    if name.startswith("_") or name in _PLUMBING or name in _TRANSPARENT or "<" in qual or not name:
        return None
    cls, _, _ = qual.rpartition(".")
    self = entry.f_locals.get("self") if cls and "<" not in cls else None
    if self is not None and code.co_varnames[:1] == ("self",):  # a method: Adam.step, Tensor.item
        return f"{type(self).__name__}.{name}"
    return name


def fmt_shape(shape) -> str:
    """Format a shape the way students see it everywhere: ``(3, 4)``."""
    shape = tuple(shape)
    if len(shape) == 1:
        return f"({shape[0]},)"
    return "(" + ", ".join(str(s) for s in shape) + ")"


def broadcast_failure(op: str, shapes, names=None) -> ShapeError:
    """Build the error for shapes that do not broadcast, naming the failing dim.

    Broadcasting aligns shapes from the right; two sizes are compatible when
    they are equal or one of them is 1.
    """
    shapes = [tuple(s) for s in shapes]
    names = names or [f"input {i}" for i in range(len(shapes))]
    ndim = max(len(s) for s in shapes)
    for back in range(1, ndim + 1):
        sizes = {}
        for name, s in zip(names, shapes):
            if back <= len(s) and s[-back] != 1:
                sizes.setdefault(s[-back], name)
        if len(sizes) > 1:
            (s1, n1), (s2, n2) = list(sizes.items())[:2]
            dim = -back
            desc = " and ".join(f"{n} {fmt_shape(s)}" for n, s in zip(names, shapes))
            return ShapeError(
                f"{op}: cannot broadcast {desc}: at dim {dim} (counting from the right) "
                f"{n1} has size {s1} and {n2} has size {s2}; sizes must match or one must be 1. "
                f"Use reshape/unsqueeze to line the dimensions up"
            )
    return ShapeError(f"{op}: cannot broadcast shapes {', '.join(fmt_shape(s) for s in shapes)}")
