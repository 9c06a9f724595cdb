"""Tensor methods that PyTorch has and the core has no op of their own for: aliases, and
functions composed from existing ops (so differentiable through them). Attached to Tensor
by _methods.py. Float functions of f32 inputs that cancel (hypot, logaddexp, ...) run in
f64 and round once, as _functions does. Those computed in NumPy (integer bit tricks,
histograms) have no gradient, as in PyTorch."""
import builtins
import collections
import math

import numpy as np

from . import _dtype
from ._factories import arange, full, stack, tensor, zeros, cat, where, eye
from ._functions import diag, diagonal, movedim, trunc
from ._tensor import Tensor, as_tensor, _operand


def _host(x, fn, dtype=None):
    """fn over x's values in NumPy, back as a tensor on x's device (no gradient)."""
    r = np.asarray(fn(x.numpy()))
    return tensor(r if dtype is None else r.astype(dtype), device=x.device)


def _float_out(x):
    return x.dtype if x.dtype.is_floating_point else _dtype.float32


def _in_f64(x):
    return as_tensor(x).to(_dtype.float64)


# ---- aliases (PyTorch's other names for existing methods) -----------------------------
ALIASES = {"absolute": "abs", "arccosh": "acosh", "arcsinh": "asinh", "arctanh": "atanh",
           "multiply": "mul", "subtract": "sub", "negative": "neg", "greater": "gt", "greater_equal": "ge",
           "less": "lt", "less_equal": "le", "not_equal": "ne", "fix": "trunc", "swapdims": "transpose",
           "moveaxis": "movedim", "ger": "outer", "unsafe_chunk": "chunk", "unsafe_split": "split"}


def divide(self, other, *, rounding_mode=None):
    if rounding_mode is None:
        return self / other
    if rounding_mode == "floor":
        return self.floor_divide(other)
    if rounding_mode == "trunc":
        o = _operand(other, self)
        q = trunc(self / o)
        both_int = not self.dtype.is_floating_point and not o.dtype.is_floating_point
        return q.to(self.dtype if o.ndim == 0 else o.dtype) if both_int else q
    raise ValueError("divide: rounding_mode must be None, 'trunc' or 'floor', got %r" % (rounding_mode,))


def true_divide(self, other):
    return self / other


def positive(self):
    return self


def split_with_sizes(self, split_sizes, dim=0):
    return self.split(list(split_sizes), dim)


unsafe_split_with_sizes = split_with_sizes


def ravel(self):
    return self.reshape(-1)


def narrow_copy(self, dim, start, length):
    return self.narrow(dim, start, length).clone()


def fliplr(self):
    return self.flip(1)


def flipud(self):
    return self.flip(0)


def clamp_min(self, min):
    return self.clamp(min=min)


def clamp_max(self, max):
    return self.clamp(max=max)


# ---- complex-number names on real tensors (fusionflow has no complex dtypes) ---------
def conj(self):
    return self


def conj_physical(self):
    return self.clone()


def resolve_conj(self):
    return self


def resolve_neg(self):
    return self


def real(self):
    return self


def imag(self):
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes (%s), as in PyTorch"
                       % self.dtype.name)


def angle(self):
    x = self if self.dtype.is_floating_point else self.to(_dtype.float32)
    a = where(x < 0, full((), math.pi, dtype=x.dtype, device=x.device), zeros((), dtype=x.dtype, device=x.device))
    return where(x.isnan(), x, a)


def adjoint(self):
    return self.transpose(-2, -1)


def _H(self):
    if self.ndim > 2:
        raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got %d-D tensor." % self.ndim)
    return self.t()


# ---- matrix products ------------------------------------------------------------------
def _scaled_sum(self, prod, beta, alpha):
    """beta * self + alpha * prod; beta = 0 ignores self's values (NaN included), as torch."""
    p = prod if alpha == 1 else prod * alpha
    if beta == 0:
        return p.broadcast_to(np.broadcast_shapes(tuple(self.shape), tuple(p.shape))).clone()
    return (self if beta == 1 else self * beta) + p


def addmm(self, mat1, mat2, *, beta=1, alpha=1):
    return _scaled_sum(self, mat1 @ mat2, beta, alpha)


def addmv(self, mat, vec, *, beta=1, alpha=1):
    return _scaled_sum(self, mat @ vec, beta, alpha)


def addr(self, vec1, vec2, *, beta=1, alpha=1):
    return _scaled_sum(self, vec1.outer(vec2), beta, alpha)


