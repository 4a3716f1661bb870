"""gradlab.distributions against torch.distributions: log_prob, entropy, mean, variance and KL on generated
parameters (values and gradients), validation as PyTorch does it, sample moments, and reparameterised samples
gradchecked in float64."""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
import gradlab.distributions as D
from gradlab.autograd import gradcheck

oracle = pytest.mark.oracle
SEEDS = [0, 1, 2]


def _params(seed):
    """Generated parameters (float64 arrays) and values in each distribution's support, batch shape (2, 3)."""
    rng = np.random.default_rng(seed)
    shape = (2, 3)
    p = rng.uniform(0.05, 0.95, shape)
    probs = rng.uniform(0.05, 1.0, shape + (4,))
    A = rng.normal(size=(2, 3, 3))
    cov = A @ np.swapaxes(A, -1, -2) + 3 * np.eye(3)
    return {
        "Normal": ((rng.normal(size=shape), rng.uniform(0.3, 2.0, shape)), rng.normal(size=(5,) + shape) * 2),
        "Uniform": ((lo := rng.normal(size=shape), lo + rng.uniform(0.5, 2.0, shape)),
                    lo + rng.uniform(0.0, 0.5, (5,) + shape)),
        "Bernoulli": ((p,), rng.integers(0, 2, (5,) + shape).astype(np.float64)),
        "Categorical": ((probs,), rng.integers(0, 4, (5,) + shape).astype(np.int64)),
        "OneHotCategorical": ((probs,), np.eye(4)[rng.integers(0, 4, (5,) + shape)]),
        "Gamma": ((rng.uniform(0.3, 5.0, shape), rng.uniform(0.3, 3.0, shape)), rng.uniform(0.05, 4.0, (5,) + shape)),
        "Beta": ((rng.uniform(0.3, 5.0, shape), rng.uniform(0.3, 5.0, shape)), rng.uniform(0.02, 0.98, (5,) + shape)),
        "Dirichlet": ((probs * 3,), (d := rng.uniform(0.1, 1, (5,) + shape + (4,))) / d.sum(-1, keepdims=True)),
        "MultivariateNormal": ((rng.normal(size=(2, 3)), cov[0]), rng.normal(size=(5, 2, 3))),
    }


def _make(lib, name, args, requires_grad=True):
    mod = lib if lib is D else lib.distributions
    ts = [_t(lib, a, requires_grad and np.issubdtype(np.asarray(a).dtype, np.floating)) for a in args]
    if name == "MultivariateNormal":
        return getattr(mod, name)(ts[0], covariance_matrix=ts[1]), ts
    if name in ("Categorical", "OneHotCategorical"):
        return getattr(mod, name)(probs=ts[0]), ts
    if name == "Bernoulli":
        return getattr(mod, name)(probs=ts[0]), ts
    return getattr(mod, name)(*ts), ts


def _t(lib, a, requires_grad=False):
    a = np.asarray(a)
    if lib is D:
        return gradlab.tensor(a, requires_grad=requires_grad)
    return lib.tensor(a, requires_grad=requires_grad)


def _close(g, t, what, rtol=1e-9, atol=1e-10):
    np.testing.assert_allclose(np.asarray(g.detach().numpy(), dtype=np.float64), t.detach().numpy(),
                               rtol=rtol, atol=atol, err_msg=what)


NAMES = list(_params(0))


@oracle
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", NAMES)
def test_log_prob_entropy_mean_variance_and_their_gradients_match_pytorch(name, seed, torch):
    args, value = _params(seed)[name]
    gd, gts = _make(D, name, args)
    td, tts = _make(torch, name, args)
    assert gd.batch_shape == tuple(td.batch_shape) and gd.event_shape == tuple(td.event_shape)
    glp, tlp = gd.log_prob(_t(D, value)), td.log_prob(_t(torch, value))
    _close(glp, tlp, f"{name}.log_prob")
    ge, te = gd.entropy(), td.entropy()
    _close(ge, te, f"{name}.entropy")
    for stat in ("mean", "variance"):
        if name != "Categorical":  # (NaN in both)
            _close(getattr(gd, stat), getattr(td, stat), f"{name}.{stat}")
    # gradients of log_prob and entropy with respect to every parameter
    (glp.sum() + ge.sum()).backward()
    (tlp.sum() + te.sum()).backward()
    for i, (a, b) in enumerate(zip(gts, tts)):
        if b.requires_grad:
            _close(a.grad, b.grad, f"{name}: grad of parameter {i}", rtol=1e-8, atol=1e-9)


