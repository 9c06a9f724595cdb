import numpy as np

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, host_generator, as_size, xlogy

__all__ = ["Poisson"]


class Poisson(Distribution):
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        self.rate, = broadcast_all(rate)
        super().__init__(as_size(self.rate.shape), validate_args=validate_args)

    def _expand_args(self):
        return {"rate": 0}

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        import fusionflow as ff
        shape = self._extended_shape(sample_shape)
        lam = self.rate.detach().expand(*shape).to("cpu").numpy().astype(np.float64)
        draws = host_generator().poisson(lam).astype(np.float64)
        return ff.tensor(draws, dtype=self.rate.dtype, device=self.rate.device)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return xlogy(value, rate) - rate - (value + 1).lgamma()
