"""torch.nn.functional's *_with_indices forms (the pools that always return (values, indices))
and conv_tbc (a 1-D convolution over fairseq's time-batch-channel layout)."""
from .._functional_conv import conv1d
from .pooling import (adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d, max_pool1d, max_pool2d,
                      max_pool3d)

__all__ = ["max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "conv_tbc"]


def _with_indices(pool):
    def f(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
        return pool(input, kernel_size, stride, padding, dilation, ceil_mode, True)
    f.__name__ = pool.__name__ + "_with_indices"
    return f


def _adaptive_with_indices(pool):
    def f(input, output_size, return_indices=False):
        return pool(input, output_size, True)
    f.__name__ = pool.__name__ + "_with_indices"
    return f


max_pool1d_with_indices = _with_indices(max_pool1d)
max_pool2d_with_indices = _with_indices(max_pool2d)
max_pool3d_with_indices = _with_indices(max_pool3d)
adaptive_max_pool1d_with_indices = _adaptive_with_indices(adaptive_max_pool1d)
adaptive_max_pool2d_with_indices = _adaptive_with_indices(adaptive_max_pool2d)
adaptive_max_pool3d_with_indices = _adaptive_with_indices(adaptive_max_pool3d)


def conv_tbc(input, weight, bias, pad=0):
    """input [T, B, C_in], weight [K, C_in, C_out], bias [C_out] -> [T', B, C_out]: conv1d with
    the layouts permuted (views), as torch's conv_tbc."""
    if input.ndim != 3 or weight.ndim != 3:
        raise RuntimeError("conv_tbc: expected a 3-D input [T, B, C] and a 3-D weight [K, C_in, C_out], got %d-D "
                           "and %d-D" % (input.ndim, weight.ndim))
    y = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return y.permute(2, 0, 1)
