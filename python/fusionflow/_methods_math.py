"""Tensor methods PyTorch has that fusionflow composes from its ops (so differentiable
through them): aliases, complex-number names on real tensors, elementwise functions.
Attached to Tensor by _methods.py, with _methods_linalg, _methods_reduce, _methods_index and
_methods_misc. Float functions of f32 inputs that cancel (hypot, logaddexp, ...) run in f64
and round once, as _functions does; those computed in NumPy (integer bit tricks) have no
gradient, as in PyTorch."""
import collections
import math

import numpy as np

from . import _dtype
from ._factories import full, tensor, zeros, where
from ._functions import trunc
from ._lib import C
from ._tensor import Tensor, as_tensor, _operand, host_values, wrap


def _host(x, fn, dtype=None):
    """fn over x's values in NumPy, back as a tensor on x's device (no gradient)."""
    r = np.asarray(fn(host_values(x)))
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
        if self.dtype.is_floating_point or o.dtype.is_floating_point:
            return trunc(self / o)
        # integers, exactly: the floor quotient, moved toward zero where the signs differ
        q = self.floor_divide(o)
        moved = (self - q * o != 0) & ((self < 0) != (o < 0))
        return q + moved.to(q.dtype)
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


# ---- complex numbers (ops/complex.c) --------------------------------------------------
def conj(self):
    """The conjugate (a real tensor is its own). fusionflow has no lazy conjugate bit: this
    is a new tensor, as conj_physical."""
    return self if not self.dtype.is_complex else wrap(C.ff_conj(self._ptr))


def conj_physical(self):
    return wrap(C.ff_conj(self._ptr)) if self.dtype.is_complex else self.clone()


def resolve_conj(self):
    return self


def resolve_neg(self):
    return self


def real(self):
    """A view of the real parts (a real tensor is its own real part)."""
    return self if not self.dtype.is_complex else wrap(C.ff_real(self._ptr))


def imag(self):
    if not self.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return wrap(C.ff_imag(self._ptr))


def angle(self):
    return wrap(C.ff_angle(self._ptr))


def adjoint(self):
    """The conjugate transpose of the last two dims (mH)."""
    return conj(self.transpose(-2, -1))


def _H(self):
    if self.ndim > 2:
        raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got %d-D tensor." % self.ndim)
    return conj(self.t())


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
    """Modified Bessel I0 by its power series sum ((x/2)^2k / k!^2) in f64, differentiable: as
    many terms as the largest |x| needs for the next to fall below 1e-17 of the sum (20 for
    |x| < 4, 80 at |x| = 60)."""
    q = (x * 0.5).square()
    big = float(q.detach().amax().item()) if x.numel() else 0.0
    n, t, s = 1, 1.0, 1.0
    while n < 400 and math.isfinite(s) and t > 1e-17 * s:
        t *= big / (n * n)
        s += t
        n += 1
    total = full((), 1.0, dtype=x.dtype, device=x.device).expand(tuple(x.shape)).clone()
    term = total
    for k in range(1, n + 1):
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
    dt = _promote(self, o)
    if not dt.is_floating_point or dt.np is None:
        raise RuntimeError("nextafter: not implemented for %s (float32 and float64 only)" % dt.name)
    return tensor(np.nextafter(self.numpy().astype(dt.np), o.numpy().astype(dt.np)), device=self.device)


def frexp(self):
    m, e = np.frexp(self.numpy())
    r = collections.namedtuple("frexp", ["mantissa", "exponent"])
    return r(tensor(m, device=self.device), tensor(e.astype(np.int32), device=self.device))


# ---- regularized incomplete gamma ----------------------------------------------------
def _gammainc_lower(a, x):
    """P(a, x) in NumPy f64: the series for x < a + 1, 1 - the continued fraction (modified
    Lentz) above it, each to 1e-15 (Numerical Recipes' split)."""
    lg = np.vectorize(math.lgamma, otypes=[np.float64])(a)
    with np.errstate(all="ignore"):
        front = np.exp(-x + a * np.log(x) - lg)
        # series: sum x^n / (a (a+1) ... (a+n))
        term = 1.0 / a
        total = term.copy()
        ap = a.copy()
        for _ in range(500):
            ap = ap + 1
            term = term * x / ap
            total = total + term
            if np.all(np.abs(term) < np.abs(total) * 1e-16):
                break
        series = total * front
        # continued fraction for Q
        tiny = 1e-300
        b = x + 1 - a
        c = np.full_like(x, 1 / tiny)
        d = 1 / np.where(b == 0, tiny, b)
        h = d.copy()
        for i in range(1, 500):
            an = -i * (i - a)
            b = b + 2
            d = an * d + b
            d = np.where(np.abs(d) < tiny, tiny, d)
            c = b + an / c
            c = np.where(np.abs(c) < tiny, tiny, c)
            d = 1 / d
            delta = d * c
            h = h * delta
            if np.all(np.abs(delta - 1) < 1e-16):
                break
        cf = 1 - front * h
        p = np.where(x < a + 1, series, cf)
    p = np.where(x == 0, 0.0, p)
    p = np.where((a < 0) | (x < 0) | np.isnan(a) | np.isnan(x), np.nan, p)
    return np.where(np.isinf(x) & (x > 0), 1.0, p)


def _igamma(self, other, upper):
    a = self if isinstance(self, Tensor) else as_tensor(self)
    x = _operand(other, a)
    if a.requires_grad:
        raise NotImplementedError("igamma%s: the derivative with respect to input (a) is not implemented, as in "
                                  "PyTorch" % ("c" if upper else ""))
    out = _float_out(a) if not (x.dtype.is_floating_point and x.dtype.itemsize > _float_out(a).itemsize) else x.dtype
    an, xn = np.broadcast_arrays(a.numpy().astype(np.float64), x.numpy().astype(np.float64))
    p = _gammainc_lower(an, xn)
    val = tensor(1 - p if upper else p, device=a.device)
    if not x.requires_grad:
        return val.to(out)
    # d/dx P(a, x) = x^(a-1) e^-x / Gamma(a): attached through a term that is zero in value
    lg = np.vectorize(math.lgamma, otypes=[np.float64])(an)
    with np.errstate(all="ignore"):
        dens = tensor(np.exp((an - 1) * np.log(xn) - xn - lg) * (-1 if upper else 1), device=a.device)
    x64 = x.to(_dtype.float64)
    x64 = where(x64.isinf(), zeros((), dtype=_dtype.float64, device=a.device), x64)  # inf - inf would be NaN
    dens = where(dens.isnan(), zeros((), dtype=_dtype.float64, device=a.device), dens)
    return (val + (x64 - x64.detach()) * dens).to(out)


def igamma(self, other):
    return _igamma(self, other, False)


def igammac(self, other):
    return _igamma(self, other, True)
