"""The Python front end's fast paths (issue 49): fusionflow._ffext (python/ext) against
PyTorch 1.13, and against the pure-ctypes package, which ctest runs this file on too
(python_front_end_ctypes: FUSIONFLOW_NO_EXT=1). Every case below goes through whichever
front end is loaded, so both are held to the same answers; where the extension was built
beside the library, it must be the one in use."""
import glob
import os

import numpy as np
import pytest

import fusionflow as ff
from fusionflow._lib import C, library_path

torch = pytest.importorskip("torch")

NO_EXT = os.environ.get("FUSIONFLOW_NO_EXT", "") not in ("", "0")


def test_the_built_front_end_is_the_one_in_use():
    built = glob.glob(os.path.join(os.path.dirname(library_path), "_ffext*.so"))
    status = ff._ext_status()
    if NO_EXT:
        assert ff._fastpath.taken() == () and status.startswith("ctypes"), status
    elif built:
        assert status.startswith("C extension"), status
        taken = ff._fastpath.taken()
        for name in ("__getitem__", "__setitem__", "shape", "size", "item", "tolist", "__add__", "relu", "view"):
            assert name in taken, (name, taken)


def test_grad_mode_managers_nest_and_restore():
    """no_grad / enable_grad / inference_mode: GradModeBase's C __enter__/__exit__ with the
    extension (a Ctrl-C cannot land before __exit__ restores the mode), Python's without;
    either way nesting, re-entering one object, decorators and exceptions restore the mode."""
    if not NO_EXT and ff._lib.ext is not None:
        assert ff.no_grad.__exit__ is ff._lib.ext.GradModeBase.__exit__
    assert ff.is_grad_enabled()
    ng = ff.no_grad()
    with ng:
        assert not ff.is_grad_enabled()
        with ff.enable_grad():
            assert ff.is_grad_enabled()
            with ng:  # the same object again: a stack of previous modes
                assert not ff.is_grad_enabled()
            assert ff.is_grad_enabled()
        with ff.inference_mode(False):
            assert ff.is_grad_enabled()
        assert not ff.is_grad_enabled()
    assert ff.is_grad_enabled() and not ng._prev_stack
    with pytest.raises(ZeroDivisionError):
        with ff.no_grad():
            1 / 0
    assert ff.is_grad_enabled()

    @ff.no_grad()
    def inside():
        return ff.is_grad_enabled()
    assert inside() is False and ff.is_grad_enabled()
    x = ff.tensor([1.0, 2.0], requires_grad=True)
    with ff.inference_mode():
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad


def both(values, dtype=np.float32):
    a = np.asarray(values, dtype=dtype)
    return ff.tensor(a), torch.tensor(a)


def same(f, t, rtol=0):
    if isinstance(t, torch.Tensor):
        assert isinstance(f, ff.Tensor), type(f)
        assert tuple(f.shape) == tuple(t.shape), (f.shape, t.shape)
        assert str(f.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (f.dtype, t.dtype)
        if rtol:
            np.testing.assert_allclose(f.numpy(), t.numpy(), rtol=rtol)
        else:
            np.testing.assert_array_equal(f.numpy(), t.numpy())
    else:
        assert type(f) is type(t) and f == t, (f, t)


KEYS = [0, -1, 2, slice(1, 3), slice(None, None, 2), slice(-3, None), slice(5, 1), slice(None), None, Ellipsis,
        (0, 1), (slice(None), None), (None, 1, Ellipsis), (Ellipsis, 2), (1, slice(0, 4, 3)), (Ellipsis, None),
        (slice(1, 10), slice(None), 0), (-3, -4), (slice(-100, 100),)]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_basic_getitem_matches_torch(key):
    f, t = both(np.arange(60).reshape(3, 4, 5))
    same(f[key], t[key])


@pytest.mark.parametrize("key", [3, -4, (0, 5), (0, 0, 0, 0), slice(None, None, -1),
                                 slice(None, None, 0), 1 << 70, 1.0, "a"], ids=repr)
def test_bad_basic_keys_raise_as_torch(key):
    f, t = both(np.arange(60).reshape(3, 4, 5))
    with pytest.raises((IndexError, ValueError, TypeError)) as fe:
        f[key]
    with pytest.raises((IndexError, ValueError, TypeError, RuntimeError)):  # torch: RuntimeError past int64
        t[key]
    if isinstance(key, int) and abs(key) < 100:
        assert "out of bounds" in str(fe.value) and "size 3" in str(fe.value), fe.value


def test_views_share_memory_and_carry_gradients():
    x = ff.arange(12.0).reshape(3, 4)
    v = x[1:, None, 2]
    v[0] = 100.0  # a write through the view reaches x
    assert x[1, 2].item() == 100.0
    w = ff.arange(12.0, requires_grad=True)
    y = w.view(3, 4)[1:3, ::2] * 2
    y.sum().backward()
    wt = torch.arange(12.0, requires_grad=True)
    (wt.view(3, 4)[1:3, ::2] * 2).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), wt.grad.numpy())
    assert x[...] is x  # the whole tensor: the same object, as the Python path returns


