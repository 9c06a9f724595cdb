"""Sparse COO tensors, the part of torch's sparse_coo layout that programs meet: built by
sparse_coo_tensor or Tensor.to_sparse, turned back by to_dense, multiplied (torch.sparse.mm,
@, mm: sparse @ dense and dense @ sparse are dense, sparse @ sparse is sparse, as PyTorch >= 2),
added to dense tensors, coalesced.

A SparseCooTensor is not a fusionflow.Tensor: it is two dense tensors, indices (int64,
sparse_dim x nnz) and values (nnz x dense dims), plus a size, as PyTorch's own COO layout is.
Every computation is composed of dense ops on them (index_select, index_add, multiply), so
autograd reaches values (and the dense operand) through the usual graph. The indices'
bookkeeping (coalesce's sort and merge) runs on the host through NumPy: indices have no
gradient."""
import numpy as np

from .._dtype import int64
from .._tensor import Tensor, as_tensor, tensor, zeros


def _as_index(indices):
    if isinstance(indices, Tensor):
        return indices.detach().to(int64)
    return tensor(np.asarray(indices).astype(np.int64))


class SparseCooTensor:
    is_sparse = True
    is_sparse_csr = False

    def __init__(self, indices, values, size, coalesced=False):
        self._i, self._v, self._size, self._coalesced = indices, values, tuple(int(s) for s in size), coalesced

    # ---- what it is --------------------------------------------------------------------
    @property
    def layout(self):
        from . import sparse_coo
        return sparse_coo

    @property
    def shape(self):
        return self._size

    def size(self, dim=None):
        return self.shape if dim is None else self._size[dim]

    def dim(self):
        return len(self._size)

    ndim = property(dim)

    def numel(self):
        return int(np.prod(self._size, dtype=np.int64))

    dtype = property(lambda self: self._v.dtype)
    device = property(lambda self: self._v.device)
    requires_grad = property(lambda self: self._v.requires_grad)
    grad_fn = property(lambda self: self._v.grad_fn)

    def sparse_dim(self):
        return self._i.shape[0]

    def dense_dim(self):
        return self._v.ndim - 1

    def _nnz(self):
        return self._i.shape[1]

    def is_coalesced(self):
        return self._coalesced

    def _indices(self):
        return self._i

    def _values(self):
        return self._v

    def indices(self):
        self._need_coalesced("indices")
        return self._i

    def values(self):
        self._need_coalesced("values")
        return self._v

    def _need_coalesced(self, what):
        if not self._coalesced:
            raise RuntimeError("SparseCooTensor.%s: cannot get %s on an uncoalesced tensor (size %s, nnz %d), "
                               "call .coalesce() first, or use ._%s()" % (what, what, self._size, self._nnz(), what))

    def __repr__(self):
        return "tensor(indices=%r,\n       values=%r,\n       size=%s, nnz=%d, layout=%r)" % (
            self._i, self._v, self._size, self._nnz(), self.layout)

    # ---- conversions --------------------------------------------------------------------
    def _linear(self):
        """Each entry's offset in the row-major flattening of the sparse dims (int64 tensor)."""
        k = self.sparse_dim()
        strides = np.cumprod((self._size[1:k] + (1,))[::-1], dtype=np.int64)[::-1].copy()
        if k == 0:
            return zeros(self._nnz(), dtype=int64, device=self.device)
        return (self._i * tensor(strides, device=self._i.device).view(k, 1)).sum(0)

    def to_dense(self):
        """Duplicates are summed, as PyTorch; differentiable in values."""
        k = self.sparse_dim()
        rows = int(np.prod(self._size[:k], dtype=np.int64))
        flat = zeros((rows,) + self._size[k:], dtype=self.dtype, device=self.device)
        return flat.index_add(0, self._linear(), self._v).reshape(self._size)

    def coalesce(self):
        """Indices sorted (row-major) and unique, duplicates' values summed."""
        if self._coalesced:
            return self
        k = self.sparse_dim()
        lin = self._linear().numpy()
        uniq, inverse = np.unique(lin, return_inverse=True)
        dev = self.device
        idx = np.stack(np.unravel_index(uniq, self._size[:k])) if k else np.zeros((0, len(uniq)), np.int64)
        vals = zeros((len(uniq),) + tuple(self._v.shape[1:]), dtype=self.dtype, device=dev)
        vals = vals.index_add(0, tensor(inverse.astype(np.int64), device=dev), self._v)
        return SparseCooTensor(tensor(idx.astype(np.int64), device=dev), vals, self._size, True)

    def to_sparse(self):
        return self

    def to(self, *args, **kwargs):
        v = self._v.to(*args, **kwargs)
        return SparseCooTensor(self._i.to(v.device), v, self._size, self._coalesced)

    def float(self):
        return self.to(self._v.float().dtype)

    def double(self):
        return self.to(self._v.double().dtype)

    def long(self):
        return self.to(int64)

    def cpu(self):
        return self.to("cpu")

    def detach(self):
        return SparseCooTensor(self._i, self._v.detach(), self._size, self._coalesced)

    def clone(self):
        return SparseCooTensor(self._i.clone(), self._v.clone(), self._size, self._coalesced)

    def requires_grad_(self, requires_grad=True):
        self._v.requires_grad_(requires_grad)
        return self

    @property
    def grad(self):
        """The gradient reached through values, on this tensor's pattern (None before backward)."""
        g = self._v.grad
        return None if g is None else SparseCooTensor(self._i, g, self._size, self._coalesced)

    def t(self):
        if self.sparse_dim() != 2 or self.dense_dim() != 0:
            raise RuntimeError("SparseCooTensor.t: expects a 2-D sparse matrix, got size %s with sparse_dim %d"
                               % (self._size, self.sparse_dim()))
        return SparseCooTensor(self._i.flip(0), self._v, self._size[::-1])

    # ---- arithmetic ---------------------------------------------------------------------
    def mm(self, mat2):
        return mm(self, mat2)

    matmul = mm

    def __matmul__(self, other):
        return mm(self, other)

    def __rmatmul__(self, other):
        if isinstance(other, Tensor):  # dense @ sparse: dense, as PyTorch >= 2
            return mm(other, self)
        return NotImplemented

    def __add__(self, other):
        if isinstance(other, SparseCooTensor):  # sparse + sparse: both entry lists, uncoalesced
            if other._size != self._size:
                raise RuntimeError("SparseCooTensor add: sizes %s and %s differ" % (self._size, other._size))
            from .._factories import cat
            dt = (self._v[:0] + other._v[:0]).dtype
            return SparseCooTensor(cat([self._i, other._i], 1), cat([self._v.to(dt), other._v.to(dt)], 0), self._size)
        if isinstance(other, Tensor):
            raise RuntimeError("add(sparse, dense) is not supported: write dense + sparse (as PyTorch), "
                               "or sparse.to_dense() + dense")
        return NotImplemented

    def __radd__(self, other):
        if isinstance(other, Tensor):
            return other + self.to_dense()
        return NotImplemented

    def __mul__(self, other):
        if isinstance(other, (int, float, bool)):
            return SparseCooTensor(self._i, self._v * other, self._size, self._coalesced)
        return NotImplemented

    __rmul__ = __mul__

    def __neg__(self):
        return SparseCooTensor(self._i, -self._v, self._size, self._coalesced)


