"""Generated wrong calls across gradlab's public API, each with the same call in PyTorch.

A :class:`Case` is one call: ``gl()`` runs it in gradlab, ``pt(torch)`` the same call in PyTorch. The
cases come from

* every registry op: its first samples, each argument in turn replaced by something wrong (a string
  for a tensor, an integer tensor for a float one, a float or a string or a negative for an int, a
  string or a negative for a float, a bad string for a string, a float inside a tuple of ints);
* ``F.*`` functions, module constructors and forwards, optimizers, ``gradlab.func``, factories:
  a valid call written by hand (:data:`SPECS`) mutated the same way;
* the calls issue #24 lists that no generator writes (setting ``requires_grad`` on an integer tensor,
  ``backward(inputs=[])``...): :data:`HAND`.

Everything is seeded: the same cases every run. ``classify`` sorts each outcome (see
``tests/test_fuzz_errors.py``).
"""
from __future__ import annotations

import dataclasses
import itertools
import sys
import warnings
from typing import Callable

import numpy as np

import gradlab
import gradlab.nn.functional  # noqa: F401 - registers the nn.functional ops
from gradlab.errors import GradlabError

from .oracle import to_torch

STR = "abc"


@dataclasses.dataclass
class Case:
    fn: str            # the public name called (what the message must name)
    what: str          # the mutation: "arg 1 -> 1.5"
    gl: Callable
    pt: Callable       # pt(torch)
    values: bool = True  # compare values when both succeed (False for random ops)
    origin: str = ""   # the call mutated, when ``fn`` alone is ambiguous: "F.relu", "F.max_pool2d(t(1, 1, 4, 4), 2)"

    @property
    def id(self):
        """Unique across the suite: the call mutated (or the function), then the mutation."""
        return f"{self.origin or self.fn}[{self.what}]"

    @property
    def klass(self):
        """The class of the mutation (``CLASSES``): "wrong kind", "list operand", "flag value"..."""
        label = self.what.split(" -> ")[-1] if " -> " in self.what else None
        return CLASSES.get(label, "hand-written")


# ---------------------------------------------------------------- mutations
def _int_tensor(t):
    return gradlab.Tensor._make(np.asarray(t._data).round().astype(np.int64))


def _empty(t):
    """``t`` with its first dim cut to size 0 (a 0-d tensor stays as it is: it has no dim to empty)."""
    return gradlab.Tensor._make(np.asarray(t._data)[:0]) if t.ndim else None


#: The classes of wrong or edge-case values (the first word of a mutation's label), for the report.
CLASSES = {"str": "wrong kind", "int tensor": "wrong dtype", "1.5": "wrong kind", "'2'": "wrong kind",
           "-7": "out of domain", "-1.0": "out of domain", "'bogus'": "out of domain", "float inside": "wrong kind",
           "-5 inside": "out of domain", "list": "list operand", "ndarray": "ndarray operand",
           "empty": "empty (size 0)", "'yes'": "flag value", "1 for a bool": "flag value",
           "dtype str": "dtype string", "aliasing": "aliasing"}


def mutations(v):
    """(label, wrong value) pairs for one argument value: wrong kinds and domains, list/ndarray operands,
    empty (size-0) tensors, non-bool flags and dtype strings."""
    if isinstance(v, gradlab.Tensor):
        out = [("str", STR), ("list", np.asarray(v._data).tolist()), ("ndarray", np.array(v._data, copy=True))]
        if gradlab.is_floating_point(v):
            out.append(("int tensor", _int_tensor(v)))
            e = _empty(v)  # (floating data only: PyTorch's embedding_bag crashes the process on empty offsets)
            if e is not None:
                out.append(("empty", e))
        return out
    if isinstance(v, bool):
        return [("'yes'", "yes"), ("1 for a bool", 1)]
    if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
        return [("dtype str", np.dtype(v).name)]
    if v is None:
        return []
    if isinstance(v, (int, np.integer)):
        return [("1.5", 1.5), ("'2'", "2"), ("-7", -7)]
    if isinstance(v, float):
        return [("str", STR), ("-1.0", -1.0)]
    if isinstance(v, str):
        return [("'bogus'", "bogus")]
    if isinstance(v, (tuple, list)) and v and all(isinstance(e, (int, np.integer)) and not isinstance(e, bool)
                                                  for e in v):
        return [("float inside", type(v)([1.5] + list(v[1:]))), ("-5 inside", type(v)([-5] + list(v[1:])))]
    return []


