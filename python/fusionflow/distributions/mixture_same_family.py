from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """A mixture whose components share one family: the component distribution's rightmost
    batch dim indexes the components, weighted by a Categorical."""
    arg_constraints = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of torch.distribtutions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of torch.distributions.Distribution")
        mdbs = tuple(mixture_distribution.batch_shape)
        cdbs = tuple(component_distribution.batch_shape)[:-1]
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError("`mixture_distribution.batch_shape` ({0}) is not compatible with "
                                 "`component_distribution.batch_shape`({1})".format(mdbs, cdbs))
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km is not None and kc is not None and km != kc:
            raise ValueError("`mixture_distribution component` ({0}) does not equal "
                             "`component_distribution.batch_shape[-1]` ({1})".format(km, kc))
        self._num_component = km
        event_shape = tuple(component_distribution.event_shape)
        self._event_ndims = len(event_shape)
        super().__init__(cdbs, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        comp = self._component_distribution.expand(batch_shape + (self._num_component,))
        mix = self._mixture_distribution.expand(batch_shape)
        new = MixtureSameFamily(mix, comp, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self):
        return self._component_distribution.support

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    def _pad(self, x):
        """x with a component dim before the event dims: (..., K) -> (..., K, 1, ...)."""
        return x.reshape(*x.shape, *((1,) * self._event_ndims))

    def _pad_value(self, x):
        return x.unsqueeze(-1 - self._event_ndims)

    @property
    def mean(self):
        probs = self._pad(self.mixture_distribution.probs)
        return (probs * self.component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self):
        """Law of total variance: E[Var(X | k)] + Var(E[X | k])."""
        probs = self._pad(self.mixture_distribution.probs)
        d = -1 - self._event_ndims
        within = (probs * self.component_distribution.variance).sum(d)
        between = (probs * (self.component_distribution.mean - self._pad_value(self.mean)) ** 2).sum(d)
        return within + between

    def cdf(self, x):
        x = self._pad_value(x)
        cdf_x = self.component_distribution.cdf(x)
        return (cdf_x * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self.component_distribution.log_prob(self._pad_value(x))
        log_mix = self.mixture_distribution.logits.log_softmax(-1)
        return (log_prob_x + log_mix).logsumexp(-1)

    def sample(self, sample_shape=()):
        import fusionflow as ff
        with ff.no_grad():
            sample_shape = tuple(sample_shape)
            batch = tuple(self.batch_shape)
            event = tuple(self.event_shape)
            which = self.mixture_distribution.sample(sample_shape)
            draws = self.component_distribution.sample(sample_shape)
            if tuple(which.shape) != sample_shape + batch:  # a mixture batch of 1s broadcast
                which = which.expand(*(sample_shape + batch))
            index = which.reshape(*(sample_shape + batch), 1, *((1,) * len(event)))
            index = index.expand(*(sample_shape + batch), 1, *event)
            return draws.gather(len(sample_shape) + len(batch), index).squeeze(len(sample_shape) + len(batch))

    def __repr__(self):
        return "MixtureSameFamily(\n  %r,\n  %r)" % (self._mixture_distribution, self._component_distribution)