def _need_matrix(fn, s):
    if s.sparse_dim() != 2 or s.dense_dim() != 0:
        raise RuntimeError("%s: expects a 2-D sparse matrix, got size %s with sparse_dim %d"
                           % (fn, s._size, s.sparse_dim()))


def _need_product(fn, a_shape, b_shape, a_dtype, b_dtype):
    if len(a_shape) != 2 or len(b_shape) != 2 or a_shape[1] != b_shape[0]:
        raise RuntimeError("%s: %s cannot multiply %s (expected (m, k) @ (k, n))" % (fn, a_shape, b_shape))
    if a_dtype != b_dtype:
        raise RuntimeError("%s: the operands are %s and %s; both must have one dtype (as PyTorch)"
                           % (fn, a_dtype, b_dtype))


def mm(mat1, mat2):
    """torch.sparse.mm (and @, torch.mm): sparse @ dense and dense @ sparse give a dense
    matrix, sparse @ sparse a sparse one (coalesced), as PyTorch >= 2; differentiable in the
    sparse values and in the dense operand."""
    s1, s2 = isinstance(mat1, SparseCooTensor), isinstance(mat2, SparseCooTensor)
    if s1 and s2:
        return _sparse_sparse(mat1, mat2)
    if s2:
        return _dense_sparse(as_tensor(mat1), mat2)
    if not s1:
        from .._functions import mm as dense_mm
        return dense_mm(mat1, mat2)
    d = as_tensor(mat2)
    _need_matrix("sparse.mm", mat1)
    _need_product("sparse.mm", mat1._size, tuple(d.shape), mat1.dtype, d.dtype)
    rows, cols = mat1._i[0], mat1._i[1]
    out = zeros((mat1._size[0], d.shape[1]), dtype=d.dtype, device=d.device)
    return out.index_add(0, rows, mat1._v.view(-1, 1) * d.index_select(0, cols))


def _dense_sparse(x, s):
    """x @ s as (s^T @ x^T)^T: the sparse @ dense product above, on the transposes."""
    _need_matrix("mm(dense, sparse)", s)
    _need_product("mm(dense, sparse)", tuple(x.shape), s._size, x.dtype, s.dtype)
    return mm(s.t(), x.t()).t().contiguous()


