"""torch's legacy tensor types (FloatTensor, LongTensor, ...), which older programs still call
as constructors and test with isinstance: X(data) is tensor(data, dtype=X's dtype), X(*sizes)
an uninitialized tensor of that shape, isinstance(t, X) holds when t has X's dtype, and
t.type(X) casts."""
import numbers

from . import _dtype
from ._factories import empty, tensor
from ._tensor import Tensor

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
           "ByteTensor", "BoolTensor"]


class _LegacyType(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype

    def __call__(cls, *args, device=None):
        if len(args) == 1 and not isinstance(args[0], numbers.Integral):
            return tensor(args[0], dtype=cls.dtype, device=device)  # data: a list, array or tensor
        for a in args:
            if not isinstance(a, numbers.Integral) or isinstance(a, bool):
                raise TypeError("%s(): expected data or integer sizes, got %r" % (cls.__name__, a))
        return empty(*args, dtype=cls.dtype, device=device)

    def __repr__(cls):
        return "<class 'fusionflow.%s'>" % cls.__name__


def _legacy(name, dtype):
    return _LegacyType(name, (), {"dtype": dtype, "__module__": "fusionflow"})


FloatTensor = _legacy("FloatTensor", _dtype.float32)
DoubleTensor = _legacy("DoubleTensor", _dtype.float64)
HalfTensor = _legacy("HalfTensor", _dtype.float16)
BFloat16Tensor = _legacy("BFloat16Tensor", _dtype.bfloat16)
LongTensor = _legacy("LongTensor", _dtype.int64)
IntTensor = _legacy("IntTensor", _dtype.int32)
ByteTensor = _legacy("ByteTensor", _dtype.uint8)
BoolTensor = _legacy("BoolTensor", _dtype.bool_)
