"""Tensor basics: factories, properties, conversion, repr, indexing as views, errors."""
import math

import numpy as np
import pytest

import fusionflow as ff
from fusionflow import FusionFlowError


def test_factories_and_properties():
    z = ff.zeros(2, 3)
    assert z.shape == (2, 3) and z.ndim == 2 and z.dtype is ff.float32 and z.numel() == 6
    assert z.size() == (2, 3) and z.size(1) == 3 and z.device == ff._device.device_of(ff.default_backend())
    assert np.array_equal(ff.ones((2, 2), dtype=ff.int64).numpy(), np.ones((2, 2), np.int64))
    assert np.array_equal(ff.full((2,), 7.5).numpy(), [7.5, 7.5])
    assert np.array_equal(ff.eye(3).numpy(), np.eye(3, dtype=np.float32))
    assert np.array_equal(ff.eye(2, 3, dtype=ff.float64).numpy(), np.eye(2, 3))
    assert ff.arange(5).dtype is ff.int64 and ff.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert np.allclose(ff.arange(0, 1, 0.25).numpy(), [0, 0.25, 0.5, 0.75])
    assert np.allclose(ff.linspace(0, 1, 5).numpy(), np.linspace(0, 1, 5))
    t = ff.tensor([[1, 2], [3, 4]])
    assert t.dtype is ff.int64 and t.tolist() == [[1, 2], [3, 4]]
    assert ff.tensor([1.5, 2]).dtype is ff.float32
    assert ff.tensor([True, False]).dtype is ff.bool_
    assert ff.tensor(np.array([1.0, 2.0])).dtype is ff.float64  # NumPy arrays keep their dtype
    assert ff.tensor(3.5).shape == () and ff.tensor(3.5).item() == 3.5
    assert ff.zeros_like(t).tolist() == [[0, 0], [0, 0]] and ff.full_like(t, 2).dtype is ff.int64


def test_random_is_seeded():
    ff.manual_seed(123)
    a = ff.rand(1000)
    ff.manual_seed(123)
    b = ff.rand(1000)
    assert np.array_equal(a.numpy(), b.numpy())
    x = a.numpy()
    assert 0 <= x.min() and x.max() < 1 and abs(x.mean() - 0.5) < 0.05
    n = ff.randn(20000, seed=7).numpy()
    assert abs(n.mean()) < 0.05 and abs(n.std() - 1) < 0.05
    u = ff.uniform((4000,), -2, 3, seed=1).numpy()
    assert u.min() >= -2 and u.max() < 3 and abs(u.mean() - 0.5) < 0.1
    assert np.array_equal(ff.randn(5, seed=9).numpy(), ff.randn(5, seed=9).numpy())


def test_item_tolist_conversions():
    assert ff.tensor([[2.5]]).item() == 2.5
    assert ff.tensor(2 ** 62).item() == 2 ** 62  # exact through int64
    assert ff.tensor(True).item() is True
    assert float(ff.tensor(1.5)) == 1.5 and int(ff.tensor(7)) == 7
    assert bool(ff.tensor(1)) and not bool(ff.tensor(0.0))
    with pytest.raises(ValueError):
        bool(ff.ones(2))
    with pytest.raises(FusionFlowError, match="expected 1"):
        ff.ones(3).item()
    t = ff.arange(6).reshape(2, 3)
    assert len(t) == 2 and [r.tolist() for r in t] == [[0, 1, 2], [3, 4, 5]]
    assert np.array_equal(np.asarray(t), np.arange(6).reshape(2, 3))
    assert t.to(ff.float64).dtype is ff.float64 and t.float().dtype is ff.float32
    assert t.to("float32").dtype is ff.float32 and t.astype("u8").dtype is ff.uint8


def test_repr_like_numpy():
    assert repr(ff.tensor([1.0, 2.5])) == "tensor([1. , 2.5])"
    assert repr(ff.tensor([[1, 2], [3, 4]])) == "tensor([[1, 2],\n        [3, 4]])"
    assert repr(ff.tensor([1.0], dtype=ff.float64)) == "tensor([1.], dtype=fusionflow.float64)"
    x = ff.ones(2, requires_grad=True)
    assert repr(x).endswith("requires_grad=True)")
    assert "grad_fn=<mul>" in repr(x * 2)
    assert repr(ff.tensor(3.0)) == "tensor(3.)"


def test_indexing_views_match_numpy():
    a = np.arange(120, dtype=np.float32).reshape(4, 5, 6)
    t = ff.tensor(a)
    keys = [1, -1, (1, 2), (slice(None), 2), (slice(1, 3),), (slice(None, None, 2), slice(1, None, 3)),
            (Ellipsis, 1), (None, 1), (1, None, slice(2, 4)), (Ellipsis, None), (slice(-3, -1), Ellipsis, 0),
            (slice(10, 20),), (0, 0, 0), (slice(None), None, slice(None), -2), (slice(3, 1),)]
    for k in keys:
        v = t[k]
        assert v.shape == a[k].shape, k
        assert np.array_equal(v.numpy(), a[k]), k
        if v.ndim and v.numel():
            assert v.shares_memory_with(t), k  # basic indexing never copies
    with pytest.raises(IndexError):
        t[4]
    with pytest.raises(IndexError):
        t[0, 0, 0, 0]
    with pytest.raises(ValueError):
        t[::-1]


