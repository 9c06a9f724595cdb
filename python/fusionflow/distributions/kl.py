"""kl_divergence(p, q) and its registry (register_kl): the closed forms for pairs of
families, found by the most specific registered pair of classes."""
import math

from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exponential import Exponential
from .gamma import Gamma
from .independent import Independent
from .laplace import Laplace
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import sum_rightmost

__all__ = ["register_kl", "kl_divergence"]

_KL_REGISTRY = {}  # (type_p, type_q) -> function(p, q)
_KL_MEMOIZE = {}   # the dispatch result for concrete (type(p), type(q))


def register_kl(type_p, type_q):
    """Decorator: fun(p, q) computes KL(p || q) for instances of type_p and type_q."""
    for name, t in (("type_p", type_p), ("type_q", type_q)):
        if not isinstance(t, type) or not issubclass(t, Distribution):
            raise TypeError("Expected %s to be a Distribution subclass but got %s" % (name, t))

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun
    return decorator


def _dispatch_kl(type_p, type_q):
    """The registered function whose pair is nearest (in method resolution order) to ours."""
    best, best_rank = None, None
    for (sp, sq), fun in _KL_REGISTRY.items():
        if issubclass(type_p, sp) and issubclass(type_q, sq):
            rank = (type_p.__mro__.index(sp) + type_q.__mro__.index(sq), type_p.__mro__.index(sp))
            if best_rank is None or rank < best_rank:
                best, best_rank = fun, rank
    return best


def kl_divergence(p, q):
    """KL(p || q), batched over p's and q's (broadcast) batch shapes."""
    key = (type(p), type(q))
    if key not in _KL_MEMOIZE:
        _KL_MEMOIZE[key] = _dispatch_kl(*key)
    fun = _KL_MEMOIZE[key]
    if fun is None:
        raise NotImplementedError("No KL(p || q) is implemented for p type %s and q type %s"
                                  % (type(p).__name__, type(q).__name__))
    return fun(p, q)


def _inf_where(mask, value):
    import fusionflow as ff
    return ff.where(mask, ff.full((), float("inf"), dtype=value.dtype, device=value.device), value)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * ((-q.logits).softplus() - (-p.logits).softplus())
    t2 = (1 - p.probs) * (q.logits.softplus() - p.logits.softplus())
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    import fusionflow as ff
    t = p.probs * (p.logits - q.logits)
    t = _inf_where(ff.broadcast_tensors(q.probs == 0, t)[0], t)
    t = ff.where(ff.broadcast_tensors(p.probs == 0, t)[0], ff.zeros((), dtype=t.dtype, device=t.device), t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _inf_where((q.low > p.low) | (q.high < p.high), result)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    common = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / common).log()
    t2 = common ** 2 / 12
    t3 = ((p.high + p.low - 2 * q.loc) / 2) ** 2
    return t1 + 0.5 * (t2 + t3) / q.scale ** 2


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    cp, cq = p.concentration, q.concentration
    sum_p, sum_q = cp.sum(-1), cq.sum(-1)
    t1 = sum_p.lgamma() - sum_q.lgamma()
    t2 = (cp.lgamma() - cq.lgamma()).sum(-1)
    t3 = cp - cq
    t4 = cp.digamma() - sum_p.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    return _kl_dirichlet_dirichlet(p._dirichlet, q._dirichlet)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = q.concentration.lgamma() - p.concentration.lgamma()
    t3 = (p.concentration - q.concentration) * p.concentration.digamma()
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    return -scale_ratio.log() + loc_abs_diff / q.scale + scale_ratio * (-loc_abs_diff / p.scale).exp() - 1


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    """log|Lq|/|Lp| + (tr(Sq^-1 Sp) + |Lq^-1 (mq - mp)|^2 - n) / 2, through triangular solves."""
    import numpy as np
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes "
                         "cannot be computed")
    n = p.event_shape[0]
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    batch = np.broadcast_shapes(tuple(Lp.shape[:-2]), tuple(Lq.shape[:-2]),
                                tuple(p.loc.shape[:-1]), tuple(q.loc.shape[:-1]))
    Lq_b = Lq.expand(*batch, n, n)
    half_term1 = q._half_log_det() - p._half_log_det()
    term2 = (Lp.expand(*batch, n, n).triangular_solve(Lq_b, upper=False).solution ** 2).sum((-1, -2))
    diff = (q.loc - p.loc).expand(*batch, n).unsqueeze(-1)
    term3 = (diff.triangular_solve(Lq_b, upper=False).solution ** 2).sum((-1, -2))
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL(Independent || Independent) needs the same reinterpreted_batch_ndims")
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError("KL(TransformedDistribution || TransformedDistribution) is only known "
                                  "when both apply the same transforms")
    extra = len(p.event_shape) - len(p.base_dist.event_shape)
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), extra)


