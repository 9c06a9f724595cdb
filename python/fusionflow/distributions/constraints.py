"""The sets a parameter or a sample must lie in (torch.distributions.constraints): each
constraint's check(value) is a boolean tensor over value's batch (event dims reduced)."""
__all__ = ["Constraint", "boolean", "cat", "dependent", "dependent_property", "greater_than",
           "greater_than_eq", "independent", "integer_interval", "interval", "half_open_interval",
           "is_dependent", "less_than", "lower_cholesky", "lower_triangular", "multinomial",
           "nonnegative", "nonnegative_integer", "one_hot", "positive", "positive_semidefinite",
           "positive_definite", "positive_integer", "real", "real_vector", "simplex", "stack",
           "square", "symmetric", "unit_interval"]


class Constraint:
    is_discrete = False
    event_dim = 0

    def check(self, value):
        raise NotImplementedError

    def __repr__(self):
        return type(self).__name__[1:] + "()"


class _Dependent(Constraint):
    """A support that depends on other parameters; it cannot be checked by itself."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete, self._event_dim = is_discrete, event_dim

    @property
    def is_discrete(self):
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self):
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        return _Dependent(is_discrete=self._is_discrete if is_discrete is NotImplemented else is_discrete,
                          event_dim=self._event_dim if event_dim is NotImplemented else event_dim)

    def check(self, x):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint):
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property whose value is a constraint (a support that depends on the parameters)."""

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """base_constraint with its `reinterpreted_batch_ndims` rightmost dims as event dims."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        n = self.reinterpreted_batch_ndims
        if n:
            if result.dim() < n:
                raise ValueError("Expected value.dim() >= %d but got %d" % (self.event_dim, value.dim()))
            result = result.reshape(*result.shape[:result.dim() - n], -1).all(-1)
        return result

    def __repr__(self):
        return "%s(%r, %d)" % (type(self).__name__[1:], self.base_constraint, self.reinterpreted_batch_ndims)


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value):
        return ((value == 0) | (value == 1)).all(-1) & (value.sum(-1) == 1)


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self):
        return "IntegerInterval(lower_bound=%s, upper_bound=%s)" % (self.lower_bound, self.upper_bound)


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self):
        return "IntegerGreaterThan(lower_bound=%s)" % self.lower_bound


class _Real(Constraint):
    def check(self, value):
        return value == value  # false only for NaN


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return self.lower_bound < value

    def __repr__(self):
        return "GreaterThan(lower_bound=%s)" % self.lower_bound


class _GreaterThanEq(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return self.lower_bound <= value

    def __repr__(self):
        return "GreaterThanEq(lower_bound=%s)" % self.lower_bound


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return value < self.upper_bound

    def __repr__(self):
        return "LessThan(upper_bound=%s)" % self.upper_bound


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self):
        return "Interval(lower_bound=%s, upper_bound=%s)" % (self.lower_bound, self.upper_bound)


class _HalfOpenInterval(_Interval):
    def check(self, value):
        return (self.lower_bound <= value) & (value < self.upper_bound)

    def __repr__(self):
        return "HalfOpenInterval(lower_bound=%s, upper_bound=%s)" % (self.lower_bound, self.upper_bound)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, x):
        return (x >= 0).all(-1) & (x.sum(-1) <= self.upper_bound)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value):
        return (value.tril() == value).reshape(*value.shape[:-2], -1).all(-1)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        lower = (value.tril() == value).reshape(*value.shape[:-2], -1).all(-1)
        return lower & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _Square(Constraint):
    event_dim = 2

    def check(self, value):
        import fusionflow as ff
        ok = value.shape[-2] == value.shape[-1]
        return ff.full(tuple(value.shape[:-2]), ok, dtype=ff.bool_, device=value.device)


class _Symmetric(_Square):
    def check(self, value):
        sq = super().check(value)
        if not bool(sq.all().item()):
            return sq
        return ((value - value.transpose(-2, -1)).abs() <= 1e-6 * (1 + value.abs())).reshape(
            *value.shape[:-2], -1).all(-1)


def _matrix_eigvals_host(value):
    import numpy as np
    a = value.detach().to("cpu").numpy().astype(np.float64)
    return np.linalg.eigvalsh(a)


class _PositiveSemidefinite(_Symmetric):
    def check(self, value):
        import fusionflow as ff
        sym = super().check(value)
        if not bool(sym.all().item()):
            return sym
        ok = (_matrix_eigvals_host(value) >= 0).all(-1)
        return ff.tensor(ok, device=value.device)


class _PositiveDefinite(_Symmetric):
    def check(self, value):
        import fusionflow as ff
        sym = super().check(value)
        if not bool(sym.all().item()):
            return sym
        ok = (_matrix_eigvals_host(value) > 0).all(-1)
        return ff.tensor(ok, device=value.device)


class _Cat(Constraint):
    """Constraints applied to consecutive pieces of value along dim."""

    def __init__(self, cseq, dim=0, lengths=None):
        self.cseq, self.dim = list(cseq), dim
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.cseq)

    @property
    def event_dim(self):
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        import fusionflow as ff
        parts, start = [], 0
        for c, n in zip(self.cseq, self.lengths):
            parts.append(c.check(value.narrow(self.dim, start, n)))
            start += n
        return ff.cat(parts, self.dim)


class _Stack(Constraint):
    def __init__(self, cseq, dim=0):
        self.cseq, self.dim = list(cseq), dim

    def check(self, value):
        import fusionflow as ff
        d = self.dim if self.dim >= 0 else self.dim + value.dim()
        return ff.stack([c.check(value.select(d, i)) for i, c in enumerate(self.cseq)], d)


dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.)
nonnegative = _GreaterThanEq(0.)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0., 1.)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
