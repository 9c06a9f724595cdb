"""The smallest PNG writer the harness needs (8-bit grayscale, one IDAT, filter 0): it makes
super_resolution's stand-in BSDS300 images, which both sides read with the real PIL."""
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