def addbmm(self, batch1, batch2, *, beta=1, alpha=1):
    return _scaled_sum(self, (batch1 @ batch2).sum(0), beta, alpha)


def baddbmm(self, batch1, batch2, *, beta=1, alpha=1):
    return _scaled_sum(self, batch1 @ batch2, beta, alpha)


def mv(self, vec):
    if self.ndim != 2 or vec.ndim != 1:
        raise RuntimeError("mv: expected a 2-D matrix and a 1-D vector, got %d-D and %d-D" % (self.ndim, vec.ndim))
    return self @ vec


def vdot(self, other):
    if self.ndim != 1 or other.ndim != 1:
        raise RuntimeError("vdot: 1D tensors expected, got %dD and %dD tensors" % (self.ndim, other.ndim))
    return (self * other).sum()


# ---- elementwise ---------------------------------------------------------------------
def _wide(fn):
    """fn computed in f64 on the inputs, rounded once to the float result dtype."""
    def method(self, *args, **kwargs):
        out = _float_out(self)
        for a in args:
            if isinstance(a, Tensor) and a.dtype.is_floating_point and out.itemsize < a.dtype.itemsize:
                out = a.dtype
        return fn(_in_f64(self), *[_in_f64(a) if isinstance(a, Tensor) else a for a in args], **kwargs).to(out)
    method.__name__ = fn.__name__
    return method


@_wide
def hypot(x, other):
    return (x * x + other * other).sqrt()


@_wide
def logaddexp(x, other):
    m = x.maximum(other)
    d = -(x - other).abs()
    r = m + d.exp().log1p()
    return where(d.isnan() & (x == other), x, r)  # equal infinities: torch gives the infinity


@_wide
def logaddexp2(x, other):
    m = x.maximum(other)
    d = -(x - other).abs()
    r = m + (d * math.log(2)).exp().log1p() * (1 / math.log(2))
    return where(d.isnan() & (x == other), x, r)


@_wide
def erfc(x):
    return 1 - x.erf()


@_wide
def sinc(x):
    px = x * math.pi
    safe = where(x == 0, full((), 1.0, dtype=x.dtype, device=x.device), px)
    return where(x == 0, full((), 1.0, dtype=x.dtype, device=x.device), safe.sin() / safe)


@_wide
def deg2rad(x):
    return x * (math.pi / 180)


@_wide
def rad2deg(x):
    return x * (180 / math.pi)


@_wide
def logit(x, eps=None):
    if eps is not None:
        x = x.clamp(eps, 1 - eps)
    return (x / (1 - x)).log()


@_wide
def i0(x):
    """Modified Bessel I0 by its power series sum ((x/2)^2k / k!^2), 80 terms in f64:
    exact to rounding for |x| < 60, and differentiable."""
    q = (x * 0.5).square()
    term, total = full((), 1.0, dtype=x.dtype, device=x.device), None
    total = term.expand(tuple(x.shape)).clone()
    term = total
    for k in range(1, 80):
        term = term * q * (1.0 / (k * k))
        total = total + term
    return total


@_wide
def mvlgamma(x, p):
    r = sum((x - 0.5 * i).lgamma() for i in range(p))
    return r + p * (p - 1) / 4 * math.log(math.pi)


def xlogy(self, other):
    x = self if isinstance(self, Tensor) else as_tensor(self)
    y = _operand(other, x)
    out = _float_out(x) if not (y.dtype.is_floating_point and y.dtype.itemsize > _float_out(x).itemsize) else y.dtype
    x64, y64 = x.to(_dtype.float64), y.to(_dtype.float64)
    zero = zeros((), dtype=_dtype.float64, device=x.device)
    safe_y = where(x64 == 0, full((), 1.0, dtype=_dtype.float64, device=x.device), y64)
    r = where(x64 == 0, zero, x64 * safe_y.log())
    return where(y64.isnan(), y64, r).to(out)


def float_power(self, exponent):
    e = exponent.to(_dtype.float64) if isinstance(exponent, Tensor) else float(exponent)
    return self.to(_dtype.float64) ** e


def ldexp(self, other):
    o = _operand(other, self)
    return self * (2.0 ** o.to(_float_out(self)))


def copysign(self, other):
    x = self if self.dtype.is_floating_point else self.to(_dtype.float32)
    o = _operand(other, x)
    neg = o.signbit()
    return where(neg, -x.abs(), x.abs())


def signbit(self):
    if not self.dtype.is_floating_point:
        return self < 0
    return _host(self, np.signbit)


