"""Convolution modules."""
import math

from ..._tensor import uniform
from ... import _dtype
from .. import functional as F
from ..parameter import Parameter
from .module import Module


class Conv2d(Module):
    """PyTorch's Conv2d (groups 1, dilation 1, zero padding): weight [out, in, kh, kw] and
    bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in * kh * kw (PyTorch's default
    kaiming_uniform_(a=sqrt(5)) comes to that bound); seeded by manual_seed() or `seed`."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", dtype=_dtype.float32, seed=None):
        super().__init__()
        if padding_mode != "zeros":
            raise NotImplementedError("Conv2d: padding_mode=%r is not supported (zeros only)" % (padding_mode,))
        F._no_dilation(dilation, groups, "Conv2d")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = F._pair(kernel_size, "kernel_size")
        self.stride, self.padding = stride, padding
        fan_in = in_channels * self.kernel_size[0] * self.kernel_size[1]
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        self.weight = Parameter(uniform((out_channels, in_channels) + self.kernel_size, -bound, bound, dtype=dtype,
                                        seed=seed))
        self.bias = Parameter(uniform((out_channels,), -bound, bound, dtype=dtype,
                                      seed=None if seed is None else seed + 1)) if bias else None

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding)

    def extra_repr(self):
        return "%d, %d, kernel_size=%s, stride=%s, padding=%s" % (self.in_channels, self.out_channels,
                                                                 self.kernel_size, self.stride, self.padding)