def _matching_pairs(cols1, rows2):
    """(p1, p2): every pair of an entry of the left matrix and one of the right whose column
    and row meet (cols1[p1] == rows2[p2]), found on the host: sort the right's rows once,
    then each left entry's run of equal rows by binary search."""
    order = np.argsort(rows2, kind="stable")
    sorted_rows = rows2[order]
    lo = np.searchsorted(sorted_rows, cols1, "left")
    counts = np.searchsorted(sorted_rows, cols1, "right") - lo
    p1 = np.repeat(np.arange(len(cols1), dtype=np.int64), counts)
    starts = np.repeat(lo - (np.cumsum(counts) - counts), counts)  # run start, less the pairs before it
    p2 = order[starts + np.arange(len(p1), dtype=np.int64)] if len(p1) else np.zeros(0, np.int64)
    return p1, p2.astype(np.int64)


def _sparse_sparse(a, b):
    """a @ b of two sparse matrices: each meeting pair of entries gives one product (gathered
    from both values, so both get gradients), and the products at one (row, col) are summed
    by index_add into the coalesced result."""
    _need_matrix("sparse.mm", a)
    _need_matrix("sparse.mm", b)
    _need_product("sparse.mm", a._size, b._size, a.dtype, b.dtype)
    ia, ib = a._i.numpy(), b._i.numpy()
    p1, p2 = _matching_pairs(ia[1], ib[0])
    m, n = a._size[0], b._size[1]
    lin = ia[0][p1] * n + ib[1][p2]
    uniq, inverse = np.unique(lin, return_inverse=True)
    dev = a.device
    prods = a._v.index_select(0, tensor(p1, device=dev)) * b._v.index_select(0, tensor(p2, device=dev))
    vals = zeros(len(uniq), dtype=prods.dtype, device=dev).index_add(0, tensor(inverse.astype(np.int64), device=dev),
                                                                     prods)
    idx = np.stack([uniq // n, uniq % n]).astype(np.int64) if n else np.zeros((2, 0), np.int64)
    return SparseCooTensor(tensor(idx, device=dev), vals, (m, n), True)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, requires_grad=False,
                      check_invariants=None):
    """torch.sparse_coo_tensor: uncoalesced, as PyTorch's; size inferred from the largest
    index when not given."""
    i = _as_index(indices)
    v = values if isinstance(values, Tensor) else tensor(values)
    if dtype is not None:
        v = v.to(dtype)
    if device is not None:
        v = v.to(device)
    i = i.to(v.device)
    if i.ndim != 2 or v.ndim < 1 or i.shape[1] != v.shape[0]:
        raise RuntimeError("sparse_coo_tensor: indices must be (sparse_dim, nnz) and values (nnz, ...); got indices "
                           "%s and values %s" % (tuple(i.shape), tuple(v.shape)))
    k, nnz = i.shape
    top = i.numpy().max(axis=1) + 1 if nnz else np.zeros(k, np.int64)
    if size is None:
        size = tuple(int(t) for t in top) + tuple(v.shape[1:])
    size = tuple(int(s) for s in size)
    if len(size) != k + v.ndim - 1 or tuple(size[k:]) != tuple(v.shape[1:]):
        raise RuntimeError("sparse_coo_tensor: size %s does not fit %d sparse dims and values %s"
                           % (size, k, tuple(v.shape)))
    if nnz and (i.numpy().min() < 0 or any(t > s for t, s in zip(top, size))):
        bad = next(d for d in range(k) if top[d] > size[d]) if any(t > s for t, s in zip(top, size)) else 0
        raise RuntimeError("sparse_coo_tensor: size is inconsistent with indices: for dim %d, size is %d but found "
                           "index %d (indices must be in [0, size))" % (bad, size[bad], int(top[bad]) - 1))
    if requires_grad:
        v.requires_grad_(True)
    return SparseCooTensor(i, v, size)


def to_sparse(self, sparse_dim=None):
    """Tensor.to_sparse: the nonzero entries of a dense tensor, coalesced (row-major order);
    differentiable in the tensor's values."""
    if sparse_dim is not None and sparse_dim != self.ndim:
        raise NotImplementedError("Tensor.to_sparse(sparse_dim=%d): hybrid COO tensors (dense dims in values) "
                                  "are not supported; only sparse_dim=None or %d" % (sparse_dim, self.ndim))
    if self.ndim == 0:
        raise NotImplementedError("Tensor.to_sparse: a 0-d tensor has no sparse COO form here")
    idx = self.nonzero().t().contiguous()  # row-major, PyTorch's order
    values = self[tuple(idx[d] for d in range(self.ndim))]
    return SparseCooTensor(idx, values, tuple(self.shape), True)
