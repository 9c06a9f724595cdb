"""Tensor's in-place operators (attached to Tensor, as _shape.py attaches its part): the C
in-place ops, which autograd records as PyTorch does (ops/inplace.c, autograd/view_history.c);
ops without a C in-place form write their out-of-place result through _rebase_."""
import numpy as np

from ._lib import C, FusionFlowError, check_status
from ._tensor import Tensor, _check_alpha, _scalar_ok, as_tensor
from ._factories import full, rand, randn, tensor


def _inplace(self, other, fn_t, fn_s, scalar_map=None):
    if isinstance(other, Tensor):
        check_status(fn_t(self._ptr, other._ptr))
    elif _scalar_ok(other):
        check_status(fn_s(self._ptr, float(scalar_map(other) if scalar_map else other)))
    else:
        o = tensor(other)
        check_status(fn_t(self._ptr, o._ptr))
    return self

def add_(self, other, alpha=1):
    _check_alpha(self, alpha, "add_")
    if alpha != 1:
        if isinstance(other, Tensor) and self.dtype.is_floating_point:
            check_status(C.ff_axpy_(self._ptr, float(alpha), other._ptr))
            return self
        other = other * alpha  # an integer self: int * int stays exact (axpy's alpha is a float)
    return self._inplace(other, C.ff_add_, C.ff_add_scalar_)

def sub_(self, other, alpha=1):
    _check_alpha(self, alpha, "sub_")
    if isinstance(other, Tensor) and self.dtype.is_floating_point:
        check_status(C.ff_axpy_(self._ptr, -float(alpha), other._ptr))
        return self
    return self._inplace(other * alpha if alpha != 1 else other, C.ff_sub_, C.ff_add_scalar_, lambda s: -s)

def mul_(self, other):
    return self._inplace(other, C.ff_mul_, C.ff_mul_scalar_)

def div_(self, other):
    if _scalar_ok(other):
        if not self.dtype.is_floating_point:
            raise FusionFlowError("div_: result of true division is float; it cannot be stored in-place "
                                  "in a %s tensor" % self.dtype.name)
        # divide, not multiply by 1/s: x /= 0 gives inf/nan as PyTorch, and x / 3 rounds once
        other = full((), other, dtype=self.dtype, device=self.device)
    return self._inplace(other, C.ff_div_, C.ff_mul_scalar_)

def pow_(self, other):
    return self._rebase_(self ** other)

def copy_(self, src):
    if isinstance(src, np.ndarray) and src.shape == tuple(self.shape) and src.dtype == self.dtype.np:
        # host data of the tensor's shape and dtype: one upload into its memory
        # (ff_copy_from_host_), no staging tensor; any other source broadcasts/casts
        a = np.ascontiguousarray(src)
        check_status(C.ff_copy_from_host_(self._ptr, a.ctypes.data, a.nbytes))
        return self
    s = as_tensor(src)
    check_status(C.ff_copy_(self._ptr, s._ptr))
    return self

def fill_(self, value):
    check_status(C.ff_fill_(self._ptr, float(value)))
    return self

def zero_(self):
    check_status(C.ff_zero_(self._ptr))
    return self

def clamp_(self, min=None, max=None):
    return self._rebase_(self.clamp(min, max))

def uniform_(self, a=0.0, b=1.0, *, generator=None):
    return self.copy_(rand(*self.shape, dtype=self.dtype, device=self.device, generator=generator) * (b - a) + a)

def normal_(self, mean=0.0, std=1.0, *, generator=None):
    return self.copy_(randn(*self.shape, dtype=self.dtype, device=self.device, generator=generator) * std + mean)


for _f in (_inplace, add_, sub_, mul_, div_, pow_, copy_, fill_, zero_, clamp_, uniform_, normal_):
    setattr(Tensor, _f.__name__, _f)
Tensor.__iadd__ = add_
Tensor.__isub__ = sub_
Tensor.__imul__ = mul_
Tensor.__itruediv__ = div_
Tensor.__ipow__ = pow_
