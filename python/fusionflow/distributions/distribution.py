"""Distribution: the base class (torch.distributions.Distribution): shapes, argument and
sample validation with PyTorch's ValueErrors, sample = rsample without gradients."""
import warnings

from . import constraints
from .utils import as_size, lazy_property

__all__ = ["Distribution"]


def _ff():
    import fusionflow
    return fusionflow


class Distribution:
    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__  # torch checks arguments by default (python -O turns it off)

    @staticmethod
    def set_default_validate_args(value):
        if value not in (True, False):
            raise ValueError("set_default_validate_args: expected True or False, got %r" % (value,))
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = as_size(batch_shape)
        self._event_shape = as_size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()

    def _check_parameters(self):
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
            warnings.warn("%s does not define `arg_constraints`. Please set `arg_constraints = {}` or "
                          "initialize the distribution with `validate_args=False` to turn off validation."
                          % type(self))
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if param not in self.__dict__ and isinstance(getattr(type(self), param, None), lazy_property):
                continue  # the other parametrisation was given; this one is derived, not checked
            value = getattr(self, param)
            if not bool(constraint.check(value).all().item()):
                raise ValueError("Expected parameter %s (%s of shape %s) of distribution %r to satisfy the "
                                 "constraint %r, but found invalid values:\n%s"
                                 % (param, type(value).__name__, tuple(value.shape), self, constraint, value))

    def expand(self, batch_shape, _instance=None):
        """The same distribution over a larger batch (parameters expanded, not copied)."""
        batch_shape = as_size(batch_shape)
        args = {}
        for name, event_ndims in self._expand_args().items():
            value = self.__dict__[name]
            tail = tuple(value.shape[value.dim() - event_ndims:]) if event_ndims else ()
            args[name] = value.expand(*(tuple(batch_shape) + tail))
        new = type(self)(**args, **self._expand_kwargs(), validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _expand_args(self):
        """{constructor argument: its number of trailing event dims} for expand()."""
        raise NotImplementedError("%s.expand is not implemented" % type(self).__name__)

    def _expand_kwargs(self):
        return {}

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def arg_constraints(self):
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError("%s does not implement mode" % type(self))

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        with _ff().no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        raise NotImplementedError("%s does not implement rsample (it has no reparameterised sampler)"
                                  % type(self).__name__)

    def sample_n(self, n):
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning)
        return self.sample((n,))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return self.entropy().exp()

    def _extended_shape(self, sample_shape=()):
        if not isinstance(sample_shape, tuple):
            sample_shape = tuple(sample_shape)
        return as_size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value):
        ff = _ff()
        if not isinstance(value, ff.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        shape = tuple(value.shape)
        event = tuple(self._event_shape)
        if shape[len(shape) - len(event):] != event:
            raise ValueError("The right-most size of value must match event_shape: %s vs %s."
                             % (as_size(shape), self._event_shape))
        expected = tuple(self._batch_shape) + event
        for i, j in zip(reversed(shape), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError("Value is not broadcastable with batch_shape+event_shape: %s vs %s."
                                 % (as_size(shape), as_size(expected)))
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn("%s does not define `support` to enable sample validation. Please initialize the "
                          "distribution with `validate_args=False` to turn off validation." % type(self))
            return
        if not bool(support.check(value).all().item()):
            raise ValueError("Expected value argument (%s of shape %s) to be within the support (%r) of the "
                             "distribution %r, but found invalid values:\n%s"
                             % (type(value).__name__, shape, support, self, value))

    def __repr__(self):
        ff = _ff()
        names = [k for k in self.arg_constraints if k in self.__dict__]
        parts = []
        for p in names:
            v = self.__dict__[p]
            parts.append("%s: %s" % (p, v if (isinstance(v, ff.Tensor) and v.numel() == 1) else as_size(v.shape)))
        return type(self).__name__ + "(" + ", ".join(parts) + ")"
