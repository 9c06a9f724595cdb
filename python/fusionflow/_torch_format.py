"""PyTorch's checkpoint files, both ways: the zip format (torch.save since PyTorch 1.6:
"<name>/data.pkl", the pickle; "<name>/data/<key>", each storage's raw bytes;
"<name>/version", "<name>/byteorder") is read and written, the legacy stream of
_use_new_zipfile_serialization=False (magic, protocol and system-info pickles, the object's
pickle, the storage keys' pickle, then per storage an int64 element count and its bytes)
is read. The pickles themselves are _torch_pickle.py's.

Each saved storage becomes one fusionflow tensor, created at its first use; every tensor
that viewed it in PyTorch is a view of it here (ff_storage_view), so sharing survives both
ways. Sizes the file states are checked against the file before anything is read or
allocated, and any damage is a MalformedFileError naming the file and the format."""
import ctypes
import io
import os
import pickle
import struct
import tempfile
import zipfile

import numpy as np

from . import _torch_pickle as tp
from ._lib import C, FusionFlowError, error, missing, shape_array
from ._tensor import Tensor, wrap

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001
ZIP_ALIGN = 64  # torch aligns each record's data, so that a mapped storage is aligned
_MAX_RATIO = 1100  # deflate expands at most ~1032x: a larger claim is a lie, not data


def sniff(head):
    """The format of a file from its first bytes (at least 262 where there are that many)."""
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if head[:1] == b"\x80":
        return "legacy"
    if head[257:262] == b"ustar":
        return "tar"
    return "safetensors"


class _Malformed(Exception):
    """Raised inside the readers with the reason; load turns it into MalformedFileError."""


def _bad(where, fmt, why):
    from ._io import MalformedFileError
    from ._lib import FF_ERR_INVALID
    return MalformedFileError("load: %s: not a readable PyTorch %s checkpoint: %s" % (where, fmt, why),
                              FF_ERR_INVALID)


# ---- where storages go (map_location) ----------------------------------------------
def placement(map_location, where, fmt):
    """A function (storage tensor, saved location) -> the tensor where map_location puts it."""
    from ._device import backend_for

    def move(t, loc):
        if loc in (None, "cpu"):
            return t
        try:
            be = backend_for(loc)
        except Exception as e:  # a RuntimeError, as torch.load's for a device it does not have
            raise FusionFlowError("load: %s: a storage of this PyTorch %s checkpoint was saved on %r, which is not "
                                  "available here (%s); pass map_location='cpu' (or another device) to load it "
                                  "elsewhere" % (where, fmt, loc, e)) from None
        return wrap(C.ff_to(t._ptr, be))

    if map_location is None:
        return move
    if isinstance(map_location, dict):
        return lambda t, loc: move(t, str(map_location.get(loc, loc)))
    if callable(map_location) and not isinstance(map_location, str) and not hasattr(map_location, "type"):
        def call(t, loc):
            out = map_location(t, loc)
            return out if isinstance(out, Tensor) else move(t, loc)
        return call
    target = str(map_location)
    return lambda t, loc: move(t, target)


class _Storage:
    """One saved storage: its bytes as one 1-D tensor of numel elements, made once."""

    def __init__(self, key, dtype, location, numel, fetch):
        self.key, self.dtype, self.location, self.numel = key, dtype, location, numel
        self._fetch, self._base = fetch, None

    def base(self):
        if self._base is None:
            self._base = self._fetch(self)
        return self._base

    def view(self, offset, size, stride):
        ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (offset, *size, *stride))
        if not ints or len(size) != len(stride):
            raise _Malformed("a tensor of storage %r has offset %r, size %r, stride %r" % (self.key, offset, size,
                                                                                           stride))
        base = self.base()
        if "ff_storage_view" in missing:  # a library built before it: a copy (sharing is lost)
            return _copy_view(base, offset, size, stride, self.key)
        n, shp = shape_array(size)
        _, st = shape_array(stride)
        ptr = C.ff_storage_view(base._ptr, n, shp, st, offset)
        if not ptr:
            raise _Malformed("a tensor of storage %r: %s" % (self.key, error()))
        return wrap(ptr)


