"""The C extension (python/ext, fusionflow._ffext) takes over Tensor's hottest methods.

The Python definitions stay the semantics: each C fast path covers the common operands
and hands the rest to the Python method it replaces (its "fallback"). install() runs once,
at the end of the package's import, when every module has attached its methods: it gives
the C side those Python methods, then removes from Tensor the ones the C base class
(TensorBase) implements, so the base's are found. A method some other module redefined
(not the one from the modules below) is left alone: the C side does not know it.
"""
from . import _dtype
from ._lib import ext

# the modules whose definitions the C side reproduces
_OWNERS = ("fusionflow._tensor", "fusionflow._shape", "fusionflow._indexing")
# what TensorBase implements, beside the fallbacks' names (ext.FALLBACKS)
_TAKEN = ("shape", "ndim", "dtype", "dim", "numel", "nelement", "__neg__", "relu", "sigmoid", "tanh", "exp", "log",
          "sqrt", "rsqrt", "sin", "cos", "silu", "abs", "square")


def _owner(v):
    f = v.fget if isinstance(v, property) else v
    return getattr(f, "__module__", None)


def install():
    if ext is None:
        return
    from ._tensor import Tensor
    from ._shape import Size
    fallbacks = {n: Tensor.__dict__[n] for n in ext.FALLBACKS}
    ext.bind_rest(Size, [_dtype.from_code(i) for i in range(len(_dtype._BY_CODE))], fallbacks)
    for n in ext.FALLBACKS + _TAKEN:
        v = Tensor.__dict__.get(n)
        if v is not None and _owner(v) in _OWNERS and hasattr(ext.TensorBase, n):
            delattr(Tensor, n)


def taken():
    """The Tensor methods the C side answers now (for tests and bench_overhead)."""
    if ext is None:
        return ()
    from ._tensor import Tensor
    return tuple(n for n in ext.FALLBACKS + _TAKEN if n not in Tensor.__dict__ and hasattr(ext.TensorBase, n))
