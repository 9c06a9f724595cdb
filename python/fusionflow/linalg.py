"""torch.linalg's dense solvers and decompositions (solve, inv, det, cholesky, qr, svd,
svdvals, lstsq, matrix_power), and the torch-level forms PyTorch programs call (det,
inverse, cholesky, qr, svd; solve and lstsq, which PyTorch removed from torch.*, follow
torch.linalg here). Batched over leading dims, f32 and f64, differentiable; they run on
the backend's linalg entry (cpu: the written-out algorithms, cpu_blas: LAPACK), other
backends raise "does not support". Differences from PyTorch are in docs/semantics.md."""
import collections
import ctypes

from ._args import int_arg
from ._dtype import float32, int64
from ._lib import C, check_status
from ._tensor import as_tensor, no_grad, wrap, zeros

__all__ = ["solve", "inv", "det", "cholesky", "qr", "svd", "svdvals", "lstsq", "matrix_power"]
# the torch.* forms, attached to fusionflow (and as methods) by __init__.py
TORCH_FUNCTIONS = ["det", "inverse", "cholesky", "qr", "svd", "solve", "lstsq"]
TENSOR_METHODS = ["det", "inverse", "cholesky", "qr", "svd"]

_qr_result = collections.namedtuple("qr", ["Q", "R"])
_svd_result = collections.namedtuple("svd", ["U", "S", "Vh"])
_torch_svd_result = collections.namedtuple("svd", ["U", "S", "V"])
_lstsq_result = collections.namedtuple("lstsq", ["solution", "residuals", "rank", "singular_values"])


def solve(A, B, *, left=True):
    """X with A X = B (left=False: X A = B). B may be a vector [..., n]; batch dims broadcast."""
    A, B = as_tensor(A), as_tensor(B)
    if left:
        return wrap(C.ff_solve(A._ptr, B._ptr))
    # X A = B  <=>  A^T X^T = B^T
    return solve(A.mT, B.mT).mT


def inv(A):
    A = as_tensor(A)
    return wrap(C.ff_inverse(A._ptr))


def det(A):
    A = as_tensor(A)
    return wrap(C.ff_det(A._ptr))


def cholesky(A, *, upper=False):
    A = as_tensor(A)
    return wrap(C.ff_cholesky(A._ptr, bool(upper)))


def qr(A, mode="reduced"):
    """mode 'reduced' (Q [..., m, k]), 'complete' (Q [..., m, m]) or 'r' (R only; Q is
    an empty tensor, as PyTorch)."""
    if mode not in ("reduced", "complete", "r"):
        raise ValueError("qr: mode must be 'reduced', 'complete' or 'r', got %r" % (mode,))
    A = as_tensor(A)
    q, r = ctypes.c_void_p(), ctypes.c_void_p()
    check_status(C.ff_qr(A._ptr, mode == "complete", ctypes.byref(q), ctypes.byref(r)))
    Q, R = wrap(q.value), wrap(r.value)
    if mode == "r":
        Q = _empty(A)
    return _qr_result(Q, R)


def _empty(A):
    """The empty tensor PyTorch returns for outputs a mode does not compute."""
    return zeros(0, dtype=A.dtype, device=A.device)


def svd(A, full_matrices=True):
    """U, S, Vh with A = U diag(S) Vh; S descending. Singular vectors are unique only up
    to sign: compare them through sign-free quantities."""
    A = as_tensor(A)
    u, s, vh = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    check_status(C.ff_svd(A._ptr, bool(full_matrices), ctypes.byref(u), ctypes.byref(s), ctypes.byref(vh)))
    return _svd_result(wrap(u.value), wrap(s.value), wrap(vh.value))


def svdvals(A):
    return svd(A, full_matrices=False).S


def lstsq(A, B, rcond=None, *, driver=None):
    """The minimum-norm least-squares solution of A X = B, with gelsd's other outputs:
    residuals (squared norms of the columns of A X - B, when m > n and A has full rank,
    else empty), rank and singular_values. rcond: the default eps * max(m, n) only."""
    if rcond is not None:
        raise NotImplementedError("lstsq: only the default rcond (eps * max(m, n)) is offered")
    if driver not in (None, "gelsd", "gelsy", "gelss", "gels"):
        raise ValueError("lstsq: unknown driver %r" % (driver,))
    A, B = as_tensor(A), as_tensor(B)
    X = wrap(C.ff_lstsq(A._ptr, B._ptr))
    with no_grad():
        S = svdvals(A)
        m, n = A.shape[-2], A.shape[-1]
        eps = 1.1920928955078125e-07 if A.dtype == float32 else 2.220446049250313e-16
        if min(m, n) == 0:
            rank = zeros(*A.shape[:-2], dtype=int64, device=A.device)
        else:
            cut = S[..., :1] * (eps * max(m, n))
            rank = (S > cut).sum(dim=-1)
        residuals = _empty(A)
        if m > n and bool((rank == n).all()):
            Bm = B.unsqueeze(-1) if X.ndim == B.ndim and X.ndim == A.ndim - 1 else B
            Xm = X.unsqueeze(-1) if Bm is not B else X
            residuals = ((A.detach() @ Xm - Bm) ** 2).sum(dim=-2)
            if Bm is not B:
                residuals = residuals.squeeze(-1)
    return _lstsq_result(X, residuals, rank, S)


def matrix_power(A, n):
    A = as_tensor(A)
    return wrap(C.ff_matrix_power(A._ptr, int_arg("matrix_power", "n", n)))


# ---- the torch.* forms -----------------------------------------------------------------

def inverse(input):
    return inv(input)


def _torch_cholesky(input, upper=False):
    return cholesky(input, upper=upper)


def _torch_qr(input, some=True):
    return _qr_result(*qr(input, mode="reduced" if some else "complete"))


def _torch_svd(input, some=True, compute_uv=True):
    """torch.svd: U, S, V (not Vh); some=False gives the full U and V; compute_uv=False
    gives zero-filled U and V of the full shapes, as PyTorch."""
    U, S, Vh = svd(input, full_matrices=not some or not compute_uv)
    if not compute_uv:
        return _torch_svd_result(U.detach() * 0, S, Vh.detach().mT * 0)
    return _torch_svd_result(U, S, Vh.mT)


TORCH_FORMS = {"det": det, "inverse": inverse, "cholesky": _torch_cholesky, "qr": _torch_qr, "svd": _torch_svd,
               "solve": solve, "lstsq": lstsq}
