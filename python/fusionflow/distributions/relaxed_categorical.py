import math

from . import constraints
from .categorical import Categorical
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import broadcast_all, clamp_probs, standard_uniform

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(Distribution):
    """The log of a Gumbel-softmax (concrete) draw at `temperature`."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        logits = self._categorical.logits
        new = ExpRelaxedCategorical(self.temperature, logits=logits.expand(*batch_shape, logits.shape[-1]),
                                    validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = clamp_probs(standard_uniform(shape, self.logits.dtype, self.logits.device))
        gumbels = -((-(u.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        """log p(y) = lgamma(K) + (K-1) log t + sum_i s_i - K logsumexp(s), s = logits - t y."""
        if self._validate_args:
            self._validate_sample(value)
        k = self._categorical._num_events
        logits, value = broadcast_all(self.logits, value)
        t = self.temperature
        log_t = t.log() if hasattr(t, "log") else math.log(t)
        s = logits - value * t
        return math.lgamma(k) + (k - 1) * log_t + s.sum(-1) - k * s.logsumexp(dim=-1)


class RelaxedOneHotCategorical(TransformedDistribution):
    """Gumbel-softmax (concrete) draws on the simplex at `temperature`."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = RelaxedOneHotCategorical(self.temperature, logits=self.base_dist.expand(batch_shape).logits,
                                       validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs
