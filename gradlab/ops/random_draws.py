"""Random draws with a gradient: ``StandardGamma``, a draw from Gamma(alpha, 1) per element of ``alpha``
(what ``gradlab.distributions.Gamma``, ``Beta`` and ``Dirichlet`` sample with), and ``StandardGammaGrad``,
its gradient as a node; ``standard_gamma_grad`` computes that gradient on arrays.

A gamma sample cannot be written as ``loc + scale * eps``; ``rsample`` still gives a gradient by
*implicit reparameterisation*: with the sample ``x`` fixed at its CDF value ``u = P(alpha, x)``,
``dx/dalpha = -(dP/dalpha) / (dP/dx)``. ``dP/dx`` is the density; ``dP/dalpha`` comes from the series
``P(alpha, x) = sum_n x^(alpha+n) e^-x / Gamma(alpha + n + 1)``, so (with the density divided out)

    dx/dalpha = -sum_{n >= 0} r_n (log x - digamma(alpha + n + 1)),  r_n = x^(n+1) Gamma(alpha) / Gamma(alpha + n + 1)

``r_n = r_{n-1} x / (alpha + n)`` and ``digamma(alpha + n + 1) = digamma(alpha + n) + 1/(alpha + n)``, so
each term costs two multiplications. The sum runs until its terms are negligible (about ``x + 10 sqrt(x)``
terms).
"""
from __future__ import annotations

import math

import numpy as np

from ..autograd.function import Op
from ..backend import random as _random
from ..backend.device import to_device_array
from ..backend.dtypes import finfo
from ..backend.gamma_functions import digamma as _digamma
from ..errors import GradError


def standard_gamma_grad(x, alpha):
    """``dx/dalpha`` of a standard gamma sample ``x`` (arrays; the series of the module docstring)."""
    x = np.asarray(x, dtype=np.float64)
    a = np.asarray(alpha, dtype=np.float64)
    x, a = np.broadcast_arrays(x, a)
    with np.errstate(all="ignore"):
        logx = np.log(x)
        r = x / a
        psi = _digamma(a + 1.0)
        total = r * (logx - psi)
        top = float(np.max(x, initial=0.0))
        for n in range(1, int(top + 10 * math.sqrt(top) + 40)):
            r = r * x / (a + n)
            psi = psi + 1.0 / (a + n)
            term = r * (logx - psi)
            total = total + term
            if n > top and not np.any(np.abs(term) > 1e-17 * np.abs(total)):
                break
    return -total


class StandardGamma(Op):
    """A draw from Gamma(alpha, 1) for each element of ``alpha``; its gradient is the implicit one above."""

    name = "standard_gamma"
    formula = "dAlpha = dX * dx/dalpha   (implicit reparameterisation: -(dP/dalpha) / density)"

    @staticmethod
    def forward(ctx, alpha):
        a = np.asarray(alpha.detach().cpu().numpy(), dtype=np.float64)
        x = _random.generator().standard_gamma(a)
        x = np.maximum(x, float(finfo(alpha.dtype).tiny)).astype(alpha.dtype)  # never exactly 0 (as PyTorch)
        out = x if alpha.device.type == "cpu" else to_device_array(x, alpha.device)
        ctx.save_for_backward(alpha)
        ctx.save_output(out)
        return out

    def vjp(self, g):
        alpha, x = self.saved_tensors
        return (g * StandardGammaGrad.apply(x, alpha),)


class StandardGammaGrad(Op):
    """``dx/dalpha`` as a tensor; PyTorch does not differentiate it again, and neither does gradlab."""

    name = "standard_gamma_grad"
    formula = "(not differentiable: a second derivative of a gamma sample is not implemented, as in PyTorch)"

    @staticmethod
    def forward(ctx, x, alpha):
        d = standard_gamma_grad(x.detach().cpu().numpy(), alpha.detach().cpu().numpy()).astype(alpha.dtype)
        return d if alpha.device.type == "cpu" else to_device_array(d, alpha.device)

    def vjp(self, g):
        raise GradError("rsample: the derivative of a gamma (or Beta, Dirichlet) sample is differentiable once; "
                        "a second derivative through it is not implemented (as in PyTorch)")