def heaviside(self, values):
    v = _operand(values, self)
    one, zero = (full((), c, dtype=self.dtype, device=self.device) for c in (1, 0))
    return where(self == 0, v, where(self > 0, one, zero)).to(self.dtype)


def hardshrink(self, lambd=0.5):
    return where(self.abs() > lambd, self, zeros((), dtype=self.dtype, device=self.device))


def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
    if not self.dtype.is_floating_point:
        return self.clone()
    fi = np.finfo(self.dtype.np) if self.dtype.np is not None else np.finfo(np.float32)
    hi = fi.max if posinf is None else posinf
    lo = fi.min if neginf is None else neginf
    c = lambda v: full((), v, dtype=self.dtype, device=self.device)  # noqa: E731
    r = where(self.isnan(), c(nan), self)
    return where(self == math.inf, c(hi), where(self == -math.inf, c(lo), r))


def isfinite(self):
    if not self.dtype.is_floating_point:
        return full(tuple(self.shape), True, dtype=_dtype.bool_, device=self.device)
    return ~(self.isnan() | self.isinf())


def isposinf(self):
    return self == math.inf if self.dtype.is_floating_point else full(tuple(self.shape), False, dtype=_dtype.bool_,
                                                                          device=self.device)


def isneginf(self):
    return self == -math.inf if self.dtype.is_floating_point else full(tuple(self.shape), False, dtype=_dtype.bool_,
                                                                           device=self.device)


def isreal(self):
    return full(tuple(self.shape), True, dtype=_dtype.bool_, device=self.device)


def prelu(self, weight):
    w = weight
    if w.numel() > 1 and self.ndim >= 2:
        w = w.reshape((1, -1) + (1,) * (self.ndim - 2))
    return where(self >= 0, self, w * self)


def _int_op(name, fn):
    def method(self, other):
        o = _operand(other, self)
        if self.dtype.is_floating_point or o.dtype.is_floating_point:
            raise RuntimeError("%s: only integer tensors, got %s and %s" % (name, self.dtype.name, o.dtype.name))
        code = self.dtype if o.ndim == 0 and self.ndim > 0 else o.dtype if self.ndim == 0 and o.ndim > 0 else None
        r = fn(self.numpy(), o.numpy())
        return tensor(np.asarray(r), device=self.device).to(code or _promote(self, o))
    method.__name__ = name
    return method


def _promote(a, b):
    from . import result_type
    return result_type(a, b)


gcd = _int_op("gcd", np.gcd)
lcm = _int_op("lcm", np.lcm)
bitwise_left_shift = _int_op("bitwise_left_shift", lambda a, b: np.left_shift(a, b))
bitwise_right_shift = _int_op("bitwise_right_shift", lambda a, b: np.right_shift(a, b))


def nextafter(self, other):
    o = _operand(other, self)
    return tensor(np.nextafter(self.numpy(), o.numpy().astype(self.dtype.np)), device=self.device)


def frexp(self):
    m, e = np.frexp(self.numpy())
    r = collections.namedtuple("frexp", ["mantissa", "exponent"])
    return r(tensor(m, device=self.device), tensor(e.astype(np.int32), device=self.device))


# ---- reductions and scans ------------------------------------------------------------
def nansum(self, dim=None, keepdim=False):
    return where(self.isnan(), zeros((), dtype=self.dtype, device=self.device), self).sum(dim, keepdim)


def nanmean(self, dim=None, keepdim=False):
    ok = ~self.isnan()
    return self.nansum(dim, keepdim) / ok.sum(dim, keepdim).to(self.dtype)


def _sorted_rows(self, dim):
    """self sorted along dim with NaN last (as torch.sort), and the count of non-NaN."""
    v, i = self.sort(dim)
    return v, i, (~self.isnan()).sum(dim, keepdim=True)


def nanmedian(self, dim=None, keepdim=False):
    if dim is None:
        v, _, n = _sorted_rows(self.reshape(-1), 0)
        k = (n - 1).clamp(min=0) // 2
        return v.gather(0, k).reshape(())
    v, i, n = _sorted_rows(self, dim)
    k = (n - 1).clamp(min=0) // 2
    vals, idx = v.gather(dim, k), i.gather(dim, k)
    if not keepdim:
        vals, idx = vals.squeeze(dim), idx.squeeze(dim)
    from ._tensor import ValuesIndices
    return ValuesIndices(vals, idx)


