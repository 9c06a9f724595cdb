"""Sorting with PyTorch's names and results, on the core's argsort (ops/sort.c): sort,
argsort, topk, kthvalue, median (and msort); and what is built on it or, like it, sized by
the data: nonzero, bincount (ops/counting.c), randperm. Stable whatever `stable` says (PyTorch's
default order of ties is unspecified; ours is the index order); NaN sorts above every
number; values are differentiable (their gradient goes back to where each came from).
Attached to `fusionflow` and to `Tensor` by __init__.py."""
import collections
import ctypes

from ._args import int_arg, named
from ._lib import C, check_status
from ._tensor import as_tensor, wrap

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nonzero", "bincount", "randperm",
           "searchsorted", "bucketize", "histc", "multinomial", "unique", "mode", "scatter"]
TENSOR_METHODS = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nonzero", "bincount", "histc",
                  "multinomial", "unique", "mode", "scatter"]

_sort_result = collections.namedtuple("sort", ["values", "indices"])
_topk_result = collections.namedtuple("topk", ["values", "indices"])
_kthvalue_result = collections.namedtuple("kthvalue", ["values", "indices"])
_median_result = collections.namedtuple("median", ["values", "indices"])
_mode_result = collections.namedtuple("mode", ["values", "indices"])


def _pair(fn, *args):
    v, i = ctypes.c_void_p(), ctypes.c_void_p()
    check_status(fn(*args, ctypes.byref(v), ctypes.byref(i)))
    return wrap(v.value), wrap(i.value)


def sort(input, dim=-1, descending=False, stable=False):
    x = as_tensor(input)
    return _sort_result(*_pair(C.ff_sort, x._ptr, int_arg("sort", "dim", dim), bool(descending)))


def argsort(input, dim=-1, descending=False, stable=False):
    x = as_tensor(input)  # held: the C call borrows its pointer
    return wrap(C.ff_argsort(x._ptr, int_arg("argsort", "dim", dim), bool(descending)))


def msort(input):
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True):
    x = as_tensor(input)
    k, dim = int_arg("topk", "k", k), int_arg("topk", "dim", dim)
    return _topk_result(*_pair(C.ff_topk, x._ptr, k, dim, bool(largest)))


def kthvalue(input, k, dim=-1, keepdim=False):
    x = as_tensor(input)
    k, dim = int_arg("kthvalue", "k", k), int_arg("kthvalue", "dim", dim)
    return _kthvalue_result(*_pair(C.ff_kthvalue, x._ptr, k, dim, bool(keepdim)))


def median(input, dim=None, keepdim=False):
    """median() -> the lower median of all elements; median(dim) -> (values, indices)."""
    x = as_tensor(input)
    if dim is None:
        flat = x.reshape(-1)  # held: the C call borrows its pointer
        return _pair(C.ff_median, flat._ptr, 0, False)[0]
    return _median_result(*_pair(C.ff_median, x._ptr, int_arg("median", "dim", dim), bool(keepdim)))




def nonzero(input, *, as_tuple=False):
    """[count, ndim] int64 coordinates of the non-zero elements (NaN counts), row-major;
    as_tuple: one 1-d tensor per dim."""
    x = as_tensor(input)
    if as_tuple and x.ndim == 0:  # PyTorch takes a 0-d x as 1-d here: (tensor([0]),) if x != 0
        x = x.reshape(1)
    r = wrap(C.ff_nonzero(x._ptr))
    if not as_tuple:
        return r
    return tuple(r[:, d] for d in range(x.ndim))


def bincount(input, weights=None, minlength=0):
    x = as_tensor(input)
    w = None if weights is None else as_tensor(weights)
    return wrap(C.ff_bincount(x._ptr, None if w is None else w._ptr, int_arg("bincount", "minlength", minlength)))


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of 0..n-1 from the global generator (manual_seed), or from
    generator's stream; int64 unless dtype says otherwise."""
    from ._generator import stream_of
    n = int_arg("randperm", "n", n)
    g = stream_of(generator, "randperm")
    if g is not None:  # a generator of its own: its stream, on the host
        from ._factories import tensor
        r = tensor(g.permutation(n).astype("int64"))
    else:
        r = wrap(C.ff_randperm(n))
    if device is not None:
        r = r.to(device=device)
    return r if dtype is None else r.to(dtype)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """Insertion points of input into sorted_sequence's last axis (int64; int32 with
    out_int32); side='right' is right=True. sorter: indices that sort the sequence."""
    seq = as_tensor(sorted_sequence)
    if sorter is not None:
        seq = seq.gather(-1, as_tensor(sorter))
    v = as_tensor(input)
    r = wrap(C.ff_searchsorted(seq._ptr, v._ptr, bool(right or side == "right")))
    return r.int() if out_int32 else r


