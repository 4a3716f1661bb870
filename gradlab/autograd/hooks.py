"""Tensor hooks and ``retain_grad``: asking backward to call you, or to keep a gradient.

These are Tensor methods, but they are about graph nodes (a non-leaf's hooks
live on its ``grad_fn``, a leaf's on the tensor), so they live in the
autograd layer and are installed on ``Tensor`` when ``gradlab.autograd`` is
imported. ``engine.py`` (``pre_process``) is where the engine runs them. A node that
gets a hook or a retained gradient is marked ``_hooked``, which sends it through the
engine's general loop.
"""
from __future__ import annotations

import weakref

from .._tensor import Tensor
from ..errors import GradError


def retain_grad(self) -> None:
    """Keep ``.grad`` for this non-leaf tensor after backward (leaves always keep it)."""
    if not self._requires_grad:
        raise GradError(f"retain_grad(): {self._label()} does not require grad, so it will never get one")
    if self.grad_fn is None:
        return
    self._retains_grad = True
    if self.grad_fn._retained is None:
        self.grad_fn._retained = {}
        self.grad_fn._hooked = True
    self.grad_fn._retained[self._output_nr] = weakref.ref(self)


def retains_grad(self) -> bool:
    """Will this tensor keep ``.grad`` after backward (``retain_grad()`` was called)?"""
    return bool(self._retains_grad)


def register_hook(self, hook):
    """Call ``hook(grad)`` when this tensor's gradient is computed.

    The hook may return a tensor to use instead of the gradient. Returns a
    handle whose ``.remove()`` unregisters the hook.
    """
    if not self._requires_grad:
        raise GradError(f"register_hook: {self._label()} does not require grad, so no gradient will reach a hook")
    if self.grad_fn is not None:
        if self.grad_fn._pre_hooks is None:
            self.grad_fn._pre_hooks = {}
            self.grad_fn._hooked = True
        hooks = self.grad_fn._pre_hooks.setdefault(self._output_nr, [])
    else:
        if self._hooks is None:
            self._hooks = []
        hooks = self._hooks
    hooks.append(hook)
    return _HookHandle(hooks, hook)


def register_post_accumulate_grad_hook(self, hook):
    """Call ``hook(tensor)`` after a leaf's ``.grad`` has been updated by backward."""
    if self.grad_fn is not None:
        raise GradError("register_post_accumulate_grad_hook only works on leaf tensors")
    if self._post_acc_hooks is None:
        self._post_acc_hooks = []
    self._post_acc_hooks.append(hook)
    return _HookHandle(self._post_acc_hooks, hook)


class _HookHandle:
    """Returned by ``register_hook``; ``remove()`` unregisters the hook."""

    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def install():
    Tensor.retain_grad = retain_grad
    Tensor.retains_grad = property(retains_grad)
    Tensor.register_hook = register_hook
    Tensor.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook
