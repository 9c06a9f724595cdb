from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, standard_uniform, as_size

__all__ = ["Exponential"]


class Exponential(Distribution):
    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        self.rate, = broadcast_all(rate)
        super().__init__(as_size(self.rate.shape), validate_args=validate_args)

    def _expand_args(self):
        return {"rate": 0}

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return self.rate * 0

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate ** -2

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = standard_uniform(shape, self.rate.dtype, self.rate.device)
        return -(-u).log1p() / self.rate  # u < 1, so the draw is finite

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value):
        return -(-value).log1p() / self.rate

    def entropy(self):
        return 1.0 - self.rate.log()
