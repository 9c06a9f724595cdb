from . import constraints
from ._gamma_grad import standard_gamma
from .distribution import Distribution
from .utils import broadcast_all, tiny, as_size, xlogy

__all__ = ["Gamma"]


class Gamma(Distribution):
    """Gamma(concentration, rate); rsample's gradients are implicit reparameterisation ones."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(as_size(self.concentration.shape), validate_args=validate_args)

    def _expand_args(self):
        return {"concentration": 0, "rate": 0}

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate ** 2

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x = standard_gamma(self.concentration.expand(*shape)) / self.rate.expand(*shape)
        return x.clamp(min=tiny(x.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration, self.rate
        return xlogy(a, b) + xlogy(a - 1, value) - b * value - a.lgamma()

    def entropy(self):
        a = self.concentration
        return a - self.rate.log() + a.lgamma() + (1.0 - a) * a.digamma()