def mutate(args, kwargs):
    """Every (label, args, kwargs) with one argument replaced by a wrong value."""
    for i, v in enumerate(args):
        for label, w in mutations(v):
            yield f"arg {i} -> {label}", args[:i] + (w,) + args[i + 1:], kwargs
    for k, v in kwargs.items():
        for label, w in mutations(v):
            yield f"{k} -> {label}", args, {**kwargs, k: w}


def _copy(a):
    """A fresh copy of the tensors in args (a call may change its inputs in place)."""
    if isinstance(a, gradlab.Tensor):
        t = gradlab.Tensor._make(np.array(a._data, copy=True))
        if a.requires_grad:
            t.requires_grad_(True)
        return t
    if isinstance(a, (list, tuple)):
        return type(a)(_copy(x) for x in a)
    if isinstance(a, dict):
        return {k: _copy(x) for k, x in a.items()}
    return a


# ---------------------------------------------------------------- registry ops
RANDOM_OPS = {"dropout", "F.dropout", "F.alpha_dropout", "F.feature_alpha_dropout", "F.dropout1d", "F.dropout2d",
              "F.dropout3d", "F.rrelu", "F.gumbel_softmax", "bernoulli", "multinomial", "normal", "rand_like",
              "randn_like", "randint_like", "poisson", "randperm"}


def registry_cases(per_op=2, seed=0):
    from gradlab.ops.registry import REGISTRY, SampleSource
    for name in sorted(REGISTRY):
        info = REGISTRY[name]
        if info.torch is None:
            continue
        public = info.name
        try:
            samples = list(itertools.islice(info.samples(SampleSource(seed)), per_op))
        except Exception:  # pragma: no cover - the registry suite reports broken samples
            continue
        seen = set()
        for s in samples:
            for what, args, kwargs in mutate(tuple(s.args), dict(s.kwargs)):
                if what in seen:
                    continue
                seen.add(what)

                def gl(fn=info.fn, a=args, k=kwargs):
                    return fn(*_copy(a), **_copy(k))

                def pt(torch, o=info.torch, a=args, k=kwargs):
                    return o(torch, *to_torch(torch, _copy(a)), **to_torch(torch, _copy(k)))
                yield Case(public, what, gl, pt, values=name not in RANDOM_OPS, origin=_short(name))


# ---------------------------------------------------------------- hand-written valid calls, mutated
def _short(path):
    """``functional.relu`` / ``nn.functional.relu`` -> ``F.relu`` (the spelling users write)."""
    for long in ("nn.functional.", "functional."):
        if path.startswith(long):
            return "F." + path[len(long):]
    return path


def _describe(v):
    """A short, stable spelling of an argument for a case id: tensors by shape (``t(2, 3)``)."""
    if isinstance(v, gradlab.Tensor):
        return f"t{tuple(v.shape)}".replace(",)", ")")
    if isinstance(v, (tuple, list)):
        inner = ", ".join(_describe(x) for x in v)
        return f"({inner},)" if isinstance(v, tuple) and len(v) == 1 else (f"({inner})" if isinstance(v, tuple) else f"[{inner}]")
    return repr(v)


def _call(path, args, kwargs):
    """``F.max_pool2d(t(1, 1, 4, 4), 2)``: the valid call a spec mutates, as the case id shows it."""
    parts = [_describe(a) for a in args] + [f"{k}={_describe(v)}" for k, v in kwargs.items()]
    return f"{_short(path)}({', '.join(parts)})"


def _t(*shape, dtype="float32", low=-1.0, high=1.0, seed=0, grad=False):
    rng = np.random.default_rng(seed + len(shape))
    a = rng.uniform(low, high, size=shape).astype(dtype)
    t = gradlab.Tensor._make(a)
    if grad:
        t.requires_grad_(True)
    return t


def _ft(*shape, **kw):
    return _t(*shape, dtype="float64", **kw)


def _idx(*shape, high=3):
    return gradlab.Tensor._make(np.random.default_rng(1).integers(0, high, size=shape).astype(np.int64))


@dataclasses.dataclass
class Spec:
    """A valid call ``path(*args, **kwargs)`` (``path`` a dotted name under gradlab and torch), and for a
    module class, the forward input(s) to call the built module with."""
    path: str
    args: tuple = ()
    kwargs: dict = dataclasses.field(default_factory=dict)
    forward: tuple | None = None
    values: bool = True


