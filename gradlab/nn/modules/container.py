"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict`` (as in PyTorch).

They exist so that submodules kept in a list or dict are *registered*: a plain
Python list of layers would be invisible to ``parameters()`` and the optimizer.
"""
from __future__ import annotations

import operator
from collections import OrderedDict

from ..module import Module


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