def bucketize(input, boundaries, *, out_int32=False, right=False):
    x, b = as_tensor(input), as_tensor(boundaries)
    r = wrap(C.ff_bucketize(x._ptr, b._ptr, bool(right)))
    return r.int() if out_int32 else r


def histc(input, bins=100, min=0, max=0):
    x = as_tensor(input)
    return wrap(C.ff_histc(x._ptr, int_arg("histc", "bins", bins), float(min), float(max)))


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """int64 indices drawn per row with probability proportional to the weights, from the
    global generator (manual_seed; not PyTorch's numbers)."""
    from ._generator import stream_of
    w = as_tensor(input)
    k = int_arg("multinomial", "num_samples", num_samples)
    g = stream_of(generator, "multinomial")
    if g is None:
        return wrap(C.ff_multinomial(w._ptr, k, bool(replacement)))
    # a generator of its own: the picks come from its stream, on the host (the global stream
    # is left alone, as in PyTorch)
    import numpy as np
    from ._factories import tensor
    if w.ndim not in (1, 2):
        raise RuntimeError("multinomial: prob_dist must be 1 or 2 dim, got %d" % w.ndim)
    p = w.detach().to(dtype="float64").numpy().reshape(-1, w.shape[-1])
    if not np.isfinite(p).all() or (p < 0).any():
        raise RuntimeError("multinomial: probability tensor contains either `inf`, `nan` or element < 0")
    if (p.sum(axis=1) <= 0).any():
        raise RuntimeError("multinomial: invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement and k > p.shape[1]:
        raise RuntimeError("multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if not replacement and (np.count_nonzero(p, axis=1) < k).any():
        raise RuntimeError("multinomial: invalid multinomial distribution (with replacement=False, not enough "
                           "non-negative category to sample)")
    rows = [g.choice(p.shape[1], k, replace=bool(replacement), p=r / r.sum()) for r in p]
    return tensor(np.array(rows, dtype=np.int64).reshape(tuple(w.shape[:-1]) + (k,)), device=w.device)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values (always sorted), and optionally the inverse indices and counts,
    as torch.unique; dim= (unique rows or slices) is not offered yet."""
    if dim is not None:
        raise NotImplementedError("fusionflow.unique: dim= is not offered yet; unique over all elements is")
    x = as_tensor(input)
    v, i, c = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    check_status(C.ff_unique(x._ptr, ctypes.byref(v), ctypes.byref(i) if return_inverse else None,
                             ctypes.byref(c) if return_counts else None))
    out = [wrap(v.value)]
    if return_inverse:
        out.append(wrap(i.value))
    if return_counts:
        out.append(wrap(c.value))
    return out[0] if len(out) == 1 else tuple(out)


def mode(input, dim=-1, keepdim=False):
    """The most frequent value along dim (the smallest of equally frequent ones) and the
    index of its last occurrence, as torch.mode."""
    x = as_tensor(input)
    return _mode_result(*_pair(C.ff_mode, x._ptr, int_arg("mode", "dim", dim), bool(keepdim)))


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """torch.scatter(input, dim, index, src) or (..., value=): a copy of input with src
    written at index along dim; repeated indices: the last one wins (deterministic).
    reduce='add' is scatter_add; 'multiply' is not offered."""
    x, idx = as_tensor(input), as_tensor(index)
    if src is None and value is None:
        raise TypeError("scatter: give src or value")
    if src is None or isinstance(src, (int, float, bool)):  # a value, not a tensor
        from ._tensor import full
        src = full(tuple(idx.shape), value if src is None else src, dtype=x.dtype, device=x.device)
    s = as_tensor(src)
    if reduce == "add":
        return x.scatter_add(dim, idx, s)
    if reduce is not None:
        raise NotImplementedError("scatter: reduce=%r is not offered (None and 'add' are)" % (reduce,))
    return wrap(C.ff_scatter(x._ptr, int_arg("scatter", "dim", dim), idx._ptr, s._ptr))


for _n in __all__:  # every error names the function it was given to (_args.named)
    globals()[_n] = named(globals()[_n])
del _n
