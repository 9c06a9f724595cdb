from numbers import Number

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits, standard_uniform, as_size

__all__ = ["Bernoulli"]


def _one_parametrisation(name, probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


class Bernoulli(Distribution):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_parametrisation("Bernoulli", probs, logits)
        given = probs if probs is not None else logits
        is_scalar = isinstance(given, Number)
        if probs is not None:
            self.probs, = broadcast_all(probs)
        else:
            self.logits, = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        shape = () if is_scalar else as_size(self._param.shape)
        super().__init__(shape, validate_args=validate_args)

    def _expand_args(self):
        return {"probs" if "probs" in self.__dict__ else "logits": 0}

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return as_size(self._param.shape)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        m = (self.probs >= 0.5).to(self.probs.dtype)
        return m.masked_fill(self.probs == 0.5, float("nan")) if hasattr(m, "masked_fill") else m

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        import fusionflow as ff
        shape = self._extended_shape(sample_shape)
        with ff.no_grad():
            p = self.probs.expand(*shape)
            return (standard_uniform(shape, p.dtype, p.device) < p).to(p.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return value * logits - logits.softplus()  # log sigmoid(l) for 1, log sigmoid(-l) for 0

    def entropy(self):
        return self.logits.softplus() - self.probs * self.logits

    def enumerate_support(self, expand=True):
        import fusionflow as ff
        values = ff.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape(2, *((1,) * len(self._batch_shape)))
        if expand:
            values = values.expand(2, *self._batch_shape)
        return values
