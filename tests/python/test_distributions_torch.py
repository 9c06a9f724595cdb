"""fusionflow.distributions against torch.distributions 1.13 (issue 46, part 2): log_prob,
entropy, mean and variance and their gradients with respect to the parameters; rsample's
gradients (through the noise of the draw, and for Gamma/Beta/Dirichlet's implicit ones both
per draw and in expectation); sample statistics of seeded draws; KL divergences; transforms
and TransformedDistribution; expand; validate_args' ValueErrors."""
import math

import numpy as np
import pytest

import fusionflow as ff
import fusionflow.distributions as D
from fusionflow.distributions import constraints
from fusionflow.distributions._gamma_grad import standard_gamma_grad

torch = pytest.importorskip("torch")
import torch.distributions as TD  # noqa: E402

from conftest import DEVICES  # noqa: E402

LINALG = [d for d in DEVICES if d in ("cpu_ref", "cpu_blas")]  # opencl has no cholesky / solve entry


def pair(values, device, grad=True):
    """The same float64 values as a fusionflow tensor on device and a torch tensor."""
    a = np.asarray(values, np.float64)
    return (ff.tensor(a, dtype=ff.float64, device=device, requires_grad=grad),
            torch.tensor(a, dtype=torch.float64, requires_grad=grad))


def close(got, want, tol=1e-9):
    g = got.detach().to("cpu").numpy() if isinstance(got, ff.Tensor) else np.asarray(got)
    w = want.detach().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    assert np.allclose(g, w, rtol=tol, atol=tol, equal_nan=True), (g, w)


def grads(lib, out, params):
    return (ff.autograd.grad if lib is ff else torch.autograd.grad)(out, params, allow_unused=True)


LOC, SCALE = [0.3, -1.2, 2.0], [0.7, 1.5, 0.2]
POS_A, POS_B = [1.3, 2.5, 0.4], [0.7, 2.0, 3.1]
PROBS = [[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]]
LOGITS = [[0.2, -1.5, 0.3], [2.0, 0.1, -0.3]]
L_TRIL = [[1.2, 0.0, 0.0], [0.3, 0.8, 0.0], [-0.4, 0.5, 1.1]]