def _copy_view(base, offset, size, stride, key):
    a = base.numpy()
    span = offset + sum((s - 1) * d for s, d in zip(size, stride)) + 1 if all(size) else offset
    if offset < 0 or min(stride, default=0) < 0 or span > a.size:
        raise _Malformed("a tensor of storage %r reaches outside it" % key)
    from ._factories import tensor
    view = np.lib.stride_tricks.as_strided(a[offset:], size, [d * a.itemsize for d in stride])
    return tensor(np.ascontiguousarray(view), dtype=base.dtype)


def _tensor_from_bytes(data, dtype, numel):
    if dtype.code == 5 and numel and np.frombuffer(data, np.uint8).max() > 1:
        raise _Malformed("a bool storage holds bytes other than 0 and 1")
    arr = np.frombuffer(data, np.uint8) if len(data) else np.zeros(1, np.uint8)
    n, shp = shape_array([numel])
    return wrap(C.ff_from_data(arr.ctypes.data, n, shp, dtype.code))


def _unpickle(f, storage_for, where, weights_only):
    up = tp.Unpickler(f, storage_for, where, weights_only)
    return up.load()


# What a damaged pickle raises while it is read (the rest comes from code it names).
_CORRUPT = (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError,
            ImportError, RecursionError, struct.error, MemoryError, OverflowError, _Malformed)


def _guarded(fmt, where, fn, *args):
    try:
        return fn(*args)
    except tp.RefusedGlobal:
        raise
    except _CORRUPT as e:
        if type(e).__name__ == "MalformedFileError":
            raise
        raise _bad(where, fmt, "%s: %s" % (type(e).__name__, e)) from None
    except FusionFlowError:
        raise  # a device the checkpoint names that is not here: already says so
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, NotImplementedError, RuntimeError) as e:
        # (zipfile raises RuntimeError for a record whose damaged flags say "encrypted")
        raise _bad(where, fmt, "%s: %s" % (type(e).__name__, e)) from None


# ---- the zip format -----------------------------------------------------------------
def load_zip(f, where, weights_only, map_location, mmap_path=None):
    return _guarded("zip", where, _load_zip, f, where, weights_only, placement(map_location, where, "zip"), mmap_path)


def _file_size(f):
    pos = f.tell()
    f.seek(0, os.SEEK_END)
    n = f.tell()
    f.seek(pos)
    return n


def _load_zip(f, where, weights_only, move, mmap_path):
    zf = zipfile.ZipFile(f)
    size = _file_size(f)
    names = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith("/data.pkl")]
    if not names:
        raise _Malformed("a zip file without a <name>/data.pkl record")
    prefix = names[0][:-len("data.pkl")]
    if prefix + "byteorder" in zf.namelist() and _record(zf, prefix + "byteorder", 16, size) != b"little":
        raise _Malformed("a big-endian checkpoint (only little-endian ones are read)")
    storages = {}

    def fetch(s):
        name = prefix + "data/" + s.key
        nbytes = s.numel * s.dtype.itemsize
        if name not in zf.NameToInfo:
            raise _Malformed("storage %r has no record %r" % (s.key, name))
        info = zf.getinfo(name)
        if info.file_size != nbytes:
            raise _Malformed("record %r holds %d bytes, but storage %r is %d elements of %s (%d bytes)"
                             % (name, info.file_size, s.key, s.numel, s.dtype.name, nbytes))
        mapped = _mapped(mmap_path, f, info, s) if mmap_path else None
        t = mapped if mapped is not None else _tensor_from_bytes(_record(zf, name, nbytes, size), s.dtype, s.numel)
        return move(t, s.location)

    def storage_for(key, dtype, location, numel):
        s = storages.get(key)
        if s is None:
            s = storages[key] = _Storage(key, dtype, location, numel, fetch)
        elif (s.dtype, s.numel) != (dtype, numel):
            raise _Malformed("storage %r is named as %d %s and as %d %s" % (key, s.numel, s.dtype.name, numel,
                                                                           dtype.name))
        return s

    pkl = _record(zf, prefix + "data.pkl", None, size)
    return _unpickle(io.BytesIO(pkl), storage_for, where, weights_only)


def _record(zf, name, expect, size):
    """A record's bytes, refused before it is read if it claims more than the file can hold."""
    info = zf.getinfo(name)
    limit = info.compress_size * (1 if info.compress_type == zipfile.ZIP_STORED else _MAX_RATIO)
    if info.compress_size > size or info.file_size > limit or (expect is not None and info.file_size > expect):
        raise _Malformed("record %r claims %d bytes from %d in a %d-byte file" % (name, info.file_size,
                                                                                 info.compress_size, size))
    return zf.read(name)


