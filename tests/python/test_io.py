"""safetensors and .npy through fusionflow.save/load: round trips, files written by
hand per the format specs (as PyTorch's safetensors and NumPy write them), and corrupt
files rejected with FusionFlowError."""
import json
import struct

import numpy as np
import pytest

import fusionflow as ff
from fusionflow import FusionFlowError


def write_safetensors(path, tensors, metadata=None, pad=True):
    """The format by its spec, independently of our writer: sorted by dtype alignment
    then name as the reference implementation does, header padded to 8 bytes."""
    header, blobs, pos = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    names = sorted(tensors, key=lambda k: (-tensors[k][1].dtype.alignment, k))
    for name in names:
        dt, a = tensors[name]
        b = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [pos, pos + len(b)]}
        blobs.append(b)
        pos += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def test_reads_reference_file_bit_exactly(tmp_path, live_counter):
    p = tmp_path / "model.safetensors"
    rng = np.random.default_rng(5)
    src = {
        "encoder.weight": ("F32", rng.standard_normal((4, 3)).astype(np.float32)),
        "encoder.bias": ("F32", np.array([np.nan, np.inf, -0.0, 1e-45], dtype=np.float32)),
        "head.weight": ("F64", rng.standard_normal((2, 2))),
        "steps": ("I64", np.array([2 ** 62 + 1, -5], dtype=np.int64)),
        "ids": ("I32", np.array([[1, -2]], dtype=np.int32)),
        "pixels": ("U8", np.array([0, 255, 128], dtype=np.uint8)),
        "mask": ("BOOL", np.array([True, False, True])),
        "scalar": ("F32", np.array(3.5, dtype=np.float32)),
        "empty": ("F32", np.zeros((0, 4), dtype=np.float32)),
    }
    write_safetensors(p, src, metadata={"format": "pt"})
    for mmap in (False, True):
        sd = ff.load(p, mmap=mmap)
        assert set(sd) == set(src)
        for k, (_, a) in src.items():
            t = sd[k]
            assert t.shape == a.shape and t.dtype.np == a.dtype, k
            assert t.numpy().tobytes() == a.tobytes(), k  # bit-exact, NaN payloads and -0.0 included
        del sd
    assert ff.load_metadata(p) == {"format": "pt"}


def test_round_trip_and_our_bytes_follow_the_spec(tmp_path, live_counter):
    p = tmp_path / "x.safetensors"
    a = ff.arange(6, dtype=ff.float32).reshape(2, 3)
    b = ff.tensor([1, 2, 3], dtype=ff.int64)
    ff.save({"a": a.T, "b": b}, p, metadata={"epoch": "3"})  # a strided view is saved row-major
    raw = p.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert (8 + n) % 8 == 0
    header = json.loads(raw[8:8 + n])
    assert header["__metadata__"] == {"epoch": "3"}
    assert header["a"] == {"dtype": "F32", "shape": [3, 2], "data_offsets": [0, 24]}
    assert header["b"] == {"dtype": "I64", "shape": [3], "data_offsets": [24, 48]}
    assert raw[8 + n:8 + n + 24] == np.ascontiguousarray(a.T.numpy()).tobytes()
    back = ff.load(p)
    assert back["a"].tolist() == a.T.tolist() and back["b"].tolist() == [1, 2, 3]
    assert not list(tmp_path.glob("*.tmp.*"))  # the temporary file was renamed away


