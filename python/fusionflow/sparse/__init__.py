"""fusionflow.sparse, as torch.sparse: COO tensors (_coo.py) and their products. Only the COO
layout exists; CSR/CSC/BSR and the sparse reductions and softmax are not here."""
from .._dtype import float32, float64, int64
from .._methods import layout
from .._tensor import Tensor
from ._coo import SparseCooTensor, mm, sparse_coo_tensor, to_sparse  # noqa: F401  (fusionflow.sparse_coo_tensor)

sparse_coo = layout("sparse_coo")

__all__ = ["mm", "addmm", "SparseCooTensor", "sparse_coo", "FloatTensor", "DoubleTensor", "LongTensor"]


def addmm(mat, mat1, mat2, *, beta=1, alpha=1):
    """torch.sparse.addmm: beta * mat + alpha * (mat1 @ mat2), mat1 sparse, the rest dense."""
    return mat * beta + mm(mat1, mat2) * alpha


# Tensor's COO entry points (the _methods stubs list them no more)
Tensor.to_sparse = to_sparse
Tensor.to_sparse_coo = lambda self: to_sparse(self)


def _legacy_sparse(name, dtype):
    """torch.sparse.FloatTensor and kin, the legacy constructors older graph code calls:
    X(indices, values[, size]) is sparse_coo_tensor in X's dtype, X(*sizes) an empty one."""
    def make(*args, device=None):
        import numbers
        from .._factories import tensor, zeros
        if args and all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
            return sparse_coo_tensor(zeros((len(args), 0), dtype=int64), tensor([], dtype=dtype), args, device=device)
        if len(args) not in (2, 3):
            raise TypeError("sparse.%s(): expected (indices, values[, size]) or integer sizes, got %d arguments"
                            % (name, len(args)))
        return sparse_coo_tensor(*args, dtype=dtype, device=device)
    make.__name__ = make.__qualname__ = name
    return make


FloatTensor = _legacy_sparse("FloatTensor", float32)
DoubleTensor = _legacy_sparse("DoubleTensor", float64)
LongTensor = _legacy_sparse("LongTensor", int64)
