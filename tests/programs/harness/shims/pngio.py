"""The smallest PNG writer and reader the harness needs: 8-bit grayscale, one IDAT, filter 0.
The writer makes super_resolution's stand-in images (real PNGs, so a real PIL reads them too);
the reader is the PIL stand-in's, for machines without PIL (CI has none)."""
import struct
import zlib

import numpy as np

_SIG = b"\x89PNG\r\n\x1a\n"


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)


def write_gray(path, a):
    a = np.ascontiguousarray(a, np.uint8)
    h, w = a.shape
    raw = b"".join(b"\x00" + a[i].tobytes() for i in range(h))  # filter 0 on every row
    with open(path, "wb") as f:
        f.write(_SIG + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                + _chunk(b"IDAT", zlib.compress(raw)) + _chunk(b"IEND", b""))


def read_gray(path):
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(_SIG):
        raise ValueError("%s: not a PNG" % path)
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    w, h, depth, color, _, _, interlace = hdr
    if (depth, color, interlace) != (8, 0, 0):
        raise ValueError("%s: only 8-bit grayscale, non-interlaced PNGs are read here" % path)
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, w + 1)
    if rows[:, 0].any():
        raise ValueError("%s: only filter 0 is read here" % path)
    return rows[:, 1:].copy()