def _resolve(root, path):
    obj = root
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _torch_path(path):
    return {"func.grad": "func.grad", "func.vmap": "func.vmap", "func.jacrev": "func.jacrev",
            "func.jacfwd": "func.jacfwd"}.get(path, path)


SPECS = [
    # modules: constructor args mutated; then forward inputs mutated
    Spec("nn.Linear", (4, 3), forward=(_ft(2, 4),)),
    Spec("nn.Bilinear", (2, 3, 4), forward=(_ft(2, 2), _ft(2, 3))),
    Spec("nn.Conv1d", (2, 3, 3), {"stride": 1, "padding": 1}, forward=(_ft(1, 2, 6),)),
    Spec("nn.Conv2d", (2, 3, 3), {"stride": 1, "padding": 1, "dilation": 1, "groups": 1}, forward=(_ft(1, 2, 5, 5),)),
    Spec("nn.ConvTranspose2d", (2, 3, 3), {"stride": 2, "padding": 1}, forward=(_ft(1, 2, 4, 4),)),
    Spec("nn.MaxPool2d", (2,), {"stride": 2, "padding": 0}, forward=(_ft(1, 1, 4, 4),)),
    Spec("nn.AvgPool2d", (2,), {"stride": 2}, forward=(_ft(1, 1, 4, 4),)),
    Spec("nn.AvgPool1d", (2,), forward=(_ft(1, 1, 4),)),
    Spec("nn.AdaptiveAvgPool2d", ((2, 2),), forward=(_ft(1, 1, 4, 4),)),
    Spec("nn.BatchNorm1d", (3,), {"eps": 1e-5, "momentum": 0.1}, forward=(_ft(4, 3),)),
    Spec("nn.BatchNorm2d", (3,), forward=(_ft(2, 3, 2, 2),)),
    Spec("nn.LayerNorm", (4,), {"eps": 1e-5}, forward=(_ft(2, 4),)),
    Spec("nn.GroupNorm", (2, 4), forward=(_ft(2, 4, 3),)),
    Spec("nn.Embedding", (5, 3), forward=(_idx(4, high=5),)),
    Spec("nn.Dropout", (0.5,), forward=(_ft(3, 3),), values=False),
    Spec("nn.RNN", (3, 4), {"num_layers": 1}, forward=(_ft(5, 2, 3),)),
    Spec("nn.LSTM", (3, 4), forward=(_ft(5, 2, 3),)),
    Spec("nn.GRU", (3, 4), forward=(_ft(5, 2, 3),)),
    Spec("nn.MultiheadAttention", (8, 2), forward=(_ft(3, 2, 8), _ft(3, 2, 8), _ft(3, 2, 8))),
    Spec("nn.Softmax", (), {"dim": 1}, forward=(_ft(2, 3),)),
    Spec("nn.Hardtanh", (-1.0, 1.0), forward=(_ft(2, 3),)),
    Spec("nn.LeakyReLU", (0.1,), forward=(_ft(2, 3),)),
    Spec("nn.ELU", (1.0,), forward=(_ft(2, 3),)),
    Spec("nn.Softshrink", (0.5,), forward=(_ft(2, 3),)),
    Spec("nn.Flatten", (1, -1), forward=(_ft(2, 3, 4),)),
    Spec("nn.Unflatten", (1, (2, 2)), forward=(_ft(3, 4),)),
    Spec("nn.PixelShuffle", (2,), forward=(_ft(1, 4, 2, 2),)),
    Spec("nn.Upsample", (), {"scale_factor": 2.0, "mode": "nearest"}, forward=(_ft(1, 1, 2, 2),)),
    Spec("nn.ZeroPad2d", (1,), forward=(_ft(1, 1, 2, 2),)),
    Spec("nn.CrossEntropyLoss", (), {"label_smoothing": 0.1}, forward=(_ft(4, 3), _idx(4))),
    Spec("nn.MSELoss", (), {"reduction": "mean"}, forward=(_ft(4, 3), _ft(4, 3, seed=1))),
    Spec("nn.HuberLoss", (), {"delta": 1.0}, forward=(_ft(4, 3), _ft(4, 3, seed=1))),
    Spec("nn.TransformerEncoderLayer", (8, 2), {"dim_feedforward": 16, "dropout": 0.0}, forward=(_ft(3, 2, 8),)),
    # F.* calls beyond the registry samples: domain-checked parameters
    Spec("nn.functional.softshrink", (_ft(3),), {"lambd": 0.5}),
    Spec("nn.functional.hardtanh", (_ft(3),), {"min_val": -1.0, "max_val": 1.0}),
    Spec("nn.functional.avg_pool2d", (_ft(1, 1, 4, 4), 2), {"divisor_override": 2}),
    Spec("nn.functional.max_pool2d", (_ft(1, 1, 4, 4), 2)),
    Spec("nn.functional.conv2d", (_ft(1, 2, 5, 5), _ft(3, 2, 3, 3)), {"padding": 1, "stride": 1}),
    Spec("nn.functional.pad", (_ft(1, 2, 3), (1, 1))),
    Spec("nn.functional.dropout", (_ft(3, 3),), {"p": 0.5}, values=False),
    Spec("nn.functional.softmax", (_ft(2, 3),), {"dim": 1}),
    Spec("nn.functional.normalize", (_ft(2, 3),), {"p": 2.0, "dim": 1, "eps": 1e-12}),
    Spec("nn.functional.one_hot", (_idx(4),), {"num_classes": 3}),
    Spec("nn.functional.interpolate", (_ft(1, 1, 2, 2),), {"scale_factor": 2.0}),
    Spec("nn.functional.embedding", (_idx(4), _ft(5, 3))),
    # factories
    Spec("zeros", (2, 3)),
    Spec("ones", ((2, 3),)),
    Spec("full", ((2, 3), 1.5)),
    Spec("empty", (2, 3), values=False),
    Spec("eye", (3, 2)),
    Spec("arange", (0, 5, 1)),
    Spec("linspace", (0.0, 1.0, 5)),
    Spec("logspace", (0.0, 1.0, 5)),
    Spec("randn", (2, 3), values=False),
    Spec("rand", (2, 3), values=False),
    Spec("randint", (0, 5, (3,)), values=False),
    Spec("randperm", (5,), values=False),
    Spec("normal", (0.0, 1.0, (3,)), values=False),
    Spec("manual_seed", (0,), values=False),
]


