"""Label every op a module runs with the module's dotted path.

While a module's ``__call__`` runs, its path (``"blocks.0.attn"``, relative
to the outermost module called) sits on a stack, and a node observer copies
the top of the stack into each recorded node's ``meta``::

    node.meta == {"module": "blocks.0.attn", "module_type": "MultiheadAttention"}

The graph tools group a graph by ``node.meta["module"]``. The observer is
registered only while some module is running, so ops outside modules pay
nothing. The outermost module's own path is ``""`` (as in ``named_modules``).
"""
from __future__ import annotations

from ..autograd import function as _fn

_stack: list = []  # (path, type name) of the modules now running, innermost last
_names: list = [None]  # id(module) -> dotted path, for the outermost module now running
_version = [0]  # bumped whenever any module's tree changes (``Module._version`` is this list)


def _observer(node):
    path, type_name = _stack[-1]
    meta = node.meta
    if meta is None:
        node.meta = {"module": path, "module_type": type_name}
    else:
        meta["module"] = path
        meta["module_type"] = type_name


def _names_for(root):
    """``id(module) -> dotted path`` for ``root``'s tree, cached on ``root`` until some tree changes."""
    cached = root.__dict__.get("_gradlab_names")
    if cached is not None and cached[0] == _version[0]:
        return cached[1]
    version = _version[0]
    names = {id(m): name for name, m in root.named_modules()}
    root.__dict__["_gradlab_names"] = (version, names)
    return names


def current_module_path():
    """The dotted path of the innermost module now running (``None`` outside modules)."""
    return _stack[-1][0] if _stack else None


def module_call(self, *args, **kwargs):
    """``Module.__call__``: push the module's path, run ``_call_impl`` (hooks and forward), pop.

    This runs for every layer of every forward, so it is kept to a few dict and
    list operations: the common case (a submodule of a running model) looks its
    path up in a dict built once per model (rebuilt only when some module tree changes).
    """
    if _stack:
        names = _names[0]
        path = names.get(id(self)) if names is not None else None
        if path is None:
            parent = _stack[-1][0]
            path = f"{parent}.{type(self).__name__}" if parent else type(self).__name__
        _stack.append((path, type(self).__name__))
        try:
            return self._call_impl(args, kwargs)
        finally:
            _stack.pop()
    return _call_outermost(self, args, kwargs)


def _call_outermost(mod, args, kwargs):
    _names[0] = _names_for(mod)
    _stack.append(("", type(mod).__name__))
    _fn.node_observers.append(_observer)
    try:
        return mod._call_impl(args, kwargs)
    finally:
        _stack.pop()
        _names[0] = None
        try:
            _fn.node_observers.remove(_observer)
        except ValueError:
            pass


def call_module(mod, args, kwargs):
    """``module_call`` with the arguments as a tuple and a dict."""
    return module_call(mod, *args, **kwargs)
