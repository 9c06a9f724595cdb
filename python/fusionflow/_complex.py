"""Complex tensors: torch.view_as_real, view_as_complex, complex, polar, is_complex, and the
Python complex numbers as operands (x * 1j). The dtypes are complex64/complex128 (_dtype.py);
the math is in the C core (ops/complex.c, core/kernel_complex.c), which composes it from
real ops on real views of the same storage, so every backend runs it."""
import numpy as np

from . import _dtype
from ._lib import C
from ._tensor import Tensor, as_tensor, wrap

__all__ = ["view_as_real", "view_as_complex", "complex", "polar", "is_complex"]

_builtin_complex = complex


def view_as_real(input):
    """c64 [S] -> f32 [S, 2] (re, im), sharing input's storage."""
    return wrap(C.ff_view_as_real(as_tensor(input)._ptr))


def view_as_complex(input):
    """f32/f64 [S, 2] with a last stride of 1 -> c64/c128 [S], sharing input's storage."""
    return wrap(C.ff_view_as_complex(as_tensor(input)._ptr))


def complex(real, imag, *, out=None):  # noqa: A001  (torch.complex)
    r = wrap(C.ff_complex(as_tensor(real)._ptr, as_tensor(imag)._ptr))
    return r if out is None else out.copy_(r)


def polar(abs, angle, *, out=None):  # noqa: A002  (torch.polar's argument names)
    """abs * (cos(angle) + i sin(angle))."""
    r = wrap(C.ff_polar(as_tensor(abs)._ptr, as_tensor(angle)._ptr))
    return r if out is None else out.copy_(r)


def is_complex(input):
    return input.dtype.is_complex


def complex_operand(value, like):
    """A Python/NumPy complex number as the 0-d tensor an op with `like` takes: like's dtype
    when like is complex, else the complex of like's float width (f64 -> c128), as PyTorch's
    wrapped complex numbers promote."""
    dt = like.dtype if like.dtype.is_complex else (_dtype.complex128 if like.dtype is _dtype.float64
                                                   else _dtype.complex64)
    v = np.array(_builtin_complex(value), dtype=dt.np)
    t = wrap(C.ff_from_data_on(C.ff_tensor_backend(like._ptr), v.ctypes.data, 0, None, dt.code))
    return t


def is_complex_number(x):
    return isinstance(x, (_builtin_complex, np.complexfloating))


def _item(t):
    """Tensor.item() of a complex tensor: a Python complex (of its one element, as torch)."""
    if t.numel() != 1:
        raise ValueError("item(): a Tensor with %d elements cannot be converted to a Python scalar" % t.numel())
    re = view_as_real(t.detach()).numpy().reshape(-1)
    return _builtin_complex(float(re[0]), float(re[1]))


Tensor.__complex__ = lambda self: _builtin_complex(self.item())
