"""Tensor methods for matrix products and linear algebra, composed of matmul, inverse, det
and svd (so differentiable through them); attached by _methods.py."""
import collections
import math

import numpy as np

from . import _dtype
from ._factories import full, zeros, where, eye


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


# ---- LU with partial pivoting --------------------------------------------------------
def _lu_one(a):
    """(LU packed, 1-based pivots) of one m x n matrix, as LAPACK's getrf: the pivot of a
    column is its first entry of largest magnitude (chosen on the host), the elimination is
    made of narrow/cat/outer, so differentiable."""
    from ._factories import tensor
    from ._tensor import cat
    m, n = a.shape
    pivots = []
    for k in range(min(m, n)):
        col = np.abs(a.detach().numpy()[k:, k])
        p = k + int(np.argmax(col))
        pivots.append(p + 1)
        if p != k:
            order = list(range(m))
            order[k], order[p] = p, k
            a = a.index_select(0, tensor(np.asarray(order, dtype=np.int64), device=a.device))
        if k + 1 >= m:
            continue
        piv = a[k, k]
        below = a.narrow(0, k + 1, m - k - 1)
        l = below.narrow(1, k, 1) / piv
        parts = []
        if k > 0:
            parts.append(below.narrow(1, 0, k))
        parts.append(l)
        if k + 1 < n:
            parts.append(below.narrow(1, k + 1, n - k - 1) - l * a.narrow(0, k, 1).narrow(1, k + 1, n - k - 1))
        a = cat([a.narrow(0, 0, k + 1), cat(parts, 1)], 0)
    return a, pivots


def lu(self, pivot=True, get_infos=False):
    """torch.Tensor.lu: (LU, pivots int32[, infos]) of a (batched) matrix with partial pivoting."""
    from ._factories import tensor
    from ._tensor import stack
    if not pivot:
        raise NotImplementedError("lu: pivot=False is not offered (torch offers it on CUDA only)")
    if self.ndim < 2:
        raise RuntimeError("lu: expected a tensor with 2 or more dimensions, got %d" % self.ndim)
    batch = self.shape[:-2]
    flat = self.reshape((-1,) + tuple(self.shape[-2:]))
    outs = [_lu_one(flat[i]) for i in range(flat.shape[0])]
    lu_ = stack([o[0] for o in outs], 0).reshape(self.shape) if outs else self.clone()
    piv = tensor(np.asarray([o[1] for o in outs], dtype=np.int32).reshape(tuple(batch) + (min(self.shape[-2:]),)),
                 device=self.device)
    if not get_infos:
        return lu_, piv
    lu_np = np.abs(lu_.detach().numpy().reshape(len(outs), *self.shape[-2:]))
    info = [next((j + 1 for j in range(min(self.shape[-2:])) if lu_np[i, j, j] == 0), 0) for i in range(len(outs))]
    return lu_, piv, tensor(np.asarray(info, dtype=np.int32).reshape(batch), device=self.device)


def lu_solve(self, LU_data, LU_pivots):
    """x with A x = self, from A's lu(): the row swaps applied to self, then the unit-lower
    and upper triangular factors inverted (differentiable in self and LU_data)."""
    from ._factories import tensor
    n = LU_data.shape[-1]
    piv = LU_pivots.numpy().reshape(-1, n).astype(np.int64) - 1
    b = self.reshape((-1,) + tuple(self.shape[-2:]))
    lu_ = LU_data.reshape((-1, n, n))
    rows = []
    from ._tensor import stack
    for i in range(b.shape[0]):
        order = list(range(n))
        for k, p in enumerate(piv[i % piv.shape[0]]):
            order[k], order[p] = order[p], order[k]
        pb = b[i].index_select(0, tensor(np.asarray(order, dtype=np.int64), device=self.device))
        f = lu_[i % lu_.shape[0]]
        E = eye(n, dtype=f.dtype, device=f.device)
        L, U = f.tril(-1) + E, f.triu()
        rows.append(U.inverse() @ (L.inverse() @ pb))
    return stack(rows, 0).reshape(self.shape)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """torch.lu_unpack: (P, L, U) with A = P @ L @ U from lu()'s packed factors and 1-based
    row swaps. P is built on the host from the swaps; L (unit lower, m x k) and U (upper,
    k x n) are cut from LU_data by tril/triu, so differentiable in it."""
    from ._factories import tensor
    r = collections.namedtuple("lu_unpack", ["P", "L", "U"])
    if LU_data.ndim < 2:
        raise RuntimeError("lu_unpack: expected LU_data with 2 or more dimensions, got %d" % LU_data.ndim)
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    if tuple(LU_pivots.shape) != tuple(LU_data.shape[:-2]) + (k,):
        raise RuntimeError("lu_unpack: LU_pivots of shape %s do not fit LU_data of shape %s (expected %s)"
                           % (tuple(LU_pivots.shape), tuple(LU_data.shape), tuple(LU_data.shape[:-2]) + (k,)))
    if LU_pivots.dtype.is_floating_point:
        raise RuntimeError("lu_unpack: LU_pivots must be an integer tensor, got %s" % LU_pivots.dtype.name)
    none = zeros(0, dtype=LU_data.dtype, device=LU_data.device)
    L = U = P = none
    if unpack_data:
        E = eye(m, k, dtype=LU_data.dtype, device=LU_data.device)
        L = LU_data.narrow(-1, 0, k).tril(-1) + E
        U = LU_data.narrow(-2, 0, k).triu()
    if unpack_pivots:
        piv = LU_pivots.numpy().reshape(-1, k).astype(np.int64) - 1
        if piv.size and (piv.min() < 0 or piv.max() >= m):
            raise RuntimeError("lu_unpack: pivots must be in [1, %d], got %d..%d" % (m, piv.min() + 1, piv.max() + 1))
        mats = np.zeros((piv.shape[0], m, m))
        for b, swaps in enumerate(piv):
            order = list(range(m))
            for i, p in enumerate(swaps):
                order[i], order[p] = order[p], order[i]
            mats[b, order, range(m)] = 1.0  # row order[i] of A is row i of L @ U
        P = tensor(mats.reshape(tuple(LU_data.shape[:-2]) + (m, m)), dtype=LU_data.dtype, device=LU_data.device)
    return r(P, L, U)
