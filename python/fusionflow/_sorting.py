"""Sorting with PyTorch's names and results, on the core's argsort (ops/sort.c): sort,
argsort, topk, kthvalue, median (and msort). Stable whatever `stable` says (PyTorch's
default order of ties is unspecified; ours is the index order); NaN sorts above every
number; values are differentiable (their gradient goes back to where each came from).
Attached to `fusionflow` and to `Tensor` by __init__.py."""
import collections
import ctypes

from ._lib import C, check_status
from ._tensor import as_tensor, wrap

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median"]
TENSOR_METHODS = ["sort", "argsort", "msort", "topk", "kthvalue", "median"]

_sort_result = collections.namedtuple("sort", ["values", "indices"])
_topk_result = collections.namedtuple("topk", ["values", "indices"])
_kthvalue_result = collections.namedtuple("kthvalue", ["values", "indices"])
_median_result = collections.namedtuple("median", ["values", "indices"])


def _pair(fn, *args):
    v, i = ctypes.c_void_p(), ctypes.c_void_p()
    check_status(fn(*args, ctypes.byref(v), ctypes.byref(i)))
    return wrap(v.value), wrap(i.value)


def sort(input, dim=-1, descending=False, stable=False):
    x = as_tensor(input)
    return _sort_result(*_pair(C.ff_sort, x._ptr, int(dim), bool(descending)))


def argsort(input, dim=-1, descending=False, stable=False):
    x = as_tensor(input)  # held: the C call borrows its pointer
    return wrap(C.ff_argsort(x._ptr, int(dim), bool(descending)))


def msort(input):
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True):
    x = as_tensor(input)
    return _topk_result(*_pair(C.ff_topk, x._ptr, int(k), int(dim), bool(largest)))


def kthvalue(input, k, dim=-1, keepdim=False):
    x = as_tensor(input)
    return _kthvalue_result(*_pair(C.ff_kthvalue, x._ptr, int(k), int(dim), bool(keepdim)))


def median(input, dim=None, keepdim=False):
    """median() -> the lower median of all elements; median(dim) -> (values, indices)."""
    x = as_tensor(input)
    if dim is None:
        flat = x.reshape(-1)  # held: the C call borrows its pointer
        return _pair(C.ff_median, flat._ptr, 0, False)[0]
    return _median_result(*_pair(C.ff_median, x._ptr, int(dim), bool(keepdim)))