OPTIMIZERS = [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01, "dampening": 0.0}),
    ("Adam", {"lr": 0.01, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0}),
    ("AdamW", {"lr": 0.01, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.99, "eps": 1e-8, "momentum": 0.0}),
    ("Adagrad", {"lr": 0.01, "lr_decay": 0.0, "eps": 1e-10}),
]


def _opt_mutations(v):
    if isinstance(v, float):
        return [("-1.0", -1.0), ("str", STR)]
    if isinstance(v, tuple):
        return [("(1.5, ...)", (1.5,) + v[1:]), ("(-0.1, ...)", (-0.1,) + v[1:])]
    return []


def spec_cases():
    for spec in SPECS:
        tpath = _torch_path(spec.path)

        def build(root, path, a, k, torch=None):
            fn = _resolve(root, path)
            if torch is not None:
                a, k = to_torch(torch, _copy(a)), to_torch(torch, _copy(k))
            else:
                a, k = _copy(a), _copy(k)
            return fn(*a, **k)

        name = spec.path.rsplit(".", 1)[-1]
        call = _call(spec.path, spec.args, spec.kwargs)
        for what, args, kwargs in mutate(spec.args, spec.kwargs):
            yield Case(name, what, (lambda a=args, k=kwargs, p=spec.path: build(gradlab, p, a, k)),
                       (lambda torch, a=args, k=kwargs, p=tpath: build(torch, p, a, k, torch)),
                       values=spec.values and spec.forward is None, origin=call)
        if spec.forward is not None:
            for what, fargs, _ in mutate(spec.forward, {}):
                def gl(a=fargs, p=spec.path, s=spec):
                    gradlab.manual_seed(0)
                    m = build(gradlab, p, s.args, s.kwargs)
                    return m(*_copy(a))

                def pt(torch, a=fargs, p=tpath, s=spec):
                    m = build(torch, p, s.args, s.kwargs, torch)
                    return m(*to_torch(torch, _copy(a)))
                yield Case(name, f"forward {what}", gl, pt, values=False, origin=call)
    for opt, kw in OPTIMIZERS:
        for k, v in kw.items():
            for label, w in _opt_mutations(v):
                def gl(o=opt, kk={**kw, k: w}):
                    return getattr(gradlab.optim, o)([gradlab.ones(2, requires_grad=True)], **kk)

                def pt(torch, o=opt, kk={**kw, k: w}):
                    return getattr(torch.optim, o)([torch.ones(2, requires_grad=True)], **kk)
                yield Case(opt, f"{k} -> {label}", gl, pt, values=False, origin=f"optim.{opt}")