def test_index_tensor_keys():
    f, t = both(np.arange(20.0).reshape(5, 4))
    fi, ti = ff.tensor([4, 0, 0, -1]), torch.tensor([4, 0, 0, -1])
    same(f[fi], t[ti])
    same(f[f > 7], t[t > 7])
    same(f[ff.tensor([[True, False, True, False]] * 5)], t[torch.tensor([[True, False, True, False]] * 5)])
    with pytest.raises(IndexError):
        f[ff.tensor([5])]
    with pytest.raises(IndexError):
        f[ff.tensor([1.0])]  # float indices: the Python path's IndexError


@pytest.mark.parametrize("key,value", [(0, 7.5), ((1, slice(1, 3)), 2), (slice(None), True), ((Ellipsis, 0), -1.25),
                                        (1, "row"), ((slice(0, 2), None), "col")], ids=repr)
def test_setitem_matches_torch(key, value):
    f, t = both(np.arange(12.0).reshape(3, 4))
    if value == "row":
        fv, tv = ff.tensor([9.0, 8.0, 7.0, 6.0]), torch.tensor([9.0, 8.0, 7.0, 6.0])
    elif value == "col":
        fv, tv = ff.ones(1, 4), torch.ones(1, 4)  # a leading 1: the Python path drops it
    else:
        fv = tv = value
    f[key] = fv
    t[key] = tv
    same(f, t)


def test_setitem_int_targets_and_autograd():
    f, t = both(np.zeros((2, 3)), np.int64)
    f[0, 1] = (1 << 62) + 1  # exact past 2**53
    t[0, 1] = (1 << 62) + 1
    same(f, t)
    with pytest.raises((TypeError, AttributeError)):  # the C type says TypeError, a Python class AttributeError
        del f[0]
    w = ff.ones(4, requires_grad=True)
    y = w * 3
    y[1:3] = 0.0
    y.sum().backward()
    assert w.grad.tolist() == [3.0, 0.0, 0.0, 3.0]


def test_shape_size_ndim_dtype():
    f, t = both(np.zeros((2, 3, 4)))
    assert f.shape == t.shape and f.shape == (2, 3, 4) and repr(f.shape) == "torch.Size([2, 3, 4])"
    assert isinstance(f.shape, ff.Size) and isinstance(f.shape[1:], ff.Size)
    assert f.size() == t.size() and f.size(-1) == 4 and f.size(1) == 3 and f.size(dim=0) == 2
    assert f.ndim == 3 and f.dim() == 3 and f.numel() == 24 and f.nelement() == 24
    for d in (3, -4):
        with pytest.raises(IndexError):
            f.size(d)
        with pytest.raises(IndexError):
            t.size(d)
    with pytest.raises(IndexError):
        ff.tensor(1.0).size(0)
    x = ff.zeros(2, 3)
    x.unsqueeze_(0)  # the shape is read live: an in-place shape change shows at once
    assert x.shape == (1, 2, 3)
    for code in range(len(ff._dtype._BY_CODE)):
        dt = ff._dtype.from_code(code)
        assert ff.zeros(2, dtype=dt).dtype is dt


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool",
                                   "float16", "bfloat16", "complex64"])
def test_item_and_tolist_match_torch(dtype):
    vals = np.array([[0, 1, 2], [3, 4, 120]]) if dtype != "bool" else np.array([[0, 1, 1], [0, 0, 1]])
    f = ff.tensor(vals).to(getattr(ff, dtype))
    t = torch.tensor(vals).to(getattr(torch, dtype))
    assert f.tolist() == t.tolist()
    assert [type(v) for v in f.tolist()[1]] == [type(v) for v in t.tolist()[1]]
    assert f[1, 2].item() == t[1, 2].item() and type(f[1, 2].item()) is type(t[1, 2].item())
    assert f[1, 2].tolist() == t[1, 2].tolist()  # 0-d: the number itself
    assert f[:, 1:].tolist() == t[:, 1:].tolist()  # strided
    with pytest.raises((ValueError, RuntimeError)):
        f.item()


