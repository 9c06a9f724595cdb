"""The Tensor class: a Python handle on one C ff_tensor reference.

Lifetime: a Tensor owns exactly one reference to its C tensor, taken when it is
created (every C function returning ff_tensor * returns a new reference) and dropped
by __del__ (ff_tensor_release), as the RFC specifies. Views, gradients and DLPack
exchanges are new C references wrapped in new Tensors, so Python's garbage collector
drives the C refcounts and nothing is freed twice.

Rule for every call below: never pass `temporary()._ptr` to C. CPython frees the
temporary (and so releases the C tensor) before the call runs; bind it to a name first.
"""
import collections
import ctypes

import numpy as np

from . import _dtype
from . import _dtype as _dtype_mod
from ._dtype import float32, float64, int64, bool_, to_dtype, from_code
from ._args import int_arg
from ._interrupt import guarded_call
from ._lib import C, BackwardOpts, FusionFlowError, Number, check_status, error, shape_array, int_array
from ._lib import ext as _ext

__all__ = ["Tensor", "wrap", "as_tensor", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"]

# op codes (include/ff/backend_abi_ops.h)
U_NEG, U_ABS, U_SIGN, U_EXP, U_LOG, U_LOG1P, U_EXPM1, U_SQRT, U_RSQRT, U_SQUARE, U_RECIPROCAL = range(11)
U_SIN, U_COS, U_TANH, U_SIGMOID, U_RELU, U_GELU_TANH, U_GELU_ERF, U_SILU, U_SOFTPLUS = range(11, 20)
U_FLOOR, U_CEIL, U_ROUND, U_ISNAN, U_ISINF, U_LOGICAL_NOT, U_ERF = range(20, 27)
U_BITWISE_NOT, U_ATAN, U_ASIN, U_ACOS, U_ERFINV, U_LGAMMA, U_DIGAMMA, U_TRIGAMMA = range(27, 35)
B_ADD, B_SUB, B_MUL, B_DIV, B_POW, B_MAXIMUM, B_MINIMUM, B_FMOD = range(8)
B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE, B_AND, B_OR, B_XOR = range(8, 17)

_release = C.ff_tensor_release
# With the C extension (python/ext), Tensor subclasses its TensorBase, which holds the C
# pointer and releases it when the object dies; without it, _ptr is a slot and __del__
# releases it. _fastpath.install() later hands the hottest methods to the C side.
_Base = _ext.TensorBase if _ext is not None else object
_new = _Base.__new__
_ff_add, _ff_sub, _ff_mul, _ff_div = C.ff_add, C.ff_sub, C.ff_mul, C.ff_div
_ff_binary, _ff_bs, _ff_rbs, _ff_unary = C.ff_binary, C.ff_binary_number, C.ff_rbinary_number, C.ff_unary
B_BITAND, B_BITOR, B_BITXOR, B_ATAN2 = 17, 18, 19, 20
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1

ValuesIndices = collections.namedtuple("ValuesIndices", ["values", "indices"])


def wrap(ptr, cls=None):
    """Takes ownership of a new C reference (raises on NULL)."""
    if not ptr:
        raise error()
    t = _new(cls or Tensor)
    t._ptr = ptr
    return t


if _ext is not None:
    wrap = _ext.wrap  # the same, in C (Tensor is bound to it below, once it exists)


def _scalar_ok(x):
    return isinstance(x, (int, float, bool, np.number, np.bool_))


def _number(x):
    """x as an ff_number: its kind (bool, int, float), not its value, decides promotion,
    as for PyTorch's wrapped numbers (int64 * 2.0 is float32, int64 * 2 stays int64)."""
    if isinstance(x, (bool, np.bool_)):
        return Number(0, int(bool(x)), float(bool(x)))
    if isinstance(x, (int, np.integer)):
        v = int(x)
        if not _INT64_MIN <= v <= _INT64_MAX:
            raise OverflowError("integer %d does not fit in int64" % v)
        return Number(1, v, float(v))
    return Number(2, 0, float(x))


def _number_tensor(value, like):
    """value as a 0-d tensor on like's backend, of the dtype the number promotes like's
    dtype to; a 0-d operand never widens like within its category (ff_result_type), so
    an op on the pair gives what the op with the number would."""
    return _number_tensor_of(value, like.dtype.code, like)


def _number_tensor_of(value, code, like):
    """value as a 0-d tensor on like's backend, of the dtype the number promotes dtype
    code to (_number_tensor for a dtype other than like's)."""
    n = _number(value)
    return wrap(C.ff_number_tensor_on(C.ff_tensor_backend(like._ptr), n, C.ff_dtype_promote_number(code, n)))


def _operand(x, like):
    """A Tensor for an operand of an op with like: tensors as they are, numbers as weak
    0-d tensors, lists/arrays as new tensors."""
    if isinstance(x, Tensor):
        return x
    if _scalar_ok(x):
        return _number_tensor(x, like)
    return tensor(x)


def host_values(t):
    """t's values as a NumPy array: bfloat16, which NumPy lacks, as float32 (which holds
    every bf16 value exactly), so host-side methods (tolist, signbit, cummin) take it too."""
    return t.numpy() if t.dtype.np is not None else t.float().numpy()


def _check_int_power(base, exponent):
    """torch refuses an integer tensor to a negative integer number's power (the result is
    not an integer); a tensor exponent is computed as it is (0 for |base| > 1), as torch."""
    if isinstance(exponent, (bool, np.bool_)) or not isinstance(exponent, (int, np.integer)):
        return
    if exponent < 0 and not base.dtype.is_floating_point:
        raise RuntimeError("pow(): Integers to negative integer powers are not allowed (a %s tensor to the "
                           "power %d); use a float tensor, e.g. t.float() ** %d" % (base.dtype.name, exponent,
                                                                                     exponent))


def _check_alpha(t, alpha, fn):
    # the cheap test first: alpha is an int (1) in nearly every call, and .dtype is a C call
    if isinstance(alpha, (float, np.floating)) and not (t.dtype.is_floating_point or t.dtype.is_complex):
        raise RuntimeError("%s(): For integral input tensors, argument alpha must not be a floating point number "
                           "(a %s tensor, alpha=%r)" % (fn, t.dtype.name, alpha))


def _check_float_input(t, fn):
    """var, std and their _mean forms are defined on floating dtypes only, as torch's."""
    if not t.dtype.is_floating_point:
        raise RuntimeError("%s(): std and var only support floating point and complex dtypes, got a %s tensor; "
                           "convert first, e.g. t.float()" % (fn, t.dtype.name))


def as_tensor(x, dtype=None, like=None, device=None):
    """A Tensor from x (a Tensor is returned as is, unless a dtype or device change is asked)."""
    if isinstance(x, Tensor):
        if device is not None:
            x = x.to(device)
        return x if dtype is None or x.dtype is to_dtype(dtype) else x.to(dtype)
    return tensor(x, dtype=dtype, device=device)


def _axes(dim, ndim=None, fn="reduction"):
    if dim is None:
        return 0, None
    if not isinstance(dim, (tuple, list, range)):
        dim = (dim,)
    return int_array([int_arg(fn, "dim", d) for d in dim])


def _shape_args(shape, fn="shape"):
    """Accepts f(2, 3), f((2, 3)), f([2, 3])."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return tuple(int_arg(fn, "size", s) for s in shape)


def to_args(args, device=None, dtype=None):
    """(device, dtype) of Tensor.to / Module.to's positional forms: a Tensor gives both, a
    dtype name or DType the dtype, a device or other string the device."""
    from ._device import device as device_cls
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, str) and a in _dtype._ALIASES:
            dtype = a
        elif isinstance(a, (str, device_cls)) or (isinstance(a, int) and not isinstance(a, bool)):
            device = a  # an int is a cuda index, as torch
        elif a is not None:
            dtype = a
    return device, dtype


class Tensor(_Base):
    """An n-dimensional array on a FusionFlow backend, with autograd."""

    __slots__ = ("__weakref__", "__dict__") if _ext is not None else ("_ptr", "__weakref__", "__dict__")
    __array_priority__ = 1000
    __array_ufunc__ = None  # numpy operators defer to ours (ndarray + Tensor -> Tensor.__radd__)

    def __init__(self, *args, device=None):
        """torch.Tensor(2, 3) or torch.Tensor(data): the legacy constructor, float32 (see
        _legacy_types.legacy_new)."""
        from ._legacy_types import legacy_new
        src = legacy_new("Tensor", args, _dtype.float32, device)
        self._ptr = src._ptr
        src._ptr = None

    if _ext is None:  # TensorBase's dealloc releases the pointer instead
        def __del__(self):
            p = self._ptr if hasattr(self, "_ptr") else None
            if p and _release is not None:
                _release(p)

    # ---- properties (shape and size(), which return a Size, are attached by _shape) ----
    def stride(self, dim=None):
        n = C.ff_tensor_ndim(self._ptr)
        st = C.ff_tensor_strides(self._ptr)
        s = tuple(st[i] for i in range(n))
        return s if dim is None else s[dim]

    def storage_offset(self):
        return C.ff_tensor_offset(self._ptr)

    @property
    def ndim(self):
        return C.ff_tensor_ndim(self._ptr)

    def dim(self):
        return C.ff_tensor_ndim(self._ptr)

    def numel(self):
        return C.ff_tensor_numel(self._ptr)

    nelement = numel

    @property
    def dtype(self):
        return from_code(C.ff_tensor_dtype(self._ptr))

    @property
    def device(self):
        """A fusionflow.device: device('cpu') on the fast CPU backend, device('cpu_ref') on the
        reference, device('cuda', 0), device('opencl') (_device.py)."""
        from ._device import device_of
        return device_of(C.ff_backend_name(C.ff_tensor_backend(self._ptr)).decode())

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    @property
    def is_cpu(self):
        return self.device.type == "cpu"

    @property
    def is_leaf(self):
        return C.ff_is_leaf(self._ptr)

    @property
    def grad_fn(self):
        n = C.ff_grad_fn_name(self._ptr)
        return n.decode() if n else None

    @property
    def requires_grad(self):
        return C.ff_requires_grad(self._ptr)

    @property
    def _version(self):
        """torch's Tensor._version: writes into this tensor's storage that a saved tensor
        or a view could see (shared by every view of the same memory)."""
        return C.ff_tensor_version(self._ptr)

    @requires_grad.setter
    def requires_grad(self, value):
        check_status(C.ff_set_requires_grad(self._ptr, bool(value)))

    def requires_grad_(self, requires_grad=True):
        self.requires_grad = requires_grad
        return self

    @property
    def grad(self):
        g = C.ff_grad(self._ptr)
        return wrap(g) if g else None

    @grad.setter
    def grad(self, value):
        check_status(C.ff_set_grad(self._ptr, value._ptr if value is not None else None))

    @property
    def data(self):
        """A detached alias (shares memory, no history), as torch's .data."""
        return self.detach()

    @data.setter
    def data(self, value):
        """t.data = v, as torch: t now holds v's memory, shape, dtype and backend, keeps its
        Python identity, requires_grad and register_hook hooks (so tied parameters stay tied
        and vector_to_parameters keeps them whole) and records no history. Its grad stays
        too, unless v's shape differs from the grad's: the engine holds only a grad of the
        tensor's shape (torch would keep it, to fail at the next backward)."""
        if not isinstance(value, Tensor):
            raise TypeError("Tensor.data = value: expected a Tensor, got %s" % type(value).__name__)
        rg, g = self.requires_grad, self.grad
        new = wrap(C.ff_detach(value._ptr))
        self._ptr, new._ptr = new._ptr, self._ptr  # new releases the old C tensor
        if rg:
            self.requires_grad_(True)
            from ._tensor_hooks import carry_hooks
            carry_hooks(self)
        if g is not None and g.shape == self.shape:
            self.grad = g

    def is_contiguous(self):
        return C.ff_tensor_is_contiguous(self._ptr)

    def data_ptr(self):
        return C.ff_tensor_data_ptr(self._ptr) or 0

    def shares_memory_with(self, other):
        return C.ff_tensor_shares_storage(self._ptr, other._ptr)

    def is_floating_point(self):
        """A method, as torch's (dtype.is_floating_point is the property)."""
        return self.dtype.is_floating_point

    # ---- conversion ---------------------------------------------------------------
    def numpy(self):
        """A NumPy copy of the values (row-major)."""
        dt = self.dtype
        if dt.np is None:
            raise TypeError("%s has no NumPy dtype: convert first, e.g. t.float().numpy()" % dt.name)
        out = np.empty(self.shape, dtype=dt.np)
        check_status(C.ff_tensor_to_host(self._ptr, out.ctypes.data, out.nbytes))
        return out

    def __array__(self, dtype=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def item(self):
        dt = C.ff_tensor_dtype(self._ptr)
        if dt in (10, 11):  # complex
            from ._complex import _item
            return _item(self)
        if dt in (2, 3, 4, 8, 9):  # integers: exact through int64
            v = ctypes.c_int64()
            check_status(C.ff_tensor_item_i64(self._ptr, ctypes.byref(v)))
            return v.value
        v = ctypes.c_double()
        check_status(C.ff_tensor_item(self._ptr, ctypes.byref(v)))
        return bool(v.value) if dt == 5 else v.value

    def tolist(self):
        return host_values(self).tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype.is_floating_point:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self):
        if self.numel() != 1:
            raise ValueError("the truth value of a tensor with %d elements is ambiguous" % self.numel())
        return bool(self.item())

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        for i in range(self.shape[0]):
            yield self[i]

    def __repr__(self):
        arr = self.numpy() if self.dtype.np is not None else self.detach().float().numpy()  # bf16: exact in f32
        body = np.array2string(arr, separator=", ", prefix="tensor(", threshold=1000, edgeitems=3)
        extra = []
        if self.dtype not in (float32, int64, bool_, _dtype.complex64):  # torch omits its default dtypes
            extra.append("dtype=" + repr(self.dtype))
        if C.ff_tensor_backend(self._ptr) != C.ff_backend_default():  # as PyTorch omits the default device
            extra.append("device='%s'" % str(self.device))
        gf = self.grad_fn
        if gf:
            extra.append("grad_fn=<%s>" % gf)
        elif self.requires_grad:
            extra.append("requires_grad=True")
        return "tensor(" + body + "".join(", " + e for e in extra) + ")"

    __str__ = __repr__

    def __hash__(self):
        return id(self)

    def __reduce__(self):
        return (tensor, (self.numpy(), self.dtype, self.requires_grad))

    # ---- dtype / backend --------------------------------------------------------------
    def to(self, *args, dtype=None, device=None, copy=False, non_blocking=False, memory_format=None):
        """to(dtype), to(device), to(device, dtype), to(other_tensor) or to(device=..., dtype=...);
        a device is a fusionflow.device, a string ('cpu', 'cuda:0', 'cpu_ref', ...) or an int."""
        from ._device import backend_for
        device, dtype = to_args(args, device, dtype)
        t = self
        if device is not None:
            be = backend_for(device)
            if be != C.ff_tensor_backend(t._ptr):
                t = wrap(C.ff_to(t._ptr, be))
        if dtype is not None and to_dtype(dtype) is not t.dtype:
            t = wrap(C.ff_astype(t._ptr, to_dtype(dtype).code))
        elif copy and t is self:
            t = t.clone()
        return t

    def astype(self, dtype):
        return wrap(C.ff_astype(self._ptr, to_dtype(dtype).code))

    def type_as(self, other):
        return self.to(other.dtype)

    def float(self):
        return self.to(float32)

    def double(self):
        return self.to(float64)

    def half(self):
        return self.to(_dtype_mod.float16)

    def bfloat16(self):
        return self.to(_dtype_mod.bfloat16)

    def long(self):
        return self.to(int64)

    def int(self):
        return self.to(_dtype.int32)

    def bool(self):
        return self.to(bool_)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False):
        """To the cuda backend (raises the loader's error where there is none)."""
        return self.to("cuda" if device is None else device)

    def get_device(self):
        """torch's: the cuda index, -1 on the CPU."""
        d = self.device
        return d.index if d.type == "cuda" else -1

    # ---- autograd ----------------------------------------------------------------------
    def backward(self, gradient=None, retain_graph=None, create_graph=False):
        opts = BackwardOpts(bool(create_graph if retain_graph is None else retain_graph), bool(create_graph))
        g = None
        if gradient is not None:
            g = as_tensor(gradient, dtype=self.dtype)
        # hooks run Python: a Ctrl-C in one comes out as itself (_interrupt)
        check_status(guarded_call(C.ff_backward, self._ptr, g._ptr if g is not None else None, ctypes.byref(opts)))

    def detach(self):
        return wrap(C.ff_detach(self._ptr))

    def detach_(self):
        raise FusionFlowError("detach_() is not supported; use detach()")

    def zero_grad_(self):
        check_status(C.ff_zero_grad(self._ptr))

    def retain_grad(self):
        """A non-leaf keeps its gradient in .grad, as a leaf does (a no-op on a leaf)."""
        check_status(C.ff_retain_grad(self._ptr))

    @property
    def retains_grad(self):
        return not self.is_leaf and C.ff_retains_grad(self._ptr)

    def register_hook(self, hook):
        """hook(grad) runs with this tensor's whole gradient of each backward pass, before
        it flows on; a returned tensor replaces the gradient. Returns a handle whose
        remove() unregisters it."""
        from ._tensor_hooks import register
        return register(self, hook)

    # ---- binary operators -------------------------------------------------------------
    def _binop(self, other, op):
        if isinstance(other, Tensor):
            return wrap(_ff_binary(op, self._ptr, other._ptr))
        if isinstance(other, (complex, np.complexfloating)):  # x * 1j: a weak complex 0-d operand
            from ._complex import complex_operand
            o = complex_operand(other, self)
            return wrap(_ff_binary(op, self._ptr, o._ptr))
        if _scalar_ok(other):
            return wrap(_ff_bs(op, self._ptr, _number(other)))
        if isinstance(other, (list, tuple, np.ndarray)):
            o = tensor(other)  # keep the temporary alive across the call
            return wrap(_ff_binary(op, self._ptr, o._ptr))
        return NotImplemented

    def _binop_strict(self, other, op, fn):
        """_binop for the named methods: a non-operand is a TypeError there (the operators
        return NotImplemented instead, for Python to try the other side)."""
        r = self._binop(other, op)
        if r is NotImplemented:
            raise TypeError("%s(): argument 'other' must be a Tensor or a number, not %s" % (fn, type(other).__name__))
        return r

    def _rbinop(self, other, op):
        if isinstance(other, (complex, np.complexfloating)):
            from ._complex import complex_operand
            o = complex_operand(other, self)
            return wrap(_ff_binary(op, o._ptr, self._ptr))
        if _scalar_ok(other):
            return wrap(_ff_rbs(op, _number(other), self._ptr))
        if isinstance(other, (list, tuple, np.ndarray)):
            o = tensor(other)
            return wrap(_ff_binary(op, o._ptr, self._ptr))
        return NotImplemented

    def __add__(self, other):
        if other.__class__ is Tensor:
            return wrap(_ff_add(self._ptr, other._ptr))
        return self._binop(other, B_ADD)

    def __sub__(self, other):
        if other.__class__ is Tensor:
            return wrap(_ff_sub(self._ptr, other._ptr))
        return self._binop(other, B_SUB)

    def __mul__(self, other):
        if other.__class__ is Tensor:
            return wrap(_ff_mul(self._ptr, other._ptr))
        return self._binop(other, B_MUL)

    def __truediv__(self, other):
        if other.__class__ is Tensor:
            return wrap(_ff_div(self._ptr, other._ptr))
        return self._binop(other, B_DIV)

    def __pow__(self, other):
        _check_int_power(self, other)
        return self._binop(other, B_POW)

    def _divmod(self, other, fn, reflected=False):
        if not (isinstance(other, (Tensor, list, tuple, np.ndarray)) or _scalar_ok(other)):
            return NotImplemented
        o = _operand(other, self)
        a, b = (o, self) if reflected else (self, o)
        return wrap(fn(a._ptr, b._ptr))

    def __mod__(self, other):
        """Python's %: the result has the divisor's sign (fmod() has the dividend's)."""
        return self._divmod(other, C.ff_remainder)

    def __rmod__(self, other):
        return self._divmod(other, C.ff_remainder, reflected=True)

    def __floordiv__(self, other):
        """Python's //: rounds toward -inf (integers stay integers and exact)."""
        return self._divmod(other, C.ff_floor_divide)

    def __rfloordiv__(self, other):
        return self._divmod(other, C.ff_floor_divide, reflected=True)

    def remainder(self, other):
        return self % other

    def floor_divide(self, other):
        return self // other

    def __radd__(self, other):
        return self._rbinop(other, B_ADD)

    def __rsub__(self, other):
        return self._rbinop(other, B_SUB)

    def __rmul__(self, other):
        return self._rbinop(other, B_MUL)

    def __rtruediv__(self, other):
        return self._rbinop(other, B_DIV)

    def __rpow__(self, other):
        return self._rbinop(other, B_POW)

    def __matmul__(self, other):
        if not isinstance(other, Tensor):
            if isinstance(other, (list, tuple, np.ndarray)):
                other = tensor(other)
            else:
                return NotImplemented
        return wrap(C.ff_matmul(self._ptr, other._ptr))

    def __rmatmul__(self, other):
        if isinstance(other, (list, tuple, np.ndarray)):
            o = tensor(other)
            return wrap(C.ff_matmul(o._ptr, self._ptr))
        return NotImplemented

    def __eq__(self, other):
        r = self._binop(other, B_EQ)
        return False if r is NotImplemented else r

    def __ne__(self, other):
        r = self._binop(other, B_NE)
        return True if r is NotImplemented else r

    def __lt__(self, other):
        return self._binop(other, B_LT)

    def __le__(self, other):
        return self._binop(other, B_LE)

    def __gt__(self, other):
        return self._binop(other, B_GT)

    def __ge__(self, other):
        return self._binop(other, B_GE)

    def __and__(self, other):
        """Bitwise on integers, logical on bool (PyTorch's &)."""
        return self._binop(other, B_BITAND)

    def __or__(self, other):
        return self._binop(other, B_BITOR)

    def __xor__(self, other):
        return self._binop(other, B_BITXOR)

    def bitwise_and(self, other): return self._binop_strict(other, B_BITAND, "bitwise_and")
    def bitwise_or(self, other): return self._binop_strict(other, B_BITOR, "bitwise_or")
    def bitwise_xor(self, other): return self._binop_strict(other, B_BITXOR, "bitwise_xor")
    def atan2(self, other): return self._binop_strict(other, B_ATAN2, "atan2")
    arctan2 = atan2
    def bitwise_not(self): return wrap(C.ff_bitwise_not(self._ptr))

    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__

    def __neg__(self):
        return wrap(C.ff_neg(self._ptr))

    def __pos__(self):
        return self

    def __abs__(self):
        return self._unary(U_ABS)

    def __invert__(self):
        """Bitwise not on integers, logical not on bool (PyTorch's ~)."""
        return wrap(C.ff_bitwise_not(self._ptr))

    # ---- in-place operators: attached by _tensor_inplace ----------------------------------

    # ---- elementwise methods -------------------------------------------------------------
    def _unary(self, op):
        return wrap(_ff_unary(op, self._ptr))

    def neg(self): return wrap(C.ff_neg(self._ptr))
    def abs(self): return self._unary(U_ABS)
    def sign(self): return self._unary(U_SIGN)
    def exp(self): return self._unary(U_EXP)
    def log(self): return self._unary(U_LOG)
    def log1p(self): return self._unary(U_LOG1P)
    def expm1(self): return self._unary(U_EXPM1)
    def sqrt(self): return self._unary(U_SQRT)
    def rsqrt(self): return self._unary(U_RSQRT)
    def square(self): return self._unary(U_SQUARE)
    def reciprocal(self): return self._unary(U_RECIPROCAL)
    def sin(self): return self._unary(U_SIN)
    def cos(self): return self._unary(U_COS)
    def tanh(self): return self._unary(U_TANH)
    def sigmoid(self): return self._unary(U_SIGMOID)
    def relu(self): return self._unary(U_RELU)
    def silu(self): return self._unary(U_SILU)
    def softplus(self): return self._unary(U_SOFTPLUS)
    def erf(self): return self._unary(U_ERF)
    def atan(self): return self._unary(U_ATAN)
    def asin(self): return self._unary(U_ASIN)
    def acos(self): return self._unary(U_ACOS)
    def erfinv(self): return self._unary(U_ERFINV)
    def lgamma(self): return self._unary(U_LGAMMA)
    def digamma(self): return self._unary(U_DIGAMMA)

    def polygamma(self, n):
        """PyTorch's polygamma(n, x) for n = 0 (digamma) and n = 1 (trigamma, whose own
        gradient, polygamma(2, x), is not supported)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError("polygamma: n must be a non-negative int, got %r" % (n,))
        if n > 1:
            raise NotImplementedError("polygamma: only n = 0 (digamma) and n = 1 (trigamma) are supported, got n = %d"
                                      % n)
        return self._unary(U_DIGAMMA if n == 0 else U_TRIGAMMA)
    arctan, arcsin, arccos = atan, asin, acos
    def floor(self): return self._unary(U_FLOOR)
    def ceil(self): return self._unary(U_CEIL)
    def round(self, decimals=0):
        """Half to even, as torch; decimals=d rounds to d decimal places (d < 0: to tens,
        hundreds, ...) by scaling by 10**|d|, each step in self's dtype (the scale too), as
        torch does, so the results agree to the last bit (bf16's included)."""
        if decimals == 0:
            return self._unary(U_ROUND)
        if not self.dtype.is_floating_point:
            raise RuntimeError("round(): decimals=%d is only implemented for floating point tensors, got %s"
                               % (decimals, self.dtype.name))
        scale = full((), float(10 ** abs(int_arg("round", "decimals", decimals))), dtype=self.dtype,
                     device=self.device)
        return (self * scale)._unary(U_ROUND) / scale if decimals > 0 else (self / scale)._unary(U_ROUND) * scale
    def isnan(self): return self._unary(U_ISNAN)
    def isinf(self): return self._unary(U_ISINF)
    def logical_not(self): return self._unary(U_LOGICAL_NOT)

    def gelu(self, approximate="none"):
        return wrap(C.ff_gelu(self._ptr, approximate == "tanh"))

    def pow(self, other): return self ** other
    def add(self, other, alpha=1): return self + (other * alpha if alpha != 1 else other)
    def sub(self, other, alpha=1): return self - (other * alpha if alpha != 1 else other)
    def mul(self, other): return self * other
    def div(self, other, *, rounding_mode=None):
        if rounding_mode is None:
            return self / other
        return self.divide(other, rounding_mode=rounding_mode)  # _methods_math.divide: floor / trunc
    def maximum(self, other): return self._binop(as_tensor(other), B_MAXIMUM)
    def minimum(self, other): return self._binop(as_tensor(other), B_MINIMUM)
    def fmod(self, other): return self._binop_strict(other, B_FMOD, "fmod")
    def eq(self, other): return self._binop_strict(other, B_EQ, "eq")
    def ne(self, other): return self._binop_strict(other, B_NE, "ne")
    def lt(self, other): return self._binop_strict(other, B_LT, "lt")
    def le(self, other): return self._binop_strict(other, B_LE, "le")
    def gt(self, other): return self._binop_strict(other, B_GT, "gt")
    def ge(self, other): return self._binop_strict(other, B_GE, "ge")
    def logical_and(self, other): return self._binop_strict(other, B_AND, "logical_and")
    def logical_or(self, other): return self._binop_strict(other, B_OR, "logical_or")
    def logical_xor(self, other): return self._binop_strict(other, B_XOR, "logical_xor")

    def clamp(self, min=None, max=None):
        """min/max: numbers or tensors (broadcasting, differentiable), as torch.clamp."""
        if min is None and max is None:
            raise ValueError("clamp: at least one of min and max must be given")
        if all(b is None or _scalar_ok(b) for b in (min, max)):  # torch's clamp(Tensor, Scalar?, Scalar?)
            lo, hi = (None if b is None else ctypes.byref(_number(b)) for b in (min, max))
            return wrap(C.ff_clamp_number(self._ptr, lo, hi))
        lo, hi = (b if b is None or _scalar_ok(b) else _operand(b, self) for b in (min, max))
        # a number beside a tensor bound is converted in the dtype self and that tensor
        # promote to, not in self's: u8.clamp(-1, f32 tensor) must not see -1 as 255
        ref = lo if hi is None or _scalar_ok(hi) else hi
        code = C.ff_result_type(self._ptr, ref._ptr)
        lo, hi = (_number_tensor_of(b, code, self) if _scalar_ok(b) else b for b in (lo, hi))
        return wrap(C.ff_clamp(self._ptr, lo._ptr if lo is not None else None,
                               hi._ptr if hi is not None else None))

    clip = clamp

    def lerp(self, end, weight):
        e = as_tensor(end)
        return wrap(C.ff_lerp(self._ptr, e._ptr, float(weight)))

    def where(self, condition, other):
        return where(condition, self, other)

    # ---- reductions --------------------------------------------------------------------
    def _reduce(self, fn, dim, keepdim):
        n, axes = _axes(dim, fn=fn.__name__)
        return wrap(fn(self._ptr, n, axes, bool(keepdim)))

    def sum(self, dim=None, keepdim=False, dtype=None):
        t = self if dtype is None else self.to(dtype)
        return t._reduce(C.ff_sum, dim, keepdim)

    def mean(self, dim=None, keepdim=False):
        return self._reduce(C.ff_mean, dim, keepdim)

    def prod(self, dim=None, keepdim=False):
        return self._reduce(C.ff_prod, dim, keepdim)

    def amax(self, dim=None, keepdim=False):
        return self._reduce(C.ff_amax, dim, keepdim)

    def amin(self, dim=None, keepdim=False):
        return self._reduce(C.ff_amin, dim, keepdim)

    def max(self, dim=None, keepdim=False):
        """max() -> tensor; max(dim) -> (values, indices), as torch; max(other_tensor) -> maximum."""
        if isinstance(dim, Tensor):
            return self.maximum(dim)
        if dim is None:
            return self.amax()
        return ValuesIndices(self.amax(dim, keepdim), self.argmax(dim, keepdim))

    def min(self, dim=None, keepdim=False):
        if isinstance(dim, Tensor):
            return self.minimum(dim)
        if dim is None:
            return self.amin()
        return ValuesIndices(self.amin(dim, keepdim), self.argmin(dim, keepdim))

    def argmax(self, dim=None, keepdim=False):
        if dim is None:
            flat = self.reshape(-1)
            return wrap(C.ff_argmax(flat._ptr, 0, False))
        return wrap(C.ff_argmax(self._ptr, int_arg("argmax", "dim", dim), bool(keepdim)))

    def argmin(self, dim=None, keepdim=False):
        if dim is None:
            flat = self.reshape(-1)
            return wrap(C.ff_argmin(flat._ptr, 0, False))
        return wrap(C.ff_argmin(self._ptr, int_arg("argmin", "dim", dim), bool(keepdim)))

    def var(self, dim=None, unbiased=True, keepdim=False, correction=None):
        _check_float_input(self, "var")
        n, axes = _axes(dim, fn="var")
        corr = int(correction) if correction is not None else (1 if unbiased else 0)
        return wrap(C.ff_var(self._ptr, n, axes, corr, bool(keepdim)))

    def std(self, dim=None, unbiased=True, keepdim=False, correction=None):
        _check_float_input(self, "std")
        n, axes = _axes(dim, fn="std")
        corr = int(correction) if correction is not None else (1 if unbiased else 0)
        return wrap(C.ff_std(self._ptr, n, axes, corr, bool(keepdim)))

    def logsumexp(self, dim=None, keepdim=False):
        return self._reduce(C.ff_logsumexp, dim, keepdim)

    def any(self, dim=None, keepdim=False):
        return self._reduce(C.ff_any, dim, keepdim)

    def all(self, dim=None, keepdim=False):
        return self._reduce(C.ff_all, dim, keepdim)

    def norm(self, p=2, dim=None, keepdim=False):
        n, axes = _axes(dim, fn="norm")
        return wrap(C.ff_norm(self._ptr, float(p), n, axes, bool(keepdim)))

    # ---- nn-flavoured ----------------------------------------------------------------------
    def softmax(self, dim=-1):
        return wrap(C.ff_softmax(self._ptr, int_arg("softmax", "dim", dim)))

    def cumsum(self, dim, *, dtype=None):
        """Inclusive cumulative sum along dim; integers and bool give int64 (as PyTorch),
        dtype= casts the input first."""
        t = self if dtype is None else self.to(dtype)
        return wrap(C.ff_cumsum(t._ptr, int_arg("cumsum", "dim", dim)))

    def cumprod(self, dim, *, dtype=None):
        t = self if dtype is None else self.to(dtype)
        return wrap(C.ff_cumprod(t._ptr, int_arg("cumprod", "dim", dim)))

    def log_softmax(self, dim=-1):
        return wrap(C.ff_log_softmax(self._ptr, int_arg("log_softmax", "dim", dim)))

    def matmul(self, other):
        return self @ other

    def dot(self, other):
        return self @ other

    def outer(self, other):
        return wrap(C.ff_outer(self._ptr, other._ptr))

    def gather(self, dim, index):
        return wrap(C.ff_gather(self._ptr, int_arg("gather", "dim", dim), index._ptr))

    def scatter_add(self, dim, index, src):
        return wrap(C.ff_scatter_add(self._ptr, int_arg("scatter_add", "dim", dim), index._ptr, src._ptr))


# The rest of the Tensor machinery, split by concern; imported here (after Tensor exists,
# which they import) so `from ._tensor import ...` keeps working everywhere.
if _ext is not None:
    _ext.bind_tensor(Tensor)  # what wrap() makes, before any module below makes one

from ._grad_mode import set_grad_enabled, no_grad, enable_grad, is_grad_enabled  # noqa: E402,F401
from ._factories import (  # noqa: E402,F401
    full, zeros, ones, empty, zeros_like, ones_like, full_like, empty_like, eye, arange, linspace,
    rand, uniform, randn, normal, tensor, from_numpy, where, cat, concat, stack, split, chunk)
from . import _indexing  # noqa: E402,F401  (attaches [], index_put, masked_fill, ... to Tensor)
from . import _shape  # noqa: E402,F401  (attaches reshape, view, permute, expand, ... to Tensor)
from . import _tensor_new  # noqa: E402,F401  (attaches new_zeros, ..., element_size, __format__ to Tensor)
from . import _tensor_inplace  # noqa: E402,F401  (attaches add_, mul_, copy_, fill_, ..., +=, *= to Tensor)
