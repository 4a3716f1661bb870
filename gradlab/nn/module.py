"""``Module``: the base class of every layer and model, as in PyTorch.

A module is a Python object whose attributes are its state:

* assigning a :class:`Parameter` registers a learnable parameter;
* assigning a ``Module`` registers a submodule (so models nest);
* ``register_buffer(name, tensor)`` registers state that is saved in the
  ``state_dict`` but not learned (running statistics, masks).

Everything else (``parameters()``, ``state_dict()``, ``train()``, ``to()``...)
walks that tree. Calling a module (``model(x)``) runs its hooks and its
``forward``, and labels every op it records with the module's dotted path
(``node.meta["module"] == "blocks.0.attn"``) so the graph tools can group a
graph by module.
"""
from __future__ import annotations

from collections import OrderedDict

from .._tensor import Tensor
from ..backend import dtypes as _dt
from ..errors import ArgumentError
from . import _naming, _state_dict as _sd
from ._naming import module_call
from .parameter import is_parameter


class _RemovableHandle:
    def __init__(self, store, key):
        self._store, self.id = store, key

    def remove(self):
        self._store.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


_hook_ids = iter(range(1 << 62))


class Module:
    """Base class for layers and models: subclass it, set parameters and
    submodules in ``__init__``, compute in ``forward``.

    >>> class MLP(gradlab.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc1 = gradlab.nn.Linear(2, 16)
    ...         self.fc2 = gradlab.nn.Linear(16, 1)
    ...     def forward(self, x):
    ...         return self.fc2(self.fc1(x).relu())
    """

    training: bool
    _version = _naming._version  # bumped whenever any module's tree changes (for cached module names)

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments; "
                            "Module.__init__ takes none (call super().__init__())")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent_buffers"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward(); define forward(self, ...) in the subclass")

    # ------------------------------------------------------------ calling
    # ``model(x)``: labels the ops with the module's path, then runs hooks and ``forward`` (see _naming.py)
    __call__ = module_call

    def _call_impl(self, args, kwargs):
        if self._forward_pre_hooks:
            for hook in list(self._forward_pre_hooks.values()):
                res = hook(self, args)
                if res is not None:
                    args = res if isinstance(res, tuple) else (res,)
        out = self.forward(*args, **kwargs)
        if self._forward_hooks:
            for hook in list(self._forward_hooks.values()):
                res = hook(self, args, out)
                if res is not None:
                    out = res
        return out

    def register_forward_pre_hook(self, hook):
        """``hook(module, args)`` before ``forward``; may return new args."""
        key = next(_hook_ids)
        self._forward_pre_hooks[key] = hook
        return _RemovableHandle(self._forward_pre_hooks, key)

    def register_forward_hook(self, hook):
        """``hook(module, args, output)`` after ``forward``; may return a new output."""
        key = next(_hook_ids)
        self._forward_hooks[key] = hook
        return _RemovableHandle(self._forward_hooks, key)

    # ------------------------------------------------------- registration
    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if is_parameter(value):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, keep="_parameters")  # a reassigned parameter keeps its place, as in PyTorch
            params[name] = value
            Module._version[0] += 1
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign {type(value).__name__} as parameter '{name}' of {type(self).__name__}: "
                    "wrap it with gradlab.nn.Parameter(...), or assign None"
                )
            params[name] = None
        elif isinstance(value, Module):
            mods = d.get("_modules")
            if mods is None:
                raise AttributeError("cannot assign submodules before Module.__init__() call")
            self._remove_from(name, keep="_modules")  # a replaced submodule keeps its place, as in PyTorch
            mods[name] = value
            Module._version[0] += 1
        elif d.get("_modules") is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} as child module '{name}' (Module or None expected)")
            d["_modules"][name] = None
        elif d.get("_buffers") is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign {type(value).__name__} as buffer '{name}' (Tensor or None expected)")
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)

    def _remove_from(self, name, keep=None):
        d = self.__dict__
        d.pop(name, None)
        for key in ("_parameters", "_buffers", "_modules"):
            if key != keep:
                d[key].pop(name, None)
        d["_non_persistent_buffers"].discard(name)

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            s = d.get(store)
            if s is not None and name in s:
                return s[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if name in d[store]:
                del d[store][name]
                d["_non_persistent_buffers"].discard(name)
                Module._version[0] += 1
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))

    def register_parameter(self, name: str, param):
        if "." in name or not name:
            raise KeyError(f"parameter name {name!r} must be a non-empty string without '.'")
        if param is None:
            self._parameters[name] = None
        elif not is_parameter(param):
            raise TypeError(f"register_parameter: '{name}' must be a gradlab.nn.Parameter or None, got {type(param).__name__}")
        else:
            setattr(self, name, param)

    def register_buffer(self, name: str, tensor, persistent: bool = True):
        """Register ``tensor`` as state that is not learned (saved in the state_dict unless persistent=False)."""
        if "." in name or not name:
            raise KeyError(f"buffer name {name!r} must be a non-empty string without '.'")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: '{name}' must be a Tensor or None, got {type(tensor).__name__}")
        if name in self._parameters or name in self._modules:
            raise KeyError(f"attribute '{name}' already exists as a parameter or submodule")
        self.__dict__.pop(name, None)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {type(module).__name__} is not a Module")
        if "." in str(name):
            raise KeyError(f"module name {name!r} cannot contain '.'")
        self._remove_from(str(name), keep="_modules")
        self._modules[str(name)] = module
        Module._version[0] += 1

    register_module = add_module

    def get_submodule(self, target: str):
        mod = self
        if target == "":
            return mod
        for part in target.split("."):
            if part not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no submodule '{part}' (looking up '{target}')")
            mod = mod._modules[part]
        return mod

    def get_parameter(self, target: str):
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._parameters:
            raise AttributeError(f"{type(mod).__name__} has no parameter '{name}'")
        return mod._parameters[name]

    # ------------------------------------------------------------ walking
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        if memo is None:
            memo = set()
        if self in memo and remove_duplicate:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and m not in seen:
                seen.add(m)
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, store, prefix, recurse, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for mprefix, m in mods:
            for k, v in m.__dict__[store].items():
                if v is None or (remove_duplicate and v in seen):
                    continue
                if remove_duplicate:
                    seen.add(v)
                yield mprefix + ("." if mprefix else "") + k, v

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """``(dotted_name, parameter)`` pairs; a shared (tied) parameter appears once."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn):
        """Call ``fn(m)`` on every submodule (children first) and on ``self``; returns ``self``."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------- modes
    def train(self, mode: bool = True):
        """Training mode (dropout active); ``train(False)`` is ``eval()``. Returns ``self``."""
        if not isinstance(mode, bool):
            raise ArgumentError(f"train(mode): mode must be a bool, got {type(mode).__name__}")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        """Evaluation mode (dropout off). Does not turn off gradients: use ``gradlab.no_grad()`` too."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True):
        """Forget the gradients (``None`` by default, or zero-filled with ``set_to_none=False``)."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad = Tensor._make(p.grad._data * 0)

    # ------------------------------------------------------ device, dtype
    def _apply(self, fn):
        """Apply ``fn(array) -> array`` to every parameter, grad and buffer, keeping the objects."""
        for m in self.modules():
            for store in (m._parameters, m._buffers):
                for k, t in store.items():
                    if t is None:
                        continue
                    new = fn(t._data)
                    if new is not t._data:
                        t._data = new
                        t._version.value += 1
                        if t.grad is not None:
                            t.grad = Tensor._make(fn(t.grad._data))
        return self

    def to(self, *args, dtype=None, device=None, non_blocking=False):
        """Move and/or cast parameters and buffers: ``to('cuda')``, ``to(gradlab.float64)``.

        Only floating tensors change dtype (integer buffers keep theirs), as in PyTorch.
        """
        from ..backend.device import Device, as_device, device_of_array, xp_for
        for a in args:
            if isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, Device) or (isinstance(a, str) and a.split(":")[0] in ("cpu", "cuda")):
                device = a
            else:
                dtype = a
        dev = as_device(device) if device is not None else None
        dt = _dt.as_dtype(dtype) if dtype is not None else None
        if dt is not None and not _dt.is_floating(dt):
            raise ArgumentError(f"Module.to: only floating dtypes are allowed, got {_dt.dtype_name(dt)}")

        def fn(arr):
            if dev is not None and device_of_array(arr) != dev:
                arr = arr.get() if dev.type == "cpu" else xp_for(dev).asarray(arr)
            if dt is not None and _dt.is_floating(arr.dtype) and arr.dtype != dt:
                arr = arr.astype(dt)
            return arr
        return self._apply(fn)

    def float(self):
        return self.to(_dt.float32)

    def double(self):
        return self.to(_dt.float64)

    def half(self):
        return self.to(_dt.float16)

    def bfloat16(self):
        return self.to(_dt.bfloat16)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to(device or "cuda")

    # -------------------------------------------------------- state dicts
    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False):
        """An ordered dict ``dotted_name -> tensor`` of parameters and persistent buffers.

        The tensors share memory with the module (detached unless ``keep_vars``).
        """
        return _sd.state_dict(self, destination, prefix, keep_vars)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy values from ``state_dict`` into this module's tensors (in place).

        With ``strict=True`` every key must match; the error lists the missing
        and unexpected keys and any shape differences. Returns
        ``(missing_keys, unexpected_keys)``.
        """
        return _sd.load_state_dict(self, state_dict, strict, assign)

    # ------------------------------------------------------------ display
    def extra_repr(self) -> str:
        return ""

    def num_parameters(self, trainable_only: bool = False) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable_only)

    def _repr_lines(self):
        extra = self.extra_repr()
        n = self.num_parameters()
        count = f"  # {n:,} parameters" if n else ""
        if not self._modules:
            return [f"{type(self).__name__}({extra}){count}"]
        lines = [f"{type(self).__name__}({extra}{count}" if not extra else f"{type(self).__name__}({extra},{count}"]
        for name, m in self._modules.items():
            sub = m._repr_lines() if m is not None else ["None"]
            lines.append(f"  ({name}): " + sub[0])
            lines.extend("  " + s for s in sub[1:])
        lines.append(")")
        return lines

    def __repr__(self):
        return "\n".join(self._repr_lines())
