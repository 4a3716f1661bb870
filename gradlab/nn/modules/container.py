"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict`` (submodules) and ``ParameterList``,
``ParameterDict`` (parameters), as in PyTorch.

They exist so that what is kept in a list or dict is *registered*: a plain Python list of layers
(or of parameters) is invisible to ``parameters()``, ``state_dict()`` and so the optimizer. The
parameter containers name each entry ``"0"``, ``"1"``... or by its key, and wrap a plain tensor
in a ``Parameter``.
"""
from __future__ import annotations

import operator
from collections import OrderedDict

from ..._tensor import Tensor
from ...backend import dtypes as _dt
from ..module import Module
from ..parameter import Parameter, is_parameter


class _Indexed(Module):
    """What Sequential and ModuleList share: modules numbered "0", "1", ... in order."""

    def _index(self, idx):
        n = len(self._modules)
        idx = operator.index(idx)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range for a {type(self).__name__} of {n} modules")
        return idx % n

    def _renumber(self, modules):
        """Store ``modules`` as "0", "1", ... (numbering stays contiguous, as in PyTorch)."""
        self._modules.clear()
        for i, m in enumerate(modules):
            self._modules[str(i)] = m

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def _insert(self, index, module):
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)


class Sequential(_Indexed):
    """Run modules one after another: ``Sequential(Linear(2, 8), ReLU(), Linear(8, 1))``.

    Also takes an ``OrderedDict`` of named modules. Indexing gives a module;
    slicing gives a new ``Sequential``.
    """

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], (OrderedDict, dict)):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[self._index(idx)]

    def __setitem__(self, idx, module):
        key = list(self._modules.keys())[self._index(idx)]
        self.add_module(key, module)

    def __delitem__(self, idx):
        keys = list(self._modules.keys())
        for key in (keys[idx] if isinstance(idx, slice) else [keys[self._index(idx)]]):
            delattr(self, key)
        self._renumber(list(self._modules.values()))

    def insert(self, index, module):
        self._insert(index, module)
        return self  # as PyTorch's Sequential.insert

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input


class ModuleList(_Indexed):
    """A list of modules, registered (so their parameters are found). Has no forward."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(self._index(idx))]

    def __setitem__(self, idx, module):
        self.add_module(str(self._index(idx)), module)

    def __delitem__(self, idx):
        keys = list(self._modules.keys())
        for key in (keys[idx] if isinstance(idx, slice) else [str(self._index(idx))]):
            del self._modules[key]
        self._renumber(list(self._modules.values()))
        Module._version[0] += 1

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return ModuleList(list(self) + list(other))

    def insert(self, index, module):
        self._insert(index, module)  # returns None, as PyTorch's ModuleList.insert

    def pop(self, idx=-1):
        m = self[idx]
        del self[idx]
        return m


class ModuleDict(Module):
    """A dict of modules, registered. Has no forward."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]
        Module._version[0] += 1

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def clear(self):
        self._modules.clear()
        Module._version[0] += 1

    def pop(self, key):
        m = self._modules[key]
        del self[key]
        return m

    def update(self, modules):
        items = modules.items() if hasattr(modules, "items") else modules
        for key, m in items:
            self[key] = m


def _as_param(value):
    if isinstance(value, Tensor) and not is_parameter(value):
        return Parameter(value, requires_grad=_dt.is_floating(value.dtype))
    return value


def _describe(p):
    if not isinstance(p, Tensor):
        return f"Object of type: {type(p).__name__}"
    size = "x".join(str(s) for s in p.shape)
    kind = "Parameter containing" if is_parameter(p) else "Tensor"
    dev = "" if p.device.type == "cpu" else f" ({p.device})"
    return f"{kind}: [gradlab.{_dt.dtype_name(p.dtype)} of size {size}{dev}]"


def _set(module, name, value):
    value = _as_param(value)
    if is_parameter(value) or value is None:
        module.register_parameter(name, value)
    else:
        setattr(module, name, value)


class ParameterList(Module):
    """A list of parameters: ``self.ws = nn.ParameterList([nn.Parameter(gradlab.randn(3)) for _ in range(4)])``."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def _index(self, idx):
        idx = operator.index(idx)
        if not -len(self) <= idx < len(self):
            raise IndexError(f"index {idx} is out of range for a ParameterList of {len(self)} parameters")
        return idx % len(self)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList([self[i] for i in range(len(self))[idx]])
        return getattr(self, str(self._index(idx)))

    def __setitem__(self, idx, param):
        _set(self, str(self._index(idx)), param)

    def __len__(self):
        return self._size

    def __iter__(self):
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def append(self, value):
        self._size += 1
        _set(self, str(self._size - 1), value)
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        return "\n".join(f"({i}): {_describe(p)}" for i, p in enumerate(self))

    def _repr_lines(self):
        return [f"{type(self).__name__}("] + ["    " + s for s in self.extra_repr().splitlines()] + [")"]

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called; index it or iterate over it")


class ParameterDict(Module):
    """A dict of parameters: ``nn.ParameterDict({"scale": nn.Parameter(gradlab.ones(3))})``; keys are strings."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        if key not in self._keys:
            raise KeyError(f"ParameterDict has no key {key!r} (keys: {list(self._keys)})")
        return getattr(self, key)

    def __setitem__(self, key, value):
        if not isinstance(key, str):
            raise TypeError(f"ParameterDict keys must be strings, got {type(key).__name__}")
        self._keys[key] = None
        _set(self, key, value)

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __contains__(self, key):
        return key in self._keys

    def keys(self):
        return list(self._keys)

    def values(self):
        return [self[k] for k in self._keys]

    def items(self):
        return [(k, self[k]) for k in self._keys]

    def get(self, key, default=None):
        return self[key] if key in self else default

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def clear(self):
        for k in list(self._keys):
            del self[k]

    def update(self, parameters):
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for k, v in items:
            self[k] = v

    def extra_repr(self):
        return "\n".join(f"({k}): {_describe(p)}" for k, p in self.items())

    def _repr_lines(self):
        return [f"{type(self).__name__}("] + ["    " + s for s in self.extra_repr().splitlines()] + [")"]

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterDict should not be called; index it by key")
