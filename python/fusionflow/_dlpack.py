"""DLPack exchange through PyCapsules (the legacy protocol of NumPy 1.24 / PyTorch 1.13).

Export: __dlpack__ returns a capsule named "dltensor" holding an ff_to_dlpack() result.
A consumer takes ownership by renaming it "used_dltensor" and later calls the deleter;
if nobody consumes it, the capsule's destructor calls the deleter instead - exactly one
of the two happens.
Import: from_dlpack(x) calls x.__dlpack__(), wraps the DLManagedTensor without copying
(ff_from_dlpack) and renames the capsule, so the producer's deleter runs once, when the
last FusionFlow tensor over that memory is released.
"""
import ctypes

from ._lib import C, FusionFlowError, error

__all__ = ["to_capsule", "from_dlpack", "capsule_of", "capsule_pointer", "mark_consumed"]

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

# The destructor receives the dying capsule as a raw PyObject *: use c_void_p-typed
# twins of the capsule functions so no reference is taken on an object being freed.
_is_valid_raw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_get_pointer_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))

_DLTENSOR = b"dltensor"
_USED = b"used_dltensor"
_dlpack_free = C.ff_dlpack_free


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule):
    # Renamed (consumed) capsules are the consumer's business; ours call the deleter.
    if _is_valid_raw(capsule, _DLTENSOR):
        _dlpack_free(_get_pointer_raw(capsule, _DLTENSOR))


_DESTRUCTOR = ctypes.cast(_capsule_destructor, ctypes.c_void_p)


def capsule_of(m):
    """A "dltensor" capsule owning the DLManagedTensor at address m (freed by the capsule
    unless a consumer renames it)."""
    try:
        return _api.PyCapsule_New(m, _DLTENSOR, _DESTRUCTOR)
    except BaseException:
        _dlpack_free(m)
        raise


def capsule_pointer(capsule):
    """The DLManagedTensor of an unconsumed "dltensor" capsule; mark_consumed(capsule) once
    its new owner holds it."""
    if not _api.PyCapsule_IsValid(capsule, _DLTENSOR):
        raise TypeError("from_dlpack expects an object with __dlpack__ or an unconsumed 'dltensor' capsule")
    return _api.PyCapsule_GetPointer(capsule, _DLTENSOR)


def mark_consumed(capsule):
    _api.PyCapsule_SetName(capsule, _USED)


def to_capsule(t):
    m = C.ff_to_dlpack(t._ptr)
    if not m:
        raise BufferError(str(error()))
    return capsule_of(m)


_DLTENSOR_DTYPE_CODE = 20  # offsetof(DLManagedTensor, dl_tensor.dtype.code): data, device, ndim before it
_KDLBOOL = 6  # DLPack >= 0.8; ff_from_dlpack reads it as bool
_DEVICE_BACKENDS = {1: None, 2: "cuda"}  # DLPack device type -> backend (kDLCPU: the default one)


def from_dlpack(x, _as_bool=False):
    """A Tensor viewing the memory of x (anything with __dlpack__, or a "dltensor" capsule).

    _as_bool: x exports one-byte 0/1 values as uint8 (DLPack 0.6, and so NumPy 1.24, has no
    bool type); tag them kDLBool so they are shared as a bool tensor."""
    from ._tensor import Tensor, wrap
    if isinstance(x, Tensor):
        return x.detach()
    dev = (1, 0)
    if hasattr(x, "__dlpack__"):
        dev = x.__dlpack_device__() if hasattr(x, "__dlpack_device__") else (1, 0)
        if dev[0] not in _DEVICE_BACKENDS:
            raise BufferError("from_dlpack: device type %d is neither kDLCPU nor kDLCUDA" % dev[0])
        capsule = x.__dlpack__()
    else:
        capsule = x
    m = capsule_pointer(capsule)
    if _as_bool:
        code = ctypes.c_uint8.from_address(m + _DLTENSOR_DTYPE_CODE)
        if code.value != 1 or ctypes.c_uint8.from_address(m + _DLTENSOR_DTYPE_CODE + 1).value != 8:
            raise TypeError("from_dlpack: a bool share needs uint8 data")
        code.value = _KDLBOOL
    if dev[0] == 1:
        p = C.ff_from_dlpack(m)
    else:  # device memory: a view on the backend of that device (zero copy), e.g. cuda
        from ._backend import backend_handle
        p = C.ff_from_dlpack_on(backend_handle(_DEVICE_BACKENDS[dev[0]]), m)
    if not p:
        raise error()  # the capsule keeps ownership; its destructor frees it
    mark_consumed(capsule)
    return wrap(p)


# ---- the export side as Tensor methods (the protocol NumPy and PyTorch call) ------------
def _tensor_dlpack(self, stream=None):
    return to_capsule(self)


def _tensor_dlpack_device(self):
    """(kDLCPU, 0) on host backends; a device backend's own device ((kDLCUDA, i) on cuda)."""
    kind, index = ctypes.c_int32(), ctypes.c_int32()
    if C.ff_backend_dlpack_device(C.ff_tensor_backend(self._ptr), ctypes.byref(kind), ctypes.byref(index)):
        raise BufferError("tensor lives on backend '%s', whose memory is not host memory and has no DLPack "
                          "device" % self.device)
    return (kind.value, index.value)


from ._tensor import Tensor  # noqa: E402  (after to_capsule: _tensor imports nothing from here)

Tensor.__dlpack__ = _tensor_dlpack
Tensor.__dlpack_device__ = _tensor_dlpack_device