def _mapped(path, f, info, s):
    """The storage's record mapped copy-on-write, when it is stored, aligned and of a dtype
    NumPy has; else None (it is read instead)."""
    if info.compress_type != zipfile.ZIP_STORED or s.dtype.np is None or not s.numel:
        return None
    f.seek(info.header_offset)
    local = f.read(30)
    if len(local) < 30 or local[:4] != b"PK\x03\x04":
        raise _Malformed("record %r has no local header" % info.filename)
    nlen, xlen = struct.unpack("<HH", local[26:30])
    start = info.header_offset + 30 + nlen + xlen
    if start % s.dtype.itemsize:
        return None
    from ._factories import from_numpy
    arr = np.memmap(path, dtype=s.dtype.np, mode="c", offset=start, shape=(s.numel,))
    return from_numpy(arr)


# ---- the legacy format ----------------------------------------------------------------
def load_legacy(f, where, weights_only, map_location):
    return _guarded("legacy", where, _load_legacy, f, where, weights_only, placement(map_location, where, "legacy"))


def _load_legacy(f, where, weights_only, move):
    size = _file_size(f)

    def no_storage(*args):
        raise _Malformed("a storage in the file's header")

    small = lambda: _unpickle(f, no_storage, where, True)  # noqa: E731
    if small() != LEGACY_MAGIC:
        raise _Malformed("a pickle, but not a PyTorch checkpoint (wrong magic number)")
    if small() != LEGACY_PROTOCOL:
        raise _Malformed("an unknown protocol version")
    info = small()
    if not isinstance(info, dict) or info.get("little_endian") is not True:
        raise _Malformed("a big-endian checkpoint (only little-endian ones are read)")
    start = f.tell()
    scan = tp.ScanUnpickler(f, where)
    scan.load()
    keys = small()
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise _Malformed("the storage key list is not a list of strings")
    where_data = {}
    pos = f.tell()
    for k in keys:
        if k not in scan.seen:
            raise _Malformed("storage %r is listed but never used" % k)
        dtype, _, numel = scan.seen[k]
        head = f.read(8)
        if len(head) < 8:
            raise _Malformed("truncated in the header of storage %r" % k)
        (count,) = struct.unpack("<q", head)
        nbytes = count * dtype.itemsize
        if count != numel or pos + 8 + nbytes > size:
            raise _Malformed("storage %r holds %d elements of %s where %d are expected, in a %d-byte file "
                             "(truncated?)" % (k, count, dtype.name, numel, size))
        where_data[k] = pos + 8
        pos += 8 + nbytes
        f.seek(pos)
    missing_keys = set(scan.seen) - set(where_data)
    if missing_keys:
        raise _Malformed("storages %s are used but not in the file" % sorted(missing_keys)[:4])

    def fetch(s):
        f.seek(where_data[s.key])
        return move(_tensor_from_bytes(f.read(s.numel * s.dtype.itemsize), s.dtype, s.numel), s.location)

    storages = {}

    def storage_for(key, dtype, location, numel):
        if key not in storages:
            storages[key] = _Storage(key, dtype, location, numel, fetch)
        return storages[key]

    f.seek(start)
    return _unpickle(f, storage_for, where, weights_only)


# ---- writing --------------------------------------------------------------------------
def _span(t):
    """(first, one past the last) storage element t touches."""
    off = t.storage_offset()
    if t.numel() == 0:
        return off, off
    return off, off + sum((s - 1) * d for s, d in zip(t.shape, t.stride())) + 1