def test_advanced_indexing():
    a = np.arange(20, dtype=np.float32).reshape(4, 5)
    t = ff.tensor(a)
    assert np.array_equal(t[[0, 2]].numpy(), a[[0, 2]])
    assert np.array_equal(t[:, [4, -1, 0]].numpy(), a[:, [4, -1, 0]])
    idx = ff.tensor([[1, 3], [0, 0]])
    assert np.array_equal(t[idx].numpy(), a[np.array([[1, 3], [0, 0]])])
    mask = a > 7
    assert np.array_equal(t[ff.tensor(mask)].numpy(), a[mask])
    assert np.array_equal(t[t > 7].numpy(), a[mask])


def test_setitem_writes_through_views():
    t = ff.zeros(3, 4)
    t[1] = 5
    t[:, 2] = ff.tensor([1.0, 2.0, 3.0])
    t[0, ::2] = ff.tensor([7.0, 8.0])
    want = np.zeros((3, 4), np.float32)
    want[1] = 5
    want[:, 2] = [1, 2, 3]
    want[0, ::2] = [7, 8]
    assert np.array_equal(t.numpy(), want)
    v = t[2]
    v += 10  # in place on a view changes the base
    assert t[2].tolist() == [10.0, 10.0, 13.0, 10.0]


def test_errors_carry_the_c_message():
    with pytest.raises(FusionFlowError, match=r"ff_add.*\[2, 3\].*\[4\]|broadcast"):
        ff.ones(2, 3) + ff.ones(4)
    with pytest.raises(FusionFlowError, match="ff_matmul"):
        ff.ones(2, 3) @ ff.ones(2, 3)
    try:
        ff.ones(2).reshape(3)
    except FusionFlowError as e:
        assert e.status != 0 and "reshape" in str(e)
    else:
        raise AssertionError("reshape should fail")


def test_to_backend_and_dtype():
    t = ff.arange(4.0)
    assert t.to("cpu") is t or np.array_equal(t.to("cpu").numpy(), t.numpy())
    with pytest.raises(FusionFlowError):
        t.to("no_such_backend_xyz")
    assert t.to("cpu_ref").device == ff.device("cpu_ref") and "cpu" in ff.loaded_backends()


def test_numpy_interop_operators():
    t = ff.tensor([1.0, 2.0])
    assert isinstance(np.float32(2) * t, ff.Tensor) or np.allclose(np.float32(2) * t, [2, 4])
    r = np.array([1.0, 1.0], dtype=np.float32) + t
    assert isinstance(r, ff.Tensor) and r.tolist() == [2.0, 3.0]
    assert (t + [1, 1]).tolist() == [2.0, 3.0]
    assert math.isclose((2 ** t).tolist()[1], 4.0)


def test_to_another_backend_is_differentiable():
    try:
        ff._backend.backend_handle("cpu_blas")
    except FusionFlowError:
        pytest.skip("the cpu_blas backend is not built")
    x = ff.randn(3, 4, seed=1, device="cpu_ref", requires_grad=True)
    y = x.to("cpu_blas")
    assert y.device == ff.device("cpu") and np.array_equal(y.numpy(), x.numpy())
    (y @ y.T).sum().backward()
    xn = x.detach().numpy()
    # loose tolerance: this checks routing through ff_to, not cpu_blas's arithmetic
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.ones((3, 3)) @ xn, rtol=1e-3, atol=1e-3)
    assert x.grad.device == ff.device("cpu_ref")
    assert np.array_equal(np.from_dlpack(y), xn)  # cpu_blas memory is host memory too


def test_copy_from_numpy_uploads_in_place():
    """copy_ from a NumPy array of the tensor's shape and dtype writes the tensor's own
    memory (ff_copy_from_host_); views, strided arrays and other dtypes keep NumPy's values."""
    x = ff.zeros(2, 3)
    before, alias = x.data_ptr(), x[:]  # alias: the same memory on any backend (data_ptr() is 0 on a device)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert x.copy_(a) is x and np.array_equal(x.numpy(), a)
    assert x.data_ptr() == before and x.shares_memory_with(alias) and np.array_equal(alias.numpy(), a)
    x.copy_(np.ascontiguousarray(a[::-1]))  # another array, same memory
    assert np.array_equal(x.numpy(), a[::-1])
    x.copy_(a.T.copy().T)  # a Fortran-ordered array: its values, row-major
    assert np.array_equal(x.numpy(), a)
    t = x.t()  # a strided destination: staged, then copied through the view
    t.copy_(np.arange(6, dtype=np.float32).reshape(3, 2) * 10)
    assert np.array_equal(x.numpy(), (np.arange(6, dtype=np.float32).reshape(3, 2) * 10).T)
    x.copy_(np.ones((2, 3), np.float64) * 2.5)  # another dtype: cast as before
    assert np.array_equal(x.numpy(), np.full((2, 3), 2.5, np.float32))
    x.copy_(np.array([1, 2, 3], np.float32))  # broadcast as before
    assert np.array_equal(x.numpy(), [[1, 2, 3], [1, 2, 3]])
    w = ff.zeros(3, requires_grad=True)
    with pytest.raises(FusionFlowError, match="leaf"):
        w.copy_(np.ones(3, np.float32))
    assert w.detach().numpy().tolist() == [0, 0, 0]