def _quantile(self, q, dim, keepdim, interpolation, ignore_nan):
    name = "nanquantile" if ignore_nan else "quantile"
    if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise ValueError("%s: interpolation must be linear, lower, higher, midpoint or nearest, got %r"
                         % (name, interpolation))
    qs = as_tensor(q, dtype=self.dtype).to(self.device)
    scalar_q = qs.ndim == 0
    x = self.reshape(-1) if dim is None else self
    d = 0 if dim is None else dim % max(x.ndim, 1)
    v, _ = x.sort(d)
    n = x.shape[d] if x.ndim else 1
    has_nan = x.isnan().any(d, keepdim=True)
    cnt = (~x.isnan()).sum(d, keepdim=True).to(_dtype.float64) if ignore_nan else \
        full(tuple(has_nan.shape), n, dtype=_dtype.float64, device=x.device)
    outs = []
    for qv in (qs.reshape(-1).tolist()):
        if not 0 <= qv <= 1:
            raise RuntimeError("%s() q values must be in the range [0, 1]" % name)
        pos = (cnt - 1).clamp(min=0) * qv
        lo = pos.floor()
        hi = pos.ceil()
        if interpolation == "lower":
            hi = lo
        elif interpolation == "higher":
            lo = hi
        elif interpolation == "nearest":
            lo = hi = pos.round()
        li = lo.to(_dtype.int64).clamp(0, n - 1)
        hi_i = hi.to(_dtype.int64).clamp(0, n - 1)
        a, b = v.gather(d, li), v.gather(d, hi_i)
        w = full((), 0.5, dtype=self.dtype, device=self.device) if interpolation == "midpoint" else \
            (pos - lo).to(self.dtype)
        # torch's lerp: from the nearer end, so an infinite end gives the infinity, not NaN
        r = where(w < 0.5, a + (b - a) * w, b - (b - a) * (1 - w))
        nan = full((), math.nan, dtype=self.dtype, device=self.device)
        r = where(cnt == 0, nan, r) if ignore_nan else where(has_nan, nan, r)
        if dim is None:
            r = r.reshape(()) if not keepdim else r.reshape((1,) * self.ndim)
        elif not keepdim:
            r = r.squeeze(d)
        outs.append(r)
    return outs[0] if scalar_q else stack(outs, 0)


def quantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
    return _quantile(self, q, dim, keepdim, interpolation, False)


def nanquantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
    return _quantile(self, q, dim, keepdim, interpolation, True)


def logcumsumexp(self, dim):
    m = self.detach().amax(dim, keepdim=True)
    m = where(m.isinf(), zeros((), dtype=m.dtype, device=m.device), m)
    return (self - m).exp().cumsum(dim).log() + m


def _cum_extreme(self, dim, better):
    """(values, indices) of the running max/min along dim; a tie takes the later index, as
    torch. Indices in NumPy, values gathered (so differentiable)."""
    a = np.moveaxis(self.numpy(), dim, 0)
    idx = np.zeros(a.shape, dtype=np.int64)
    best = a[0].copy() if a.shape[0] else None
    cur = np.zeros(a.shape[1:], dtype=np.int64)
    for i in range(a.shape[0]):
        take = better(a[i], best) | (a[i] == best) | np.isnan(a[i]) if i else np.ones(a.shape[1:], bool)
        take &= ~np.isnan(best) | np.isnan(a[i]) if i else take
        cur = np.where(take, i, cur)
        best = np.where(take, a[i], best)
        idx[i] = cur
    it = tensor(np.ascontiguousarray(np.moveaxis(idx, 0, dim)), device=self.device)
    from ._tensor import ValuesIndices
    return ValuesIndices(self.gather(dim, it), it)


def cummax(self, dim):
    return _cum_extreme(self, dim, np.greater)


def cummin(self, dim):
    return _cum_extreme(self, dim, np.less)


def diff(self, n=1, dim=-1, prepend=None, append=None):
    x = self
    if prepend is not None or append is not None:
        parts = ([as_tensor(prepend)] if prepend is not None else []) + [x] + \
                ([as_tensor(append)] if append is not None else [])
        x = cat(parts, dim)
    for _ in range(n):
        m = x.shape[dim]
        a, b = x.narrow(dim, 1, max(m - 1, 0)), x.narrow(dim, 0, max(m - 1, 0))
        x = (a != b) if x.dtype is _dtype.bool_ else a - b
    return x


def sum_to_size(self, *size):
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    lead = self.ndim - len(size)
    dims = list(range(lead)) + [lead + i for i, s in enumerate(size) if s == 1 and self.shape[lead + i] != 1]
    return self.sum(dims, keepdim=True).reshape(size) if dims else self


