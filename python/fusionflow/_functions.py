"""PyTorch functions composed from the core ops, with PyTorch's names, arguments and
dtype rules. Each is differentiable where PyTorch's is, through the ops it is made of.
Float-valued elementwise functions of f32 inputs are computed in f64 and rounded once
(so tan, sinh, log2 ... are as accurate as the core's own transcendental ops); integer
inputs give f32, as PyTorch. Attached to `fusionflow` and to `Tensor` by __init__.py.

Not here: cumsum/cumprod are Tensor methods on the core's scan op; what still needs
kernels of its own (sorts, data-dependent sizes, LAPACK, FFT) is listed by
python/tools/api_coverage.py."""
import builtins
import math

import numpy as np

from . import _dtype
from ._args import int_arg, named
from ._tensor import Tensor, as_tensor, arange, cat, full, rand, stack, tensor, where, _operand

__all__ = ["tan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2", "log10", "exp2", "trunc", "frac", "sgn",
           "fmax", "fmin", "isclose", "allclose", "equal", "addcmul", "addcdiv", "count_nonzero", "aminmax", "bmm",
           "mm", "inner", "kron", "movedim", "unflatten", "roll", "take", "repeat_interleave", "meshgrid",
           "broadcast_tensors", "cdist", "dist", "trace", "diag", "diagonal", "tensordot", "cross", "logspace",
           "randint", "bernoulli", "matrix_power", "einsum", "polygamma", "std_mean", "var_mean", "vander"]
TENSOR_METHODS = ["tan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2", "log10", "exp2", "trunc", "frac",
                  "sgn", "fmax", "fmin", "isclose", "allclose", "equal", "addcmul", "addcdiv", "count_nonzero",
                  "aminmax", "bmm", "mm", "inner", "kron", "movedim", "unflatten", "roll", "take", "repeat_interleave",
                  "dist", "trace", "diag", "diagonal", "cross", "bernoulli", "matrix_power"]


def _dim(fn, d, ndim):
    """d as a dim of a rank-ndim tensor, in [0, ndim): PyTorch's range check, not a wrap."""
    d = int_arg(fn, "dim", d)
    if not -builtins.max(ndim, 1) <= d < builtins.max(ndim, 1):
        raise IndexError("%s(): Dimension out of range (expected to be in range of [%d, %d], but got %d)"
                         % (fn, -builtins.max(ndim, 1), builtins.max(ndim, 1) - 1, d))
    return d % builtins.max(ndim, 1)


def _wide(x):
    """x as the f64 it is computed in, and the dtype the result goes back to."""
    x = as_tensor(x)
    out = x.dtype if x.dtype.is_floating_point else _dtype.float32
    return x.to(_dtype.float64), out


def _elementwise(f):
    def g(input):
        x, out = _wide(input)
        return f(x).to(out)
    g.__name__ = f.__name__
    return g


@_elementwise
def tan(x): return x.sin() / x.cos()
@_elementwise
def sinh(x): return (x.expm1() - (-x).expm1()) * 0.5
@_elementwise
def cosh(x): return (x.exp() + (-x).exp()) * 0.5
@_elementwise
def asinh(x):
    a = x.abs()
    return x.sign() * (a + a * a / ((a * a + 1).sqrt() + 1)).log1p()  # stable near 0, odd
@_elementwise
def acosh(x): return (x + (x * x - 1).sqrt()).log()
@_elementwise
def atanh(x): return (2 * x / (1 - x)).log1p() * 0.5
@_elementwise
def log2(x): return x.log() * (1 / math.log(2))
@_elementwise
def log10(x): return x.log() * (1 / math.log(10))
@_elementwise
def exp2(x): return (x * math.log(2)).exp()


def trunc(input):
    x = as_tensor(input)
    if not x.dtype.is_floating_point:
        return x.clone()
    return where(x < 0, x.ceil(), x.floor())


def frac(input):
    x = as_tensor(input)
    return x - trunc(x)


def sgn(input):
    return as_tensor(input).sign()


def _nan_ignoring(a, b, pick):
    a = as_tensor(a)
    b = _operand(b, a)
    m = pick(a, b)
    return where(a.isnan(), b, where(b.isnan(), a, m))


def fmax(input, other):
    """maximum that ignores a NaN when the other value is a number (torch.fmax)."""
    return _nan_ignoring(input, other, lambda a, b: a.maximum(b))


