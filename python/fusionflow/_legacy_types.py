"""torch's legacy tensor types (FloatTensor, LongTensor, ...), which older programs still call
as constructors and test with isinstance: X(data) is tensor(data, dtype=X's dtype), X(*sizes)
an uninitialized tensor of that shape, isinstance(t, X) holds when t has X's dtype, and
t.type(X) casts."""
import numbers

from . import _dtype
from ._factories import empty, tensor
from ._tensor import Tensor

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
           "ByteTensor", "BoolTensor", "CharTensor", "ShortTensor"]


def legacy_new(name, args, dtype, device=None):
    """What torch's legacy constructors make of their arguments: none, an empty 1-d tensor;
    integers or a Size, an (uninitialised: here zero-filled) tensor of that shape; one
    sequence or array, a copy of it as dtype; one tensor, a detached alias of it (a typed
    constructor refuses another dtype, as torch; torch.Tensor takes any)."""
    from ._shape import Size
    if not args:
        return empty(0, dtype=dtype, device=device)
    if len(args) == 1:
        a = args[0]
        if isinstance(a, Size):
            return empty(*a, dtype=dtype, device=device)
        if isinstance(a, Tensor):
            if a.dtype is not dtype and name != "Tensor":  # torch.Tensor(t) is t's alias whatever its dtype
                raise TypeError("%s(): expected a tensor of dtype %s, got %s (use .to(%s))"
                                % (name, dtype.name, a.dtype.name, dtype.name))
            return a.detach() if device is None else a.detach().to(device)
        if isinstance(a, bool) or (isinstance(a, numbers.Real) and not isinstance(a, numbers.Integral)):
            raise TypeError("%s(): data must be a sequence (got %s)" % (name, type(a).__name__))
        if not isinstance(a, numbers.Integral):
            return tensor(a, dtype=dtype, device=device)  # data: a list, tuple or array
    for a in args:
        if not isinstance(a, numbers.Integral) or isinstance(a, bool):
            raise TypeError("%s(): expected data or integer sizes, got %r" % (name, a))
    if any(a < 0 for a in args):
        raise RuntimeError("%s(): trying to create a tensor with negative dimension: %s" % (name, list(args)))
    return empty(*args, dtype=dtype, device=device)


class _LegacyType(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype

    def __call__(cls, *args, device=None):
        return legacy_new(cls.__name__, args, cls.dtype, device)

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
CharTensor = _legacy("CharTensor", _dtype.int8)
ShortTensor = _legacy("ShortTensor", _dtype.int16)