def renorm(self, p, dim, maxnorm):
    d = dim % self.ndim
    others = [i for i in range(self.ndim) if i != d]
    norms = self.norm(p, others, keepdim=True)
    scale = where(norms > maxnorm, maxnorm / (norms + 1e-7), full((), 1.0, dtype=self.dtype, device=self.device))
    return self * scale


def cov(self, *, correction=1, fweights=None, aweights=None):
    x = self if self.ndim == 2 else self.reshape(1, -1)
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights.to(x.dtype)
    if aweights is not None:
        w = aweights.to(x.dtype) if w is None else w * aweights.to(x.dtype)
    if w is None:
        mean = x.mean(1, keepdim=True)
        xc = x - mean
        c = (xc @ xc.t()) / (n - correction)
    else:
        ws = w.sum()
        mean = (x * w).sum(1, keepdim=True) / ws
        xc = x - mean
        if correction == 0:
            norm = ws
        elif aweights is None:
            norm = ws - correction
        else:
            norm = ws - correction * (w * aweights.to(x.dtype)).sum() / ws
        c = ((xc * w) @ xc.t()) / norm
    return c.reshape(()) if self.ndim < 2 else c


def corrcoef(self):
    c = cov(self)
    if c.ndim == 0:
        return c / c
    d = diagonal(c).sqrt()
    return (c / d.unsqueeze(1) / d.unsqueeze(0)).clamp(-1, 1)


def histogram(self, bins=100, *, range=None, weight=None, density=False):
    w = None if weight is None else weight.numpy()
    b = bins.numpy() if isinstance(bins, Tensor) else bins
    h, edges = np.histogram(self.numpy(), bins=b, range=range, weights=w, density=density)
    r = collections.namedtuple("histogram", ["hist", "bin_edges"])
    return r(tensor(h.astype(self.dtype.np), device=self.device), tensor(edges.astype(self.dtype.np),
                                                                            device=self.device))


def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    if dim is not None:
        raise NotImplementedError("unique_consecutive: dim= is not offered (dim=None is)")
    a = self.numpy().reshape(-1)
    keep = np.ones(a.shape, bool)
    keep[1:] = a[1:] != a[:-1]
    out = [tensor(a[keep], device=self.device)]
    if return_inverse:
        out.append(tensor((np.cumsum(keep) - 1).reshape(self.shape).astype(np.int64), device=self.device))
    if return_counts:
        starts = np.flatnonzero(keep)
        out.append(tensor(np.diff(np.append(starts, a.size)).astype(np.int64), device=self.device))
    return out[0] if len(out) == 1 else tuple(out)


# ---- linear algebra composed ---------------------------------------------------------
def slogdet(self):
    d = self.det()
    r = collections.namedtuple("slogdet", ["sign", "logabsdet"])
    return r(d.sign(), d.abs().log())


def logdet(self):
    d = self.det()
    return where(d < 0, full((), math.nan, dtype=d.dtype, device=d.device), d.log())


def cholesky_inverse(self, upper=False):
    L = self
    a = L.t() @ L if upper else L @ L.t()
    return a.inverse()


def cholesky_solve(self, input2, upper=False):
    L = input2
    a = L.transpose(-2, -1) @ L if upper else L @ L.transpose(-2, -1)
    return a.inverse() @ self


def triangular_solve(self, A, upper=True, transpose=False, unitriangular=False):
    T = A.triu() if upper else A.tril()
    if unitriangular:
        n = T.shape[-1]
        E = eye(n, dtype=T.dtype, device=T.device)
        T = T * (1 - E) + E
    M = T.transpose(-2, -1) if transpose else T
    r = collections.namedtuple("triangular_solve", ["solution", "cloned_coefficient"])
    return r(M.inverse() @ self, T.clone())


def pinverse(self, rcond=1e-15):
    u, s, vh = _svd_reduced(self)
    cutoff = s.amax(-1, keepdim=True) * rcond
    sinv = where(s > cutoff, 1 / s, zeros((), dtype=s.dtype, device=s.device))
    return (vh.transpose(-2, -1) * sinv.unsqueeze(-2)) @ u.transpose(-2, -1)


def _svd_reduced(x):
    from . import linalg
    return linalg.svd(x, full_matrices=False)