def fmin(input, other):
    return _nan_ignoring(input, other, lambda a, b: a.minimum(b))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    a = as_tensor(input)
    b = _operand(other, a)
    close = (a - b).abs() <= atol + rtol * b.abs()
    close = close | (a == b)  # equal infinities
    if equal_nan:
        close = close | (a.isnan() & b.isnan())
    return close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return builtins.bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input, other):
    a, b = as_tensor(input), as_tensor(other)
    return a.shape == b.shape and builtins.bool((a == b).all().item())


def addcmul(input, tensor1, tensor2, value=1):
    return input + value * (tensor1 * tensor2)


def addcdiv(input, tensor1, tensor2, value=1):
    return input + value * (tensor1 / tensor2)


def count_nonzero(input, dim=None):
    return (as_tensor(input) != 0).sum(dim)


def aminmax(input, dim=None, keepdim=False):
    from ._tensor import ValuesIndices  # noqa: F401  (the same namedtuple style)
    import collections
    r = collections.namedtuple("aminmax", ["min", "max"])
    x = as_tensor(input)
    return r(x.amin(dim, keepdim), x.amax(dim, keepdim))


def _moments(fn, input, dim, unbiased, keepdim, correction, spread):
    """(spread, mean) of input over dim; a bool second argument is torch's
    std_mean(input, unbiased) form."""
    x = as_tensor(input)
    if isinstance(dim, builtins.bool):
        dim, unbiased = None, dim
    if not x.dtype.is_floating_point:
        raise RuntimeError("%s(): %s only support floating point and complex dtypes, got a %s tensor"
                           % (fn, fn, x.dtype.name))
    s = getattr(x, spread)(dim, unbiased=unbiased, keepdim=keepdim, correction=correction)
    return s, x.mean(dim, keepdim)


def std_mean(input, dim=None, unbiased=True, keepdim=False, *, correction=None):
    """(std, mean) over dim, as torch.std_mean (a tuple; unbiased / correction as std)."""
    return _moments("std_mean", input, dim, unbiased, keepdim, correction, "std")


