"""fusionflow.sparse, as torch.sparse: COO tensors (_coo.py) and their products. Only the COO
layout exists; CSR/CSC/BSR and the sparse reductions and softmax are not here."""
from .._methods import layout
from .._tensor import Tensor
from ._coo import SparseCooTensor, mm, sparse_coo_tensor, to_sparse  # noqa: F401  (fusionflow.sparse_coo_tensor)

sparse_coo = layout("sparse_coo")

__all__ = ["mm", "addmm", "SparseCooTensor", "sparse_coo"]


def addmm(mat, mat1, mat2, *, beta=1, alpha=1):
    """torch.sparse.addmm: beta * mat + alpha * (mat1 @ mat2), mat1 sparse, the rest dense."""
    return mat * beta + mm(mat1, mat2) * alpha


# Tensor's COO entry points (the _methods stubs list them no more)
Tensor.to_sparse = to_sparse
Tensor.to_sparse_coo = lambda self: to_sparse(self)
