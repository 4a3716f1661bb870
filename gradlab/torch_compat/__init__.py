"""PyTorch's module paths, fenced in one place so that the package root shows the teaching core.

A program written for torch imports ``torch.cuda``, ``torch.backends.cudnn``, ``torch.utils.data``...;
with the import changed to gradlab, the same paths must work. They live here, and each answers at
PyTorch's path as well: ``gradlab.cuda`` *is* ``gradlab.torch_compat.cuda`` (the same module object,
not a copy), so ``import gradlab.cuda``, ``from gradlab.utils.data import DataLoader`` and
``gradlab.backends.cudnn.benchmark = True`` run as written. What is here:

* ``cuda/``: ``torch.cuda``: is there a GPU, ``synchronize``, the memory counters, seeding; ``cuda.amp``
  forwards to ``gradlab.amp``;
* ``backends/``: ``torch.backends.*``: the speed switches, accepted and kept (they change nothing), and
  honest ``is_available()`` answers;
* ``utils/``: ``torch.utils.checkpoint`` (activation checkpointing) and ``torch.utils.data``
  (``gradlab.data``'s classes at PyTorch's paths);
* ``accelerator.py``, ``distributed.py`` (one process), ``onnx.py`` (importing works, exporting is
  refused), ``serialization.py`` (``gradlab.io``'s ``save``/``load`` and the allow-list helpers).

How the short paths work: :class:`PyTorchPaths`, a finder on ``sys.meta_path``, answers an import
of ``gradlab.<name>...`` for the names in :data:`PATHS` with the module of this package, importing
it on first use (so ``import gradlab`` loads none of them but ``cuda``, which it needs for
``gradlab.cuda``). A module here is named by where it lives (``gradlab.torch_compat.cuda``) in
tracebacks and ``__module__``.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

#: The top-level names answered at PyTorch's path, ``gradlab.<name>``.
PATHS = ("accelerator", "backends", "cuda", "distributed", "onnx", "serialization", "utils")


class PyTorchPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Import ``gradlab.cuda.amp`` as ``gradlab.torch_compat.cuda.amp``: one module under both names."""

    @staticmethod
    def real_name(fullname: str) -> str | None:
        """``gradlab.torch_compat.X...`` for ``gradlab.X...`` when X is one of :data:`PATHS`, else None."""
        parts = fullname.split(".")
        if len(parts) >= 2 and parts[0] == "gradlab" and parts[1] in PATHS:
            return ".".join(["gradlab", "torch_compat", *parts[1:]])
        return None

    def find_spec(self, fullname, path=None, target=None):
        real = self.real_name(fullname)
        if real is None or importlib.util.find_spec(real) is None:
            return None  # not ours, or no such module: the usual ModuleNotFoundError follows
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        real = self.real_name(spec.name)
        module = importlib.import_module(real)
        spec.loader_state = module.__spec__  # the import system sets __spec__ to ``spec`` next: keep the real one
        # The submodules the package already loaded answer at the short path at once, so that a later
        # ``import gradlab.utils.checkpoint`` finds the same module object instead of loading a second copy.
        for name in [k for k in sys.modules if k.startswith(real + ".")]:
            sys.modules.setdefault(spec.name + name[len(real):], sys.modules[name])
        return module

    def exec_module(self, module):
        module.__spec__ = module.__spec__.loader_state  # already run, under its own name: nothing to execute


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (before the file finder, which would load a second copy
    of a submodule such as ``gradlab.cuda.amp`` from the aliased package's folder). Idempotent."""
    if not any(isinstance(f, PyTorchPaths) for f in sys.meta_path):
        sys.meta_path.insert(0, PyTorchPaths())


install()