@oracle
@pytest.mark.parametrize("seed", SEEDS)
def test_logits_parameterisations_match_pytorch(seed, torch):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(3, 5)) * 3
    v = rng.integers(0, 5, (4, 3))
    for cls in ("Categorical", "OneHotCategorical"):
        g = getattr(D, cls)(logits=gradlab.tensor(z))
        t = getattr(torch.distributions, cls)(logits=torch.tensor(z))
        val = v if cls == "Categorical" else np.eye(5)[v]
        _close(g.log_prob(gradlab.tensor(val)), t.log_prob(torch.tensor(val)), cls)
        _close(g.entropy(), t.entropy(), cls)
        _close(g.probs, t.probs, cls)
    zb = rng.normal(size=(6,)) * 4
    g, t = D.Bernoulli(logits=gradlab.tensor(zb)), torch.distributions.Bernoulli(logits=torch.tensor(zb))
    val = rng.integers(0, 2, (6,)).astype(float)
    _close(g.log_prob(gradlab.tensor(val)), t.log_prob(torch.tensor(val)), "Bernoulli logits")
    _close(g.entropy(), t.entropy(), "Bernoulli logits")


@oracle
@pytest.mark.parametrize("form", ["scale_tril", "precision_matrix"])
def test_multivariate_normal_other_parameterisations(form, torch):
    rng = np.random.default_rng(3)
    A = rng.normal(size=(4, 4))
    cov = A @ A.T + 2 * np.eye(4)
    mat = np.linalg.cholesky(cov) if form == "scale_tril" else np.linalg.inv(cov)
    loc, x = rng.normal(size=4), rng.normal(size=(3, 4))
    g = D.MultivariateNormal(gradlab.tensor(loc), **{form: gradlab.tensor(mat)})
    t = torch.distributions.MultivariateNormal(torch.tensor(loc), **{form: torch.tensor(mat)})
    _close(g.log_prob(gradlab.tensor(x)), t.log_prob(torch.tensor(x)), form, rtol=1e-8)
    _close(g.entropy(), t.entropy(), form)
    _close(g.covariance_matrix, t.covariance_matrix, form, rtol=1e-8)


def _kl_pairs(rng):
    s = (3,)
    pos = lambda: rng.uniform(0.3, 3.0, s)  # noqa: E731
    pr = lambda: (q := rng.uniform(0.1, 1, (3, 4))) / q.sum(-1, keepdims=True)  # noqa: E731
    lo = rng.normal(size=s)
    A = rng.normal(size=(3, 3))
    return [
        ("Normal", (rng.normal(size=s), pos()), "Normal", (rng.normal(size=s), pos())),
        ("Bernoulli", (rng.uniform(0.1, 0.9, s),), "Bernoulli", (rng.uniform(0.1, 0.9, s),)),
        ("Categorical", (pr(),), "Categorical", (pr(),)),
        ("OneHotCategorical", (pr(),), "OneHotCategorical", (pr(),)),
        ("Gamma", (pos(), pos()), "Gamma", (pos(), pos())),
        ("Beta", (pos(), pos()), "Beta", (pos(), pos())),
        ("Dirichlet", (pr() * 4,), "Dirichlet", (pr() * 4,)),
        ("Uniform", (lo, lo + 1.0), "Uniform", (lo - 0.5, lo + 2.0)),
        ("Uniform", (lo, lo + 1.0), "Normal", (rng.normal(size=s), pos())),
        ("MultivariateNormal", (rng.normal(size=3), A @ A.T + np.eye(3)),
         "MultivariateNormal", (rng.normal(size=3), np.diag(pos()) + 0.5)),
    ]


@oracle
@pytest.mark.parametrize("seed", SEEDS)
def test_kl_divergence_matches_pytorch_values_and_gradients(seed, torch):
    for pn, pa, qn, qa in _kl_pairs(np.random.default_rng(seed)):
        (gp, gpt), (gq, _) = _make(D, pn, pa), _make(D, qn, qa)
        (tp, tpt), (tq, _) = _make(torch, pn, pa), _make(torch, qn, qa)
        gk, tk = D.kl_divergence(gp, gq), torch.distributions.kl_divergence(tp, tq)
        _close(gk, tk, f"KL({pn} || {qn})", rtol=1e-8)
        gk.sum().backward()
        tk.sum().backward()
        for a, b in zip(gpt, tpt):
            if b.grad is not None:
                _close(a.grad, b.grad, f"grad of KL({pn} || {qn})", rtol=1e-7, atol=1e-9)
    # Independent wraps a pair: the base KL summed over the reinterpreted dims
    rng = np.random.default_rng(seed)
    m1, s1, m2, s2 = rng.normal(size=(4, 2, 3))
    g = D.kl_divergence(D.Independent(D.Normal(gradlab.tensor(m1), gradlab.tensor(np.exp(s1))), 1),
                        D.Independent(D.Normal(gradlab.tensor(m2), gradlab.tensor(np.exp(s2))), 1))
    t = torch.distributions.kl_divergence(
        torch.distributions.Independent(torch.distributions.Normal(torch.tensor(m1), torch.tensor(np.exp(s1))), 1),
        torch.distributions.Independent(torch.distributions.Normal(torch.tensor(m2), torch.tensor(np.exp(s2))), 1))
    _close(g, t, "KL(Independent || Independent)")


