import math

import numpy as np

from . import constraints
from .distribution import Distribution
from .utils import lazy_property, standard_normal

__all__ = ["MultivariateNormal"]


def _batch_mv(m, v):
    """m @ v over broadcast batches: (..., n, k) times (..., k) gives (..., n)."""
    return (m @ v.unsqueeze(-1)).squeeze(-1)


def _tril_solve(L, b):
    """L^-1 b for lower-triangular L (..., n, n) and b (..., n), batches broadcast."""
    shape = np.broadcast_shapes(tuple(L.shape[:-2]), tuple(b.shape[:-1]))
    n = L.shape[-1]
    Lb = L.expand(*shape, n, n)
    bb = b.expand(*shape, n).unsqueeze(-1)
    return bb.triangular_solve(Lb, upper=False).solution.squeeze(-1)


class MultivariateNormal(Distribution):
    """N(loc, Sigma) with Sigma given as covariance_matrix, precision_matrix or scale_tril
    (exactly one); everything is computed from the Cholesky factor scale_tril."""
    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        import fusionflow as ff
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        matrix = given[0]
        if matrix.dim() < 2:
            name = ("covariance_matrix" if covariance_matrix is not None else
                    "precision_matrix" if precision_matrix is not None else "scale_tril")
            raise ValueError("%s must be at least two-dimensional, with optional leading batch dimensions"
                             % name)
        batch_shape = np.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
        n = loc.shape[-1]
        if scale_tril is not None:
            self.scale_tril = scale_tril.expand(*batch_shape, n, n)
        elif covariance_matrix is not None:
            self.covariance_matrix = covariance_matrix.expand(*batch_shape, n, n)
        else:
            self.precision_matrix = precision_matrix.expand(*batch_shape, n, n)
        self.loc = loc.expand(*batch_shape, n)
        super().__init__(batch_shape, (n,), validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = ff.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = ff.linalg.cholesky(ff.linalg.inv(precision_matrix))

    def _expand_args(self):
        for key in ("scale_tril", "covariance_matrix", "precision_matrix"):
            if key in self.__dict__:
                return {"loc": 1, key: 2}

    @lazy_property
    def scale_tril(self):
        n = self._event_shape[0]
        return self._unbroadcasted_scale_tril.expand(*self._batch_shape, n, n)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        n = self._event_shape[0]
        return (L @ L.transpose(-1, -2)).expand(*self._batch_shape, n, n)

    @lazy_property
    def precision_matrix(self):
        import fusionflow as ff
        n = self._event_shape[0]
        return ff.linalg.inv(self.covariance_matrix).expand(*self._batch_shape, n, n)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        L = self._unbroadcasted_scale_tril
        return (L ** 2).sum(-1).expand(*self._batch_shape, *self._event_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = standard_normal(shape, self.loc.dtype, self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        maha = (_tril_solve(self._unbroadcasted_scale_tril, diff) ** 2).sum(-1)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + maha) - self._half_log_det()

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(*self._batch_shape) if len(self._batch_shape) else h
