"""Tensor factories (full, zeros, ones, empty, *_like, eye, arange, linspace, rand, randn,
tensor, from_numpy) and the functions that build one tensor from several (where, cat,
stack, split, chunk)."""
import builtins
import ctypes

import numpy as np

from . import _dtype
from ._args import int_arg
from ._dtype import float32, int64, bool_, to_dtype
from ._lib import C, FusionFlowError, error, shape_array
from ._lib import ext as _ext
from ._tensor import Tensor, wrap, as_tensor, _operand, _shape_args, _scalar_ok, _number
from ._grad_mode import no_grad
from ._generator import seed_for


# ---- factories ---------------------------------------------------------------------------------
def _finish(t, requires_grad, device):
    if device is not None and device != t.device:
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _on(device):
    if device is None:
        return None
    from ._device import backend_for
    return backend_for(device)


def full(shape, fill_value, dtype=None, requires_grad=False, device=None):
    if isinstance(shape, int):
        shape = (shape,)
    if dtype is None:
        dtype = bool_ if isinstance(fill_value, bool) else int64 if isinstance(fill_value, int) else float32
    n, arr = shape_array(tuple(int_arg("full", "size", s) for s in shape))
    be = _on(device)
    if n == 0 and _scalar_ok(fill_value):  # exact for every int64 and NaN-to-bool rules alike
        t = wrap(C.ff_number_tensor_on(be, _number(fill_value), to_dtype(dtype).code))
    elif be:
        t = wrap(C.ff_full_on(be, n, arr, to_dtype(dtype).code, float(fill_value)))
    else:
        t = wrap(C.ff_full(n, arr, to_dtype(dtype).code, float(fill_value)))
    return _finish(t, requires_grad, None)


def _sized(shape, size, fn):
    """The shape of f(2, 3), f((2, 3)) or f(size=(2, 3)), as torch's factories take it."""
    if size is None:
        return _shape_args(shape, fn)
    if shape:
        raise TypeError("%s() got the shape both positionally %r and as size=%r" % (fn, shape, size))
    return _shape_args((size,), fn)


def zeros(*shape, size=None, dtype=float32, requires_grad=False, device=None):
    return full(_sized(shape, size, "zeros"), 0, dtype=dtype, requires_grad=requires_grad, device=device)


def ones(*shape, size=None, dtype=float32, requires_grad=False, device=None):
    return full(_sized(shape, size, "ones"), 1, dtype=dtype, requires_grad=requires_grad, device=device)


def empty(*shape, size=None, dtype=float32, requires_grad=False, device=None):
    return full(_sized(shape, size, "empty"), 0, dtype=dtype, requires_grad=requires_grad, device=device)


def zeros_like(t, dtype=None, requires_grad=False, device=None, memory_format=None):
    return full(t.shape, 0, dtype=dtype or t.dtype, requires_grad=requires_grad,
                device=t.device if device is None else device)


def ones_like(t, dtype=None, requires_grad=False, device=None, memory_format=None):
    return full(t.shape, 1, dtype=dtype or t.dtype, requires_grad=requires_grad,
                device=t.device if device is None else device)


def full_like(t, fill_value, dtype=None, requires_grad=False, device=None, memory_format=None):
    return full(t.shape, fill_value, dtype=dtype or t.dtype, requires_grad=requires_grad,
                device=t.device if device is None else device)


def empty_like(t, dtype=None, requires_grad=False, device=None, memory_format=None):
    return zeros_like(t, dtype=dtype, requires_grad=requires_grad, device=device)


def _like_dtype_device(t, dtype, device, fn):
    if not isinstance(t, Tensor):
        raise TypeError("%s(): argument 'input' must be a Tensor, not %s" % (fn, type(t).__name__))
    return (t.dtype if dtype is None else to_dtype(dtype)), (t.device if device is None else device)


def _float_like(t, dtype, device, fn):
    dtype, device = _like_dtype_device(t, dtype, device, fn)
    if not dtype.is_floating_point:
        raise RuntimeError("%s(): draws floating point numbers; got dtype %s (input of shape %s)"
                           % (fn, dtype.name, tuple(t.shape)))
    return dtype, device


