"""Tensor.new_* (new_zeros, new_ones, new_full, new_empty, new_tensor: self's dtype and
device unless given), element_size, ndimension and __format__, attached to Tensor as
_shape attaches its methods."""
from ._factories import full, tensor
from ._tensor import Tensor, _shape_args

__all__ = []


def _like(self, dtype, device):
    return (self.dtype if dtype is None else dtype), (self.device if device is None else device)


def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
    dtype, device = _like(self, dtype, device)
    return full(_shape_args((size,)), fill_value, dtype=dtype, device=device, requires_grad=requires_grad)


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    return new_full(self, _shape_args(size), 0, dtype, device, requires_grad)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    return new_full(self, _shape_args(size), 1, dtype, device, requires_grad)


def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    """Zero-filled: FusionFlow hands out no uninitialised memory."""
    return new_full(self, _shape_args(size), 0, dtype, device, requires_grad)


def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    """A copy of data (a tensor's is detached), with self's dtype and device unless given."""
    dtype, device = _like(self, dtype, device)
    if isinstance(data, Tensor):
        return data.detach().to(device, dtype, copy=True).requires_grad_(requires_grad)
    return tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


def element_size(self):
    return self.dtype.itemsize


def ndimension(self):
    return self.ndim


def __format__(self, spec):
    """f"{loss:.4f}": a 0-d tensor formats as its number; others take only the empty spec."""
    if self.ndim == 0:
        return format(self.item(), spec)
    if spec:
        raise TypeError("unsupported format string passed to Tensor.__format__: %r (only 0-d tensors take one; "
                        "shape %s)" % (spec, tuple(self.shape)))
    return str(self)


for _f in (new_full, new_zeros, new_ones, new_empty, new_tensor, element_size, ndimension, __format__):
    setattr(Tensor, _f.__name__, _f)
del _f
