"""int8 and int16 (issue 47's Tensor.short()/char()): the appended storage dtypes FF_I8/FF_I16.
Every backend copies and fills them; the core computes on them in i32 and wraps back, which must
give PyTorch's int8/int16 arithmetic exactly (wrap-around included), on every device."""
import io

import numpy as np
import pytest

import fusionflow as ff
from conftest import DEVICES

torch = pytest.importorskip("torch")

NARROW = [(ff.int8, torch.int8, np.int8), (ff.int16, torch.int16, np.int16)]


def _t(x):
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


def _same(a, b):
    """Equal values and the same dtype (by NumPy's name)."""
    a, b = _t(a), b.numpy()
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_array_equal(a, b)


def test_short_and_char_methods():
    x = [1.7, -2.9, 200.0, 300.0, -129.0, 40000.0]
    f, t = ff.tensor(x), torch.tensor(x)
    _same(f.short(), t.short())
    _same(f.char(), t.char())  # 200 -> -56, 300 -> 44, -129 -> 127: the x86 wrap torch has
    assert f.short().dtype is ff.int16 and f.char().dtype is ff.int8
    assert ff.short is ff.int16 and ff.tensor([1], dtype=ff.int8).element_size() == 1
    assert f.char().type() == "torch.CharTensor" and f.short().type() == "torch.ShortTensor"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fdt,tdt,npdt", NARROW, ids=["int8", "int16"])
