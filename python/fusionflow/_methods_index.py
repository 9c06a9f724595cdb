"""Tensor methods for shapes, splits, windows and indexed reads/writes (rot90, unfold,
take_along_dim, *_scatter, put, index_fill, index_reduce, scatter_reduce), composed of
narrow/index_select/index_copy/scatter_add so differentiable; attached by _methods.py."""
import builtins

import numpy as np

from . import _dtype
from ._factories import arange, full, tensor, cat, where
from ._functions import diag, diagonal, movedim
from ._tensor import Tensor, as_tensor


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