def var_mean(input, dim=None, unbiased=True, keepdim=False, *, correction=None):
    """(var, mean) over dim, as torch.var_mean."""
    return _moments("var_mean", input, dim, unbiased, keepdim, correction, "var")


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of 1-D x: column j is x ** (N-1-j) (x ** j when increasing),
    N = len(x) by default. Powers are running products (cumprod), so the gradient flows and
    integer (and bool) inputs give exact int64, as torch."""
    x = as_tensor(x)
    if x.ndim != 1:
        raise RuntimeError("vander(): x must be a one-dimensional tensor, got shape %s" % (tuple(x.shape),))
    n = x.shape[0] if N is None else int_arg("vander", "N", N)
    if n < 0:
        raise RuntimeError("vander(): N must be non-negative, got %d" % n)
    if not x.dtype.is_floating_point:
        x = x.to(_dtype.int64)
    if n == 0:
        return full((x.shape[0], 0), 0, dtype=x.dtype, device=x.device)
    ones = full((x.shape[0], 1), 1, dtype=x.dtype, device=x.device)
    powers = cat([ones, x.unsqueeze(1).expand(x.shape[0], n - 1)], 1).cumprod(1)
    return powers if increasing else powers.flip(1)


def bmm(input, mat2):
    if input.ndim != 3 or mat2.ndim != 3:
        raise ValueError("bmm: expected 3-D tensors, got %d-D and %d-D" % (input.ndim, mat2.ndim))
    if input.shape[0] != mat2.shape[0]:
        raise ValueError("bmm: batch sizes differ: %d and %d" % (input.shape[0], mat2.shape[0]))
    return input @ mat2


def mm(input, mat2):
    """torch.mm: a matrix product of two 2-D tensors, no broadcasting (matmul has it)."""
    if getattr(input, "is_sparse", False) or getattr(mat2, "is_sparse", False):
        from .sparse import mm as sparse_mm  # sparse @ dense, dense @ sparse, sparse @ sparse
        return sparse_mm(input, mat2)
    a, b = as_tensor(input), as_tensor(mat2)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError("mm: expected 2-D tensors, got %d-D and %d-D" % (a.ndim, b.ndim))
    if a.shape[1] != b.shape[0]:
        raise ValueError("mm: shapes (%d, %d) and (%d, %d) cannot be multiplied" % (a.shape + b.shape))
    return a @ b


def inner(input, other):
    a, b = as_tensor(input), as_tensor(other)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return tensordot(a, b, ([-1], [-1]))


def kron(input, other):
    a, b = as_tensor(input), as_tensor(other)
    nd = builtins.max(a.ndim, b.ndim)
    a = a.reshape((1,) * (nd - a.ndim) + a.shape)
    b = b.reshape((1,) * (nd - b.ndim) + b.shape)
    ai = a.reshape(tuple(s for d in a.shape for s in (d, 1)))      # [a0, 1, a1, 1, ...]
    bi = b.reshape(tuple(s for d in b.shape for s in (1, d)))      # [1, b0, 1, b1, ...]
    return (ai * bi).reshape(tuple(x * y for x, y in zip(a.shape, b.shape)))


def movedim(input, source, destination):
    x = as_tensor(input)
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise ValueError("movedim: source and destination need the same number of dims")
    src = [_dim("movedim", s, x.ndim) for s in src]
    dst = [_dim("movedim", d, x.ndim) for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("movedim: repeated dim in source %s or destination %s" % (source, destination))
    order = [d for d in range(x.ndim) if d not in src]
    perm = [None] * x.ndim
    for s, d in zip(src, dst):
        perm[d] = s
    it = iter(order)
    perm = [p if p is not None else next(it) for p in perm]
    return x.permute(*perm)


def unflatten(input, dim, sizes):
    x = as_tensor(input)
    d = _dim("unflatten", dim, x.ndim)
    return x.reshape(x.shape[:d] + tuple(sizes) + x.shape[d + 1:])


def roll(input, shifts, dims=None):
    x = as_tensor(input)
    if dims is None:
        return roll(x.flatten(), shifts, 0).reshape(x.shape)
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    for s, d in zip(shifts, dims):
        n = x.shape[d]
        if n == 0:
            continue
        s %= n
        if s:
            x = cat([x.narrow(d, n - s, s), x.narrow(d, 0, n - s)], dim=d)
    return x if x is not input else x.clone()


def take(input, index):
    x = as_tensor(input).flatten()
    idx = as_tensor(index)
    return x[idx.reshape(-1)].reshape(idx.shape)


def repeat_interleave(input, repeats, dim=None):
    x = as_tensor(input)
    if dim is None:
        x, dim = x.flatten(), 0
    n = x.shape[dim]
    reps = np.broadcast_to(np.asarray(repeats.tolist() if isinstance(repeats, Tensor) else repeats), (n,))
    idx = np.repeat(np.arange(n), reps)
    return x.index_select(dim, tensor(idx.astype(np.int64), device=x.device))


def meshgrid(*tensors, indexing="ij"):
    ts = [as_tensor(t) for t in (tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple))
                                 else tensors)]
    if indexing not in ("ij", "xy"):
        raise ValueError("meshgrid: indexing must be 'ij' or 'xy'")
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.numel() for t in ts)
    out = []
    for i, t in enumerate(ts):
        view = [1] * len(ts)
        view[i] = t.numel()
        out.append(t.reshape(view).expand(*shape))
    if swap:  # 'xy': the grid of the swapped inputs, outputs in the caller's order
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def broadcast_tensors(*tensors):
    ts = [as_tensor(t) for t in tensors]
    shape = np.broadcast_shapes(*[t.shape for t in ts])
    return tuple(t.broadcast_to(shape) for t in ts)


def dist(input, other, p=2):
    return (as_tensor(input) - other).norm(p)


def cdist(x1, x2, p=2.0):
    """Pairwise p-norm distances between the rows of x1 [..., P, M] and x2 [..., R, M]."""
    d = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return d.norm(p, dim=-1)


def trace(input):
    x = as_tensor(input)
    if x.ndim != 2:
        raise ValueError("trace: expected a 2-D tensor, got %d-D" % x.ndim)
    return diagonal(x).sum()


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal as a new tensor (PyTorch returns a view); the diagonal dim goes last."""
    x = as_tensor(input)
    d1, d2 = _dim("diagonal", dim1, x.ndim), _dim("diagonal", dim2, x.ndim)
    if d1 == d2:
        raise ValueError("diagonal: dim1 and dim2 cannot be the same dim (%d)" % d1)
    n = builtins.max(0, builtins.min(x.shape[d1] - builtins.max(0, -offset), x.shape[d2] - builtins.max(0, offset)))
    r = arange(n, dtype=_dtype.int64, device=x.device)
    rows, cols = r + builtins.max(0, -offset), r + builtins.max(0, offset)
    rest = [d for d in range(x.ndim) if d not in (d1, d2)]
    y = x.permute(*(rest + [d1, d2]))
    key = (Ellipsis, rows, cols)
    return y[key]