def matrix_exp(self):
    """exp(A) by scaling and squaring with a degree-18 Taylor series in f64 (differentiable)."""
    a = self.to(_dtype.float64)
    nrm = float(a.detach().abs().sum(-1).amax().item()) if a.numel() else 0.0
    s = max(0, int(math.ceil(math.log2(nrm))) + 1) if nrm > 0.5 else 0
    a = a * (1.0 / (1 << s))
    n = a.shape[-1]
    E = eye(n, dtype=_dtype.float64, device=a.device)
    term, total = E, E
    for k in range(1, 19):
        term = (term @ a) * (1.0 / k)
        total = total + term
    for _ in range(s):
        total = total @ total
    return total.to(self.dtype)


# ---- shape and indexing --------------------------------------------------------------
def rot90(self, k=1, dims=(0, 1)):
    d0, d1 = dims
    k %= 4
    if k == 1:
        return self.flip([d1]).transpose(d0, d1)
    if k == 2:
        return self.flip([d0, d1])
    if k == 3:
        return self.flip([d0]).transpose(d0, d1)
    return self.clone()


def tensor_split(self, indices_or_sections, dim=0):
    n = self.shape[dim]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        q, r = divmod(n, k)
        sizes = [q + 1] * r + [q] * (k - r)
        bounds = np.cumsum([0] + sizes).tolist()
    else:
        bounds = [0] + [builtins.min(builtins.max(int(i), 0), n) for i in indices_or_sections] + [n]
    return tuple(self.narrow(dim, a, builtins.max(b - a, 0)) for a, b in zip(bounds[:-1], bounds[1:]))


def _dir_split(name, dim_of):
    def method(self, indices_or_sections):
        d = dim_of(self)
        if isinstance(indices_or_sections, int) and self.shape[d] % indices_or_sections:
            raise RuntimeError("torch.%s attempted to split along dimension %d, but the size of the dimension %d "
                               "is not divisible by the split_size %d!"
                               % (name, d, self.shape[d], indices_or_sections))
        return tensor_split(self, indices_or_sections, d)
    method.__name__ = name
    return method


hsplit = _dir_split("hsplit", lambda t: 0 if t.ndim == 1 else 1)
vsplit = _dir_split("vsplit", lambda t: 0)
dsplit = _dir_split("dsplit", lambda t: 2)


def unfold(self, dimension, size, step):
    d = dimension % builtins.max(self.ndim, 1)
    n = (self.shape[d] - size) // step + 1
    idx = (np.arange(n)[:, None] * step + np.arange(size)[None, :]).reshape(-1)
    g = self.index_select(d, tensor(idx.astype(np.int64), device=self.device))
    g = g.reshape(self.shape[:d] + (n, size) + self.shape[d + 1:])
    return movedim(g, d + 1, -1)


def take_along_dim(self, indices, dim=None):
    if dim is None:
        return self.reshape(-1).gather(0, indices.reshape(-1))
    d = dim % self.ndim
    shp_s = list(self.shape)
    shp_i = list(indices.shape)
    shp_s[d] = shp_i[d] = 1
    b = np.broadcast_shapes(tuple(shp_s), tuple(shp_i))
    xs = list(b)
    xs[d] = self.shape[d]
    xi = list(b)
    xi[d] = indices.shape[d]
    return self.broadcast_to(tuple(xs)).gather(d, indices.broadcast_to(tuple(xi)))


def masked_select(self, mask):
    x, m = self, as_tensor(mask)
    shape = np.broadcast_shapes(tuple(x.shape), tuple(m.shape))
    return x.broadcast_to(shape)[m.broadcast_to(shape)]


def argwhere(self):
    return self.nonzero()


def diagflat(self, offset=0):
    return diag(self.reshape(-1), offset)


def diag_embed(self, offset=0, dim1=-2, dim2=-1):
    n = self.shape[-1]
    m = n + builtins.abs(offset)
    E = np.zeros((n, m, m), dtype=np.float64)
    i = np.arange(n)
    E[i, i + builtins.max(0, -offset), i + builtins.max(0, offset)] = 1
    e = tensor(E, device=self.device).to(self.dtype)
    from ._functions import einsum
    out = einsum("...i,ijk->...jk", self, e)
    nd = out.ndim
    d1, d2 = dim1 % nd, dim2 % nd
    if (d1, d2) != (nd - 2, nd - 1):
        out = movedim(out, (nd - 2, nd - 1), (d1, d2))
    return out


def _flat_positions(self):
    return arange(self.numel(), dtype=_dtype.int64, device=self.device).reshape(self.shape)


def _scatter_positions(self, pos, src):
    flat = self.reshape(-1)
    return flat.index_copy(0, pos.reshape(-1), src.reshape(-1).to(self.dtype)).reshape(self.shape)


