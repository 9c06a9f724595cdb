"""Pooling modules."""
from .. import functional as F
from .module import Module


class _MaxPoolNd(Module):
    """torch's _MaxPoolNd: stride defaults to the kernel; the options go to F.max_poolNd,
    which refuses those FusionFlow does not offer yet."""
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.dilation,
                              ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self):
        return "kernel_size={kernel_size}, stride={stride}, padding={padding}, dilation={dilation}, " \
            "ceil_mode={ceil_mode}".format(**self.__dict__)


class MaxPool1d(_MaxPoolNd):
    _fn = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    _fn = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    _fn = staticmethod(F.max_pool3d)


class AvgPool1d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        one = (lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v,))  # torch's _single
        self.kernel_size = one(kernel_size)
        self.stride = one(stride if stride is not None else kernel_size)
        self.padding = one(padding)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self):
        return "kernel_size={}, stride={}, padding={}".format(self.kernel_size, self.stride, self.padding)


class AvgPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return "kernel_size={}, stride={}, padding={}".format(self.kernel_size, self.stride, self.padding)


class AvgPool3d(AvgPool2d):
    def forward(self, input):
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class _AdaptivePool(Module):
    """torch's _AdaptiveAvgPoolNd / _AdaptiveMaxPoolNd: output_size an int or a tuple whose
    None entries keep the input's size."""
    _fn = None

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return type(self)._fn(input, self.output_size)

    def extra_repr(self):
        return "output_size={}".format(self.output_size)


class _AdaptiveMaxPool(_AdaptivePool):
    def __init__(self, output_size, return_indices=False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        return type(self)._fn(input, self.output_size, self.return_indices)


class AdaptiveAvgPool1d(_AdaptivePool):
    _fn = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptivePool):
    _fn = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptivePool):
    _fn = staticmethod(F.adaptive_avg_pool3d)


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    _fn = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    _fn = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPool):
    _fn = staticmethod(F.adaptive_max_pool3d)


class _LPPoolNd(Module):
    _fn = None

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input):
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self):
        return "norm_type={norm_type}, kernel_size={kernel_size}, stride={stride}, ceil_mode={ceil_mode}".format(
            **self.__dict__)


class LPPool1d(_LPPoolNd):
    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    _fn = staticmethod(F.lp_pool2d)


class _MaxUnpoolNd(Module):
    _fn, _nd = None, 1

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        tup = (lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v,) * type(self)._nd)  # torch's _ntuple
        self.kernel_size = tup(kernel_size)
        self.stride = tup(stride if stride is not None else kernel_size)
        self.padding = tup(padding)

    def forward(self, input, indices, output_size=None):
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self):
        return "kernel_size={}, stride={}, padding={}".format(self.kernel_size, self.stride, self.padding)


class MaxUnpool1d(_MaxUnpoolNd):
    _fn, _nd = staticmethod(F.max_unpool1d), 1


class MaxUnpool2d(_MaxUnpoolNd):
    _fn, _nd = staticmethod(F.max_unpool2d), 2


class MaxUnpool3d(_MaxUnpoolNd):
    _fn, _nd = staticmethod(F.max_unpool3d), 3


class Unfold(Module):
    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return "kernel_size={kernel_size}, dilation={dilation}, padding={padding}, stride={stride}".format(
            **self.__dict__)


class Fold(Module):
    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return "output_size={output_size}, kernel_size={kernel_size}, dilation={dilation}, padding={padding}, " \
            "stride={stride}".format(**self.__dict__)


class _FractionalMaxPoolNd(Module):
    """torch's FractionalMaxPool2d/3d: new random window starts at every forward (or the
    _random_samples given), output_size or output_ratio."""
    _nd = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        super().__init__()
        if output_size is None and output_ratio is None:
            raise ValueError("FractionalMaxPool%dd requires specifying either an output size, or a pooling ratio"
                             % self._nd)
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        ratios = output_ratio if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * self._nd
        if output_ratio is not None and not all(0 < r < 1 for r in ratios):
            raise ValueError("output_ratio must be between 0 and 1 (got {})".format(output_ratio))
        self.kernel_size = kernel_size
        self.output_size = output_size
        self.output_ratio = output_ratio
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)

    def forward(self, input):
        fn = F.fractional_max_pool2d if self._nd == 2 else F.fractional_max_pool3d
        return fn(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                  _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    _nd = 3