def diag(input, diagonal=0):
    x = as_tensor(input)
    if x.ndim == 1:
        n = x.shape[0] + builtins.abs(diagonal)
        out = full((n, n), 0, dtype=x.dtype, device=x.device)
        r = arange(x.shape[0], dtype=_dtype.int64, device=x.device)
        return out.index_put((r + builtins.max(0, -diagonal), r + builtins.max(0, diagonal)), x)
    if x.ndim == 2:
        return globals()["diagonal"](x, diagonal)
    raise ValueError("diag: expected a 1-D or 2-D tensor, got %d-D" % x.ndim)


def tensordot(a, b, dims=2):
    a, b = as_tensor(a), as_tensor(b)
    if isinstance(dims, int):
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = [d % a.ndim for d in dims[0]], [d % b.ndim for d in dims[1]]
    fa = [d for d in range(a.ndim) if d not in da]
    fb = [d for d in range(b.ndim) if d not in db]
    k = int(np.prod([a.shape[d] for d in da])) if da else 1
    am = a.permute(*(fa + da)).reshape(int(np.prod([a.shape[d] for d in fa])) if fa else 1, k)
    bm = b.permute(*(db + fb)).reshape(k, int(np.prod([b.shape[d] for d in fb])) if fb else 1)
    return (am @ bm).reshape(tuple(a.shape[d] for d in fa) + tuple(b.shape[d] for d in fb))


def cross(input, other, dim=None):
    a, b = broadcast_tensors(input, other)
    if dim is None:
        dims = [d for d in range(a.ndim) if a.shape[d] == 3]
        if not dims:
            raise ValueError("cross: no dim of size 3 in the inputs %s" % (list(a.shape),))
        dim = dims[0]
    dim = _dim("cross", dim, a.ndim)
    if a.shape[dim] != 3:
        raise ValueError("cross: dim %d has size %d, not 3" % (dim, a.shape[dim]))
    a0, a1, a2 = (a.select(dim, i) for i in range(3))
    b0, b1, b2 = (b.select(dim, i) for i in range(3))
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim)


def logspace(start, end, steps, base=10.0, dtype=_dtype.float32, device=None):
    from ._tensor import linspace
    e = linspace(start, end, steps, dtype=_dtype.float64, device=device)
    return (e * math.log(base)).exp().to(dtype)


def randint(low, high=None, size=None, dtype=_dtype.int64, device=None, seed=None, generator=None,
            requires_grad=False):
    """Uniform integers in [low, high), from the seeded generator (torch.randint)."""
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    u = rand(*size, dtype=_dtype.float64, device=device, seed=seed, generator=generator)
    return (u * (high - low) + low).floor().to(dtype or _dtype.int64)


def bernoulli(input, p=None, seed=None, generator=None):
    """1 with probability input (or p), else 0, in input's dtype."""
    x = as_tensor(input)
    probs = x if p is None else full(x.shape, p, dtype=_dtype.float64, device=x.device)
    u = rand(*x.shape, dtype=_dtype.float64, device=x.device, seed=seed, generator=generator)
    return (u < probs).to(x.dtype)


def matrix_power(input, n):
    """A^n of square (batched) matrices for n >= 0 (negative n needs an inverse: not yet)."""
    from ._lib import C
    from ._tensor import wrap
    x = as_tensor(input)
    return wrap(C.ff_matrix_power(x._ptr, int_arg("matrix_power", "n", n)))


def einsum(equation, *operands):
    """torch.einsum(equation, *operands) (or one list of operands): implicit outputs, '...',
    repeated subscripts, size-1 broadcasting; differentiable."""
    import ctypes
    from ._lib import C
    from ._tensor import wrap
    if not isinstance(equation, str):
        raise TypeError("einsum(): argument 'equation' must be str, not %s" % type(equation).__name__)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    xs = [as_tensor(o) for o in operands]  # held: the C call borrows their pointers
    arr = (ctypes.c_void_p * len(xs))(*[x._ptr for x in xs])
    return wrap(C.ff_einsum(equation.encode(), len(xs), arr))


def polygamma(n, input):
    """torch.polygamma(n, input) for n = 0 and 1 (Tensor.polygamma)."""
    return as_tensor(input).polygamma(n)


for _n in __all__:  # every error names the function it was given to (_args.named)
    globals()[_n] = named(globals()[_n])
del _n