def diagonal_scatter(self, src, offset=0, dim1=0, dim2=1):
    return _scatter_positions(self, diagonal(_flat_positions(self), offset, dim1, dim2), src)


def select_scatter(self, src, dim, index):
    return _scatter_positions(self, _flat_positions(self).select(dim, index), src)


def slice_scatter(self, src, dim=0, start=None, end=None, step=1):
    n = self.shape[dim]
    sel = arange(*slice(start, end, step).indices(n), dtype=_dtype.int64, device=self.device)
    return _scatter_positions(self, _flat_positions(self).index_select(dim, sel), src)


def put(self, index, source, accumulate=False):
    flat = self.reshape(-1)
    idx = as_tensor(index).reshape(-1) % builtins.max(self.numel(), 1)
    src = source.reshape(-1).to(self.dtype)
    if accumulate:
        return flat.index_add(0, idx, src).reshape(self.shape)
    return flat.index_copy(0, idx, src).reshape(self.shape)


def index_fill(self, dim, index, value):
    d = dim % builtins.max(self.ndim, 1)
    mask = np.zeros(self.shape[d] if self.ndim else 1, dtype=bool)
    mask[as_tensor(index).numpy().reshape(-1)] = True
    shape = [1] * self.ndim
    if self.ndim:
        shape[d] = self.shape[d]
    m = tensor(mask.reshape(shape), device=self.device)
    return self.masked_fill(m, value)


def index_reduce(self, dim, index, source, reduce, *, include_self=True):
    """index_reduce with reduce in prod, mean, amax, amin: each target row is reduced from
    the source rows that name it (and itself if include_self), composed of index_select and
    reductions, so differentiable."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError("index_reduce(): expected reduce to be one of prod, mean, amax or amin but got %r"
                           % (reduce,))
    idx = as_tensor(index).numpy().reshape(-1)
    targets = sorted(set(idx.tolist()))
    if not targets:
        return self.clone()
    rows = []
    for j in targets:
        src = source.index_select(dim, tensor(np.flatnonzero(idx == j).astype(np.int64), device=self.device))
        if include_self:
            src = cat([self.narrow(dim, j, 1), src], dim)
        if reduce == "prod":
            r = src.prod(dim, keepdim=True)
        elif reduce == "mean":
            r = src.sum(dim, keepdim=True) / src.shape[dim]
            if not self.dtype.is_floating_point:
                r = r.floor()
        elif reduce == "amax":
            r = src.amax(dim, keepdim=True)
        else:
            r = src.amin(dim, keepdim=True)
        rows.append(r.to(self.dtype))
    t = tensor(np.asarray(targets, dtype=np.int64), device=self.device)
    return self.index_copy(dim, t, cat(rows, dim))


def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
    """torch.scatter_reduce: reduce in sum, prod, mean, amax, amin. sum and mean are
    scatter_add (differentiable); prod/amax/amin are computed on the host, without gradient."""
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError("scatter_reduce(): reduce must be sum, prod, mean, amax or amin, got %r" % (reduce,))
    if reduce in ("sum", "mean"):
        base = self if include_self else self.scatter(dim, index, 0)
        total = base.scatter_add(dim, index, src.to(self.dtype))
        if reduce == "sum":
            return total
        ones = full(tuple(index.shape), 1, dtype=self.dtype, device=self.device)
        cnt = (full(tuple(self.shape), 1 if include_self else 0, dtype=self.dtype, device=self.device)
               .scatter_add(dim, index, ones))
        safe = where(cnt == 0, full((), 1, dtype=self.dtype, device=self.device), cnt)
        r = total / safe
        return (r.floor() if not self.dtype.is_floating_point else r).to(self.dtype)
    if src.requires_grad or self.requires_grad:
        raise NotImplementedError("scatter_reduce: the gradient of reduce=%r is not offered (sum and mean have one)"
                                  % reduce)
    out = self.numpy().copy()
    s, ix = src.numpy(), index.numpy()
    fn = {"prod": np.multiply, "amax": np.maximum, "amin": np.minimum}[reduce]
    touched = np.zeros(out.shape, bool)
    for pos in np.ndindex(*ix.shape):
        tgt = list(pos)
        tgt[dim % out.ndim] = ix[pos]
        tgt = tuple(tgt)
        if not include_self and not touched[tgt]:
            out[tgt] = s[pos]
        else:
            out[tgt] = fn(out[tgt], s[pos])
        touched[tgt] = True
    return tensor(out, device=self.device)


# ---- misc -----------------------------------------------------------------------------
def is_nonzero(self):
    if self.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with %s values is ambiguous"
                           % ("no" if self.numel() == 0 else "more than one"))
    return builtins.bool(self.item())


def is_same_size(self, other):
    return tuple(self.shape) == tuple(other.shape)


def is_signed(self):
    return self.dtype not in (_dtype.uint8, _dtype.bool_)


def new(self, *args, **kwargs):
    """The legacy Tensor.new: new(size...) gives a (zero-filled) tensor of that size, new(data)
    a tensor of the data, in self's dtype and device."""
    if len(args) == 1 and not isinstance(args[0], int):
        return self.new_tensor(args[0])
    return self.new_zeros(*args)


