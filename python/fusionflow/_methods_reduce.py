"""Tensor methods for NaN-aware reductions, quantiles, scans, statistics and histograms,
composed of sort/gather/cumsum (differentiable), or on the host through NumPy where PyTorch
has no gradient either; attached by _methods.py."""
import collections
import math

import numpy as np

from . import _dtype
from ._factories import full, stack, tensor, zeros, cat, where
from ._functions import diagonal
from ._tensor import Tensor, as_tensor, host_values


# ---- reductions and scans ------------------------------------------------------------
def nansum(self, dim=None, keepdim=False):
    return where(self.isnan(), zeros((), dtype=self.dtype, device=self.device), self).sum(dim, keepdim)


def nanmean(self, dim=None, keepdim=False):
    if not self.dtype.is_floating_point:  # torch's rule: an integer mean has no dtype to be in
        raise RuntimeError("nanmean(): expected input to have floating point dtype but got %s" % self.dtype.name)
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


def _cum_extreme(self, dim, accumulate):
    """(values, indices) of the running max/min along dim, as torch: a tie takes the later
    index, and a NaN, once seen, stays (with the index of the latest NaN). Indices in NumPy
    (vectorised: the last position where the element equals the running extreme), values
    gathered (so differentiable)."""
    a = np.moveaxis(host_values(self), dim, 0)
    run = accumulate(a, axis=0)
    hit = (a == run) | (np.isnan(a) & np.isnan(run))
    pos = np.arange(a.shape[0]).reshape((-1,) + (1,) * (a.ndim - 1))
    idx = np.maximum.accumulate(np.where(hit, pos, 0), axis=0).astype(np.int64)
    it = tensor(np.ascontiguousarray(np.moveaxis(idx, 0, dim)), device=self.device)
    from ._tensor import ValuesIndices
    return ValuesIndices(self.gather(dim, it), it)


def cummax(self, dim):
    return _cum_extreme(self, dim, np.maximum.accumulate)


def cummin(self, dim):
    return _cum_extreme(self, dim, np.minimum.accumulate)


def diff(self, n=1, dim=-1, prepend=None, append=None):
    x = self
    if prepend is not None or append is not None:
        parts = ([as_tensor(prepend)] if prepend is not None else []) + [x] + \
                ([as_tensor(append)] if append is not None else [])
        x = cat(parts, dim)
    for _ in range(n):
        m = x.shape[dim]
        a, b = x.narrow(dim, min(m, 1), max(m - 1, 0)), x.narrow(dim, 0, max(m - 1, 0))  # m = 0: both empty
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
