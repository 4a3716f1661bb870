"""``nn.utils.weight_norm`` and ``nn.utils.spectral_norm`` (PyTorch's hook-based API).

Both replace a layer's ``weight`` parameter by parameters it is *computed from*, recomputed by a
forward pre-hook before every call (so the graph shows how ``weight`` is made):

* weight norm: ``weight = g * v / ||v||`` (norm over every dim but ``dim``): the direction ``v``
  and the length ``g`` are learned separately, which often speeds up training.
* spectral norm: ``weight = weight_orig / sigma``, ``sigma`` the largest singular value of the
  weight (as a ``(out, -1)`` matrix) estimated by power iteration with the buffers ``weight_u`` and
  ``weight_v`` (one step per training forward). It keeps the layer 1-Lipschitz (GAN critics).
"""
from __future__ import annotations

from .. import ops as O
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..backend import xp_of
from ..errors import ArgumentError
from ..factories import randn
from .parameter import Parameter


def _norm_except_dim(v, dim):
    if dim is None or dim == -1:  # PyTorch: -1 (or None) means the norm of the whole tensor
        return O.norm(v)
    d = dim % v.ndim
    others = tuple(i for i in range(v.ndim) if i != d)
    return O.sqrt(O.sum(v * v, dim=others, keepdim=True)) if others else O.abs(v)


class _WeightNorm:
    def __init__(self, name, dim):
        self.name, self.dim = name, dim

    def compute_weight(self, module):
        g, v = getattr(module, self.name + "_g"), getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    def __call__(self, module, inputs):
        object.__setattr__(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Reparametrize ``module.<name>`` as ``g * v / ||v||``: parameters ``<name>_g`` and ``<name>_v``."""
    weight = module._parameters.get(name)
    if weight is None:
        raise ArgumentError(f"weight_norm: {type(module).__name__} has no parameter {name!r}")
    if dim is not None and dim < -1:
        dim += weight.ndim
    fn = _WeightNorm(name, dim)
    del module._parameters[name]
    g = _norm_except_dim(weight.detach(), dim)
    module.register_parameter(name + "_g", Parameter(Tensor._make(xp_of(weight._data).asarray(g._data).copy())))
    module.register_parameter(name + "_v", Parameter(Tensor._make(weight._data)))
    object.__setattr__(module, name, fn.compute_weight(module))
    module._weight_norm_hook = module.register_forward_pre_hook(fn)
    module._weight_norm_fn = fn
    return module


def remove_weight_norm(module, name="weight"):
    """Turn ``<name>_g``, ``<name>_v`` back into one ``<name>`` parameter."""
    return _remove(module, name, "weight_norm", params=("_g", "_v"))


class _SpectralNorm:
    def __init__(self, name, n_power_iterations, dim, eps):
        self.name, self.n, self.dim, self.eps = name, n_power_iterations, dim, eps

    def _matrix(self, w):
        if self.dim != 0:
            w = O.permute(w, (self.dim,) + tuple(i for i in range(w.ndim) if i != self.dim))
        return O.reshape(w, (w.shape[0], -1))

    def compute_weight(self, module, do_power_iteration=False):
        w = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        mat = self._matrix(w)
        if do_power_iteration:
            with no_grad():
                m = mat.detach()
                for _ in range(self.n):
                    v._data[...] = _unit(m.mT @ u, self.eps)
                    u._data[...] = _unit(m @ v, self.eps)
                u._version.value += 1
                v._version.value += 1
        u, v = u.detach().clone(), v.detach().clone()
        sigma = O.sum(u * O.matmul(mat, v))
        return w / sigma

    def __call__(self, module, inputs):
        object.__setattr__(module, self.name, self.compute_weight(module, module.training))


def _unit(x, eps):
    a = x._data
    n = (a * a).sum() ** 0.5
    return a / max(float(n), eps)


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``module.<name>`` by its largest singular value (power iteration; parameter ``<name>_orig``,
    buffers ``<name>_u`` and ``<name>_v``)."""
    weight = module._parameters.get(name)
    if weight is None:
        raise ArgumentError(f"spectral_norm: {type(module).__name__} has no parameter {name!r}")
    if n_power_iterations <= 0:
        raise ArgumentError(f"spectral_norm: n_power_iterations must be positive, got {n_power_iterations}")
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    fn = _SpectralNorm(name, n_power_iterations, dim, eps)
    mat = fn._matrix(weight.detach())
    h, w = mat.shape
    u = Tensor._make(_unit(randn(h, dtype=weight.dtype), eps))
    v = Tensor._make(_unit(randn(w, dtype=weight.dtype), eps))
    del module._parameters[name]
    module.register_parameter(name + "_orig", weight)
    object.__setattr__(module, name, Tensor._make(weight._data))
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module._spectral_norm_hook = module.register_forward_pre_hook(fn)
    module._spectral_norm_fn = fn
    return module


def remove_spectral_norm(module, name="weight"):
    """Turn ``<name>_orig`` (divided by its current sigma) back into one ``<name>`` parameter."""
    return _remove(module, name, "spectral_norm", params=("_orig",), buffers=("_u", "_v"))


def _remove(module, name, kind, params, buffers=()):
    """Undo ``weight_norm`` or ``spectral_norm`` (``kind``): compute ``<name>`` once more (without a power
    iteration), remove the hook and the tensors it was computed from (``<name>`` + each suffix of ``params``
    and ``buffers``), and register the result as a plain parameter ``<name>`` again."""
    fn = getattr(module, f"_{kind}_fn", None)
    if fn is None or fn.name != name:
        raise ArgumentError(f"remove_{kind}: {kind} of {name!r} not found in {type(module).__name__}")
    weight = fn.compute_weight(module).detach()
    getattr(module, f"_{kind}_hook").remove()
    for suffix in params:
        del module._parameters[name + suffix]
    for suffix in buffers:
        del module._buffers[name + suffix]
    module.__dict__.pop(name, None)
    module.register_parameter(name, Parameter(weight))
    delattr(module, f"_{kind}_hook")
    delattr(module, f"_{kind}_fn")
    return module