def test_corrupt_safetensors_rejected(tmp_path, live_counter):
    p = tmp_path / "bad.safetensors"
    good_h = {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}

    def raw(header, data=b"\0" * 8, length=None):
        h = json.dumps(header).encode() if isinstance(header, dict) else header
        p.write_bytes(struct.pack("<Q", len(h) if length is None else length) + h + data)

    cases = [
        (lambda: p.write_bytes(b"\x01\x02"), "too short"),
        (lambda: raw(good_h, length=10 ** 6), "header length says"),  # lying length
        (lambda: raw(good_h, length=2 ** 40), "out of bounds"),  # huge length
        (lambda: raw(b'{"a": {"dtype": "F32",'), "not valid JSON"),
        (lambda: raw({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                      "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}), "overlap"),
        (lambda: raw({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}), "belong to no tensor"),
        (lambda: raw({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}), "shape x dtype size"),
        (lambda: raw({"a": {"dtype": "F32", "shape": [2 ** 40, 2 ** 40], "data_offsets": [0, 8]}}), "overflows"),
        (lambda: raw({"a": {"dtype": "Q7", "shape": [2], "data_offsets": [0, 8]}}), "unknown dtype"),
        (lambda: raw({"a": {"dtype": "U16", "shape": [4], "data_offsets": [0, 8]}}), "U16"),
        (lambda: raw({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}), "run past"),
    ]
    for make, needle in cases:
        make()
        for mmap in (False, True):
            with pytest.raises(FusionFlowError, match=needle):
                ff.load(p, mmap=mmap)
    raw(good_h)
    data = p.read_bytes()
    for cut in range(len(data)):  # truncated at every length
        p.write_bytes(data[:cut])
        with pytest.raises(FusionFlowError):
            ff.load(p)
    with pytest.raises(FusionFlowError, match="cannot open"):
        ff.load(tmp_path / "missing.safetensors")


def test_npy_round_trips_with_numpy(tmp_path, live_counter):
    p = tmp_path / "a.npy"
    for a in (np.arange(12, dtype=np.float32).reshape(3, 4), np.array([1e300, -2.0]), np.arange(5, dtype=np.int32),
              np.array([[2 ** 40]], dtype=np.int64), np.array([0, 255], dtype=np.uint8), np.array([True, False]),
              np.array(7.0), np.zeros((0, 3), np.float32)):
        np.save(p, a)
        t = ff.load_npy(p)
        assert t.dtype.np == a.dtype and t.shape == a.shape and t.numpy().tobytes() == a.tobytes()
        q = tmp_path / "b.npy"
        ff.save_npy(q, t)
        assert q.read_bytes() == p.read_bytes()  # byte-identical to numpy.save
        b = np.load(q)
        assert b.dtype == a.dtype and np.array_equal(b, a)
    # Fortran order and versions 2.0 / 3.0
    f = np.asfortranarray(np.arange(24, dtype=np.float64).reshape(2, 3, 4))
    np.save(p, f)
    assert np.array_equal(ff.load_npy(p).numpy(), f)
    for version in ((2, 0), (3, 0)):
        with open(p, "wb") as fh:
            np.lib.format.write_array(fh, f, version=version)
        assert np.array_equal(ff.load_npy(p).numpy(), f)
    ff.save_npy(p, ff.arange(6.0).reshape(2, 3).T)  # a strided view
    assert np.array_equal(np.load(p), np.arange(6.0).reshape(2, 3).T)


def test_corrupt_npy_rejected(tmp_path, live_counter):
    p = tmp_path / "bad.npy"
    np.save(p, np.arange(6, dtype=np.float32))
    good = p.read_bytes()
    for cut in range(len(good)):
        p.write_bytes(good[:cut])
        with pytest.raises(FusionFlowError):
            ff.load_npy(p)
    bad = [
        (b"\x93NUMPZ" + good[6:], "bad magic"),
        (good[:8] + b"\xff\xff" + good[10:], "header length says"),  # lying header length
        (good.replace(b"'<f4'", b"'>f4'"), "big-endian"),
        (good.replace(b"'shape': (6,)", b"'shape': [6] "), "not a tuple"),
        (good.replace(b"'fortran_order': False", b"'fortran_order': 0    "), "True or False"),
        (good.replace(b"(6,)", b"(9,)"), "truncated"),
        (good + b"\0" * 4, "file has 28"),
    ]
    for data, needle in bad:
        p.write_bytes(data)
        with pytest.raises(FusionFlowError, match=needle):
            ff.load_npy(p)
