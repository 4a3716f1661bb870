"""PyTorch's module paths keep working from their fence, ``gradlab/torch_compat/``.

Every path a torch program could import from gradlab before the shims moved (``gradlab.cuda``,
``gradlab.backends.cudnn``, ``gradlab.utils.data.sampler``...) still imports, as the *same* module
object as its home under ``gradlab.torch_compat`` (a second copy would hold a second set of flags and
a second ``DataLoader`` class), in a process where it is the first thing imported too; and the
package root holds none of them, so that it shows the teaching core.
"""
from __future__ import annotations

import importlib
import pathlib
import subprocess
import sys

import pytest

import gradlab
from gradlab.torch_compat import PATHS

ROOT = pathlib.Path(gradlab.__file__).parent

#: Every module path the shims answered at the package root before they were fenced (all of them).
TORCH_PATHS = [
    "gradlab.accelerator", "gradlab.distributed", "gradlab.onnx", "gradlab.serialization",
    "gradlab.cuda", "gradlab.cuda.amp",
    "gradlab.backends", "gradlab.backends.cpu", "gradlab.backends.cuda", "gradlab.backends.cudnn",
    "gradlab.backends.mkldnn", "gradlab.backends.mps", "gradlab.backends.opt_einsum",
    "gradlab.utils", "gradlab.utils.checkpoint", "gradlab.utils.data", "gradlab.utils.data.dataloader",
    "gradlab.utils.data.dataset", "gradlab.utils.data.distributed", "gradlab.utils.data.sampler",
]


def test_every_module_of_the_fence_is_listed():
    """A new shim module gets a row above (so that its PyTorch path is tested)."""
    home = ROOT / "torch_compat"
    found = {"gradlab." + ".".join(p.relative_to(home).with_suffix("").parts).removesuffix(".__init__")
             for p in home.rglob("*.py") if p != home / "__init__.py"}
    assert found == set(TORCH_PATHS)


@pytest.mark.parametrize("path", TORCH_PATHS)
def test_pytorch_path_is_the_fenced_module(path):
    module = importlib.import_module(path)
    real = path.replace("gradlab.", "gradlab.torch_compat.", 1)
    assert module is sys.modules[real] is sys.modules[path]
    assert module.__name__ == real and module.__spec__.name == real  # named by where it lives
    parent, _, leaf = path.rpartition(".")
    assert getattr(importlib.import_module(parent), leaf) is module  # gradlab.cuda as an attribute too


def test_names_reached_through_the_pytorch_paths():
    from gradlab.cuda.amp import GradScaler
    from gradlab.utils.data import DataLoader, RandomSampler
    assert DataLoader is gradlab.data.DataLoader and RandomSampler is gradlab.data.RandomSampler
    assert GradScaler.func is gradlab.amp.GradScaler and GradScaler.args == ("cuda",)
    before = gradlab.backends.cudnn.benchmark        # (the first use imports the fenced module, as in a program)
    fenced = sys.modules["gradlab.torch_compat.backends.cudnn"]
    try:
        gradlab.backends.cudnn.benchmark = not before
        assert fenced.benchmark is (not before)   # one module: one flag
    finally:
        gradlab.backends.cudnn.benchmark = before
    assert gradlab.backends.mps.is_available() is False


def _passes_in_a_fresh_process(code):
    """Run ``code`` in a new interpreter (nothing of gradlab imported yet) and require its ``ok``."""
    out = subprocess.run([sys.executable, "-c", code + "\nprint('ok')"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_utils_checkpoint_is_the_module_as_in_pytorch():
    """``torch.utils.checkpoint`` is a module in PyTorch, so programs write
    ``torch.utils.checkpoint.checkpoint(fn, x)`` or ``from torch.utils.checkpoint import checkpoint``;
    both must work with only the import changed, in a fresh process, in either order."""
    code = ("import gradlab as torch, sys, types\n"
            "assert isinstance(torch.utils.checkpoint, types.ModuleType), torch.utils.checkpoint\n"
            "from gradlab.utils import checkpoint as mod\n"
            "from gradlab.utils.checkpoint import checkpoint, checkpoint_sequential\n"
            "assert mod is sys.modules['gradlab.torch_compat.utils.checkpoint'] and mod.checkpoint is checkpoint\n"
            "x = torch.ones(3, requires_grad=True)\n"
            "y = torch.utils.checkpoint.checkpoint(lambda t: (t * t).sum(), x, use_reentrant=False)\n"
            "y.backward(); assert x.grad.tolist() == [2.0, 2.0, 2.0], x.grad")
    _passes_in_a_fresh_process(code)


def test_first_import_in_a_fresh_process_makes_one_copy():
    code = ("import gradlab.utils.data.sampler, gradlab.cuda.amp, gradlab.backends.cudnn, sys\n"
            "from gradlab.utils.data.sampler import RandomSampler\n"
            "mods = [m for k, m in sys.modules.items() if k.startswith('gradlab') and getattr(m, '__file__', None)]\n"
            "files = {m.__file__ for m in mods}\n"
            "assert len(files) == len({id(m) for m in mods}), 'a module file was loaded twice'\n"
            "assert RandomSampler is sys.modules['gradlab.data.sampler'].RandomSampler")
    _passes_in_a_fresh_process(code)


def test_a_missing_submodule_is_still_an_import_error():
    with pytest.raises(ModuleNotFoundError, match="gradlab.cuda.nothing"):
        importlib.import_module("gradlab.cuda.nothing")


def test_the_package_root_holds_no_pytorch_path_shim():
    at_root = [n for n in PATHS if (ROOT / f"{n}.py").exists() or (ROOT / n).is_dir()]
    assert not at_root, f"PyTorch-path shims belong in gradlab/torch_compat/, not the package root: {at_root}"
