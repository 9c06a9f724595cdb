"""The pooling functions of torch.nn.functional over the C ops of include/ff/pool.h:
adaptive average and max pooling, 1-3 spatial axes, with torch 1.13's signatures."""
from ctypes import byref, c_int64, c_void_p

from ..._lib import C
from ..._tensor import wrap

__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
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