def test_kl_of_an_unregistered_pair_is_refused_as_pytorch_does():
    with pytest.raises(NotImplementedError, match="No KL.*Gamma.*Categorical"):
        D.kl_divergence(D.Gamma(1.0, 1.0), D.Categorical(probs=gradlab.tensor([0.5, 0.5])))


@oracle
def test_independent_log_prob_and_shapes_match_pytorch(torch):
    rng = np.random.default_rng(5)
    m, s, x = rng.normal(size=(2, 3)), rng.uniform(0.5, 2, (2, 3)), rng.normal(size=(4, 2, 3))
    g = D.Independent(D.Normal(gradlab.tensor(m), gradlab.tensor(s)), 1)
    t = torch.distributions.Independent(torch.distributions.Normal(torch.tensor(m), torch.tensor(s)), 1)
    assert (g.batch_shape, g.event_shape) == (tuple(t.batch_shape), tuple(t.event_shape)) == ((2,), (3,))
    _close(g.log_prob(gradlab.tensor(x)), t.log_prob(torch.tensor(x)), "Independent.log_prob")
    _close(g.entropy(), t.entropy(), "Independent.entropy")
    assert tuple(g.sample((5,)).shape) == tuple(t.sample((5,)).shape) == (5, 2, 3)


# ------------------------------------------------------------------ validation, as PyTorch does it
BAD = [
    ("Normal", lambda lib, T: lib.Normal(T([0.0]), T([-1.0]))),
    ("Normal nan loc", lambda lib, T: lib.Normal(T([float("nan")]), T([1.0]))),
    ("Bernoulli", lambda lib, T: lib.Bernoulli(probs=T([1.5]))),
    ("Categorical", lambda lib, T: lib.Categorical(probs=T([-0.5, 1.0]))),
    ("Gamma", lambda lib, T: lib.Gamma(T([0.0]), T([1.0]))),
    ("Beta", lambda lib, T: lib.Beta(T([1.0]), T([-2.0]))),
    ("Uniform", lambda lib, T: lib.Uniform(T([1.0]), T([0.0]))),
    ("MultivariateNormal", lambda lib, T: lib.MultivariateNormal(T([0.0, 0.0]), scale_tril=T([[1.0, 0.0], [0.0, -1.0]]))),
    ("both probs and logits", lambda lib, T: lib.Categorical(probs=T([0.5, 0.5]), logits=T([0.0, 0.0]))),
    ("neither", lambda lib, T: lib.Bernoulli()),
    ("0-d probs", lambda lib, T: lib.Categorical(probs=T(0.5))),
]


@oracle
@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_parameters_are_refused_with_pytorch_error_class(case, torch):
    _, make = case
    with pytest.raises(ValueError) as te:
        make(torch.distributions, lambda v: torch.tensor(v))
    with pytest.raises(ValueError) as ge:
        make(D, lambda v: gradlab.tensor(v))
    assert isinstance(ge.value, gradlab.errors.GradlabError)
    # the same first words as PyTorch's message (the parameter, the constraint)
    assert str(ge.value).split("(")[0] == str(te.value).split("(")[0]


