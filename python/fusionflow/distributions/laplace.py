from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, standard_uniform, eps, as_size

__all__ = ["Laplace"]


class Laplace(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(as_size(self.loc.shape), validate_args=validate_args)

    def _expand_args(self):
        return {"loc": 0, "scale": 0}

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale ** 2

    @property
    def stddev(self):
        return 2 ** 0.5 * self.scale

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        e = eps(self.loc.dtype)
        # u uniform on (-1, 1) away from -1, where log1p(-|u|) would be -inf
        u = standard_uniform(shape, self.loc.dtype, self.loc.device) * (2 - e) + (e - 1)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        d = value - self.loc
        return 0.5 - 0.5 * d.sign() * (-d.abs() / self.scale).expm1()

    def icdf(self, value):
        t = value - 0.5
        return self.loc - self.scale * t.sign() * (-2 * t.abs()).log1p()

    def entropy(self):
        return 1 + (2 * self.scale).log()
