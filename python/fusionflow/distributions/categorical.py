from . import constraints
from .distribution import Distribution
from .utils import lazy_property, logits_to_probs, probs_to_logits, standard_uniform, finfo, as_size

__all__ = ["Categorical"]


class Categorical(Distribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(tuple(self._param.shape[:-1]), validate_args=validate_args)

    def _expand_args(self):
        return {"probs" if "probs" in self.__dict__ else "logits": 1}

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return as_size(self._param.shape)

    @property
    def mean(self):
        import fusionflow as ff
        return ff.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype, device=self.probs.device)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return self.mean

    def sample(self, sample_shape=()):
        """Inverse-CDF draws: the first index whose cumulative probability exceeds u."""
        import fusionflow as ff
        with ff.no_grad():
            shape = tuple(self._extended_shape(sample_shape))
            probs = self.probs.detach()
            cdf = probs.cumsum(-1)
            u = standard_uniform(shape + (1,), probs.dtype, probs.device) * cdf[..., -1:]
            index = (cdf.expand(*shape, self._num_events) <= u).to(ff.int64).sum(-1)
            return index.clamp(max=self._num_events - 1)

    def log_prob(self, value):
        import fusionflow as ff
        if self._validate_args:
            self._validate_sample(value)
        value = value.to(ff.int64).unsqueeze(-1)
        value, log_pmf = ff.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        # -inf logits (zero probabilities) would give 0 * -inf: clamp them to the lowest finite value
        logits = self.logits.clamp(min=float(finfo(self.logits.dtype).min))
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        import fusionflow as ff
        values = ff.arange(self._num_events, dtype=ff.int64, device=self._param.device)
        values = values.reshape(-1, *((1,) * len(self._batch_shape)))
        if expand:
            values = values.expand(-1, *self._batch_shape)
        return values
