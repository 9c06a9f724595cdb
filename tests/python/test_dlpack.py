"""Zero-copy exchange with NumPy and PyTorch through DLPack, and capsule ownership."""
import ctypes
import gc

import numpy as np
import pytest

import fusionflow as ff

try:
    import torch
except ImportError:  # python3-torch not installed
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")
# zero-copy exchange needs the default backend's memory to be host memory;
# test_device_memory_is_never_shared covers a device backend as the default
host_memory = pytest.mark.requires_host_memory


@host_memory
def test_numpy_sees_our_memory(live_counter):
    t = ff.arange(12, dtype=ff.float32).reshape(3, 4)
    a = np.from_dlpack(t)
    assert a.shape == (3, 4) and a.dtype == np.float32
    assert a.ctypes.data == t.data_ptr()
    assert not a.flags.writeable  # NumPy marks every DLPack import read-only
    t[0, 0] = 42  # a write through FusionFlow is seen by NumPy
    assert a[0, 0] == 42
    del t
    gc.collect()
    assert a[0, 0] == 42  # the export keeps the memory alive
    del a


@host_memory
def test_numpy_strided_views(live_counter):
    base = ff.arange(24, dtype=ff.float64).reshape(4, 6)
    for v in (base.T, base[1:, ::2], base[:, 3], base.permute(1, 0)[::3]):
        a = np.from_dlpack(v)
        assert np.array_equal(a, v.numpy())
        assert a.strides == tuple(s * 8 for s in v.stride())
    for dt in (ff.float32, ff.int32, ff.int64, ff.uint8):
        x = ff.arange(5).to(dt)
        assert np.array_equal(np.from_dlpack(x), np.arange(5).astype(dt.np))
    with pytest.raises(BufferError, match="bool"):
        np.from_dlpack(ff.tensor([True]))


@host_memory
def test_import_from_numpy_zero_copy(live_counter):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = ff.from_dlpack(a)
    assert t.data_ptr() == a.ctypes.data
    a[0, 1] = 100
    assert t[0, 1].item() == 100
    t2 = ff.from_numpy(a[:, ::2])  # strided import
    assert t2.shape == (3, 2) and t2.stride() == (4, 2) and t2.tolist() == a[:, ::2].tolist()
    del a
    gc.collect()
    assert t[0, 1].item() == 100  # FusionFlow keeps NumPy's buffer alive
    with pytest.raises(TypeError):
        ff.from_numpy(np.zeros(3, dtype=np.uint16))  # a dtype fusionflow has not


@host_memory
def test_float16_shares_both_ways(live_counter):
    a = np.array([[1.5, -2.0, 65504.0], [2.0 ** -24, np.inf, -0.0]], dtype=np.float16)
    t = ff.from_numpy(a)
    assert t.dtype == ff.float16 and t.data_ptr() == a.ctypes.data
    a[0, 0] = 3.0
    assert t[0, 0].item() == 3.0
    b = np.from_dlpack(t.T)
    assert b.dtype == np.float16 and b.ctypes.data == a.ctypes.data
    np.testing.assert_array_equal(b, a.T)


@host_memory
def test_numpy_round_trip_keeps_identity(live_counter):
    a = np.random.default_rng(0).standard_normal((5, 3))
    t = ff.from_dlpack(a)
    b = np.from_dlpack(t.T)
    assert b.ctypes.data == a.ctypes.data and np.array_equal(b, a.T)
    del t
    gc.collect()
    assert np.array_equal(b, a.T)  # NumPy -> FusionFlow -> NumPy: one buffer, kept alive by the chain


@host_memory
def test_unconsumed_capsule_frees_once(live_counter):
    t = ff.ones(3)
    caps = t.__dlpack__()
    assert ff._debug_live_tensors() == live_counter + 2  # t + the export's own reference
    del caps
    gc.collect()
    assert ff._debug_live_tensors() == live_counter + 1
    assert t.__dlpack_device__() == (1, 0)


@host_memory
def test_consumed_capsule_is_renamed(live_counter):
    t = ff.ones(3)
    caps = t.__dlpack__()
    u = ff.from_dlpack(caps)
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    assert get_name(caps) == b"used_dltensor"
    with pytest.raises(TypeError):
        ff.from_dlpack(caps)  # a consumed capsule cannot be imported twice
    del caps
    gc.collect()
    assert u.tolist() == [1.0, 1.0, 1.0]  # the consumer still owns the export


@host_memory
@needs_torch
def test_torch_round_trips(live_counter):
    t = ff.arange(12, dtype=ff.float32).reshape(3, 4)
    x = torch.from_dlpack(t)
    assert x.data_ptr() == t.data_ptr() and tuple(x.shape) == (3, 4)
    x[2, 3] = -7
    assert t[2, 3].item() == -7
    v = t.T[::2]
    xv = torch.from_dlpack(v)
    assert xv.stride() == v.stride() and xv.tolist() == v.tolist()
    y = torch.arange(10, dtype=torch.float64).reshape(2, 5)[:, 1:4]
    u = ff.from_dlpack(y)
    assert u.data_ptr() == y.data_ptr() and u.stride() == y.stride() and u.tolist() == y.tolist()
    y.mul_(2)
    assert u.tolist() == y.tolist()
    z = torch.from_dlpack(ff.from_dlpack(torch.ones(4, dtype=torch.int64)))
    assert z.tolist() == [1, 1, 1, 1]
    del x, xv, y, u, z
    gc.collect()


@host_memory
@needs_torch
@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_torch_half_round_trips(live_counter, name):
    y = torch.tensor([[0.1, -3.0, 1e4], [2.0, -0.0, 7.5]], dtype=getattr(torch, name))[:, ::2]
    u = ff.from_dlpack(y)
    assert u.dtype == getattr(ff, name) and u.data_ptr() == y.data_ptr() and u.stride() == y.stride()
    assert u.float().tolist() == y.float().tolist()
    x = torch.from_dlpack(u * 2)
    assert x.dtype == y.dtype and x.float().tolist() == (y * 2).float().tolist()
    del x, y, u
    gc.collect()


@host_memory
@needs_torch
def test_torch_gradient_exchange():
    """Autograd on our side, a gradient handed to torch without copying."""
    w = ff.randn(4, 3, seed=1, requires_grad=True)
    (w * w).sum().backward()
    g = torch.from_dlpack(w.grad)
    assert torch.allclose(g, 2 * torch.from_dlpack(w.detach()))


def _default_has_dlpack_device():
    try:
        ff.zeros(1).__dlpack_device__()
        return True
    except BufferError:
        return False


@pytest.mark.skipif(_default_has_dlpack_device(), reason="the default backend's memory can be exported")
def test_device_memory_is_never_shared(live_counter):
    """A default backend with neither host memory nor a DLPack device (CI: FF_BACKEND
    names tests/guarded's plugin): export is refused with the reason, imports copy, and
    no host address leaks out."""
    t = ff.arange(6, dtype=ff.float32)
    assert t.data_ptr() == 0
    with pytest.raises(BufferError, match="host memory"):
        np.from_dlpack(t)
    with pytest.raises(BufferError, match="host memory"):
        t.__dlpack_device__()
    a = np.arange(3, dtype=np.float64)
    u = ff.from_dlpack(a)  # copied to the device: later writes to a are not seen
    a[0] = 7
    assert u.device == t.device and u.tolist() == [0.0, 1.0, 2.0]
    assert ff.from_numpy(a).tolist() == [7.0, 1.0, 2.0]
    if torch is not None:
        assert torch.from_numpy(t.numpy()).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