class _Layout:
    """Which saved storage each tensor goes in (tensors sharing a fusionflow storage share
    one), at what offset, and each storage's bytes."""

    def __init__(self, tensors):
        self.groups, self.at, by_base = [], {}, {}
        for t in tensors:
            g = self._find(t, by_base)
            lo, hi = _span(t)
            if g is None:
                g = {"ref": tp.StorageRef(str(len(self.groups)), t.dtype, 0), "rep": t, "lo": lo, "hi": hi}
                self.groups.append(g)
                base = self._base_key(t)
                if base is not None:
                    by_base[base] = g
            g["lo"], g["hi"] = min(g["lo"], lo), max(g["hi"], hi)
            self.at[id(t)] = (g, t)
        for g in self.groups:
            g["ref"].numel = g["hi"] - g["lo"]

    @staticmethod
    def _base_key(t):
        if t.numel() == 0 or "ff_storage_view" in missing:
            return None  # an empty tensor (or an old library) gets a storage of its own
        ptr = t.data_ptr()
        return (ptr - t.storage_offset() * t.dtype.itemsize, t.dtype.code) if ptr else None

    def _find(self, t, by_base):
        key = self._base_key(t)
        if key is not None:
            return by_base.get(key)
        if t.numel() == 0 or t.data_ptr() or "ff_storage_view" in missing:
            return None
        for g in self.groups:  # device memory has no host address: ask the library
            if g["rep"].dtype == t.dtype and g["rep"].data_ptr() == 0 and t.shares_memory_with(g["rep"]):
                return g
        return None

    def placement(self, t):
        g, _ = self.at[id(t)]
        return g["ref"], t.storage_offset() - g["lo"]

    def storage_bytes(self, g):
        n = g["hi"] - g["lo"]
        rep = g["rep"]
        if "ff_storage_view" in missing or rep.numel() == 0:
            flat = rep.contiguous().reshape(-1) if rep.numel() else rep
        else:
            nd, shp = shape_array([n])
            _, st = shape_array([1])
            flat = wrap(C.ff_storage_view(rep._ptr, nd, shp, st, g["lo"]))
        buf = ctypes.create_string_buffer(max(n * rep.dtype.itemsize, 1))
        if n:
            from ._lib import check_status
            check_status(C.ff_tensor_to_host(flat._ptr, buf, n * rep.dtype.itemsize))
        return buf.raw[:n * rep.dtype.itemsize]


def _pickle(obj, placement):
    buf = io.BytesIO()
    try:
        tp.Pickler(buf, placement).dump(obj)
    except (pickle.PicklingError, TypeError, AttributeError) as e:
        raise TypeError("save: cannot pickle a %s (%s); fusionflow.save pickles objects other than tensors and "
                        "containers of them, so everything they reach must be picklable (no lambdas or local "
                        "classes); or save its state_dict()" % (type(obj).__name__, e)) from None
    return buf.getvalue()


def zip_bytes_records(obj):
    """The records of obj's checkpoint: [(name under the prefix, bytes)], in torch's order."""
    obj = tp.numpy_scalars_to_python(obj)
    seen = {}

    def collect(t):  # first pass: which tensors the object reaches
        if id(t) not in seen:
            seen[id(t)] = t
        return tp.StorageRef("0", t.dtype, 0), 0
    _pickle(obj, collect)
    layout = _Layout(list(seen.values()))
    records = [("data.pkl", _pickle(obj, layout.placement)), ("byteorder", b"little")]
    records += [("data/" + g["ref"].key, layout.storage_bytes(g)) for g in layout.groups]
    records.append(("version", b"3\n"))
    return records


def write_zip(fileobj, prefix, records):
    """A zip of stored records under prefix/, each record's data 64-byte aligned as torch's."""
    with zipfile.ZipFile(fileobj, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
        for name, data in records:
            info = zipfile.ZipInfo(prefix + "/" + name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            start = z.fp.tell() + 30 + len(info.filename.encode()) + 4
            pad = -start % ZIP_ALIGN
            info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
            z.writestr(info, data)


def archive_name(f):
    """The directory torch.save puts the records in: the file's stem, or "archive"."""
    if hasattr(f, "write"):
        return "archive"
    stem = os.path.splitext(os.path.basename(os.fspath(f)))[0]
    ok = stem and all(c.isalnum() or c in "._-" for c in stem)
    return stem if ok else "archive"


def save_zip(obj, f):
    records = zip_bytes_records(obj)
    prefix = archive_name(f)
    if hasattr(f, "write"):
        write_zip(f, prefix, records)
        return
    _atomic_write(os.fspath(f), lambda fo: write_zip(fo, prefix, records))


def _umask():
    try:
        with open("/proc/self/status") as st:
            for line in st:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def _atomic_write(path, write):
    """Writes to a temporary file beside path, fsyncs it and renames it over path: a
    reader sees the old file or the new one, never half of one."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp.", dir=d)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fo:
            write(fo)
            fo.flush()
            os.fsync(fo.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:
        dfd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


__all__ = ["sniff", "load_zip", "load_legacy", "save_zip", "placement"]