@oracle
def test_log_prob_checks_the_value_as_pytorch_does(torch):
    for lib, T in ((D, gradlab.tensor), (torch.distributions, torch.tensor)):
        n = lib.Normal(T([0.0, 0.0]), T([1.0, 1.0]))
        with pytest.raises(ValueError, match="must be a Tensor"):
            n.log_prob(0.5)
        with pytest.raises(ValueError, match="not broadcastable"):
            n.log_prob(T([0.0, 1.0, 2.0]))
        with pytest.raises(ValueError, match="within the support"):
            lib.Gamma(T([1.0]), T([1.0])).log_prob(T([-1.0]))
        with pytest.raises(ValueError, match="within the support"):
            lib.Categorical(probs=T([0.5, 0.5])).log_prob(T([2]))
        with pytest.raises(ValueError, match="event_shape"):
            lib.MultivariateNormal(T([0.0, 0.0]), T([[1.0, 0.0], [0.0, 1.0]])).log_prob(T([0.0, 0.0, 0.0]))
        # validate_args=False: no check, the formula's value (NaN for a negative scale) as PyTorch
        assert bool(lib.Normal(T([0.0]), T([-1.0]), validate_args=False).log_prob(T([0.0])).isnan().all())


def test_set_default_validate_args_switches_validation_for_new_distributions():
    try:
        D.Distribution.set_default_validate_args(False)
        D.Normal(gradlab.tensor([0.0]), gradlab.tensor([-1.0]))  # not checked
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(gradlab.tensor([0.0]), gradlab.tensor([-1.0]))
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


# ------------------------------------------------------------------ samples
MOMENTS = [
    ("Normal", lambda: D.Normal(gradlab.tensor([1.0, -2.0]), gradlab.tensor([0.5, 2.0]))),
    ("Uniform", lambda: D.Uniform(gradlab.tensor([0.0, 2.0]), gradlab.tensor([1.0, 5.0]))),
    ("Bernoulli", lambda: D.Bernoulli(probs=gradlab.tensor([0.2, 0.7]))),
    ("Gamma", lambda: D.Gamma(gradlab.tensor([0.5, 4.0]), gradlab.tensor([1.0, 2.0]))),
    ("Beta", lambda: D.Beta(gradlab.tensor([0.5, 4.0]), gradlab.tensor([2.0, 3.0]))),
    ("OneHotCategorical", lambda: D.OneHotCategorical(probs=gradlab.tensor([0.1, 0.3, 0.6]))),
    ("MultivariateNormal", lambda: D.MultivariateNormal(gradlab.tensor([1.0, -1.0]),
                                                        gradlab.tensor([[2.0, 0.6], [0.6, 1.0]]))),
]


@pytest.mark.parametrize("case", MOMENTS, ids=[c[0] for c in MOMENTS])
def test_samples_have_the_distributions_mean_and_variance(case):
    _, make = case
    d = make()
    n = 40000
    x = d.sample((n,))
    assert tuple(x.shape) == (n,) + d.batch_shape + d.event_shape
    assert x.requires_grad is False
    a = x.numpy().astype(np.float64)
    mean, var = d.mean.detach().numpy(), d.variance.detach().numpy()
    # 6 standard errors of the mean; the variance to 5%
    np.testing.assert_allclose(a.mean(0), mean, atol=6 * np.sqrt(var.max() / n) + 1e-6)
    np.testing.assert_allclose(a.var(0), var, rtol=0.05, atol=1e-3)
    assert bool(d.support.check(x).all())


