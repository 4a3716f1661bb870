"""``gradlab.distributions``: probability distributions with PyTorch's names and semantics.

Holds ``Distribution`` and ``constraints`` (``distribution.py``, ``constraints.py``); ``Normal`` and
``MultivariateNormal`` (``normal.py``); ``Uniform``; ``Bernoulli``; ``Categorical`` and
``OneHotCategorical``; ``Gamma``, ``Beta`` and ``Dirichlet`` (``gamma.py``); ``Independent``; and
``kl_divergence`` / ``register_kl`` (``kl.py``).

Each has ``sample`` (no graph), ``rsample`` where a reparameterised sample exists (``has_rsample``),
``log_prob``, ``entropy``, ``mean``, ``variance``, ``stddev``. ``log_prob`` and ``entropy`` are
written with gradlab's differentiable ops (``lgamma``, ``digamma``, ``xlogy``...), so a policy-gradient
loss ``-(dist.log_prob(action) * reward)`` or a VAE's KL term backpropagates like any other.
"""
from . import constraints
from .bernoulli import Bernoulli
from .categorical import Categorical, OneHotCategorical
from .distribution import Distribution
from .gamma import Beta, Dirichlet, Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .normal import MultivariateNormal, Normal
from .uniform import Uniform

__all__ = ["Bernoulli", "Beta", "Categorical", "Dirichlet", "Distribution", "Gamma", "Independent",
           "MultivariateNormal", "Normal", "OneHotCategorical", "Uniform", "constraints", "kl_divergence",
           "register_kl"]
