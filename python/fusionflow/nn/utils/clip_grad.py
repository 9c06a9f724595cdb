"""clip_grad_norm_ (the C library's ff_clip_grad_norm for the 2-norm) and clip_grad_value_,
with torch.nn.utils' signatures and results."""
import ctypes
import math
import warnings

from ... import _dtype
from ..._lib import lib, check_status
from ..._tensor import Tensor, tensor

_c_clip = lib.ff_clip_grad_norm
_c_clip.restype = ctypes.c_int
_c_clip.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_double, ctypes.POINTER(ctypes.c_double)]


def _with_grads(parameters):
    ps = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [p for p in ps if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scales the .grad of parameters so that their joint norm_type-norm is at most max_norm;
    returns the norm before clipping (a 0-d float32 tensor). The 2-norm runs in C
    (ff_clip_grad_norm: scale max_norm / norm where torch uses max_norm / (norm + 1e-6),
    a relative difference of 1e-6 / norm)."""
    ps = _with_grads(parameters)
    max_norm, norm_type = float(max_norm), float(norm_type)
    if not ps:
        return tensor(0.0)
    total = None
    if norm_type == 2.0:
        arr = (ctypes.c_void_p * len(ps))(*[p._ptr for p in ps])
        out = ctypes.c_double()
        check_status(_c_clip(arr, len(ps), max_norm, ctypes.byref(out)))
        total = out.value
        if math.isfinite(total):
            return tensor(total, dtype=ps[0].grad.dtype)
    else:
        grads = [p.grad.detach() for p in ps]
        if norm_type == math.inf:
            total = max(float(g.abs().amax()) for g in grads)
        else:
            total = sum(float((g.to(_dtype.float64).abs() ** norm_type).sum()) for g in grads) ** (1.0 / norm_type)
    if not math.isfinite(total):
        if error_if_nonfinite:
            raise RuntimeError("The total norm of order %s for gradients from `parameters` is non-finite, so it "
                               "cannot be clipped. To disable this error and scale the gradients by the non-finite "
                               "norm anyway, set `error_if_nonfinite=False`" % norm_type)
    coef = max_norm / (total + 1e-6)  # inf -> 0 and nan -> nan, as torch's clamped coefficient
    if not coef >= 1:
        for p in ps:
            p.grad = p.grad.detach() * coef
    return tensor(total, dtype=ps[0].grad.dtype)


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    warnings.warn("nn.utils.clip_grad_norm is now deprecated in favor of nn.utils.clip_grad_norm_.", stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite)


def clip_grad_value_(parameters, clip_value):
    """Clamps every .grad to [-clip_value, clip_value], in place."""
    v = float(clip_value)
    for p in _with_grads(parameters):
        p.grad = p.grad.detach().clamp(-v, v)