def test_item_precision():
    assert ff.tensor([(1 << 62) + 3]).item() == (1 << 62) + 3
    assert ff.tensor([0.1], dtype=ff.float64).item() == 0.1
    assert ff.tensor(0.1).item() == torch.tensor(0.1).item()  # the float32 value, widened


LISTS = [[1, 2, 3], [1.5, 2], [True, False], [True, 2], [True, 2.5], [[1, 2], [3, 4]], [], [[]], [[], []],
         (1, 2), [(1.0, 2.0), (3.0, 4.0)], [[[1]]], [1e300], [-0.0], [float("inf"), float("nan")], [(1 << 63) - 1]]


@pytest.mark.parametrize("data", LISTS, ids=repr)
@pytest.mark.parametrize("dtype", [None, "float64", "int64", "float16", "bfloat16", "bool", "int32", "uint8"])
def test_tensor_from_lists_matches_torch(data, dtype):
    kw = {} if dtype is None else {"dtype": getattr(ff, dtype)}
    tkw = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    try:
        t = torch.tensor(data, **tkw)
    except (RuntimeError, OverflowError, TypeError):
        return  # what torch refuses is not compared (a Python int past int32, ...)
    if dtype in ("int32", "uint8", "int64") and any(isinstance(v, float) and not np.isfinite(v)
                                                    for v in np.ravel(np.array(data, dtype=object))):
        return  # inf/nan to an integer: undefined in C and in torch alike
    f = ff.tensor(data, **kw)
    assert tuple(f.shape) == tuple(t.shape) and str(f.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_array_equal(f.float().numpy(), t.float().numpy())


def test_tensor_from_lists_declines_to_the_python_path():
    with pytest.raises(Exception):
        ff.tensor([[1, 2], [3]])  # ragged
    assert ff.tensor([1 << 70 >> 70, np.float32(2.5)]).tolist() == [1.0, 2.5]  # a NumPy scalar inside
    assert ff.tensor([ff.tensor(1.0), ff.tensor(2.0)]).tolist() == [1.0, 2.0]
    assert ff.tensor([1j, 2]).dtype is ff.complex64
    assert ff.tensor([1.0, 2.0], requires_grad=True).requires_grad
    assert ff.tensor([1, 2], device="cpu_ref").device == ff.device("cpu_ref")
    with pytest.raises((OverflowError, TypeError)):
        ff.tensor([1 << 64])


@pytest.mark.requires_host_memory  # shares the array with a tensor on the default backend
@pytest.mark.parametrize("np_dtype", [np.float32, np.float64, np.float16, np.int64, np.int32, np.int16, np.int8,
                                      np.uint8, np.bool_])
def test_from_numpy_shares_memory(np_dtype):
    a = np.arange(12).reshape(3, 4).astype(np_dtype)
    f = ff.from_numpy(a)
    t = torch.from_numpy(a)
    same(f, t)
    a[0, 0] = 1
    assert f[0, 0].item() == t[0, 0].item()
    ft = ff.from_numpy(a.T)  # a strided view is shared as it is
    assert ft.stride() == torch.from_numpy(a.T).stride()
    del a, t
    assert f.tolist()[0][0] in (1, True)  # the array lives as long as the tensor


def test_from_numpy_refusals():
    a = np.arange(4.0)
    with pytest.raises(Exception):
        ff.from_numpy(a[::-1])
    ro = np.arange(3.0)
    ro.flags.writeable = False
    with pytest.warns(UserWarning):
        assert ff.from_numpy(ro).tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(TypeError):
        ff.from_numpy([1, 2])
    assert ff.from_numpy(np.array([1 + 2j], dtype=np.complex64)).dtype is ff.complex64
    with pytest.raises(TypeError):
        ff.from_numpy(np.arange(3, dtype=">f4"))  # a foreign byte order: the Python path's error


NUMBERS = [2, -3, 2.5, True, False, 0, 1 << 40]


@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_operators_with_numbers_match_torch(op, dtype):
    f, t = both([[1, 2], [3, 4]], dtype)
    for n in NUMBERS:
        for a, b, c, d in ((f, n, t, n), (n, f, n, t), (f, f, t, t)):
            try:
                want = eval("c %s d" % op)
            except RuntimeError:
                continue  # bool - bool: torch refuses, fusionflow computes (either front end)
            same(eval("a %s b" % op), want, rtol=1e-6 if op == "/" else 0)  # x / 3: within an ulp


def test_operators_defer_and_fall_back():
    f, t = both([[1.0, 2.0], [3.0, 4.0]])
    same(f + np.ones(2, np.float32), t + torch.from_numpy(np.ones(2, np.float32)))
    same(np.ones(2, np.float32) + f, torch.from_numpy(np.ones(2, np.float32)) + t)
    same(f * 1j, t * 1j)
    same(f - [1.0, 2.0], t - torch.tensor([1.0, 2.0]))
    same(f @ f, t @ t)
    same(-f, -t)
    with pytest.raises(OverflowError):
        f + (1 << 70)
    with pytest.raises(TypeError):
        f + "a"
    with pytest.raises(TypeError):
        f @ 2
    p = ff.nn.Parameter(ff.ones(2))
    assert (p + p).tolist() == [2.0, 2.0] and (2 * p).tolist() == [2.0, 2.0]


def test_autograd_through_operators_and_unary_methods():
    w = ff.tensor([0.5, -1.0, 2.0], requires_grad=True)
    wt = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    for x, lib in ((w, "f"), (wt, "t")):
        y = (x * 2 + 1 - x / 4).relu() + x.sigmoid() * x.tanh() + x.exp() - (-x).abs().sqrt() + x.square()
        y = y + x.sin() * x.cos() + (x * x + 1).log() + (x * x + 1).rsqrt() + x @ x
        y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(w.silu().detach().numpy(), torch.nn.functional.silu(wt).detach().numpy(), rtol=1e-6)


def test_view_reshape_and_cat():
    f, t = both(np.arange(24.0))
    for shape in ((4, 6), ((2, 12),), ([3, 8],), (2, -1, 3), (ff.Size([6, 4]),)):
        tshape = tuple(torch.Size(s) if isinstance(s, ff.Size) else s for s in shape)
        same(f.view(*shape), t.view(*tshape))
        same(f.reshape(*shape), t.reshape(*tshape))
    with pytest.raises(Exception):
        f.view(5, 5)
    with pytest.raises(Exception):
        f.view(2, 3).view(ff.float32)
    g = f.view(4, 6).t()
    same(g.reshape(24), t.view(4, 6).t().reshape(24))  # a copy where no view exists
    with pytest.raises(Exception):
        g.view(24)
    parts = [f[:4].view(2, 2), f[4:8].view(2, 2), f[8:10].view(1, 2)]
    tparts = [t[:4].view(2, 2), t[4:8].view(2, 2), t[8:10].view(1, 2)]
    same(ff.cat(parts), torch.cat(tparts))
    same(ff.cat(tuple(parts[:2]), dim=-1), torch.cat(tuple(tparts[:2]), dim=-1))
    same(ff.cat([parts[0], [[1.0, 2.0]]]), torch.cat([tparts[0], torch.tensor([[1.0, 2.0]])]))  # a list inside
    with pytest.raises(Exception):
        ff.cat([parts[0], parts[2]], dim=1)
    with pytest.raises(Exception):
        ff.cat([])


def test_no_references_leak():
    a = ff.arange(12.0).reshape(3, 4)
    arr = np.ones((2, 2), np.float32)
    idx = ff.tensor([0, 2])

    def work():
        a[1:3], a[None, 1], a[idx], a[a > 3], a.shape, a.size(0), a.view(4, 3), a.reshape(2, 6)
        a + a, 2 - a, a * 2.5, a / a, -a, a @ a.t(), a.relu(), a.exp(), a.item if False else None
        ff.tensor([[1, 2], [3, 4]]), ff.tensor([1.5]), ff.from_numpy(arr), ff.cat([a, a]), a.tolist()
        a[0] = 1.0
        a[1, :] = a[2]
        for bad in (lambda: a[7], lambda: a.size(9), lambda: a + "x", lambda: a.view(5)):
            try:
                bad()
            except Exception:
                pass

    work()
    before = C.ff_debug_live_tensors()
    for _ in range(50):
        work()
    assert C.ff_debug_live_tensors() == before
