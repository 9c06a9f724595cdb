from numbers import Real

from . import constraints
from .dirichlet import Dirichlet
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Beta"]


class Beta(Distribution):
    """Beta(concentration1, concentration0) as the first coordinate of a two-part Dirichlet."""
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        import fusionflow as ff
        if isinstance(concentration1, Real) and isinstance(concentration0, Real):
            c = ff.tensor([float(concentration1), float(concentration0)])
        else:
            c1, c0 = broadcast_all(concentration1, concentration0)
            c = ff.stack([c1, c0], -1)
        self._dirichlet = Dirichlet(c, validate_args=validate_args)
        super().__init__(self._dirichlet.batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        c = self._dirichlet.concentration
        new = Beta(c[..., 0].expand(*batch_shape), c[..., 1].expand(*batch_shape), validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total ** 2 * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        import fusionflow as ff
        if self._validate_args:
            self._validate_sample(value)
        value, = broadcast_all(value)
        return self._dirichlet.log_prob(ff.stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()