# ---------------------------------------------------------------- hand-written cases (issue #24's list)
def _hand():
    def int_requires_grad(lib):
        t = lib.tensor([1, 2])
        t.requires_grad = True

    def nonleaf_requires_grad_false(lib):
        a = lib.ones(2, requires_grad=True)
        b = a * 2
        b.requires_grad = False

    def backward_no_inputs(lib):
        a = lib.ones(2, requires_grad=True)
        (a * 2).sum().backward(inputs=[])

    def where_float_cond(lib):
        return lib.where(lib.tensor([1.0, 0.0]), lib.tensor([1.0, 2.0]), lib.tensor([3.0, 4.0]))

    def tensor_overflow(lib):
        return lib.tensor([2 ** 63])

    def from_numpy_str(lib):
        return lib.from_numpy(np.array(["a", "b"]))

    def from_numpy_object(lib):
        return lib.from_numpy(np.array([1, "b"], dtype=object))

    def median_nan(lib):
        return lib.tensor([1.0, float("nan"), 3.0, 2.0]).median()

    def mode_nan(lib):
        return lib.tensor([1.0, float("nan"), float("nan"), 2.0]).mode().values

    def manual_seed_neg(lib):
        lib.manual_seed(-1)

    def empty_huge(lib):
        return lib.empty(10 ** 6, 10 ** 6)

    def to_tpu(lib):
        return lib.ones(2).to("tpu")

    def int_attn_mask(lib):
        q = lib.ones(1, 2, 3, 4)
        return lib.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=lib.ones(3, 3, dtype=lib.int64))

    def normal_negative_std(lib):
        return lib.normal(0.0, -1.0, (3,))

    def bce_target(lib):
        return lib.nn.functional.binary_cross_entropy(lib.full((3,), 0.5), lib.full((3,), 1.5))

    def kl_div_negative(lib):
        return lib.nn.functional.kl_div(lib.zeros(3), lib.full((3,), -0.5), reduction="sum")

    def softmax_int_dtype(lib):
        return lib.nn.functional.softmax(lib.ones(3), 0, dtype=lib.int64)

    def conv_zero_out(lib):
        return lib.nn.Conv2d(2, 0, 3)

    def adaptive_empty(lib):
        return lib.nn.functional.adaptive_avg_pool2d(lib.ones(1, 1, 0, 4), 2)

    def mha_zero_heads(lib):
        return lib.nn.MultiheadAttention(8, 0)

    def rnn_zero_len(lib):
        return lib.nn.RNN(3, 4)(lib.ones(0, 2, 3))

    def vmap_bad_dim(lib):
        return lib.func.vmap(lambda x: x * 2, in_dims=2)(lib.ones(2, 3))

    def jacrev_float(lib):
        return lib.func.jacrev(lambda x: 1.0)(lib.ones(2))

    def adam_bad_state(lib):
        p = lib.ones(3, requires_grad=True)
        opt = lib.optim.Adam([p], lr=0.1)
        (p * 2).sum().backward()
        opt.step()
        sd = opt.state_dict()
        q = lib.ones(2, requires_grad=True)
        opt2 = lib.optim.Adam([q], lr=0.1)
        opt2.load_state_dict(sd)
        (q * 2).sum().backward()
        opt2.step()

    def ctc_target_len(lib):
        F = lib.nn.functional
        lp = F.log_softmax(lib.ones(5, 1, 3), 2)
        return F.ctc_loss(lp, lib.tensor([[1, 2]]), lib.tensor([5]), lib.tensor([3]))

    def linear_neg(lib):
        return lib.nn.Linear(-1, 3)

    def roll_float(lib):
        return lib.roll(lib.ones(3), 1.5, 0)

    def reshape_str(lib):
        return lib.reshape(lib.ones(6), "6")

    cases = {k: v for k, v in locals().items() if callable(v)}
    return cases


HAND = _hand()


