"""Tensor's shape and view methods (reshape, view, permute, expand, narrow, repeat, ...),
attached to Tensor after it exists, as _indexing attaches []: one concern out of the class."""
from ._dtype import DType
from ._factories import split as _split, chunk as _chunk
import operator

from ._lib import C, FusionFlowError, int_array, shape_array
from ._args import int_arg
from ._tensor import Tensor, _axes, _shape_args, wrap


class Size(tuple):
    """torch.Size: what .shape and .size() return; a tuple of ints (== the plain tuple, hashes
    as it), printed torch.Size([2, 3]), whose slices and sums stay Sizes."""
    __slots__ = ()

    def __new__(cls, sizes=()):
        out = []
        for i, s in enumerate(sizes):
            try:
                out.append(operator.index(s))
            except TypeError:
                raise TypeError("fusionflow.Size() takes an iterable of 'int' (item %d is '%s')"
                                % (i, type(s).__name__)) from None
        return tuple.__new__(cls, out)

    def __repr__(self):
        return "torch.Size(%s)" % list(self)

    __str__ = __repr__

    def __getitem__(self, key):
        r = tuple.__getitem__(self, key)
        return tuple.__new__(Size, r) if isinstance(key, slice) else r

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return tuple.__new__(Size, tuple.__add__(self, other))

    def __mul__(self, n):
        return tuple.__new__(Size, tuple.__mul__(self, n))

    __rmul__ = __mul__

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __reduce__(self):
        # a Size again (copy, deepcopy, worker pipes); torch.save's format writes it as torch.Size
        return Size, (tuple(self),)


def shape(self):
    p = self._ptr
    return tuple.__new__(Size, C.ff_tensor_shape(p)[:C.ff_tensor_ndim(p)])


def size(self, dim=None):
    s = shape(self)
    return s if dim is None else s[dim]


def reshape(self, *shape):
    n, arr = shape_array(_shape_args(shape, "reshape"))
    return wrap(C.ff_reshape(self._ptr, n, arr))

def view(self, *shape):
    if len(shape) == 1 and isinstance(shape[0], (DType, str, type)):
        raise FusionFlowError("view(dtype) is not supported; use to(dtype)")
    n, arr = shape_array(_shape_args(shape, "view"))
    return wrap(C.ff_reshape_view(self._ptr, n, arr))

def view_as(self, other):
    return self.view(other.shape)

def reshape_as(self, other):
    return self.reshape(other.shape)

def flatten(self, start_dim=0, end_dim=-1):
    start_dim, end_dim = int_arg("flatten", "start_dim", start_dim), int_arg("flatten", "end_dim", end_dim)
    return wrap(C.ff_flatten(self._ptr, start_dim, end_dim))

def squeeze(self, dim=None):
    if dim is None:
        return wrap(C.ff_squeeze_all(self._ptr))
    return wrap(C.ff_squeeze(self._ptr, int_arg("squeeze", "dim", dim)))

def unsqueeze(self, dim):
    return wrap(C.ff_unsqueeze(self._ptr, int_arg("unsqueeze", "dim", dim)))

def transpose(self, dim0, dim1):
    return wrap(C.ff_transpose(self._ptr, int_arg("transpose", "dim0", dim0), int_arg("transpose", "dim1", dim1)))

def t(self):
    if self.ndim > 2:
        raise FusionFlowError("t() expects a tensor with <= 2 dims, got %d; use transpose()" % self.ndim)
    return self if self.ndim < 2 else self.transpose(0, 1)

def T(self):
    nd = self.ndim
    return self if nd < 2 else self.permute(*range(nd - 1, -1, -1))

def mT(self):
    return wrap(C.ff_mT(self._ptr))

def permute(self, *dims):
    dims = _shape_args(dims, "permute")
    if len(dims) != self.ndim:
        raise FusionFlowError("permute: %d dims given for a tensor with %d" % (len(dims), self.ndim))
    _, arr = int_array(dims)
    return wrap(C.ff_permute(self._ptr, arr))

def expand(self, *sizes):
    n, arr = shape_array(_shape_args(sizes, "expand"))
    return wrap(C.ff_expand(self._ptr, n, arr))

def expand_as(self, other):
    return self.expand(other.shape)

def broadcast_to(self, shape):
    n, arr = shape_array(tuple(shape))
    return wrap(C.ff_broadcast_to(self._ptr, n, arr))

def narrow(self, dim, start, length):
    dim, start = int_arg("narrow", "dim", dim), int_arg("narrow", "start", start)
    return wrap(C.ff_narrow(self._ptr, dim, start, int_arg("narrow", "length", length)))

def contiguous(self):
    return wrap(C.ff_contiguous(self._ptr))

def clone(self):
    return wrap(C.ff_clone(self._ptr))

def flip(self, dims):
    n, arr = _axes(dims, fn="flip")
    return wrap(C.ff_flip(self._ptr, n, arr))

def tril(self, diagonal=0):
    return wrap(C.ff_tril(self._ptr, int_arg("tril", "diagonal", diagonal)))

def triu(self, diagonal=0):
    return wrap(C.ff_triu(self._ptr, int_arg("triu", "diagonal", diagonal)))

def repeat(self, *reps):
    n, arr = shape_array(_shape_args(reps, "repeat"))
    return wrap(C.ff_repeat(self._ptr, n, arr))

def tile(self, *reps):
    n, arr = shape_array(_shape_args(reps, "tile"))
    return wrap(C.ff_tile(self._ptr, n, arr))

def split(self, split_size, dim=0):
    return _split(self, split_size, dim)

def chunk(self, chunks, dim=0):
    return _chunk(self, chunks, dim)

def unbind(self, dim=0):
    """The views along dim (C ff_unbind: they refuse in-place ops under autograd, as
    PyTorch's outputs of a multi-view function do)."""
    import ctypes
    from ._lib import error
    dim = int_arg("unbind", "dim", dim)
    n = C.ff_unbind(self._ptr, dim, None, 0)
    if n < 0:
        raise error()
    out = (ctypes.c_void_p * max(n, 1))()
    if C.ff_unbind(self._ptr, dim, out, n) < 0:
        raise error()
    return tuple(wrap(out[i]) for i in range(n))

def select(self, dim, index):
    return wrap(C.ff_select(self._ptr, int_arg("select", "dim", dim), int_arg("select", "index", index)))


for _f in (reshape, view, view_as, reshape_as, flatten, squeeze, unsqueeze, transpose, t, permute, expand, expand_as,
           broadcast_to, narrow, contiguous, clone, flip, tril, triu, repeat, tile, split, chunk, unbind, select):
    setattr(Tensor, _f.__name__, _f)
Tensor.swapaxes = transpose
Tensor.shape = property(shape)
Tensor.size = size
Tensor.T = property(T)
Tensor.mT = property(mT)
