"""dtypes: Python objects for the C ff_dtype enum, with their NumPy equivalents."""
import numpy as np

__all__ = ["DType", "float32", "float64", "int32", "int64", "uint8", "bool_", "float16", "bfloat16", "int8", "int16",
           "complex64", "complex128", "to_dtype",
           "from_code", "from_numpy_dtype"]


class DType:
    __slots__ = ("name", "code", "np", "is_floating_point", "is_complex", "itemsize")

    def __init__(self, name, code, npdt, is_float, itemsize=None, is_complex=False):
        self.name = name
        self.code = code
        self.np = np.dtype(npdt) if npdt is not None else None  # None: NumPy has no such dtype
        self.is_floating_point = is_float
        self.is_complex = is_complex
        self.itemsize = itemsize or self.np.itemsize

    @property
    def is_signed(self):
        return self.name not in ("uint8", "bool")

    def to_real(self):
        """complex64 -> float32, complex128 -> float64 (torch.dtype.to_real); others: self."""
        return {10: float32, 11: float64}.get(self.code, self)

    def to_complex(self):
        """float64 -> complex128, other floats -> complex64 (torch.dtype.to_complex)."""
        return complex128 if self.code in (1, 11) else complex64

    def __repr__(self):
        return "fusionflow." + self.name

    def __reduce__(self):
        return (from_code, (self.code,))


# Codes are the C enum (include/ff/backend_abi.h); they are ABI and never change.
float32 = DType("float32", 0, np.float32, True)
float64 = DType("float64", 1, np.float64, True)
int32 = DType("int32", 2, np.int32, False)
int64 = DType("int64", 3, np.int64, False)
uint8 = DType("uint8", 4, np.uint8, False)
bool_ = DType("bool", 5, np.bool_, False)
# The half dtypes: stored in 2 bytes, computed in f32 by the core (rounded once).
float16 = DType("float16", 6, np.float16, True)
bfloat16 = DType("bfloat16", 7, None, True, itemsize=2)  # NumPy has no bfloat16
# The narrow integers: stored in 1 and 2 bytes, computed in i32 by the core (wrapping back).
int8 = DType("int8", 8, np.int8, False)
int16 = DType("int16", 9, np.int16, False)
# Complex: (re, im) pairs of f32 / f64, stored interleaved as NumPy and PyTorch do.
complex64 = DType("complex64", 10, np.complex64, False, is_complex=True)
complex128 = DType("complex128", 11, np.complex128, False, is_complex=True)

_BY_CODE = {d.code: d for d in (float32, float64, int32, int64, uint8, bool_, float16, bfloat16, int8, int16,
                                complex64, complex128)}
_BY_NP = {d.np: d for d in _BY_CODE.values() if d.np is not None}
_ALIASES = {"float": float32, "float32": float32, "f32": float32, "double": float64, "float64": float64,
            "f64": float64, "int": int32, "int32": int32, "i32": int32, "long": int64, "int64": int64,
            "i64": int64, "uint8": uint8, "u8": uint8, "bool": bool_, "float16": float16, "half": float16,
            "f16": float16, "bfloat16": bfloat16, "bf16": bfloat16, "int8": int8, "i8": int8, "int16": int16,
            "i16": int16, "short": int16, "complex64": complex64,
            "cfloat": complex64, "c64": complex64, "complex128": complex128, "cdouble": complex128,
            "c128": complex128}


def from_code(code):
    try:
        return _BY_CODE[code]
    except KeyError:
        raise TypeError("unsupported FusionFlow dtype code %d" % code) from None


def from_numpy_dtype(npdt):
    d = _BY_NP.get(np.dtype(npdt))
    if d is None:
        raise TypeError("NumPy dtype %s has no FusionFlow equivalent (supported: float16, float32, float64, "
                        "int8, int16, int32, int64, uint8, bool, complex64, complex128)" % np.dtype(npdt))
    return d


def to_dtype(x):
    """Accepts a DType, a name ('float32', 'f32', 'long', ...), a NumPy dtype or Python type."""
    if isinstance(x, DType):
        return x
    if isinstance(x, str):
        if x in _ALIASES:
            return _ALIASES[x]
        raise TypeError("unknown dtype %r" % x)
    if x is float:
        return float32
    if x is int:
        return int64
    if x is bool:
        return bool_
    if x is complex:
        return complex64
    return from_numpy_dtype(x)
