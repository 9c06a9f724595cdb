from . import constraints
from ._gamma_grad import standard_gamma
from .distribution import Distribution
from .utils import tiny, eps, xlogy

__all__ = ["Dirichlet"]


class Dirichlet(Distribution):
    """Dirichlet(concentration); rsample normalises Gamma draws, so its gradients are the
    implicit reparameterisation ones of Gamma carried through the normalisation."""
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def _expand_args(self):
        return {"concentration": 1}

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        g = standard_gamma(self.concentration.expand(*shape))
        x = g / g.sum(-1, keepdim=True)
        return x.clamp(min=tiny(x.dtype), max=1 - eps(x.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return xlogy(c - 1, value).sum(-1) + c.sum(-1).lgamma() - c.lgamma().sum(-1)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        import fusionflow as ff
        import fusionflow.nn.functional as F
        c = self.concentration
        cm1 = (c - 1).clamp(min=0.)
        interior = cm1 / cm1.sum(-1, keepdim=True)
        # with every concentration below 1 the density peaks at the vertex of the largest one
        vertex = F.one_hot(c.argmax(-1), c.shape[-1]).to(c.dtype)
        return ff.where((c < 1).all(-1, keepdim=True), vertex, interior)

    @property
    def variance(self):
        c = self.concentration
        c0 = c.sum(-1, keepdim=True)
        return c * (c0 - c) / (c0 ** 2 * (c0 + 1))

    def entropy(self):
        c = self.concentration
        k = c.shape[-1]
        c0 = c.sum(-1)
        return c.lgamma().sum(-1) - c0.lgamma() - (k - c0) * c0.digamma() - ((c - 1.0) * c.digamma()).sum(-1)
