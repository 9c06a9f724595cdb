"""Convolution modules: Conv1d/2d/3d and ConvTranspose1d/2d/3d with torch 1.13's constructor
signatures, defaults, parameter shapes and names, init, extra_repr and state_dict keys, so
weights move both ways between PyTorch and FusionFlow. The work is F.conv* (C ops)."""
import math

from ..._tensor import uniform
from ... import _dtype
from .. import functional as F
from .. import init
from .._functional_conv import _ntuple, pad_mode
from ..parameter import Parameter
from .module import Module

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """What the six share (torch's _ConvNd): checks, weight [out, in / groups, k...] (transposed:
    [in, out / groups, k...]), bias [out], reset_parameters, extra_repr. `seed` (ours) draws
    the initial values from a seeded generator instead of the global one (manual_seed)."""
    _n = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None, seed=None):
        super().__init__()
        n, name = self._n, type(self).__name__
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError("Invalid padding string {!r}, should be one of {{'valid', 'same'}}".format(padding))
            if padding == "same" and any(s != 1 for s in _ntuple(stride, n, "stride")):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError("padding_mode must be one of {}, but got padding_mode='{}'".format(
                _PADDING_MODES, padding_mode))
        if transposed and padding_mode != "zeros":
            raise ValueError('Only "zeros" padding mode is supported for {}'.format(name))
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _ntuple(kernel_size, n, "kernel_size")
        self.stride = _ntuple(stride, n, "stride")
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n, "padding")
        self.dilation = _ntuple(dilation, n, "dilation")
        self.transposed = transposed
        self.output_padding = _ntuple(output_padding, n, "output_padding")
        self.groups = groups
        self.padding_mode = padding_mode
        # (before, after) per spatial dim for the non-zeros padding modes, as torch's
        # _reversed_padding_repeated_twice (which lists the last dim first)
        if padding == "same":
            total = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
            self._mode_pads = [(t // 2, t - t // 2) for t in total]
        elif padding == "valid":
            self._mode_pads = [(0, 0)] * n
        else:
            self._mode_pads = [(p, p) for p in self.padding]
        self._reversed_padding_repeated_twice = [v for pr in reversed(self._mode_pads) for v in pr]  # torch's name
        dt = _dtype.float32 if dtype is None else _dtype.to_dtype(dtype)
        shape = ((in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups)) \
            + self.kernel_size
        fan_in = shape[1] * math.prod(self.kernel_size)
        # kaiming_uniform_(a=sqrt(5)) has bound sqrt(6 / ((1 + 5) fan_in)) = 1 / sqrt(fan_in), the bias's too
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        self.weight = Parameter(uniform(shape, -bound, bound, dtype=dt, device=device, seed=seed))
        self.bias = Parameter(uniform((out_channels,), -bound, bound, dtype=dt, device=device,
                                      seed=None if seed is None else seed + 1)) if bias else None

    def reset_parameters(self):
        """torch's: kaiming_uniform_(weight, a=sqrt(5)), bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
        fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
        if fan_in > 0:
            init.kaiming_uniform_(self.weight, a=math.sqrt(5))
            if self.bias is not None:
                init.uniform_(self.bias, -1.0 / math.sqrt(fan_in), 1.0 / math.sqrt(fan_in))

    def extra_repr(self):
        n = self._n
        s = "{}, {}, kernel_size={}, stride={}".format(self.in_channels, self.out_channels, self.kernel_size,
                                                       self.stride)
        if self.padding != (0,) * (len(self.padding) if not isinstance(self.padding, str) else n):
            s += ", padding={}".format(self.padding)
        if self.dilation != (1,) * n:
            s += ", dilation={}".format(self.dilation)
        if self.output_padding != (0,) * n:
            s += ", output_padding={}".format(self.output_padding)
        if self.groups != 1:
            s += ", groups={}".format(self.groups)
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={}".format(self.padding_mode)
        return s


class _Conv(_ConvNd):
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None, seed=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups,
                         bias, padding_mode, device, dtype, seed)

    def _conv_forward(self, input, weight, bias):
        fn = getattr(F, self._fn)
        if self.padding_mode != "zeros":
            return fn(pad_mode(input, self._mode_pads, self.padding_mode), weight, bias, self.stride, 0,
                      self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    _n, _fn = 1, "conv1d"


class Conv2d(_Conv):
    _n, _fn = 2, "conv2d"


class Conv3d(_Conv):
    _n, _fn = 3, "conv3d"


class _ConvTransposeNd(_ConvNd):
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None, seed=None):
        if isinstance(padding, str):
            raise ValueError("{}: padding must be an int or a tuple, got {!r}".format(type(self).__name__, padding))
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, True, output_padding,
                         groups, bias, padding_mode, device, dtype, seed)

    def _output_padding(self, input, output_size):
        """torch's: output_padding from a requested output_size within the sizes stride allows."""
        n = self._n
        if output_size is None:
            return self.output_padding
        skip = 2 if input.ndim == n + 2 else 1
        output_size = list(output_size)
        if len(output_size) == skip + n:
            output_size = output_size[skip:]
        if len(output_size) != n:
            raise ValueError("ConvTranspose{}D: for {}D input, output_size must have {} or {} elements (got {})"
                             .format(n, input.ndim, n, skip + n, len(output_size)))
        res = []
        for d in range(n):
            lo = ((input.shape[d + skip] - 1) * self.stride[d] - 2 * self.padding[d]
                  + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            hi = lo + self.stride[d] - 1
            if not lo <= output_size[d] <= hi:
                raise ValueError("requested an output size of {}, but valid sizes range from {} to {} (for an "
                                 "input of {})".format(output_size, lo, hi, list(input.shape)[skip:]))
            res.append(output_size[d] - lo)
        return tuple(res)

    def forward(self, input, output_size=None):
        op = self._output_padding(input, output_size)
        return getattr(F, self._fn)(input, self.weight, self.bias, self.stride, self.padding, op, self.groups,
                                    self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    _n, _fn = 1, "conv_transpose1d"


class ConvTranspose2d(_ConvTransposeNd):
    _n, _fn = 2, "conv_transpose2d"


class ConvTranspose3d(_ConvTransposeNd):
    _n, _fn = 3, "conv_transpose3d"
