"""Tensor methods that are about the tensor rather than its values: predicates, legacy
constructors, type(), host callbacks (apply_, map_), and the names PyTorch 1.13 itself
removed; attached by _methods.py."""
import builtins

import numpy as np

from . import _dtype
from ._tensor import Tensor


# ---- misc -----------------------------------------------------------------------------
def is_nonzero(self):
    if self.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with %s values is ambiguous"
                           % ("no" if self.numel() == 0 else "more than one"))
    return builtins.bool(self.item())


def is_same_size(self, other):
    return tuple(self.shape) == tuple(other.shape)


def is_signed(self):
    return self.dtype not in (_dtype.uint8, _dtype.bool_)


def new(self, *args, **kwargs):
    """The legacy Tensor.new: new(size...) gives a (zero-filled) tensor of that size, new(data)
    a tensor of the data, in self's dtype and device."""
    if len(args) == 1 and not isinstance(args[0], int):
        return self.new_tensor(args[0])
    return self.new_zeros(*args)


def new_empty_strided(self, size, stride, dtype=None, device=None, requires_grad=False):
    return self.new_empty(tuple(size), dtype=dtype, device=device, requires_grad=requires_grad)


def to_dense(self, dtype=None):
    return self if dtype is None else self.to(dtype)


def pin_memory(self):
    """A copy (fusionflow's host memory needs no pinning); DataLoader(pin_memory=True) works."""
    return self.clone()


_TYPES = {"torch.FloatTensor": _dtype.float32, "torch.DoubleTensor": _dtype.float64, "torch.HalfTensor":
          _dtype.float16, "torch.BFloat16Tensor": _dtype.bfloat16, "torch.LongTensor": _dtype.int64,
          "torch.IntTensor": _dtype.int32, "torch.ByteTensor": _dtype.uint8, "torch.BoolTensor": _dtype.bool_,
          "torch.CharTensor": _dtype.int8, "torch.ShortTensor": _dtype.int16}


def type(self, dtype=None, non_blocking=False, **kwargs):
    """type() -> 'torch.FloatTensor' (PyTorch's name, so programs comparing it work);
    type(dtype or such a name) -> a cast."""
    if dtype is None:
        for k, v in _TYPES.items():
            if v is self.dtype:
                return k
        raise TypeError("type: %s has no PyTorch tensor type name" % self.dtype.name)
    if isinstance(dtype, str) and dtype in _TYPES:
        dtype = _TYPES[dtype]
    return self.to(getattr(dtype, "dtype", dtype))  # a legacy type (FloatTensor) names its dtype


def apply_(self, callable):
    """Applies a Python callable to each element, in place (CPU tensors in PyTorch)."""
    f = np.vectorize(callable, otypes=[self.dtype.np])
    return self.copy_(f(self.numpy()) if self.numel() else self.numpy())


def map_(self, tensor_, callable):
    a, b = np.broadcast_arrays(self.numpy(), tensor_.numpy())
    f = np.vectorize(callable, otypes=[self.dtype.np])
    return self.copy_(f(a, b) if self.numel() else self.numpy())


def map2_(self, x, y, callable):
    a, b, c = np.broadcast_arrays(self.numpy(), x.numpy(), y.numpy())
    f = np.vectorize(callable, otypes=[self.dtype.np])
    return self.copy_(f(a, b, c) if self.numel() else self.numpy())


def byte(self):
    return self.to(_dtype.uint8)


def short(self, memory_format=None):
    return self.to(_dtype.int16)


def char(self, memory_format=None):
    return self.to(_dtype.int8)


def conj_physical_(self):
    return self


def resize(self, *sizes):
    """The deprecated out-of-place resize: a reshape to a size of the same numel, as torch's."""
    size = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else tuple(sizes)
    if int(np.prod(size)) != self.numel():
        raise RuntimeError("resize: shape %s is invalid for input of size %d" % (size, self.numel()))
    return self.reshape(size)


def resize_as(self, other):
    return resize(self, tuple(other.shape))


def as_subclass(self, cls):
    """self as an instance of cls (a Tensor subclass), sharing memory and history."""
    if not (isinstance(cls, builtins.type) and issubclass(cls, Tensor)):
        raise TypeError("as_subclass: cls must be a subclass of Tensor, got %r" % (cls,))
    from ._tensor import wrap
    from ._lib import C, shape_array
    n, arr = shape_array(tuple(self.shape))
    return wrap(C.ff_reshape_view(self._ptr, n, arr), cls)


def symeig(self, eigenvectors=False, upper=True):
    raise NotImplementedError("symeig: fusionflow has no symmetric eigensolver yet (nor linalg.eigh)")


def _removed(name, new):
    def method(self, *args, **kwargs):
        raise RuntimeError("%s: this function was deprecated since PyTorch 1.9 and is removed (as in PyTorch 1.13); "
                           "use %s" % (name, new))
    method.__name__ = name
    return method


lstsq = _removed("lstsq", "fusionflow.linalg.lstsq")
solve = _removed("solve", "fusionflow.linalg.solve")
eig = _removed("eig", "fusionflow.linalg.eig")


def reinforce(self, reward):
    raise RuntimeError("reinforce() was removed from PyTorch; use torch.distributions instead")