def test_arithmetic_wraps_as_torch(device, fdt, tdt, npdt):
    info = np.iinfo(npdt)
    vals = np.array([info.min, info.min + 1, -7, -1, 0, 1, 5, 100, info.max - 1, info.max], dtype=npdt)
    other = np.array([1, -1, 3, 7, -2, 0, 11, 100, 2, 1], dtype=npdt)
    a, b = ff.tensor(vals, device=device), ff.tensor(other, device=device)
    ta, tb = torch.tensor(vals), torch.tensor(other)
    for fr, tr in [(a + b, ta + tb), (a - b, ta - tb), (a * b, ta * tb), (-a, -ta), (a.abs(), ta.abs()),
                   (a * 3, ta * 3), (a + 1, ta + 1), (ff.maximum(a, b), torch.maximum(ta, tb)),
                   (a & b, ta & tb), (a | b, ta | tb), (a ^ b, ta ^ tb), (~a, ~ta), (a.sign(), ta.sign()),
                   (a // 3, ta // 3), (a % 3, ta % 3), (a.clamp(-5, 5), ta.clamp(-5, 5))]:
        _same(fr.cpu() if hasattr(fr, "cpu") else fr, tr)
    _same(a < b, ta < tb)
    _same(a == b, ta == tb)
    _same(a.sum(), ta.sum())  # int64, as torch: no wrap in the sum
    _same(a.max(), ta.max())
    _same(a.argmin(), ta.argmin())
    _same(a.cumsum(0), ta.cumsum(0))
    _same(a.float() / 2, ta.float() / 2)
    _same(a / 2, ta / 2)  # true division promotes to float


@pytest.mark.parametrize("device", DEVICES)
def test_promotion_as_torch(device):
    i8 = ff.tensor([100, -100], dtype=ff.int8, device=device)
    u8 = ff.tensor([200, 50], dtype=ff.uint8, device=device)
    i16 = ff.tensor([30000, -3], dtype=ff.int16, device=device)
    t8, tu8, t16 = torch.tensor([100, -100], dtype=torch.int8), torch.tensor([200, 50], dtype=torch.uint8), \
        torch.tensor([30000, -3], dtype=torch.int16)
    _same(i8 + u8, t8 + tu8)  # int16: the one type that holds both ranges
    _same(i8 + i16, t8 + t16)
    _same(i16 + ff.tensor([1, 2], dtype=ff.int32, device=device), t16 + torch.tensor([1, 2], dtype=torch.int32))
    _same(i8 + 1.5, t8 + 1.5)
    _same(i8 * 2, t8 * 2)  # an int number keeps the tensor's dtype (and wraps)
    _same(i8 + ff.tensor(3, device=device), t8 + torch.tensor(3))  # a 0-d int64 does not widen it
    assert (i8 + True).dtype is ff.int8


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fdt,tdt,npdt", NARROW, ids=["int8", "int16"])
def test_shape_ops_indexing_and_casts(device, fdt, tdt, npdt):
    base = np.arange(-12, 12, dtype=npdt).reshape(4, 6)
    a, ta = ff.tensor(base, device=device), torch.tensor(base)
    _same(a.t().contiguous(), ta.t().contiguous())
    _same(a[1:3, ::2], ta[1:3, ::2])
    _same(a[ff.tensor([3, 0, 3], device=device)], ta[torch.tensor([3, 0, 3])])
    _same(ff.cat([a, a * 2]), torch.cat([ta, ta * 2]))
    _same(ff.stack([a[0], a[1]]), torch.stack([ta[0], ta[1]]))
    _same(a.gather(1, ff.tensor([[0, 5]] * 4, device=device)), ta.gather(1, torch.tensor([[0, 5]] * 4)))
    _same(ff.where(a > 0, a, ff.zeros_like(a)), torch.where(ta > 0, ta, torch.zeros_like(ta)))
    _same(a.sort(dim=1, descending=True).values, ta.sort(dim=1, descending=True).values)
    _same(a.to(ff.float16), ta.to(torch.float16))
    _same(a.to(ff.uint8), ta.to(torch.uint8))
    _same(a.long(), ta.long())
    b = a.clone()
    b[0] = 7
    b[:, 1] += 1
    tb = ta.clone()
    tb[0] = 7
    tb[:, 1] += 1
    _same(b, tb)
    assert a.tolist() == ta.tolist()
    assert a[2, 3].item() == ta[2, 3].item() and isinstance(a[2, 3].item(), int)
    assert ff.zeros(3, dtype=fdt, device=device).dtype is fdt
    _same(ff.full((2,), 5, dtype=fdt, device=device), torch.full((2,), 5, dtype=tdt))


@pytest.mark.requires_host_memory  # from_numpy and DLPack share the default backend's memory
@pytest.mark.parametrize("fdt,tdt,npdt", NARROW, ids=["int8", "int16"])
def test_exchange_numpy_dlpack_and_files(tmp_path, fdt, tdt, npdt):
    arr = np.array([[-128, 5], [127, -1]], dtype=npdt)
    f = ff.from_numpy(arr)
    assert f.dtype is fdt
    np.testing.assert_array_equal(f.numpy(), arr)
    t = torch.utils.dlpack.from_dlpack(f)  # zero-copy both ways, tagged int8/int16
    assert t.dtype == tdt
    back = ff.from_dlpack(torch.tensor(arr))
    assert back.dtype is fdt
    np.testing.assert_array_equal(back.numpy(), arr)
    # torch's checkpoint format (CharStorage / ShortStorage) both ways
    buf = io.BytesIO()
    torch.save({"w": torch.tensor(arr)}, buf)
    buf.seek(0)
    loaded = ff.load(buf)["w"]
    assert loaded.dtype is fdt
    np.testing.assert_array_equal(loaded.numpy(), arr)
    path = tmp_path / "x.pt"
    ff.save({"w": f}, str(path))
    tt = torch.load(str(path))["w"]
    assert tt.dtype == tdt
    np.testing.assert_array_equal(tt.numpy(), arr)
    # safetensors (I8/I16) and .npy (|i1, <i2), through the C readers and writers
    ff.save({"w": f}, str(tmp_path / "x.safetensors"))
    got = ff.load(str(tmp_path / "x.safetensors"))["w"]
    assert got.dtype is fdt
    np.testing.assert_array_equal(got.numpy(), arr)
    np.save(tmp_path / "a.npy", arr)
    got = ff.load_npy(str(tmp_path / "a.npy"))
    assert got.dtype is fdt
    np.testing.assert_array_equal(got.numpy(), arr)
    ff.save_npy(str(tmp_path / "b.npy"), f)
    np.testing.assert_array_equal(np.load(tmp_path / "b.npy"), arr)
    assert np.load(tmp_path / "b.npy").dtype == npdt


def test_bound_checks_as_torch():
    a, ta = ff.tensor([1, 2], dtype=ff.int8), torch.tensor([1, 2], dtype=torch.int8)
    with pytest.raises(Exception):
        ta.clamp(max=200)
    with pytest.raises(Exception):
        a.clamp(max=200)
    _same(a.clamp(max=100), ta.clamp(max=100))


ALL = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def test_promotion_table_is_torchs():
    """Every pair of the ten dtypes, as docs/semantics.md's table says: PyTorch's promote_types."""
    for a in ALL:
        for b in ALL:
            got = (ff.zeros(1, dtype=a) + ff.zeros(1, dtype=b)).dtype
            want = torch.promote_types(getattr(torch, a), getattr(torch, b))
            assert got.name == str(want).replace("torch.", ""), (a, b, got, want)
