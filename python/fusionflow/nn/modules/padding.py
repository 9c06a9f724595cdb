"""Padding modules over F.pad: Constant/Zero/Reflection/Replication Pad 1d/2d/3d."""
from .. import functional as F
from .module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad2d", "ReflectionPad1d", "ReflectionPad2d",
           "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d"]


def _ntuple(padding, n):
    if isinstance(padding, int):
        return (padding,) * n
    padding = tuple(padding)
    if len(padding) != n:
        raise ValueError("padding must be an int or a %d-tuple, got %r" % (n, padding))
    return padding


class _ConstantPadNd(Module):
    _n = 2

    def __init__(self, padding, value):
        super().__init__()
        self.padding = _ntuple(padding, self._n)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return "padding={}, value={}".format(self.padding, self.value)


class ConstantPad1d(_ConstantPadNd):
    _n = 2


class ConstantPad2d(_ConstantPadNd):
    _n = 4


class ConstantPad3d(_ConstantPadNd):
    _n = 6


class ZeroPad2d(ConstantPad2d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return "{}".format(self.padding)


class _IndexPadNd(Module):
    _n, _mode = 2, "reflect"

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, self._n)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return "{}".format(self.padding)


class ReflectionPad1d(_IndexPadNd):
    _n, _mode = 2, "reflect"


class ReflectionPad2d(_IndexPadNd):
    _n, _mode = 4, "reflect"


class ReflectionPad3d(_IndexPadNd):
    _n, _mode = 6, "reflect"


class ReplicationPad1d(_IndexPadNd):
    _n, _mode = 2, "replicate"


class ReplicationPad2d(_IndexPadNd):
    _n, _mode = 4, "replicate"


class ReplicationPad3d(_IndexPadNd):
    _n, _mode = 6, "replicate"
