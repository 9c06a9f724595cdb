"""A reader of MATLAB's Level 5 MAT-files (numeric arrays only), for SVHN's train_32x32.mat and
friends: scipy, which torchvision uses for them, is not installed here.

Format: MATLAB's "MAT-File Format" document: a 128-byte header, then data elements, each an
8-byte tag (type, byte count) or a 4-byte "small element" tag; miCOMPRESSED elements hold one
zlib-deflated element. A variable is an miMATRIX element: array flags, dimensions, name, real
part (and imaginary part), its values in column-major order."""
import struct
import zlib

import numpy as np

__all__ = ["loadmat"]

# data types of the elements (miINT8 ...), as numpy types
_MI_TYPES = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 9: "f8", 12: "i8", 13: "u8"}
_MI_MATRIX, _MI_COMPRESSED = 14, 15
# array classes of the variables (mxDOUBLE_CLASS ...), as the numpy type MATLAB would hold
_MX_NUMERIC = {6: "f8", 7: "f4", 8: "i1", 9: "u1", 10: "i2", 11: "u2", 12: "i4", 13: "u4", 14: "i8", 15: "u8"}
_MX_CHAR = 4
_MX_NAMES = {1: "cell", 2: "struct", 3: "object", 5: "sparse", 16: "function"}
_COMPLEX, _LOGICAL = 0x08, 0x02


class _Elements:
    """Walks the data elements of one buffer, in the file's byte order."""

    def __init__(self, buf, order, path):
        self.buf, self.order, self.path, self.pos = buf, order, path, 0

    def more(self):
        return self.pos + 8 <= len(self.buf)

    def next(self, pad=True):
        """(type, payload bytes) of the next element; the position moves past it."""
        kind, nbytes = struct.unpack_from(self.order + "II", self.buf, self.pos)
        if kind >> 16:  # small element: count in the upper half, the data in the tag's last 4 bytes
            kind, nbytes = kind & 0xFFFF, kind >> 16
            data = self.buf[self.pos + 4:self.pos + 4 + nbytes]
            self.pos += 8
            return kind, data
        start = self.pos + 8
        if start + nbytes > len(self.buf):
            raise ValueError("loadmat: %s is truncated (an element runs past the end)" % self.path)
        self.pos = start + ((nbytes + 7) // 8 * 8 if pad else nbytes)
        return kind, self.buf[start:start + nbytes]

    def values(self):
        kind, data = self.next()
        if kind not in _MI_TYPES:
            raise ValueError("loadmat: %s has a numeric element of unknown type %d" % (self.path, kind))
        return np.frombuffer(data, dtype=np.dtype(self.order + _MI_TYPES[kind]))


def _matrix(payload, order, path, mat_dtype):
    """(name, array or None when the class is not a numeric or char array) of one miMATRIX."""
    sub = _Elements(payload, order, path)
    flags = int(sub.values()[0])
    cls, bits = flags & 0xFF, (flags >> 8) & 0xFF
    dims = [int(d) for d in sub.values()]
    name = bytes(sub.next()[1]).decode("latin1")
    if cls not in _MX_NUMERIC and cls != _MX_CHAR:
        return name, None
    real = sub.values()
    if bits & _COMPLEX:
        real = real + 1j * sub.values()
    if cls == _MX_CHAR:
        chars = real.astype(np.uint32).reshape(dims, order="F")
        return name, np.array(["".join(map(chr, row)) for row in chars.reshape(dims[0], -1)])
    if mat_dtype and not np.iscomplexobj(real):  # the class's type, as MATLAB would hold it
        real = real.astype(bool if bits & _LOGICAL else _MX_NUMERIC[cls])
    # stored values in their own type, as scipy's loadmat gives them by default (mat_dtype=False)
    return name, real.astype(real.dtype.newbyteorder("=")).reshape(dims, order="F")


def loadmat(path, mat_dtype=False):
    """{name: numpy array} of the numeric and char variables of a Level 5 MAT-file, shaped as
    MATLAB holds them (at least 2-D), plus '__header__' and '__version__' as scipy's loadmat.
    Variables of other classes (cell, struct, sparse, object) are left out."""
    with open(path, "rb") as f:
        buf = f.read()
    if len(buf) < 128 or buf[126:128] not in (b"IM", b"MI"):
        raise ValueError("loadmat: %s is not a Level 5 MAT-file (MATLAB 5 to 7.2 format); a v4 file or an "
                         "HDF5-based v7.3 file cannot be read here" % path)
    order = "<" if buf[126:128] == b"IM" else ">"
    version = struct.unpack_from(order + "H", buf, 124)[0]
    if version != 0x0100:
        raise ValueError("loadmat: %s is a MAT-file of version 0x%04x (v7.3 is HDF5); only Level 5 (0x0100) "
                         "can be read here" % (path, version))
    out = {"__header__": buf[:116].rstrip(b" \x00"), "__version__": "1.0", "__globals__": []}
    top = _Elements(memoryview(buf)[128:], order, path)
    while top.more():
        kind, payload = top.next(pad=False)  # top-level elements are not padded (scipy reads them so)
        if kind == _MI_COMPRESSED:
            kind, payload = _Elements(zlib.decompress(payload), order, path).next()
        if kind != _MI_MATRIX or len(payload) == 0:
            continue
        name, value = _matrix(payload, order, path, mat_dtype)
        if value is not None:
            out[name] = value
    return out
