"""Files: safetensors (named tensors, e.g. a state dict) and .npy, through the C io layer."""
import collections
import ctypes
import os

from ._lib import C, check_status, error
from ._tensor import Tensor, wrap

__all__ = ["save", "load", "save_npy", "load_npy", "load_metadata"]

FF_IO_MMAP = 1


def _path(p):
    return os.fsencode(os.fspath(p))


def save(obj, path, metadata=None):
    """Writes a dict of name -> Tensor (or a Module's state_dict) as safetensors.

    metadata: optional dict of str -> str stored in the header's __metadata__."""
    if hasattr(obj, "state_dict") and callable(obj.state_dict):
        obj = obj.state_dict()
    if not isinstance(obj, dict):
        raise TypeError("save expects a dict of name -> Tensor or a Module, got %s" % type(obj).__name__)
    names = list(obj.keys())
    tensors = [obj[k] for k in names]
    for k, t in zip(names, tensors):
        if not isinstance(k, str) or not isinstance(t, Tensor):
            raise TypeError("save: entry %r must map a str to a Tensor" % (k,))
    n = len(names)
    c_names = (ctypes.c_char_p * max(n, 1))(*[k.encode() for k in names])
    c_tensors = (ctypes.c_void_p * max(n, 1))(*[t._ptr for t in tensors])
    c_meta = None
    if metadata:
        flat = []
        for k, v in metadata.items():
            flat += [str(k).encode(), str(v).encode()]
        c_meta = (ctypes.c_char_p * (len(flat) + 1))(*flat, None)
    check_status(C.ff_safetensors_save(_path(path), n, c_names, c_tensors, c_meta))


def _read_dict(d, with_meta):
    try:
        out = collections.OrderedDict()
        for i in range(C.ff_tensor_dict_count(d)):
            out[C.ff_tensor_dict_name(d, i).decode()] = wrap(C.ff_tensor_dict_tensor(d, i))
        meta = {C.ff_tensor_dict_meta_key(d, i).decode(): C.ff_tensor_dict_meta_value(d, i).decode()
                for i in range(C.ff_tensor_dict_meta_count(d))}
    finally:
        C.ff_tensor_dict_free(d)
    return (out, meta) if with_meta else out


def load(path, mmap=False, device=None):
    """Reads a safetensors file into an OrderedDict name -> Tensor (file order).

    mmap=True maps the file: tensors view the mapping (copy-on-write) instead of being
    read into fresh memory."""
    flags = FF_IO_MMAP if mmap else 0
    if device is not None:
        from ._device import backend_for
        d = C.ff_safetensors_load_on(backend_for(device), _path(path), flags)
    else:
        d = C.ff_safetensors_load(_path(path), flags)
    if not d:
        raise error()
    return _read_dict(d, False)


def load_metadata(path):
    """The __metadata__ dict of a safetensors file."""
    d = C.ff_safetensors_load(_path(path), FF_IO_MMAP)
    if not d:
        raise error()
    return _read_dict(d, True)[1]


def save_npy(path, t):
    check_status(C.ff_npy_save(_path(path), t._ptr))


def load_npy(path, device=None):
    if device is not None:
        from ._device import backend_for
        return wrap(C.ff_npy_load_on(backend_for(device), _path(path)))
    return wrap(C.ff_npy_load(_path(path)))