def new_empty_strided(self, size, stride, dtype=None, device=None, requires_grad=False):
    return self.new_empty(tuple(size), dtype=dtype, device=device, requires_grad=requires_grad)


def to_dense(self, dtype=None):
    return self if dtype is None else self.to(dtype)


def pin_memory(self):
    """A copy (fusionflow's host memory needs no pinning); DataLoader(pin_memory=True) works."""
    return self.clone()


_TYPES = {"torch.FloatTensor": _dtype.float32, "torch.DoubleTensor": _dtype.float64, "torch.HalfTensor":
          _dtype.float16, "torch.BFloat16Tensor": _dtype.bfloat16, "torch.LongTensor": _dtype.int64,
          "torch.IntTensor": _dtype.int32, "torch.ByteTensor": _dtype.uint8, "torch.BoolTensor": _dtype.bool_}


def type(self, dtype=None, non_blocking=False, **kwargs):
    """type() -> 'torch.FloatTensor' (PyTorch's name, so programs comparing it work);
    type(dtype or such a name) -> a cast."""
    if dtype is None:
        for k, v in _TYPES.items():
            if v is self.dtype:
                return k
        raise TypeError("type: %s has no PyTorch tensor type name" % self.dtype.name)
    if isinstance(dtype, str) and dtype in _TYPES:
        dtype = _TYPES[dtype]
    return self.to(dtype)


def apply_(self, callable):
    """Applies a Python callable to each element, in place (CPU tensors in PyTorch)."""
    f = np.vectorize(callable, otypes=[self.dtype.np])
    return self.copy_(f(self.numpy()) if self.numel() else self.numpy())


def map_(self, tensor_, callable):
    a, b = np.broadcast_arrays(self.numpy(), tensor_.numpy())
    f = np.vectorize(callable, otypes=[self.dtype.np])
    return self.copy_(f(a, b) if self.numel() else self.numpy())


def map2_(self, x, y, callable):
    a, b, c = np.broadcast_arrays(self.numpy(), x.numpy(), y.numpy())
    f = np.vectorize(callable, otypes=[self.dtype.np])
    return self.copy_(f(a, b, c) if self.numel() else self.numpy())


def byte(self):
    return self.to(_dtype.uint8)


def conj_physical_(self):
    return self


def resize(self, *sizes):
    """The deprecated out-of-place resize: a reshape to a size of the same numel, as torch's."""
    size = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else tuple(sizes)
    if int(np.prod(size)) != self.numel():
        raise RuntimeError("resize: shape %s is invalid for input of size %d" % (size, self.numel()))
    return self.reshape(size)


def resize_as(self, other):
    return resize(self, tuple(other.shape))


def as_subclass(self, cls):
    """self as an instance of cls (a Tensor subclass), sharing memory and history."""
    if not (isinstance(cls, builtins.type) and issubclass(cls, Tensor)):
        raise TypeError("as_subclass: cls must be a subclass of Tensor, got %r" % (cls,))
    from ._tensor import wrap
    from ._lib import C, shape_array
    n, arr = shape_array(tuple(self.shape))
    return wrap(C.ff_reshape_view(self._ptr, n, arr), cls)


def symeig(self, eigenvectors=False, upper=True):
    raise NotImplementedError("symeig: fusionflow has no symmetric eigensolver yet (nor linalg.eigh)")


def _removed(name, new):
    def method(self, *args, **kwargs):
        raise RuntimeError("%s: this function was deprecated since PyTorch 1.9 and is removed (as in PyTorch 1.13); "
                           "use %s" % (name, new))
    method.__name__ = name
    return method


lstsq = _removed("lstsq", "fusionflow.linalg.lstsq")
solve = _removed("solve", "fusionflow.linalg.solve")
eig = _removed("eig", "fusionflow.linalg.eig")


def reinforce(self, reward):
    raise RuntimeError("reinforce() was removed from PyTorch; use torch.distributions instead")