def hand_cases():
    for name, fn in HAND.items():
        yield Case(name, "hand", (lambda f=fn: f(gradlab)), (lambda torch, f=fn: f(torch)),
                   values=name not in {"empty_huge", "manual_seed_neg", "adam_bad_state"})


# ---------------------------------------------------------------- aliasing: in-place changes through views
VIEWS = {"x[0]": lambda x: x[0], "x[:, 1:]": lambda x: x[:, 1:], "x.t()": lambda x: x.t(),
         "x.view(6)": lambda x: x.view(6), "x.view(x.shape)": lambda x: x.view(x.shape),
         "x.reshape(x.shape)": lambda x: x.reshape(x.shape), "x.transpose(0, 0)": lambda x: x.transpose(0, 0),
         "x.unbind(0)[0]": lambda x: x.unbind(0)[0], "x.split(1)[0]": lambda x: x.split(1)[0],
         "x.chunk(2)[1]": lambda x: x.chunk(2)[1], "x.expand(2, 3)": lambda x: x.expand(2, 3),
         "x.diagonal()": lambda x: x.diagonal(), "x.unsqueeze(0)": lambda x: x.unsqueeze(0),
         "x.detach()": lambda x: x.detach()}
#: (label, the method called, the change); ``w`` is a 0-d tensor that requires grad.
INPLACE = {"add_(1)": ("add_", lambda v, w: v.add_(1.0)), "mul_(2)": ("mul_", lambda v, w: v.mul_(2.0)),
           "zero_()": ("zero_", lambda v, w: v.zero_()), "v[...] = 0": ("setitem", lambda v, w: v.__setitem__(Ellipsis, 0.0)),
           "mul_(w)": ("mul_", lambda v, w: v.mul_(w))}
BASES = {"leaf": lambda lib, a: a, "computed": lambda lib, a: a * 2, "plain": lambda lib, a: lib.ones(2, 3)}


def view_cases():
    """Every view of a leaf, a computed tensor and a plain tensor changed in place, then (when accepted) the
    base's value and the gradients of a loss computed from the base afterwards, to the leaf under it and to
    ``w``: gradlab must refuse what PyTorch refuses and agree on the rest."""
    for (bn, base), (vn, view), (label, (op, change)) in itertools.product(BASES.items(), VIEWS.items(),
                                                                            INPLACE.items()):
        def call(lib, base=base, view=view, change=change):
            a = lib.ones(2, 3, requires_grad=True)
            w = lib.tensor(3.0, requires_grad=True)
            x = base(lib, a)
            change(view(x), w)
            if not x.requires_grad:
                return x.detach() * 1
            (x * lib.arange(6.0).reshape(2, 3)).sum().backward()
            return (x.detach() * 1, lib.zeros(2, 3) if a.grad is None else a.grad,
                    lib.zeros(()) if w.grad is None else w.grad)
        yield Case(op, f"{vn}.{label} of a {bn} tensor -> aliasing", lambda c=call: c(gradlab),
                   lambda torch, c=call: c(torch))


def all_cases():
    return list(registry_cases()) + list(spec_cases()) + list(hand_cases()) + list(view_cases())


# ---------------------------------------------------------------- running and classifying
def run(fn):
    """(ok, result or exception, warnings) of one call, NumPy's error state as the user's."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            return True, fn(), w
        except Exception as e:  # noqa: BLE001 - classified by the caller
            return False, e, w


#: PyTorch errors that are accidents of its Python code, and the class gradlab's error must be
#: instead: an ``AttributeError`` ("'str' object has no attribute 'dim'") is a wrong-kind argument, a
#: TypeError; an ``assert`` in a constructor is a bad value, a ValueError; ``NotImplementedError``
#: ("not implemented for 'Long'") is a RuntimeError, which gradlab's dtype errors are.
EQUIVALENT = {AttributeError: TypeError, AssertionError: ValueError, NotImplementedError: RuntimeError}


def builtin_base(exc_type):
    """The built-in exception class PyTorch's error is (IndexError, ValueError, TypeError, RuntimeError...)."""
    for c in exc_type.__mro__:
        if c.__module__ == "builtins" and c is not Exception and c is not BaseException:
            return EQUIVALENT.get(c, c)
    return Exception


