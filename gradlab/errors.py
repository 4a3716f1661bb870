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


class GradlabError(Exception):
    """Base class of every error gradlab raises on purpose."""


class ShapeError(GradlabError, ValueError, RuntimeError):
    """Shapes that cannot be combined (broadcasting, matmul, reshape...)."""


class DTypeError(GradlabError, TypeError, RuntimeError):
    """A dtype that cannot be used here (e.g. requires_grad on an integer tensor)."""


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


class ArgumentTypeError(GradlabError, TypeError):
    """An argument of the wrong kind: a string where a tensor or a number is expected, a missing argument."""


class ValueRuntimeError(ArgumentError):
    """A bad argument value that PyTorch reports as a ``RuntimeError`` (``bincount`` of negative numbers...):
    both ``except ValueError`` and ``except RuntimeError`` catch it (as every ArgumentError)."""


class GradcheckError(GradlabError, AssertionError):
    """Analytic and numeric gradients disagree."""


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
