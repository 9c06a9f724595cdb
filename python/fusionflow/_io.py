"""Files: safetensors (named tensors, e.g. a state dict, or nested checkpoints: _tree.py; a
pickled object such as a whole Module: _pickled.py) and .npy, through the C io layer."""
import collections
import contextlib
import ctypes
import os
import tempfile

import pickle

from ._lib import C, FF_ERR_INVALID, FusionFlowValueError, check_status, error, missing
from ._tensor import wrap

__all__ = ["save", "load", "save_npy", "load_npy", "load_metadata"]

FF_IO_MMAP = 1


class MalformedFileError(FusionFlowValueError, pickle.UnpicklingError):
    """What load raises for a file whose metadata (the saved nesting, the pickle, the
    quantization scheme) is malformed: the class the C loader's malformed-header errors
    have (FusionFlowValueError: a RuntimeError and a ValueError), and an UnpicklingError
    too, which is what torch.load raises for a corrupt file."""


def malformed(where, key, why):
    """The MalformedFileError for `where` (a quoted path, or "the file object") whose
    metadata under `key` is malformed: `why` says how."""
    return MalformedFileError("load: %s: malformed %s metadata: %s" % (where, key, why), FF_ERR_INVALID)


def _where(f):
    return "the file object" if hasattr(f, "read") else repr(os.fspath(f))


def _path(p):
    return os.fsencode(os.fspath(p))


def save(obj, f, metadata=None):
    """Writes obj as safetensors to f (a path, or a binary file object such as io.BytesIO or
    open(path, "wb")), as torch.save.

    obj: a dict of str -> Tensor (a state_dict: written as a plain safetensors file), or any
    nesting of dicts, lists and tuples of Tensors, numbers, strings, bools and None (an
    optimizer's state_dict, a checkpoint); its structure goes into the header's metadata as
    JSON (_tree.py). Any other object (a whole Module) is pickled, as torch.save does, in the
    same safetensors container (_pickled.py): load then needs weights_only=False.
    metadata: optional dict of str -> str for __metadata__."""
    from ._tree import encode, TREE_KEY
    meta = dict(metadata or {})
    try:
        names, tensors, tree = encode(obj)
    except TypeError:
        from ._pickled import dump, PICKLE_KEY
        names, tensors, meta[PICKLE_KEY] = dump(obj)
        tree = None
    if tree is not None:
        meta[TREE_KEY] = tree
    if hasattr(f, "write"):
        with _scratch() as tmp:
            _write(tmp, names, tensors, meta)
            with open(tmp, "rb") as src:
                f.write(src.read())
        return
    _write(f, names, tensors, meta)


def _write(path, names, tensors, metadata):
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


@contextlib.contextmanager
def _scratch():
    """A temporary file path, removed afterwards: the C io layer reads and writes paths, so a
    file object goes through one."""
    fd, tmp = tempfile.mkstemp(suffix=".safetensors")
    os.close(fd)
    try:
        yield tmp
    finally:
        os.unlink(tmp)


def _read_dict(d, with_meta):
    try:
        out = collections.OrderedDict()
        for i in range(C.ff_tensor_dict_count(d)):
            out[C.ff_tensor_dict_name(d, i).decode()] = wrap(C.ff_tensor_dict_tensor(d, i))
        meta = _read_meta(d)
    finally:
        C.ff_tensor_dict_free(d)
    return (out, meta) if with_meta else out


def _read_meta(d):
    """d's metadata in one call (ff_tensor_dict_meta_pack), not two per entry: a hostile
    header holds millions of entries, and each ctypes call costs about a microsecond."""
    if "ff_tensor_dict_meta_pack" in missing:  # a library built before it
        return {C.ff_tensor_dict_meta_key(d, i).decode(): C.ff_tensor_dict_meta_value(d, i).decode()
                for i in range(C.ff_tensor_dict_meta_count(d))}
    n = C.ff_tensor_dict_meta_pack(d, None, 0)
    buf = ctypes.create_string_buffer(n)
    C.ff_tensor_dict_meta_pack(d, buf, n)
    parts = buf.raw[:n].decode().split("\0")  # key, value, key, value, ..., "" after the last NUL
    return dict(zip(parts[0:-1:2], parts[1:-1:2]))


def load(f, mmap=False, device=None, map_location=None, weights_only=None):
    """Reads what save wrote, from a path or a binary file object: an OrderedDict name ->
    Tensor (file order) for a plain safetensors file, else the saved nesting.

    mmap=True maps the file (paths only): tensors view the mapping (copy-on-write) instead of
    being read into fresh memory. map_location (torch's name) is device: a device or its
    string puts every tensor there. A file that save pickled (a Module) is refused unless
    weights_only=False is passed: unpickling it runs the code of the classes it names.
    A malformed header raises FusionFlowValueError, malformed metadata (the nesting, the
    pickle) MalformedFileError (a FusionFlowValueError and an UnpicklingError), each naming
    the file; a path that is not a regular file (a FIFO, a directory) FusionFlowError."""
    from ._tree import decode, TREE_KEY
    from ._pickled import refusal, restore, PICKLE_KEY
    if map_location is not None:
        if not isinstance(map_location, str) and not hasattr(map_location, "type"):
            raise TypeError("load: map_location must be a device or a device string, got %s"
                            % type(map_location).__name__)
        device = device if device is not None else map_location
    if hasattr(f, "read"):
        with _scratch() as tmp:
            with open(tmp, "wb") as dst:
                dst.write(f.read())
            tensors, meta = _load_path(tmp, 0, device)
    else:
        tensors, meta = _load_path(f, FF_IO_MMAP if mmap else 0, device)
    where = _where(f)
    if PICKLE_KEY in meta:
        if weights_only is not False:
            raise refusal(where)
        return restore(meta[PICKLE_KEY], tensors, where)
    if TREE_KEY not in meta:
        return tensors
    return decode(meta[TREE_KEY], tensors, where)


def _load_path(path, flags, device):
    if device is not None:
        from ._device import backend_for
        d = C.ff_safetensors_load_on(backend_for(device), _path(path), flags)
    else:
        d = C.ff_safetensors_load(_path(path), flags)
    if not d:
        raise error()
    return _read_dict(d, True)


def load_metadata(path):
    """The __metadata__ dict of a safetensors file."""
    d = C.ff_safetensors_load(_path(path), FF_IO_MMAP)
    if not d:
        raise error()
    from ._tree import TREE_KEY
    from ._pickled import PICKLE_KEY
    meta = _read_dict(d, True)[1]
    meta.pop(TREE_KEY, None)
    meta.pop(PICKLE_KEY, None)
    return meta


def save_npy(path, t):
    check_status(C.ff_npy_save(_path(path), t._ptr))


def load_npy(path, device=None):
    if device is not None:
        from ._device import backend_for
        return wrap(C.ff_npy_load_on(backend_for(device), _path(path)))
    return wrap(C.ff_npy_load(_path(path)))