def is_call_binding(e):
    """A TypeError Python raised binding the call (missing/unexpected argument): not from inside gradlab."""
    if not isinstance(e, TypeError) or isinstance(e, GradlabError):
        return False
    tb = e.__traceback__
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame.f_globals.get("__name__", ""))
        tb = tb.tb_next
    last = frames[-1] if frames else ""
    return not last.startswith("gradlab") and ("argument" in str(e))


def gradlab_frames(e):
    tb = e.__traceback__
    out = []
    while tb is not None:
        mod = tb.tb_frame.f_globals.get("__name__", "")
        if mod.startswith("gradlab"):
            out.append(f"{mod}:{tb.tb_lineno}")
        tb = tb.tb_next
    return out


def outputs(r):
    """The tensors of a result, as float64 arrays (torch or gradlab)."""
    if isinstance(r, (tuple, list)):
        out = []
        for x in r:
            out += outputs(x)
        return out
    if hasattr(r, "detach") and hasattr(r, "shape"):
        try:
            d = r.detach()
            if hasattr(d, "cpu"):
                d = d.cpu()
            if str(getattr(d, "dtype", "")).endswith("bfloat16"):
                d = d.float()
            return [np.asarray(d.numpy() if hasattr(d, "numpy") else d)]
        except Exception:  # noqa: BLE001
            return []
    if isinstance(r, (int, float, bool, np.number)):
        return [np.asarray(r)]
    return []


def same_values(a, b):
    oa, ob = outputs(a), outputs(b)
    if len(oa) != len(ob):
        return False, f"{len(oa)} outputs vs torch's {len(ob)}"
    for x, y in zip(oa, ob):
        if x.shape != y.shape:
            return False, f"shape {x.shape} vs torch's {y.shape}"
        if x.dtype.kind in "biuf" and y.dtype.kind in "biuf":
            xf, yf = x.astype(np.float64), y.astype(np.float64)
            if not np.allclose(xf, yf, rtol=1e-4, atol=1e-5, equal_nan=True):
                return False, f"values differ (max |diff| {np.nanmax(np.abs(xf - yf)) if xf.size else 0:.3g})"
    return True, ""


def classify(case, torch, strict_reason):
    """One of: 'ok-both', 'refused-both', 'stricter' (listed), and the failures 'bare', 'silent',
    'unlisted-strict', 'wrong-class', 'wrong-name', 'values', 'warning'. Returns (kind, detail)."""
    ok, r, w = run(case.gl)
    tok, tr, _ = run(lambda: case.pt(torch))
    np_warn = [x for x in w if issubclass(x.category, RuntimeWarning)]
    if not ok and not isinstance(r, GradlabError):
        if is_call_binding(r) and not tok:
            return "refused-both", ""
        where = gradlab_frames(r)
        return "bare", f"{type(r).__name__}: {str(r)[:160]} at {where[-1:] or '?'}"
    if ok and not tok:
        return "silent", f"torch: {type(tr).__name__}: {str(tr).splitlines()[0][:160] if str(tr) else ''}"
    if not ok and tok:
        if strict_reason is not None:
            return "stricter", strict_reason
        return "unlisted-strict", f"{type(r).__name__}: {str(r)[:200]}"
    if not ok and not tok:
        base = builtin_base(type(tr))
        if not isinstance(r, base):
            return "wrong-class", f"{type(r).__name__} is not a {base.__name__} (torch: {type(tr).__name__}: " \
                                  f"{str(tr).splitlines()[0][:100] if str(tr) else ''}); gradlab said: {str(r)[:120]}"
        if case.what != "hand" and case.fn.lower() not in str(r).lower():
            return "wrong-name", f"the message does not name {case.fn}: {str(r)[:160]}"
        return "refused-both", ""
    if np_warn:
        return "warning", f"{np_warn[0].category.__name__}: {np_warn[0].message}"
    if case.values:
        same, why = same_values(r, tr)
        if not same:
            return "values", why
    return "ok-both", ""


if __name__ == "__main__":  # pragma: no cover - `python -m tests.fuzz_calls` prints every failure
    import torch

    from gradlab.checks import stricter_reason
    counts = {}
    for c in all_cases():
        kind, detail = classify(c, torch, stricter_reason(c.fn, c.what))
        counts[kind] = counts.get(kind, 0) + 1
        if kind not in ("ok-both", "refused-both", "stricter"):
            print(f"{kind:16s} {c.id}: {detail}")
    print(counts, file=sys.stderr)