# name, constructor (module -> params -> distribution), parameter values, a value in the support
CASES = [
    ("Normal", lambda M, p: M.Normal(*p), [LOC, SCALE], [0.1, 0.4, 1.9]),
    ("Laplace", lambda M, p: M.Laplace(*p), [LOC, SCALE], [0.1, 0.4, 1.9]),
    ("Uniform", lambda M, p: M.Uniform(*p), [[0., -1., 1.], [1., 2., 5.]], [0.4, 1.3, 2.0]),
    ("Exponential", lambda M, p: M.Exponential(*p), [POS_A], [0.4, 1.3, 0.01]),
    ("Gamma", lambda M, p: M.Gamma(*p), [POS_A, POS_B], [0.4, 1.3, 0.05]),
    ("Beta", lambda M, p: M.Beta(*p), [POS_A, POS_B], [0.4, 0.7, 0.05]),
    ("Poisson", lambda M, p: M.Poisson(*p), [POS_A], [1., 3., 0.]),
    ("Bernoulli_probs", lambda M, p: M.Bernoulli(probs=p[0]), [[0.3, 0.8, 0.5]], [1., 0., 1.]),
    ("Bernoulli_logits", lambda M, p: M.Bernoulli(logits=p[0]), [[0.3, -2.8, 4.0]], [1., 0., 1.]),
    ("Dirichlet", lambda M, p: M.Dirichlet(*p), [[[1.3, 2.5, 0.7], [0.4, 1.0, 6.0]]], [[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]),
    ("Categorical_probs", lambda M, p: M.Categorical(probs=p[0]), [PROBS], [2., 0.]),
    ("Categorical_logits", lambda M, p: M.Categorical(logits=p[0]), [LOGITS], [1., 2.]),
    ("OneHotCategorical", lambda M, p: M.OneHotCategorical(logits=p[0]), [LOGITS], [[0., 1., 0.], [1., 0., 0.]]),
    ("Independent_Normal", lambda M, p: M.Independent(M.Normal(*p), 1), [LOC, SCALE], [0.1, 0.4, 1.9]),
    ("LogNormal_as_Transformed", lambda M, p: M.TransformedDistribution(M.Normal(*p), [M.transforms.ExpTransform()]),
     [LOC, SCALE], [0.5, 0.4, 3.0]),
    ("LogNormal", lambda M, p: M.LogNormal(*p), [LOC, SCALE], [0.5, 0.4, 3.0]),
    ("RelaxedOneHotCategorical", lambda M, p: M.RelaxedOneHotCategorical(p[0], logits=p[1]),
     [0.7, LOGITS], [[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]]),
    ("MixtureSameFamily", lambda M, p: M.MixtureSameFamily(M.Categorical(logits=p[0]), M.Normal(p[1], p[2])),
     [LOGITS, [[0.3, -1.2, 2.0], [1.0, 0.0, -1.0]], [[0.7, 1.5, 0.2], [1.0, 2.0, 0.5]]], [0.4, -0.3]),
]
STATS = ("mean", "variance", "stddev", "mode")


def _evaluate(lib, M, make, params, value, device):
    ts = [pair(p, device) for p in params]
    mine = [t[0] if lib is ff else t[1] for t in ts]
    d = make(M, mine)
    v = pair(value, device, grad=False)[0 if lib is ff else 1]
    out = {"log_prob": d.log_prob(v), "shapes": (tuple(d.batch_shape), tuple(d.event_shape))}
    for name in ("entropy",) + STATS:
        try:
            out[name] = getattr(d, name)() if name == "entropy" else getattr(d, name)
        except NotImplementedError:
            out[name] = None
    weights = np.linspace(0.5, 1.5, 8)
    total = sum(w * out[k].sum() for w, k in zip(weights, ("log_prob", "entropy") + STATS)
                if out[k] is not None and not bool(np.isnan(out[k].detach().to("cpu").numpy()).any()))
    out["grads"] = grads(lib, total, mine)
    return out


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_values_and_parameter_grads(case, device):
    """log_prob, entropy, mean, variance, stddev and d/dparams of their weighted sum."""
    _, make, params, value = case
    got = _evaluate(ff, D, make, params, value, device)
    want = _evaluate(torch, TD, make, params, value, device)
    assert got["shapes"] == want["shapes"]
    for k in ("log_prob", "entropy") + STATS:
        assert (got[k] is None) == (want[k] is None), k
        if got[k] is not None:
            close(got[k], want[k])
    for g, w in zip(got["grads"], want["grads"]):
        assert (g is None) == (w is None)
        if g is not None:
            close(g, w)


@pytest.mark.parametrize("device", LINALG)
@pytest.mark.parametrize("form", ["scale_tril", "covariance_matrix", "precision_matrix"])
def test_multivariate_normal(form, device):
    L = np.array(L_TRIL)
    matrix = {"scale_tril": L, "covariance_matrix": L @ L.T, "precision_matrix": np.linalg.inv(L @ L.T)}[form]
    value = [[0.3, -0.2, 1.0], [1.5, 0.5, -0.7]]
    res = []
    for i, (lib, M) in enumerate(((ff, D), (torch, TD))):
        loc, m = pair([[0.1, 0.2, -0.3], [0.0, 1.0, 0.5]], device)[i], pair(matrix, device)[i]
        d = M.MultivariateNormal(loc, **{form: m})
        lp, ent = d.log_prob(pair(value, device, grad=False)[i]), d.entropy()
        total = lp.sum() + 0.5 * ent.sum() + 0.3 * d.variance.sum()
        res.append((lp, ent, d.variance, d.covariance_matrix, d.scale_tril, grads(lib, total, [loc]),
                    tuple(d.batch_shape), tuple(d.event_shape)))
    for g, w in zip(res[0][:5], res[1][:5]):
        close(g, w, 1e-8)
    close(res[0][5][0], res[1][5][0], 1e-8)
    assert res[0][6:] == res[1][6:]


@pytest.mark.parametrize("device", LINALG)
def test_multivariate_normal_scale_tril_grads(device):
    res = []
    for i, lib in enumerate((ff, torch)):
        loc, L = pair([0.1, 0.2, -0.3], device)[i], pair(L_TRIL, device)[i]
        M = D if lib is ff else TD
        d = M.MultivariateNormal(loc, scale_tril=L)
        total = d.log_prob(pair([0.3, -0.2, 1.0], device, grad=False)[i]) + d.entropy()
        res.append(grads(lib, total, [loc, L]))
    for g, w in zip(*res):
        close(g, w, 1e-8)


# --- rsample gradients -------------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_rsample_grads_through_the_noise(device):
    """For location-scale families the draw is loc + scale * noise: d sum(x) / dloc is the
    number of draws and d sum(x) / dscale the sum of the noise recovered from the draws."""
    n = 400
    for cls, noise in ((D.Normal, lambda x, loc, s: (x - loc) / s), (D.Laplace, lambda x, loc, s: (x - loc) / s)):
        loc, scale = pair(LOC, device)[0], pair(SCALE, device)[0]
        x = cls(loc, scale).rsample((n,))
        assert tuple(x.shape) == (n, 3)
        g_loc, g_scale = ff.autograd.grad(x.sum(), [loc, scale])
        close(g_loc, np.full(3, float(n)))
        close(g_scale, noise(x, loc, scale).detach().sum(0), 1e-7)
    low, high = pair([0., -1., 1.], device)[0], pair([1., 2., 5.], device)[0]
    x = D.Uniform(low, high).rsample((n,))
    u = ((x - low) / (high - low)).detach()
    g_low, g_high = ff.autograd.grad(x.sum(), [low, high])
    close(g_low, (1 - u).sum(0), 1e-7)
    close(g_high, u.sum(0), 1e-7)
    rate = pair(POS_A, device)[0]
    x = D.Exponential(rate).rsample((n,))
    close(ff.autograd.grad(x.sum(), [rate])[0], -(x / rate).detach().sum(0), 1e-7)


@pytest.mark.parametrize("device", LINALG)
def test_rsample_grads_multivariate_normal(device):
    loc, L = pair([0.1, 0.2, -0.3], device)[0], pair(L_TRIL, device)[0]
    x = D.MultivariateNormal(loc, scale_tril=L).rsample((50,))
    eps = np.linalg.solve(np.array(L_TRIL), (x.detach().numpy() - [0.1, 0.2, -0.3]).T).T
    g_loc, g_L = ff.autograd.grad(x.sum(), [loc, L])
    close(g_loc, np.full(3, 50.0))
    close(g_L, np.outer(np.ones(3), eps.sum(0)), 1e-7)  # d sum(L eps) / dL_ij = sum eps_j


@pytest.mark.parametrize("device", DEVICES)
def test_gamma_rsample_grad_per_draw(device):
    """Each Gamma draw's dx/dconcentration equals torch._standard_gamma_grad at that draw.
    torch's is an approximation good to about 2e-4 relative (ours is within ~1e-8 of an
    mpmath reference), hence the tolerance."""
    alpha = np.array([0.05, 0.3, 1.0, 2.5, 7.0, 50.0, 300.0, 2e4])
    a = ff.tensor(np.tile(alpha, 20), dtype=ff.float64, device=device, requires_grad=True)
    x = D.Gamma(a, 1.0).rsample()
    got = ff.autograd.grad(x.sum(), [a])[0].to("cpu").numpy()
    want = torch._standard_gamma_grad(torch.tensor(np.tile(alpha, 20)), torch.tensor(x.detach().to("cpu").numpy()))
    assert np.allclose(got, want.numpy(), rtol=1e-3, atol=1e-12), np.abs(got / want.numpy() - 1).max()
    # and on torch's own draws, through the helper
    torch.manual_seed(0)
    ta = torch.tensor(np.tile(alpha, 20))
    tx = torch._standard_gamma(ta)
    assert np.allclose(standard_gamma_grad(ta.numpy(), tx.numpy()), torch._standard_gamma_grad(ta, tx).numpy(),
                       rtol=1e-3, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_implicit_rsample_grads_in_expectation(device):
    """d/dtheta E[f(x)] from our pathwise gradients against the closed forms (and torch's
    estimate from its own draws): Gamma E[x] = a/b, E[x^2] = a(a+1)/b^2; Beta and Dirichlet
    E[x] = c / sum(c)."""
    n = 20000
    ff.manual_seed(3)
    a, b = pair([1.5, 0.4], device)[0], pair([2.0, 0.8], device)[0]
    x = D.Gamma(a, b).rsample((n,))
    ga, gb = ff.autograd.grad((x + 0.1 * x ** 2).mean(0).sum(), [a, b])
    av, bv = np.array([1.5, 0.4]), np.array([2.0, 0.8])
    close(ga, 1 / bv + 0.1 * (2 * av + 1) / bv ** 2, 0.05)
    close(gb, -av / bv ** 2 - 0.2 * av * (av + 1) / bv ** 3, 0.05)

    c = pair([[2.0, 0.5, 1.5]], device)[0]
    x = D.Dirichlet(c).rsample((n,))
    w = np.array([1.0, -2.0, 0.5])
    gc = ff.autograd.grad((x * ff.tensor(w, dtype=ff.float64, device=device)).mean(0).sum(), [c])[0]
    cv = np.array([2.0, 0.5, 1.5])
    s = cv.sum()
    jac = (np.eye(3) * s - cv[:, None]) / s ** 2  # d(c_i / s) / dc_j, [i, j]
    close(gc, (w @ jac)[None], 0.03)
    tc = torch.tensor([[2.0, 0.5, 1.5]], dtype=torch.float64, requires_grad=True)
    tgc = torch.autograd.grad((TD.Dirichlet(tc).rsample((n,)) * torch.tensor(w)).mean(0).sum(), [tc])[0]
    close(gc, tgc, 0.03)

    c1, c0 = pair([2.0, 0.7], device)[0], pair([3.0, 0.9], device)[0]
    x = D.Beta(c1, c0).rsample((n,))
    g1, g0 = ff.autograd.grad(x.mean(0).sum(), [c1, c0])
    v1, v0 = np.array([2.0, 0.7]), np.array([3.0, 0.9])
    close(g1, v0 / (v1 + v0) ** 2, 0.02)
    close(g0, -v1 / (v1 + v0) ** 2, 0.02)


@pytest.mark.parametrize("device", DEVICES)
def test_relaxed_one_hot_rsample(device):
    logits = pair(LOGITS, device)[0]
    d = D.RelaxedOneHotCategorical(ff.tensor(0.5, dtype=ff.float64, device=device), logits=logits)
    x = d.rsample((7,))
    assert tuple(x.shape) == (7, 2, 3)
    close(x.sum(-1), np.ones((7, 2)))
    g = ff.autograd.grad((x[..., 0] * 2 + x[..., 2]).sum(), [logits])[0]
    assert np.isfinite(g.numpy()).all() and np.abs(g.numpy()).sum() > 0
    td = TD.RelaxedOneHotCategorical(torch.tensor(0.5, dtype=torch.float64),
                                     logits=torch.tensor(LOGITS, dtype=torch.float64))
    close(d.log_prob(x.detach()), td.log_prob(torch.tensor(x.detach().to("cpu").numpy())), 1e-8)


# --- sampling --------------------------------------------------------------------------------

def _moments(x):
    """Sample mean and variance, and the standard error of the variance (from the 4th moment)."""
    a = x.detach().to("cpu").numpy()
    m = a.mean(0)
    return m, a.var(0), np.sqrt(((a - m) ** 2).var(0) / a.shape[0])


@pytest.mark.parametrize("device", DEVICES)
def test_sample_statistics(device):
    """Mean and variance of 20000 seeded draws within 5 standard errors of the analytic ones."""
    n = 20000
    ff.manual_seed(11)
    f64 = lambda v: ff.tensor(np.asarray(v, np.float64), dtype=ff.float64, device=device)  # noqa: E731
    dists = [D.Normal(f64(LOC), f64(SCALE)), D.Laplace(f64(LOC), f64(SCALE)), D.Uniform(f64([0., -1.]), f64([1., 2.])),
             D.Exponential(f64(POS_A)), D.Gamma(f64(POS_A), f64(POS_B)), D.Beta(f64(POS_A), f64(POS_B)),
             D.Poisson(f64([0.5, 4.0, 30.0])), D.Bernoulli(f64([0.1, 0.5, 0.9])),
             D.Dirichlet(f64([[1.3, 2.5, 0.7]])), D.OneHotCategorical(f64(PROBS)),
             D.MixtureSameFamily(D.Categorical(f64([0.3, 0.7])), D.Normal(f64([-1.0, 2.0]), f64([0.5, 1.0])))]
    for d in dists:
        x = d.sample((n,))
        assert tuple(x.shape) == (n,) + tuple(d.batch_shape) + tuple(d.event_shape), type(d).__name__
        m, v, v_se = _moments(x)
        mean, var = d.mean.detach().to("cpu").numpy(), d.variance.detach().to("cpu").numpy()
        assert np.all(np.abs(m - mean) <= 5 * np.sqrt(var / n) + 1e-12), (type(d).__name__, m, mean)
        assert np.all(np.abs(v - var) <= 5 * v_se + 1e-12), (type(d).__name__, v, var)
    x = D.Categorical(f64(PROBS)).sample((n,)).to("cpu").numpy()
    assert x.shape == (n, 2) and x.dtype == np.int64
    freq = np.stack([(x == k).mean(0) for k in range(3)], -1)
    assert np.allclose(freq, PROBS, atol=5 * np.sqrt(0.25 / n)), freq


@pytest.mark.parametrize("device", LINALG)
def test_multivariate_normal_sample_covariance(device):
    ff.manual_seed(5)
    L = np.array(L_TRIL)
    d = D.MultivariateNormal(ff.tensor([1.0, -1.0, 0.5], dtype=ff.float64, device=device),
                             scale_tril=ff.tensor(L, dtype=ff.float64, device=device))
    x = d.sample((20000,)).to("cpu").numpy()
    assert np.allclose(x.mean(0), [1.0, -1.0, 0.5], atol=0.05)
    assert np.allclose(np.cov(x.T), L @ L.T, atol=0.06)


def test_seeded_sampling_repeats():
    """manual_seed repeats every sampler's draws, the host-side ones (gamma, poisson) too."""
    makers = [lambda: D.Normal(0.0, 1.0), lambda: D.Gamma(ff.tensor([0.5, 2.0]), 1.0),
              lambda: D.Dirichlet(ff.tensor([1.0, 2.0, 3.0])), lambda: D.Poisson(ff.tensor([3.0])),
              lambda: D.Categorical(logits=ff.tensor(LOGITS)), lambda: D.Bernoulli(0.3)]
    for make in makers:
        ff.manual_seed(42)
        a = make().sample((5,)).numpy()
        ff.manual_seed(42)
        b = make().sample((5,)).numpy()
        c = make().sample((5,)).numpy()
        assert np.array_equal(a, b) and not np.array_equal(a, c), make


def test_sample_has_no_grad_and_rsample_does():
    loc = ff.tensor([0.0, 1.0], requires_grad=True)
    d = D.Normal(loc, 1.0)
    assert not d.sample().requires_grad and d.rsample().requires_grad
    assert d.sample().dtype == ff.float32 and tuple(d.sample((4, 3)).shape) == (4, 3, 2)
    with pytest.raises(NotImplementedError):
        D.Poisson(ff.tensor([1.0])).rsample()


# --- KL divergence ---------------------------------------------------------------------------

KL_PAIRS = [
    ("Normal", lambda M, p: (M.Normal(p[0], p[1]), M.Normal(p[2], p[3])), [LOC, SCALE, [0.0, 0.5, 1.0], POS_A]),
    ("Laplace", lambda M, p: (M.Laplace(p[0], p[1]), M.Laplace(p[2], p[3])), [LOC, SCALE, [0.0, 0.5, 1.0], POS_A]),
    ("Gamma", lambda M, p: (M.Gamma(p[0], p[1]), M.Gamma(p[2], p[3])), [POS_A, POS_B, POS_B, POS_A]),
    ("Beta", lambda M, p: (M.Beta(p[0], p[1]), M.Beta(p[2], p[3])), [POS_A, POS_B, POS_B, POS_A]),
    ("Exponential", lambda M, p: (M.Exponential(p[0]), M.Exponential(p[1])), [POS_A, POS_B]),
    ("Poisson", lambda M, p: (M.Poisson(p[0]), M.Poisson(p[1])), [POS_A, POS_B]),
    ("Bernoulli", lambda M, p: (M.Bernoulli(p[0]), M.Bernoulli(p[1])), [[0.3, 0.8, 0.5], [0.6, 0.1, 0.5]]),
    ("Categorical", lambda M, p: (M.Categorical(p[0]), M.Categorical(logits=p[1])), [PROBS, LOGITS]),
    ("OneHotCategorical", lambda M, p: (M.OneHotCategorical(p[0]), M.OneHotCategorical(logits=p[1])), [PROBS, LOGITS]),
    ("Dirichlet", lambda M, p: (M.Dirichlet(p[0]), M.Dirichlet(p[1])), [[[1.3, 2.5, 0.7]], [[0.4, 1.0, 6.0]]]),
    ("Uniform", lambda M, p: (M.Uniform(p[0], p[1]), M.Uniform(p[2], p[3])),
     [[0.2, 0.0], [0.8, 1.0], [0.0, -1.0], [1.0, 3.0]]),
    ("Uniform_Normal", lambda M, p: (M.Uniform(p[0], p[1]), M.Normal(p[2], p[3])),
     [[0.2, 0.0], [0.8, 1.0], [0.0, -1.0], [1.0, 3.0]]),
    ("Independent", lambda M, p: (M.Independent(M.Normal(p[0], p[1]), 1), M.Independent(M.Normal(p[2], p[3]), 1)),
     [LOC, SCALE, [0.0, 0.5, 1.0], POS_A]),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", KL_PAIRS, ids=[c[0] for c in KL_PAIRS])
def test_kl_divergence(case, device):
    _, make, params = case
    res = []
    for i, (lib, M) in enumerate(((ff, D), (torch, TD))):
        ps = [pair(p, device)[i] for p in params]
        kl = M.kl_divergence(*make(M, ps))
        res.append((kl, grads(lib, kl.sum(), ps)))
    close(res[0][0], res[1][0])
    for g, w in zip(res[0][1], res[1][1]):
        close(g, w)


def test_kl_uniform_outside_support_is_inf():
    kl = D.kl_divergence(D.Uniform(ff.tensor([0.0]), ff.tensor([2.0])), D.Uniform(ff.tensor([0.5]), ff.tensor([1.0])))
    assert kl.numpy()[0] == math.inf


@pytest.mark.parametrize("device", LINALG)
def test_kl_multivariate_normal(device):
    L2 = [[0.9, 0.0, 0.0], [-0.2, 1.3, 0.0], [0.1, 0.4, 0.6]]
    res = []
    for i, (lib, M) in enumerate(((ff, D), (torch, TD))):
        ps = [pair(p, device)[i] for p in ([0.1, 0.2, -0.3], L_TRIL, [[0.5, 0.0, 0.1], [1.0, 1.0, 1.0]], L2)]
        kl = M.kl_divergence(M.MultivariateNormal(ps[0], scale_tril=ps[1]), M.MultivariateNormal(ps[2], scale_tril=ps[3]))
        res.append((kl, grads(lib, kl.sum(), ps)))
    close(res[0][0], res[1][0], 1e-8)
    for g, w in zip(res[0][1], res[1][1]):
        close(g, w, 1e-8)


def test_kl_registry():
    """register_kl dispatches to the most specific pair; unknown pairs raise as torch does."""
    class MyNormal(D.Normal):
        pass

    p, q = MyNormal(0.0, 1.0), D.Normal(1.0, 2.0)
    close(D.kl_divergence(p, q), TD.kl_divergence(TD.Normal(0.0, 1.0), TD.Normal(1.0, 2.0)), 1e-6)

    @D.register_kl(MyNormal, D.Normal)
    def _kl_mine(p, q):
        return ff.tensor(-7.0)
    assert D.kl_divergence(p, q).item() == -7.0
    assert D.kl_divergence(q, q).item() == 0.0  # the Normal/Normal entry still serves plain Normals
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Poisson(ff.tensor(1.0)))
    with pytest.raises(TypeError):
        D.register_kl(int, D.Normal)


# --- transforms ------------------------------------------------------------------------------

def _transforms(M, scale):
    T = M.transforms
    return {"exp": T.ExpTransform(), "sigmoid": T.SigmoidTransform(), "tanh": T.TanhTransform(),
            "affine_number": T.AffineTransform(0.5, -2.0), "affine_tensor": T.AffineTransform(1.0, scale),
            "affine_event": T.AffineTransform(0.3, scale, event_dim=1),
            "compose": T.ComposeTransform([T.AffineTransform(0.1, 3.0), T.TanhTransform(), T.ExpTransform()]),
            "softmax": T.SoftmaxTransform()}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["exp", "sigmoid", "tanh", "affine_number", "affine_tensor", "affine_event",
                                  "compose", "softmax"])
def test_transforms(name, device):
    """forward, .inv on the result, and log|det J| (with its gradient) against torch."""
    xs = [[0.3, -1.2, 0.8], [2.0, 0.1, -0.4]]
    res = []
    for i, (lib, M) in enumerate(((ff, D), (torch, TD))):
        x, scale = pair(xs, device)[i], pair([0.5, -1.5, 2.0], device, grad=False)[i]
        t = _transforms(M, scale)[name]
        y = t(x)
        back = t.inv(y)
        out = [y, back]
        if name != "softmax":
            ladj = t.log_abs_det_jacobian(x, y)
            out += [ladj, grads(lib, ladj.sum() + y.sum(), [x])[0]]
        res.append((out, t.domain.event_dim, t.codomain.event_dim, t.bijective))
    for g, w in zip(res[0][0], res[1][0]):
        close(g, w, 1e-8)
    assert res[0][1:] == res[1][1:]
    t = D.transforms.ExpTransform()
    assert t.inv.inv is t and t.inv.domain is constraints.positive


@pytest.mark.parametrize("device", DEVICES)
def test_transformed_distribution(device):
    """A tanh-squashed affine Gaussian over vectors (a policy head) and a sigmoid-of-Beta:
    log_prob, its gradient and the shapes, against torch; rsample lands in the support."""
    res = []
    for i, (lib, M) in enumerate(((ff, D), (torch, TD))):
        loc, scale = pair([[0.1, -0.4], [0.3, 0.2]], device)[i], pair([[0.5, 1.2], [0.9, 0.3]], device)[i]
        T = M.transforms
        d = M.TransformedDistribution(M.Independent(M.Normal(loc, scale), 1),
                                      [T.AffineTransform(0.2, 1.5, event_dim=1), T.TanhTransform()])
        lp = d.log_prob(pair([[0.3, -0.6], [0.9, 0.05]], device, grad=False)[i])
        b = M.TransformedDistribution(M.Beta(pair([2.0], device)[i], pair([3.0], device)[i]),
                                      T.ComposeTransform([T.SigmoidTransform().inv, T.AffineTransform(1.0, 2.0)]))
        lpb = b.log_prob(pair([0.4], device, grad=False)[i])
        res.append((lp, lpb, grads(lib, lp.sum() + lpb.sum(), [loc, scale]),
                    tuple(d.batch_shape), tuple(d.event_shape), d.has_rsample))
    close(res[0][0], res[1][0], 1e-8)
    close(res[0][1], res[1][1], 1e-8)
    for g, w in zip(res[0][2], res[1][2]):
        close(g, w, 1e-8)
    assert res[0][3:] == res[1][3:]
    x = D.TransformedDistribution(D.Normal(ff.zeros(3), ff.ones(3)), D.transforms.TanhTransform()).rsample((10,))
    assert float(x.abs().max().item()) <= 1.0


# --- shapes, expand, validation ----------------------------------------------------------------

def test_expand_and_shapes():
    for M in (D, TD):
        lib = ff if M is D else torch
        d = M.Normal(lib.zeros(2), lib.ones(2)).expand((4, 2))
        assert tuple(d.batch_shape) == (4, 2) and tuple(d.log_prob(lib.zeros(4, 2)).shape) == (4, 2)
        c = M.Categorical(logits=lib.zeros(3)).expand((5,))
        assert tuple(c.batch_shape) == (5,) and tuple(c.sample().shape) == (5,)
        i = M.Independent(M.Normal(lib.zeros(3), lib.ones(3)), 1).expand((2,))
        assert (tuple(i.batch_shape), tuple(i.event_shape)) == ((2,), (3,))
        assert tuple(M.Dirichlet(lib.ones(3)).expand((2, 4)).sample().shape) == (2, 4, 3)
        assert tuple(M.Beta(lib.ones(1), lib.ones(1)).expand((3,)).batch_shape) == (3,)
    d = D.Normal(ff.zeros(2), ff.ones(2)).expand((4, 2))
    close(d.log_prob(ff.zeros(4, 2)), TD.Normal(torch.zeros(4, 2), torch.ones(4, 2)).log_prob(torch.zeros(4, 2)), 1e-6)


def _messages(make, value=None):
    """The ValueError messages fusionflow's and torch's distributions give for one misuse."""
    out = []
    for lib, M in ((ff, D), (torch, TD)):
        with pytest.raises(ValueError) as e:
            d = make(lib, M)
            if value is not None:
                d.log_prob(value(lib))
        out.append(str(e.value))
    return out


def test_validate_args_errors():
    got, want = _messages(lambda lib, M: M.Normal(lib.zeros(2), -lib.ones(2)))
    head = "Expected parameter scale (Tensor of shape (2,)) of distribution Normal(loc: "
    tail = "to satisfy the constraint GreaterThan(lower_bound=0.0), but found invalid values:"
    for m in (got, want):
        assert m.startswith(head) and tail in m, m
    if hasattr(ff, "Size"):  # shapes print as torch.Size([2]) on both sides: the whole message matches
        assert got == want
    got, want = _messages(lambda lib, M: M.Gamma(lib.ones(2), lib.ones(2)), lambda lib: -lib.ones(2))
    for m in (got, want):
        assert m.startswith("Expected value argument (Tensor of shape (2,)) to be within the support "
                            "(GreaterThanEq(lower_bound=0.0)) of the distribution Gamma(concentration: "), m
    got, want = _messages(lambda lib, M: M.Normal(lib.zeros(2), lib.ones(2)), lambda lib: lib.zeros(3))
    assert got.startswith("Value is not broadcastable with batch_shape+event_shape:") and want.startswith(got[:40])
    got, want = _messages(lambda lib, M: M.Dirichlet(lib.ones(3)), lambda lib: lib.ones(2) / 2)
    assert got.startswith("The right-most size of value must match event_shape:") and want.startswith(got[:40])
    got, want = _messages(lambda lib, M: M.Categorical(probs=lib.ones(3), logits=lib.ones(3)))
    assert got == want == "Either `probs` or `logits` must be specified, but not both."
    got, want = _messages(lambda lib, M: M.Bernoulli(lib.ones(2)), lambda lib: [1.0, 0.0])
    assert got == want == "The value argument to log_prob must be a Tensor"
    got, want = _messages(lambda lib, M: M.Categorical(lib.ones(3)), lambda lib: lib.tensor([3]))
    for m in (got, want):
        assert "to be within the support (IntegerInterval(lower_bound=0, upper_bound=2))" in m, m
    got, want = _messages(lambda lib, M: M.Uniform(lib.ones(1), lib.zeros(1)))
    assert got == want
    got, want = _messages(lambda lib, M: M.Independent(M.Normal(lib.zeros(2), lib.ones(2)), 2))
    assert got == want
    got, want = _messages(lambda lib, M: M.MixtureSameFamily(M.Normal(0.0, 1.0), M.Normal(lib.zeros(2), lib.ones(2))))
    assert got == want
    # validate_args=False lets a bad parameter through, as in torch
    assert bool(D.Normal(ff.zeros(1), -ff.ones(1), validate_args=False).scale.item() == -1.0)
    assert np.isnan(D.Normal(0.0, 1.0, validate_args=False).log_prob(ff.tensor(float("nan"))).item())


def test_constraints_and_support():
    assert D.Normal.support is constraints.real and D.Gamma.arg_constraints["rate"] is constraints.positive
    assert repr(constraints.unit_interval) == repr(TD.constraints.unit_interval)
    assert repr(constraints.simplex) == repr(TD.constraints.simplex)
    assert repr(constraints.independent(constraints.real, 1)) == repr(TD.constraints.independent(TD.constraints.real, 1))
    u = D.Uniform(ff.tensor([0.0]), ff.tensor([2.0]))
    assert bool(u.support.check(ff.tensor([1.0])).all().item()) and not bool(u.support.check(ff.tensor([2.5])).all().item())
    assert constraints.is_dependent(D.Uniform.arg_constraints["low"])
    assert bool(constraints.simplex.check(ff.tensor([0.2, 0.8])).item())
    assert bool(constraints.lower_cholesky.check(ff.tensor(L_TRIL)).item())
    assert bool(constraints.positive_definite.check(ff.tensor(np.eye(2))).item())
    assert not bool(constraints.positive_definite.check(ff.tensor([[1.0, 2.0], [2.0, 1.0]])).item())
    assert D.Bernoulli(0.3).enumerate_support().numpy().tolist() == [0.0, 1.0]
    assert tuple(D.Categorical(ff.ones(2, 3)).enumerate_support().shape) == (3, 2)


def test_import_forms():
    """from fusionflow import distributions, import fusionflow.distributions as D, and
    torch.distributions.X through the name torch (import fusionflow as torch)."""
    import importlib
    from fusionflow import distributions
    mod = importlib.import_module("fusionflow.distributions")
    assert distributions is mod is D and ff.distributions.Normal is D.Normal
    assert ff.distributions.kl.kl_divergence is D.kl_divergence
    assert ff.distributions.normal.Normal is D.Normal and ff.distributions.transforms.TanhTransform is D.TanhTransform