def rand_like(t, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    """U[0, 1) of t's shape, t's dtype and device unless given, from the global generator."""
    dtype, device = _float_like(t, dtype, device, "rand_like")
    return uniform(t.shape, 0.0, 1.0, dtype=dtype, requires_grad=requires_grad, device=device)


def randn_like(t, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    """N(0, 1) of t's shape, t's dtype and device unless given, from the global generator."""
    dtype, device = _float_like(t, dtype, device, "randn_like")
    return normal(t.shape, 0.0, 1.0, dtype=dtype, requires_grad=requires_grad, device=device)


def randint_like(t, low=0, high=None, *, dtype=None, layout=None, device=None, requires_grad=False,
                 memory_format=None):
    """Integers uniform in [low, high) (randint_like(t, high) or (t, low, high)) of t's shape,
    in t's dtype and device unless given, as torch."""
    if high is None:
        low, high = 0, low
    dtype, device = _like_dtype_device(t, dtype, device, "randint_like")
    if int(high) <= int(low):
        raise RuntimeError("randint_like(): expected low < high, got low=%s, high=%s" % (low, high))
    if requires_grad and not dtype.is_floating_point:
        raise RuntimeError("randint_like(): only floating point tensors can require gradients, got dtype %s"
                           % dtype.name)
    u = uniform(t.shape, 0.0, 1.0, dtype=_dtype.float64, device=device)
    with no_grad():
        r = (u * (int(high) - int(low)) + int(low)).floor().to(dtype)
    return _finish(r, requires_grad, None)


def eye(n, m=None, dtype=float32, requires_grad=False, device=None):
    t = wrap(C.ff_eye_on(_on(device), int_arg("eye", "n", n), int_arg("eye", "m", n if m is None else m),
                         to_dtype(dtype).code))
    return _finish(t, requires_grad, None)


def arange(start, end=None, step=1, dtype=None, requires_grad=False, device=None):
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = int64 if all(isinstance(v, (int, np.integer)) for v in (start, end, step)) else float32
    t = wrap(C.ff_arange_on(_on(device), float(start), float(end), float(step), to_dtype(dtype).code))
    return _finish(t, requires_grad, None)


def linspace(start, end, steps, dtype=float32, requires_grad=False, device=None):
    t = wrap(C.ff_linspace_on(_on(device), float(start), float(end), int(steps), to_dtype(dtype).code))
    return _finish(t, requires_grad, None)


def rand(*shape, dtype=float32, requires_grad=False, device=None, seed=None, generator=None, out=None):
    """U[0, 1) from the global generator (manual_seed), or from `seed` / `generator` if given."""
    return _out(uniform(_shape_args(shape, "rand"), 0.0, 1.0, dtype=dtype, requires_grad=requires_grad,
                        device=device, seed=seed, generator=generator), out)


def _out(t, out):
    """torch's out= of the random factories: t written into out."""
    if out is None:
        return t
    return out.copy_(t)


def _random(shape, p0, p1, dtype, requires_grad, device, seed, seeded, standard, scale, shift):
    """A random fill on device's backend: seeded(be, n, shape, dtype, p0, p1, seed) for an
    explicit seed, else the global generator's standard draw (standard(be, n, shape, dtype))
    scaled and shifted."""
    if isinstance(shape, int):
        shape = (shape,)
    if dtype is None:
        dtype = float32
    n, arr = shape_array(tuple(shape))
    code = to_dtype(dtype).code
    be = _on(device)  # drawn there: the same numbers on every backend
    if seed is not None:
        t = wrap(seeded(be, n, arr, code, float(p0), float(p1), int(seed)))
    else:
        t = wrap(standard(be, n, arr, code))
        if scale != 1.0 or shift != 0.0:
            with no_grad():
                t = t * scale + shift
    return _finish(t, requires_grad, None)  # made on device's backend already


def uniform(shape, low=0.0, high=1.0, dtype=float32, requires_grad=False, device=None, seed=None, generator=None):
    if seed is None:
        seed = seed_for(generator, "rand")
    return _random(shape, low, high, dtype, requires_grad, device, seed, C.ff_rand_uniform_on, C.ff_rand_on,
                   high - low, low)


def randn(*shape, dtype=float32, requires_grad=False, device=None, seed=None, generator=None, out=None):
    return _out(normal(_shape_args(shape, "randn"), 0.0, 1.0, dtype=dtype, requires_grad=requires_grad,
                       device=device, seed=seed, generator=generator), out)


def normal(shape, mean=0.0, std=1.0, dtype=float32, requires_grad=False, device=None, seed=None, generator=None):
    if seed is None:
        seed = seed_for(generator, "randn")
    return _random(shape, mean, std, dtype, requires_grad, device, seed, C.ff_rand_normal_on, C.ff_randn_on, std, mean)


def tensor(data, dtype=None, requires_grad=False, device=None):
    """A new tensor copying data (nested lists, scalars, NumPy arrays, Tensors).

    Python floats give float32 and ints int64, as torch.tensor; NumPy arrays keep their
    dtype."""
    if _ext is not None and data.__class__ in (list, tuple):  # numbers in lists: C, no NumPy between
        t = _ext.tensor_from_list(data, -1 if dtype is None else to_dtype(dtype).code, _on(device))
        if t is not None:
            return _finish(t, requires_grad, None)
    if isinstance(data, Tensor):
        t = data.detach().to(dtype or data.dtype, copy=True)
        return _finish(t.clone() if t.shares_memory_with(data) else t, requires_grad, device)
    if isinstance(data, np.ndarray):
        arr = data
        dt = to_dtype(dtype) if dtype is not None else _dtype.from_numpy_dtype(arr.dtype) \
            if arr.dtype in (np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
                             np.bool_, np.complex64, np.complex128) \
            else (float32 if arr.dtype.kind == "f" else int64 if arr.dtype.kind in "iu" else None)
        if dt is None:
            raise TypeError("cannot make a tensor from NumPy dtype %s" % arr.dtype)
    else:
        # Tensors inside the list convert through their __array__ (no per-element scan first:
        # it was most of tensor(list)'s time); an object array means NumPy could not
        arr = np.asarray(data)
        if arr.dtype == object and isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in data):
            arr = np.asarray([x.numpy() if isinstance(x, Tensor) else x for x in data])
        if dtype is not None:
            dt = to_dtype(dtype)
        elif arr.dtype.kind == "b":
            dt = bool_
        elif arr.dtype.kind in "iu":
            dt = int64
        elif arr.dtype.kind == "f":
            dt = float32
        elif arr.dtype.kind == "c":
            dt = _dtype.complex64  # Python complex numbers give complex64, as torch.tensor
        elif arr.size == 0:
            dt = float32
        else:
            raise TypeError("cannot make a tensor from %r" % (type(data).__name__,))
    # Half dtypes from other data go in as float64 and round once in the core's copy (bfloat16
    # has no NumPy dtype; NumPy's own f16 cast rounds the same but warns on overflow).
    half_from_other = dt.code in (6, 7) and (dt.np is None or arr.dtype != dt.np)
    src = _dtype.float64 if half_from_other else dt
    arr = np.asarray(arr, dtype=src.np, order="C")  # (ascontiguousarray would make 0-d 1-d)
    n, shp = shape_array(arr.shape)
    be = _on(device)
    if be:
        t = wrap(C.ff_from_data_on(be, arr.ctypes.data, n, shp, src.code))
    else:
        t = wrap(C.ff_from_data(arr.ctypes.data, n, shp, src.code))
    if src is not dt:
        t = wrap(C.ff_astype(t._ptr, dt.code))
    return _finish(t, requires_grad, None)


def from_numpy(arr):
    """A tensor sharing arr's memory (zero-copy through DLPack), like torch.from_numpy.

    Needs an aligned array of a supported dtype (float16/32/64, int8/16/32/64, uint8, bool)
    with non-negative strides; other cases raise. Use tensor(arr) for a copy. A read-only
    array (np.asarray of a PIL image, np.frombuffer of bytes) is copied, with PyTorch's
    warning: NumPy will not share it over DLPack, and writing to it would be undefined."""
    if _ext is not None and arr.__class__ is np.ndarray:  # shared through the buffer protocol, in C
        t = _ext.from_numpy(arr)
        if t is not None:
            return t
    if not isinstance(arr, np.ndarray):
        raise TypeError("from_numpy expects a numpy.ndarray, got %s" % type(arr).__name__)
    _dtype.from_numpy_dtype(arr.dtype)  # an unsupported dtype raises TypeError, as in PyTorch
    if not arr.flags.writeable:
        import warnings
        warnings.warn("The given NumPy array is not writable, and PyTorch does not support non-writable tensors. "
                      "fusionflow.from_numpy copies it.", UserWarning, stacklevel=2)
        arr = arr.copy()
    from ._dlpack import from_dlpack
    if arr.dtype == np.bool_:
        # NumPy 1.24 speaks DLPack 0.6, which has no bool; bool and uint8 share one layout
        # (one byte, 0 or 1), so the bytes are shared as uint8 and tagged bool.
        return from_dlpack(arr.view(np.uint8), _as_bool=True)
    return from_dlpack(arr)


def where(condition, input=None, other=None):
    """Numbers are weak, as in PyTorch: where(c, 2.5, int_tensor) is float32. where(c) alone
    is nonzero(c, as_tuple=True), as torch.where(condition)."""
    if input is None and other is None:
        return as_tensor(condition).nonzero(as_tuple=True)
    if input is None or other is None:
        raise TypeError("where() takes the condition alone, or the condition, input and other")
    if isinstance(condition, Tensor) and condition.dtype not in (bool_, _dtype.uint8):
        raise TypeError("where: condition must be a bool tensor, got %s" % condition.dtype.name)  # as PyTorch
    cond = as_tensor(condition, dtype=bool_)
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        input, other = tensor(input), tensor(other)
    ref = input if isinstance(input, Tensor) else other
    a, b = _operand(input, ref), _operand(other, ref)
    return wrap(C.ff_where(cond._ptr, a._ptr, b._ptr))


def _ptr_array(ts):
    ts = [as_tensor(t) for t in ts]
    return ts, (ctypes.c_void_p * max(len(ts), 1))(*[t._ptr for t in ts])


def cat(tensors, dim=0):
    if _ext is not None:
        t = _ext.cat(tensors, dim)
        if t is not None:
            return t
    ts, arr = _ptr_array(tensors)
    return wrap(C.ff_concat(len(ts), arr, int_arg("cat", "dim", dim)))


concat = cat


def stack(tensors, dim=0):
    ts, arr = _ptr_array(tensors)
    return wrap(C.ff_stack(len(ts), arr, int_arg("stack", "dim", dim)))


def _pieces(fn, t, arg, dim, maxn):
    out = (ctypes.c_void_p * builtins.max(maxn, 1))()
    n = fn(t._ptr, arg, int_arg("chunk" if fn is C.ff_chunk else "split", "dim", dim), out, maxn)
    if n < 0:
        raise error()
    return tuple(wrap(out[i]) for i in range(n))


def split(t, split_size, dim=0):
    if isinstance(split_size, (list, tuple)):
        out, start = [], 0
        for s in split_size:
            out.append(t.narrow(dim, start, s))
            start += s
        if start != t.shape[dim]:
            raise FusionFlowError("split sizes %s do not add up to %d" % (list(split_size), t.shape[dim]))
        return tuple(out)
    n = t.shape[dim]
    maxn = builtins.max(1, -(-n // builtins.max(int_arg("split", "split_size", split_size), 1)))
    return _pieces(C.ff_split, t, int_arg("split", "split_size", split_size), dim, maxn)


def chunk(t, chunks, dim=0):
    chunks = int_arg("chunk", "chunks", chunks)
    return _pieces(C.ff_chunk, t, chunks, dim, builtins.max(chunks, 1))