def test_categorical_sample_frequencies_and_shapes():
    probs = gradlab.tensor([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    c = D.Categorical(probs=probs)
    x = c.sample((30000,))
    assert tuple(x.shape) == (30000, 2) and x.dtype == gradlab.int64
    freq = np.stack([(x.numpy() == k).mean(0) for k in range(3)], -1)
    np.testing.assert_allclose(freq, probs.numpy(), atol=0.015)
    assert tuple(c.sample().shape) == (2,)
    assert tuple(c.enumerate_support().shape) == (3, 2)


def test_rsample_is_differentiable_and_sample_is_not():
    loc = gradlab.tensor([0.5, -1.0], requires_grad=True)
    n = D.Normal(loc, 2.0)
    assert n.rsample().requires_grad and not n.sample().requires_grad
    with pytest.raises(NotImplementedError, match="rsample"):
        D.Categorical(probs=gradlab.tensor([0.5, 0.5])).rsample()


def _seeded(f):
    def run(*args):
        gradlab.manual_seed(7)  # the same noise on every call: rsample is then a function of the parameters
        return f(*args)
    return run


@pytest.mark.parametrize("name", ["Normal", "Uniform", "MultivariateNormal", "Independent"])
def test_reparameterised_samples_pass_gradcheck_in_float64(name):
    rng = np.random.default_rng(0)
    a = gradlab.tensor(rng.normal(size=3), dtype=gradlab.float64, requires_grad=True)
    b = gradlab.tensor(rng.uniform(0.5, 2, 3), dtype=gradlab.float64, requires_grad=True)
    L = gradlab.tensor(np.linalg.cholesky(np.eye(3) * 2 + 0.3), dtype=gradlab.float64, requires_grad=True)
    fns = {
        "Normal": (lambda m, s: D.Normal(m, s).rsample((4,)), (a, b)),
        "Uniform": (lambda lo, w: D.Uniform(lo, lo + w).rsample((4,)), (a, b)),
        "MultivariateNormal": (lambda m, S: D.MultivariateNormal(m, scale_tril=S.tril()).rsample((4,)), (a, L)),
        "Independent": (lambda m, s: D.Independent(D.Normal(m, s), 1).rsample((2,)), (a, b)),
    }
    f, args = fns[name]
    assert gradcheck(_seeded(f), args)


@oracle
def test_gamma_sample_gradient_matches_pytorchs_implicit_gradient(torch):
    """dx/dalpha of a gamma sample at fixed (x, alpha): PyTorch's _standard_gamma_grad is the oracle."""
    from gradlab.ops.random_draws import standard_gamma_grad
    rng = np.random.default_rng(0)
    alpha = np.concatenate([rng.uniform(0.05, 1, 50), rng.uniform(1, 20, 50), rng.uniform(20, 200, 20)])
    x = rng.gamma(alpha)
    ref = torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(x)).numpy()  # (alpha, sample)
    # (PyTorch approximates for large alpha, to about 3e-4; gradlab sums the exact series)
    np.testing.assert_allclose(standard_gamma_grad(x, alpha), ref, rtol=1e-3, atol=1e-7)


def test_gamma_sample_gradient_is_minus_dcdf_dalpha_over_the_density():
    """The implicit-reparameterisation identity, checked with a central difference of the CDF in alpha."""
    import math

    from gradlab.ops.random_draws import standard_gamma_grad

    def cdf(a, x):  # P(a, x) = sum_n x^(a+n) e^-x / Gamma(a + n + 1)
        return sum(math.exp((a + n) * math.log(x) - x - math.lgamma(a + n + 1)) for n in range(int(x) + 200))

    rng = np.random.default_rng(1)
    for a in (0.3, 1.0, 4.5, 30.0):
        for x in rng.gamma(a, size=3):
            h = 1e-5 * a
            dcdf = (cdf(a + h, x) - cdf(a - h, x)) / (2 * h)
            density = math.exp((a - 1) * math.log(x) - x - math.lgamma(a))
            np.testing.assert_allclose(standard_gamma_grad(np.array(x), np.array(a)), -dcdf / density, rtol=1e-6)


def test_gamma_rsample_gradient_is_unbiased_and_flows_to_both_parameters():
    """E[x] = alpha / rate, so the mean over many samples of dx/dalpha is 1 / rate and of dx/drate -alpha / rate^2."""
    alpha = gradlab.tensor([0.7, 3.0], dtype=gradlab.float64, requires_grad=True)
    rate = gradlab.tensor([2.0, 0.5], dtype=gradlab.float64, requires_grad=True)
    n = 20000
    D.Gamma(alpha, rate).rsample((n,)).sum(0).sum().backward()
    np.testing.assert_allclose(alpha.grad.numpy() / n, 1 / rate.detach().numpy(), rtol=0.04)
    np.testing.assert_allclose(rate.grad.numpy() / n, -alpha.detach().numpy() / rate.detach().numpy() ** 2, rtol=0.04)
    # Beta: E[x] = c1 / (c1 + c0); d/dc1 = c0 / (c1 + c0)^2
    c1 = gradlab.tensor(2.0, dtype=gradlab.float64, requires_grad=True)
    c0 = gradlab.tensor(3.0, dtype=gradlab.float64, requires_grad=True)
    D.Beta(c1, c0).rsample((n,)).mean().backward()
    np.testing.assert_allclose(float(c1.grad), 3.0 / 25.0, rtol=0.06)


def test_policy_gradient_loss_backpropagates_through_log_prob():
    """The REINFORCE idiom: -(log_prob(action) * return) gives a gradient on the policy's logits."""
    logits = gradlab.tensor([[0.1, 0.5, -0.2]], requires_grad=True)
    m = D.Categorical(logits=logits)
    action = m.sample()
    (-(m.log_prob(action) * 2.0)).sum().backward()
    probs = np.exp(logits.detach().numpy()) / np.exp(logits.detach().numpy()).sum()
    expected = -2.0 * (np.eye(3)[action.numpy()] - probs)
    np.testing.assert_allclose(logits.grad.numpy(), expected, rtol=1e-5, atol=1e-6)
