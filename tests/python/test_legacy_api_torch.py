"""Issue 46, part 3: the legacy and helper API that old and new programs use, against PyTorch
1.13 (CI installs it; FF_REQUIRE_TORCH=1 makes its absence an error): autograd.Variable,
the legacy constructors (torch.Tensor(2, 3), FloatTensor(data), ...), torch.Size, the *_like
family, lu_unpack, torch.onnx, and indexed assignment dropping the value's leading 1s."""
import os
import pickle

import numpy as np
import pytest

import fusionflow as ff
from conftest import DEVICES, make_close

torch = pytest.importorskip("torch") if not os.environ.get("FF_REQUIRE_TORCH") else __import__("torch")

close = make_close(1e-5)


# ---- autograd.Variable ------------------------------------------------------------------
def test_variable_is_a_detached_alias_that_may_require_grad():
    base = ff.tensor([1.0, 2.0, 3.0])
    v = ff.autograd.Variable(base, requires_grad=True)
    assert type(v) is ff.Tensor and v.requires_grad and not base.requires_grad
    assert isinstance(base, ff.autograd.Variable)  # every tensor is a Variable, as in torch
    (v * v).sum().backward()
    close(v.grad, [2.0, 4.0, 6.0])
    with ff.no_grad():
        v.mul_(0)  # the same memory as base
    close(base, [0.0, 0.0, 0.0])
    # a tensor with history comes back without it, as torch's
    a = ff.ones(2, requires_grad=True)
    b = ff.autograd.Variable(a * 2)
    ta = torch.ones(2, requires_grad=True)
    tb = torch.autograd.Variable(ta * 2)
    assert (b.grad_fn is None, b.requires_grad) == (tb.grad_fn is None, tb.requires_grad) == (True, False)
    assert tuple(ff.autograd.Variable().shape) == tuple(torch.autograd.Variable().shape) == (0,)


def test_variable_refuses_what_torch_refuses():
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        ff.autograd.Variable([1.0, 2.0])
    with pytest.raises(TypeError):
        torch.autograd.Variable([1.0, 2.0])
    with pytest.warns(UserWarning, match="volatile"):
        assert not ff.autograd.Variable(ff.ones(2), volatile=True).requires_grad


# ---- legacy constructors ----------------------------------------------------------------
@pytest.mark.parametrize("args", [(), (2, 3), ([1, 2],), ((2, 3),), ([[1.5, 2.0]],), (np.array([1, 2]),), (0,)])
def test_tensor_constructor_as_torch(args):
    got, want = ff.Tensor(*args), torch.Tensor(*args)
    assert tuple(got.shape) == tuple(want.shape)
    assert got.dtype is ff.float32 and want.dtype is torch.float32
    if len(args) == 1 and not isinstance(args[0], int):  # data, not sizes (which are uninitialised)
        close(got, want)


def test_tensor_constructor_sizes_from_a_size_and_tensors_as_aliases():
    assert tuple(ff.Tensor(ff.Size([2, 3])).shape) == tuple(torch.Tensor(torch.Size([2, 3])).shape) == (2, 3)
    x = ff.ones(3)
    y = ff.Tensor(x)
    with ff.no_grad():
        y.add_(1)
    close(x, [2.0, 2.0, 2.0])  # torch.Tensor(t) shares t's memory
    assert ff.Tensor(ff.tensor([1, 2])).dtype is ff.int64  # whatever its dtype, as torch
    assert torch.Tensor(torch.tensor([1, 2])).dtype is torch.int64


@pytest.mark.parametrize("bad,exc", [((2.5,), TypeError), ((True,), TypeError), ((2, [3]), TypeError),
                                     ((-1,), RuntimeError)])
def test_tensor_constructor_errors_as_torch(bad, exc):
    with pytest.raises(exc):
        torch.Tensor(*bad)
    with pytest.raises(exc, match="Tensor()"):
        ff.Tensor(*bad)


