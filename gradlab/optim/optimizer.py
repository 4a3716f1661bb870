"""``Optimizer``: the base class, with PyTorch's param groups and state.

An optimizer holds *references* to parameters, in ``param_groups`` (each a
dict with its own hyperparameters, so e.g. biases can skip weight decay), and
per-parameter ``state`` (momentum buffers, Adam's moments). ``step()`` reads
each ``p.grad`` and changes ``p`` in place, outside the graph: updating a
weight is not part of the computation we differentiate.
"""
from __future__ import annotations

import copy
import functools

import numpy as np

from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad, no_grad
from ..errors import ArgumentError, ArgumentTypeError, ShapeError, fmt_shape


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    """Base class: subclasses set ``defaults`` and implement ``step()``."""

    def __init__(self, params, defaults: dict):
        self.defaults = dict(defaults)
        self.state: dict = {}
        self.param_groups: list = []
        if isinstance(params, Tensor):
            raise ArgumentTypeError(
                f"{type(self).__name__}: params must be an iterable of tensors or of dicts (param groups), "
                "got a single Tensor; pass [tensor] or model.parameters()"
            )
        if hasattr(params, "parameters") and hasattr(params, "named_modules"):
            raise ArgumentTypeError(
                f"{type(self).__name__}: params is a Module ({type(params).__name__}); pass its parameters: "
                f"{type(self).__name__}(model.parameters(), ...)"
            )
        try:
            groups = list(params)
        except TypeError:
            raise ArgumentTypeError(f"{type(self).__name__}: params must be an iterable of tensors or of dicts "
                                    f"(param groups), got {type(params).__name__}; pass model.parameters()") from None
        if not groups:
            raise ArgumentError(f"{type(self).__name__} got an empty parameter list; "
                                "did model.parameters() run out (a generator can be used only once)?")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, group: dict):
        group = dict(group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for i, p in enumerate(group["params"]):
            if not isinstance(p, Tensor):
                raise ArgumentTypeError(f"{type(self).__name__}: params[{i}] is a {type(p).__name__}, not a Tensor")
            if not p.is_leaf:
                raise ArgumentError(
                    f"{type(self).__name__}: params[{i}] is not a leaf (it was computed by {p.grad_fn.name}); "
                    "an optimizer can only update leaves. Use .detach().requires_grad_() to make one"
                )
        for k, v in self.defaults.items():
            if v is required and k not in group:
                raise ArgumentError(f"{type(self).__name__}: parameter group did not specify required '{k}'")
            group.setdefault(k, v)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ArgumentError(f"{type(self).__name__}: some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True):
        """Forget gradients before the next backward (which would otherwise add to them)."""
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    p.grad = None if set_to_none else Tensor._make(p.grad._data * 0)

    @no_grad()
    def step(self, closure=None):  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def _loss_of(closure):
        """Run ``closure`` (which recomputes the loss and calls backward) with grad on; its loss or None."""
        if closure is None:
            return None
        with enable_grad():
            return closure()

    #: subclasses: ``_init_state(p, group)`` -> the buffers a parameter's state starts with (besides its
    #: ``"step"`` count); ``None`` (SGD) leaves the state to the subclass
    _init_state = None
    #: decoupled weight decay (AdamW) for every group; a group's ``decoupled_weight_decay`` asks for it too
    _decoupled = False

    def _params_with_grad(self, group):
        """The loop every ``step`` shares, so each algorithm's ``step`` is its update rule only.

        For each parameter of ``group`` that has a gradient, in order, yields ``(p, g, state)``:

        * ``g``: the gradient as an array of ``p``'s dtype, negated under ``maximize``, plus
          ``weight_decay * p`` (coupled decay); with decoupled decay ``p`` is shrunk by
          ``1 - lr * weight_decay`` instead and ``g`` left alone;
        * ``state``: the parameter's state dict, started on its first step as ``{"step": 0,
          **self._init_state(p, group)}``, with ``state["step"]`` already counted up for this step
          (``None`` when the class has no ``_init_state``).
        """
        maximize, wd = group.get("maximize", False), group.get("weight_decay", 0)
        decoupled = self._decoupled or group.get("decoupled_weight_decay", False)
        init, states = self._init_state, self.state  # looked up once: this loop runs every step
        shrink = 1 - group["lr"] * wd if wd != 0 and decoupled else None
        coupled = wd if wd != 0 and not decoupled else 0
        for p in group["params"]:
            grad = p._grad
            if grad is None:
                continue
            a, g = p._data, grad._data
            if g.dtype is not a.dtype and g.dtype != a.dtype:  # (``is`` first: the usual case, cheaply)
                g = g.astype(a.dtype)
            if maximize:
                g = -g
            state = None
            if init is not None:
                state = states.get(p)
                if not state:  # first step (or a state emptied by hand)
                    state = states[p] = {"step": _step_tensor(0.0), **init(p, group)}
                state["step"]._data = state["step"]._data + 1
            if shrink is not None:
                p._data *= shrink
            elif coupled:
                g = g + coupled * a
            yield p, g, state

    def __init_subclass__(cls, **kwargs):
        """Every subclass's ``step`` first moves optimizer state to its parameter's device.

        ``model.to("cuda")`` moves the parameters (the same objects) but cannot
        know about optimizers; PyTorch leaves the state behind. Here the state
        follows its parameter on the next ``step()`` (an explicit copy, once).
        """
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_state_follows", False):
            def stepper(self, *args, **kw):
                self._state_follow_params()
                return step(self, *args, **kw)
            functools.update_wrapper(stepper, step)
            stepper._state_follows = True
            cls.step = stepper

    def _state_follow_params(self):
        """Move state tensors (momentum, moments...) onto their parameter's device where they differ."""
        for p, st in self.state.items():
            kind = type(p._data)
            for k, v in st.items():
                if (type(v) is Tensor or isinstance(v, Tensor)) and type(v._data) is not kind and k != "step":
                    from ..backend.device import to_device_array
                    st[k] = Tensor._make(to_device_array(v._data, p.device))

    # ------------------------------------------------------------ state dicts
    def state_dict(self) -> dict:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}`` as in PyTorch.

        Parameters are referred to by their position across the groups, so the
        dict can be loaded into an optimizer built over a fresh model.
        """
        index = {}
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            ids = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            packed["params"] = ids
            groups.append(packed)
        state = {}
        for g in self.param_groups:
            for p in g["params"]:
                if p in self.state:
                    state[index[id(p)]] = {k: (v.detach() if isinstance(v, Tensor) else v)
                                           for k, v in self.state[p].items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict):
        """Restore hyperparameters and state saved by ``state_dict()`` (copies the tensors)."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ArgumentError(f"load_state_dict: the saved optimizer has {len(groups)} parameter groups, "
                                f"this one has {len(self.param_groups)}")
        for i, (saved, own) in enumerate(zip(groups, self.param_groups)):
            if len(saved["params"]) != len(own["params"]):
                raise ArgumentError(
                    f"load_state_dict: parameter group {i} has {len(saved['params'])} parameters in the saved "
                    f"state but {len(own['params'])} here; build the optimizer over the same model"
                )
        id_map = {}
        for saved, own in zip(groups, self.param_groups):
            for idx, p in zip(saved["params"], own["params"]):
                id_map[idx] = p
        self.state = {}
        for idx, st in state_dict["state"].items():
            p = id_map.get(int(idx))
            if p is None:
                continue
            new = {}
            for k, v in st.items():
                if isinstance(v, Tensor):
                    arr = np.asarray(v._data) if not hasattr(v._data, "get") else v._data
                    if k != "step" and arr.dtype != p.dtype and arr.dtype.kind == "f":
                        arr = arr.astype(p.dtype)
                    if arr.ndim and tuple(arr.shape) != tuple(p.shape):
                        raise ShapeError(
                            f"load_state_dict: the saved state {k!r} of parameter {idx} has shape "
                            f"{fmt_shape(arr.shape)} but the parameter here has shape {fmt_shape(p.shape)}; the "
                            f"state was saved for another model. Build the optimizer over the same model")
                    t = Tensor._make(arr.copy())
                    new[k] = t
                else:
                    new[k] = copy.deepcopy(v)
            self.state[p] = new
        for saved, own in zip(groups, self.param_groups):
            for k, v in saved.items():
                if k != "params":
                    own[k] = copy.deepcopy(v)

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(g):
                if k != "params":
                    lines.append(f"    {k}: {g[k]}")
        lines.append(")")
        return "\n".join(lines)


def _state_tensor(p, fill=0.0):
    """A zero buffer with ``p``'s shape, dtype and device (optimizer state)."""
    out = p._data.copy()
    out.fill(fill)
    return Tensor._make(out)


def _step_tensor(value=0.0):
    return Tensor._make(np.asarray(value, dtype=np.float32))


def _update_param(p, new_or_delta, inplace_sub=True):
    """``p -= delta`` in place (bumping the version so saved copies are detected).

    A read-only array (e.g. one made from a broadcast) is replaced instead. NumPy refuses a
    read-only destination before computing anything, so trying first costs nothing.
    """
    a = p._data
    if type(a) is np.ndarray:
        try:
            if inplace_sub:
                a -= new_or_delta
            else:
                a[...] = new_or_delta
            p._version.value += 1
            return
        except ValueError:
            if a.flags.writeable:
                raise
    if getattr(a.flags, "writeable", True):
        if inplace_sub:
            p._data -= new_or_delta
        else:
            p._data[...] = new_or_delta
    else:
        p._data = a - new_or_delta if inplace_sub else new_or_delta.copy()
    p._version.value += 1
