"""Files: safetensors (named tensors, e.g. a state dict, or nested checkpoints: _tree.py; a
pickled object such as a whole Module: _pickled.py) and .npy, through the C io layer."""
import collections
import contextlib
import ctypes
import os
import tempfile

import pickle

from ._lib import C, FF_ERR_INVALID, FF_ERR_IO, FusionFlowError, FusionFlowValueError, check_status, error, missing
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


def save(obj, f, metadata=None, format=None, pickle_module=None, pickle_protocol=2,
         _use_new_zipfile_serialization=True):
    """Writes obj to f (a path, or a binary file object such as io.BytesIO or open(path,
    "wb")), as torch.save: in PyTorch's zip format (torch.load reads it, with
    weights_only=True too for a state_dict), unless format="safetensors" or f is a path
    ending in ".safetensors" or metadata is given (_torch_format.py; pickle_protocol and
    _use_new_zipfile_serialization are accepted and the zip format, protocol 2, is what
    is written). Both formats are written atomically to a path.

    In safetensors:
    obj: a dict of str -> Tensor (a state_dict: written as a plain safetensors file), or any
    nesting of dicts, lists and tuples of Tensors, numbers, strings, bools and None (an
    optimizer's state_dict, a checkpoint); its structure goes into the header's metadata as
    JSON (_tree.py). Any other object (a whole Module) is pickled, as torch.save does, in the
    same safetensors container (_pickled.py): load then needs weights_only=False.
    metadata: optional dict of str -> str for __metadata__."""
    if format not in (None, "torch", "safetensors"):
        raise ValueError("save: format must be 'torch' (PyTorch's zip format) or 'safetensors', got %r" % (format,))
    if format is None:  # metadata is a safetensors header's: asking for it picks that format
        is_st = metadata is not None or (not hasattr(f, "write") and os.fsdecode(f).endswith(".safetensors"))
        format = "safetensors" if is_st else "torch"
    if format == "torch":
        if metadata:
            raise ValueError("save: metadata is written to safetensors files only (format='safetensors')")
        from ._torch_format import save_zip
        save_zip(obj, f)
        return
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


def load(f, mmap=False, device=None, map_location=None, weights_only=None, **pickle_load_args):
    """Reads a checkpoint from a path or a binary file object, telling its format by its
    bytes (not its name): PyTorch's zip format and its legacy pickle stream
    (_torch_format.py: what torch.save writes, with tensors sharing a storage there sharing
    one here), or safetensors: an OrderedDict name -> Tensor (file order) for a plain
    safetensors file, else the saved nesting. PyTorch's checkpoints load with
    weights_only semantics unless weights_only=False: a pickle naming anything but
    tensors, containers, numbers, strings and OrderedDict is refused (an UnpicklingError
    saying so) and nothing it names runs. As torch.load, a device or device string as
    second argument is map_location; map_location may also be a dict of saved location ->
    location or a function (storage, location) -> tensor.

    mmap=True maps the file (paths only): tensors view the mapping (copy-on-write) instead of
    being read into fresh memory. map_location (torch's name) is device: a device or its
    string puts every tensor there. A file that save pickled (a Module) is refused unless
    weights_only=False is passed: unpickling it runs the code of the classes it names.
    A malformed header raises FusionFlowValueError, malformed metadata (the nesting, the
    pickle) MalformedFileError (a FusionFlowValueError and an UnpicklingError), each naming
    the file; a path that is not a regular file (a FIFO, a directory) FusionFlowError."""
    from ._tree import decode, TREE_KEY
    from ._pickled import refusal, restore, PICKLE_KEY
    if isinstance(mmap, str) or hasattr(mmap, "type"):  # torch.load(f, "cpu"): map_location
        map_location, mmap = mmap, False
    fmt = _sniff(f)
    if fmt in ("zip", "legacy", "tar"):
        return _load_torch(f, fmt, bool(mmap), map_location if map_location is not None else device, weights_only)
    if map_location is not None:
        if not isinstance(map_location, str) and not hasattr(map_location, "type"):
            raise TypeError("load: map_location must be a device or a device string for a safetensors file, got %s"
                            % type(map_location).__name__)
        device = device if device is not None else map_location
    if hasattr(f, "read"):
        with _scratch() as tmp:
            with open(tmp, "wb") as dst:
                dst.write(f.read())
            tensors, meta = _load_path(tmp, 0, device)
    else:
        tensors, meta = _not_torch_either(_load_path, f, FF_IO_MMAP if mmap else 0, device)
    where = _where(f)
    if PICKLE_KEY in meta:
        if weights_only is not False:
            raise refusal(where)
        return restore(meta[PICKLE_KEY], tensors, where)
    if TREE_KEY not in meta:
        return tensors
    return decode(meta[TREE_KEY], tensors, where)


def _sniff(f):
    """The format of f by its first bytes; a file object is left where it was."""
    from ._torch_format import sniff
    if hasattr(f, "read"):
        if not (hasattr(f, "seek") and hasattr(f, "tell")):
            return "safetensors"
        pos = f.tell()
        head = f.read(262)
        f.seek(pos)
        return sniff(head)
    try:
        if not os.path.isfile(f):  # before open(): opening a FIFO blocks until a writer comes
            return "safetensors"  # the C loader refuses it, saying what it is
        with open(f, "rb") as fh:
            return sniff(fh.read(262))
    except OSError:
        return "safetensors"  # the C loader's error names the file and the reason


def _not_torch_either(load, path, flags, device):
    """The safetensors loader's error for a file of no known format also says that it is
    not a PyTorch checkpoint (a damaged one's signature is gone, so it was read as this)."""
    try:
        return load(path, flags, device)
    except FusionFlowError as e:
        if not os.path.isfile(path) or e.status not in (FF_ERR_INVALID, FF_ERR_IO):
            raise
        raise type(e)("%s (nor is it a PyTorch checkpoint: it starts with neither the zip nor the pickle "
                      "signature)" % e.args[0], e.status) from None


def _load_torch(f, fmt, mmap, map_location, weights_only):
    from . import _torch_format as tf
    where = _where(f)
    if fmt == "tar":
        raise MalformedFileError("load: %s is a PyTorch checkpoint in the tar format of PyTorch < 0.4, which "
                                 "fusionflow does not read: load it with torch.load and torch.save it again"
                                 % where, FF_ERR_INVALID)
    if fmt == "legacy" and mmap:
        raise RuntimeError("load: %s: mmap can only be used with files saved in the zip format (torch.save's "
                           "default since PyTorch 1.6), not the legacy one" % where)
    restricted = weights_only is not False
    if hasattr(f, "read"):
        if fmt == "zip":
            return tf.load_zip(f, where, restricted, map_location)
        return tf.load_legacy(f, where, restricted, map_location)
    with open(f, "rb") as fh:
        if fmt == "zip":
            return tf.load_zip(fh, where, restricted, map_location, os.fspath(f) if mmap else None)
        return tf.load_legacy(fh, where, restricted, map_location)


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