@pytest.mark.parametrize("name", ["FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "BoolTensor", "ByteTensor"])
@pytest.mark.parametrize("device", DEVICES)
def test_typed_constructors_from_sizes_and_data(name, device):
    cls, tcls = getattr(ff, name), getattr(torch, name)
    sized, tsized = cls(2, 3, device=device), tcls(2, 3)
    assert tuple(sized.shape) == tuple(tsized.shape) == (2, 3)
    assert sized.dtype.name == str(tsized.dtype).replace("torch.", "").replace("bool", "bool")
    data = [[1, 0, 2], [3, 1, 0]]
    got, want = cls(data, device=device), tcls(data)
    assert isinstance(got, cls) and not isinstance(got, ff.HalfTensor)
    assert np.array_equal(got.numpy(), want.numpy())
    close(cls(ff.Size([4])).shape, tcls(torch.Size([4])).shape)


def test_typed_constructor_refuses_another_dtype_as_torch():
    with pytest.raises(TypeError):
        torch.FloatTensor(torch.tensor([1, 2]))
    with pytest.raises(TypeError, match="FloatTensor.*float32.*int64"):
        ff.FloatTensor(ff.tensor([1, 2]))
    assert ff.LongTensor([1.7, -1.7]).tolist() == torch.LongTensor([1.7, -1.7]).tolist() == [1, -1]


# ---- torch.Size -------------------------------------------------------------------------
def test_size_is_what_shape_and_size_return():
    x, tx = ff.zeros(2, 3), torch.zeros(2, 3)
    for got, want in ((x.shape, tx.shape), (x.size(), tx.size())):
        assert isinstance(got, ff.Size) and isinstance(got, tuple)
        assert repr(got) == str(got) == repr(want) == "torch.Size([2, 3])"
        assert got == (2, 3) and got == want and hash(got) == hash((2, 3))
        assert (got == [2, 3]) == (want == [2, 3])  # a tuple, never a list, as torch
    assert x.size(1) == x.size(-1) == 3 and type(x.size(0)) is int
    assert repr(ff.tensor(1.0).shape) == repr(torch.tensor(1.0).shape) == "torch.Size([])"


def test_size_slices_sums_and_numel_as_torch():
    s, ts = ff.Size([2, 3, 4]), torch.Size([2, 3, 4])
    for got, want in ((s[1:], ts[1:]), (s + (5,), ts + (5,)), (s * 2, ts * 2)):
        assert type(got) is ff.Size and type(want) is torch.Size and tuple(got) == tuple(want)
    assert type((1,) + s) is tuple and type((1,) + ts) is tuple
    assert s.numel() == ts.numel() == 24 and ff.Size([]).numel() == 1
    assert ff.Size([ff.tensor(2), np.int64(3)]) == (2, 3)
    with pytest.raises(TypeError, match="item 0 is 'float'"):
        ff.Size([2.5])
    with pytest.raises(TypeError):
        torch.Size([2.5])


def test_size_pickles_copies_and_feeds_shape_arguments():
    import copy
    s = ff.zeros(2, 3).shape
    for again in (pickle.loads(pickle.dumps(s)), copy.copy(s), copy.deepcopy(s)):
        assert type(again) is ff.Size and again == (2, 3)
    assert tuple(ff.ones(s).shape) == (2, 3) and tuple(ff.zeros(3, 2).reshape(s).shape) == (2, 3)
    assert np.zeros(s).shape == (2, 3)


# ---- the *_like family ------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_like_family_keeps_shape_dtype_device_and_takes_keywords(device):
    x = ff.zeros(3, 4, dtype=ff.float64, device=device)
    tx = torch.zeros(3, 4, dtype=torch.float64)
    for name in ("randn_like", "rand_like", "zeros_like", "ones_like", "empty_like"):
        got, want = getattr(ff, name)(x), getattr(torch, name)(tx)
        assert tuple(got.shape) == tuple(want.shape) and got.dtype is ff.float64 and got.device == x.device
        f32 = getattr(ff, name)(x, dtype=ff.float32, requires_grad=True)
        assert f32.dtype is ff.float32 and f32.requires_grad and f32.is_leaf
    close(ff.full_like(x, 2.5), torch.full_like(tx, 2.5))
    close(ff.ones_like(x), torch.ones_like(tx))
    r = ff.randint_like(x, 3, 7)
    assert r.dtype is ff.float64 and r.device == x.device
    assert set(np.unique(r.numpy())) <= {3.0, 4.0, 5.0, 6.0}
    assert ff.randint_like(x, 5, dtype=ff.int64).numpy().max() < 5
    assert torch.randint_like(tx, 3, 7).dtype is torch.float64


def test_like_family_draws_from_the_global_generator():
    x = ff.zeros(1000)
    ff.manual_seed(3)
    a = ff.randn_like(x)
    ff.manual_seed(3)
    b = ff.randn_like(x)
    assert np.array_equal(a.numpy(), b.numpy())
    assert abs(float(a.mean())) < 0.15 and abs(float(a.std()) - 1) < 0.1
    u = ff.rand_like(x).numpy()
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.05


def test_like_family_errors_as_torch():
    with pytest.raises(RuntimeError):
        torch.randn_like(torch.zeros(2, dtype=torch.int64))
    with pytest.raises(RuntimeError, match="randn_like.*int64"):
        ff.randn_like(ff.zeros(2, dtype=ff.int64))
    with pytest.raises(RuntimeError, match="randint_like.*low < high"):
        ff.randint_like(ff.zeros(2), 5, 5)
    with pytest.raises(TypeError, match="rand_like.*list"):
        ff.rand_like([1.0, 2.0])


# ---- lu_unpack --------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (5, 3), (3, 5)])
@pytest.mark.parametrize("device", DEVICES)
def test_lu_unpack_matches_torch_and_rebuilds_a(shape, device):
    a = np.random.default_rng(1).normal(size=shape)
    ta = torch.tensor(a)
    tlu, tpiv = torch.linalg.lu_factor(ta)
    P, L, U = ff.lu_unpack(ff.tensor(tlu.numpy(), device=device), ff.tensor(tpiv.numpy(), device=device))
    tP, tL, tU = torch.lu_unpack(tlu, tpiv)
    close(P, tP, 1e-12)
    close(L, tL, 1e-12)
    close(U, tU, 1e-12)
    close(P @ L @ U, a, 1e-10)
    # from fusionflow's own lu(), and differentiable in the packed factors
    lu, piv = ff.tensor(a, device=device).lu()
    lu.requires_grad_(True)
    P, L, U = ff.lu_unpack(lu, piv)
    close(P @ L @ U, a, 1e-10)
    tlu2 = tlu.clone().requires_grad_(True)
    _, tL2, tU2 = torch.lu_unpack(tlu2, tpiv)
    w = np.random.default_rng(2).normal(size=tuple(tL2.shape))
    wu = np.random.default_rng(3).normal(size=tuple(tU2.shape))
    lu_same = ff.tensor(tlu.numpy(), device=device, requires_grad=True)
    _, L2, U2 = ff.lu_unpack(lu_same, ff.tensor(tpiv.numpy(), device=device))
    ((L2 * ff.tensor(w, device=device)).sum() + (U2 * ff.tensor(wu, device=device)).sum()).backward()
    ((tL2 * torch.tensor(w)).sum() + (tU2 * torch.tensor(wu)).sum()).backward()
    close(lu_same.grad, tlu2.grad, 1e-12)


def test_lu_unpack_flags_and_errors():
    lu, piv = torch.linalg.lu_factor(torch.eye(3, dtype=torch.float64) + 1)
    P, L, U = ff.lu_unpack(ff.tensor(lu.numpy()), ff.tensor(piv.numpy()), unpack_data=False)
    tP, tL, tU = torch.lu_unpack(lu, piv, unpack_data=False)
    close(P, tP)
    assert L.numel() == tL.numel() == 0 and U.numel() == tU.numel() == 0
    with pytest.raises(RuntimeError, match="lu_unpack: LU_pivots of shape"):
        ff.lu_unpack(ff.tensor(lu.numpy()), ff.tensor([1, 2], dtype=ff.int32))


# ---- torch.onnx -------------------------------------------------------------------------
def test_onnx_imports_and_export_says_it_is_not_offered():
    import fusionflow.onnx as onnx
    from fusionflow.onnx import export
    assert ff.onnx is onnx and not onnx.is_in_onnx_export()
    with pytest.raises(NotImplementedError, match="onnx.export\\(Linear\\): exporting to ONNX is not offered"):
        export(ff.nn.Linear(2, 2), ff.zeros(1, 2), "model.onnx")


# ---- indexed assignment drops the value's leading 1s ------------------------------------
@pytest.mark.parametrize("key,value_shape", [(1, (1, 4)), (1, (1, 1, 4)), ((0, 0), (1, 1)),
                                             (slice(None), (1, 3, 4)), ([0, 2], (1, 2, 4)),
                                             ((slice(0, 2), 1), (1, 1, 2)), (1, (4,))])
@pytest.mark.parametrize("device", DEVICES)
def test_setitem_drops_leading_ones_as_torch(key, value_shape, device):
    v = np.arange(np.prod(value_shape), dtype=np.float32).reshape(value_shape) + 1
    a, ta = ff.zeros(3, 4, device=device), torch.zeros(3, 4)
    a[key] = ff.tensor(v, device=device)
    ta[key] = torch.tensor(v)
    close(a, ta)


def test_setitem_with_leading_ones_carries_gradients():
    v = ff.ones(1, 4, requires_grad=True)
    tv = torch.ones(1, 4, requires_grad=True)
    a, ta = ff.zeros(3, 4), torch.zeros(3, 4)
    a[1] = v * 2
    ta[1] = tv * 2
    (a * ff.arange(12.0).reshape(3, 4)).sum().backward()
    (ta * torch.arange(12.0).reshape(3, 4)).sum().backward()
    assert tuple(v.grad.shape) == (1, 4)
    close(v.grad, tv.grad)


def test_setitem_still_refuses_what_does_not_fit():
    a = ff.zeros(3, 4)
    with pytest.raises(RuntimeError):
        torch.zeros(3, 4)[1] = torch.ones(2, 4)
    with pytest.raises((RuntimeError, ValueError), match="broadcast"):
        a[1] = ff.ones(2, 4)
