"""The pooling functions of torch.nn.functional, with torch 1.13's signatures: max/avg
pooling in 1-D (the 2-D ops on an H = 1 view) and adaptive average and max pooling over
1-3 spatial axes (the C ops of include/ff/pool.h)."""
from ctypes import byref, c_int64, c_void_p

from ..._lib import C
from ..._tensor import wrap

__all__ = ["max_pool1d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "adaptive_max_pool3d"]


def _out_sizes(input, output_size, nd, name):
    """output_size: an int or nd entries, None keeping the input's size (as torch)."""
    sizes = (output_size,) * nd if isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != nd:
        raise ValueError("%s: output_size must be an int or %d values, got %r" % (name, nd, output_size))
    if input.ndim not in (nd + 1, nd + 2):
        raise ValueError("%s: expected a %dD or %dD input, got %dD" % (name, nd + 1, nd + 2, input.ndim))
    spatial = input.shape[input.ndim - nd:]
    return (c_int64 * nd)(*[spatial[d] if s is None else int(s) for d, s in enumerate(sizes)])


def _adaptive_avg(input, output_size, nd, name):
    return wrap(C.ff_adaptive_avg_pool(input._ptr, nd, _out_sizes(input, output_size, nd, name)))


def _adaptive_max(input, output_size, return_indices, nd, name):
    sizes = _out_sizes(input, output_size, nd, name)
    if not return_indices:
        return wrap(C.ff_adaptive_max_pool(input._ptr, nd, sizes, None))
    ix = c_void_p()
    y = wrap(C.ff_adaptive_max_pool(input._ptr, nd, sizes, byref(ix)))
    return y, wrap(ix.value)


def _one(v, name):
    if isinstance(v, (tuple, list)):
        if len(v) != 1:
            raise ValueError("%s must be an int or 1 value, got %r" % (name, v))
        return int(v[0])
    return int(v)


def _pool1d(pool2d, input, kernel_size, stride, padding, name, **opts):
    """[N, C, L] or [C, L] pooled as [N, C, 1, L] with windows 1 x k."""
    if input.ndim not in (2, 3):
        raise ValueError("%s: expected a 2D or 3D input, got %dD" % (name, input.ndim))
    k = _one(kernel_size, "%s: kernel_size" % name)
    s = k if stride is None or (isinstance(stride, (tuple, list)) and not stride) else _one(stride, name + ": stride")
    y = pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, _one(padding, name + ": padding")), **opts)
    return y.squeeze(-2)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    from ..functional import max_pool2d
    return _pool1d(max_pool2d, input, kernel_size, stride, padding, "max_pool1d",
                   dilation=(1, _one(dilation, "max_pool1d: dilation")), ceil_mode=ceil_mode,
                   return_indices=return_indices)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    from ..functional import avg_pool2d
    return _pool1d(avg_pool2d, input, kernel_size, stride, padding, "avg_pool1d", ceil_mode=ceil_mode,
                   count_include_pad=count_include_pad)


def adaptive_avg_pool1d(input, output_size):
    return _adaptive_avg(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size):
    return _adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d")


def adaptive_avg_pool3d(input, output_size):
    return _adaptive_avg(input, output_size, 3, "adaptive_avg_pool3d")


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _adaptive_max(input, output_size, return_indices, 1, "adaptive_max_pool1d")


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return _adaptive_max(input, output_size, return_indices, 2, "adaptive_max_pool2d")


def adaptive_max_pool3d(input, output_size, return_indices=False):
    return _adaptive_max(input, output_size, return_indices, 3, "adaptive_max_pool3d")
