"""``ParameterList`` and ``ParameterDict``: parameters kept in a list or dict, *registered* (as in PyTorch).

A plain Python list of parameters on a module is invisible to ``parameters()``, so the optimizer
would never update them. These containers register each entry ("0", "1", ... or its key); a plain
tensor put in one becomes a ``Parameter``.
"""
from __future__ import annotations

import operator

from ..module import Module
from ..parameter import Parameter


def _as_param(value):
    return value if value is None or getattr(value, "_is_param", False) else Parameter(value)


class ParameterList(Module):
    def __init__(self, values=None):
        super().__init__()
        if values is not None:
            self.extend(values)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def __getitem__(self, idx):
        values = list(self._parameters.values())
        if isinstance(idx, slice):
            return type(self)(values[idx])
        n, i = len(values), operator.index(idx)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range for a ParameterList of {n} parameters")
        return values[i]

    def __setitem__(self, idx, value):
        n, i = len(self), operator.index(idx)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range for a ParameterList of {n} parameters")
        self.register_parameter(str(i % n), _as_param(value))

    def append(self, value):
        self.register_parameter(str(len(self)), _as_param(value))
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        return "\n".join(f"({k}): Parameter containing: {tuple(p.shape)}" for k, p in self._parameters.items())


class ParameterDict(Module):
    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, value):
        self.register_parameter(key, _as_param(value))

    def __delitem__(self, key):
        del self._parameters[key]

    def __contains__(self, key):
        return key in self._parameters

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()

    def update(self, parameters):
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for key, value in items:
            self[key] = value
        return self
