"""Complex tensors (issue 45) against PyTorch 1.13: the dtypes, views, ops forward and
backward (PyTorch's conjugate-Wirtinger .grad), promotion, FFTs and exchange, on every device.
Where PyTorch is itself the question (gradcheck), a finite-difference check in f64 decides."""
import io

import numpy as np
import pytest

import fusionflow as ff
from conftest import DEVICES

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(45)


def cplx(shape, dtype=np.complex64):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def both(a, device, requires_grad=False):
    f = ff.tensor(a, device=device)
    t = torch.tensor(a)
    if requires_grad:
        f.requires_grad_(True)
        t.requires_grad_(True)
    return f, t


def close(f, t, tol=1e-5):
    fa = f.detach().cpu().numpy() if hasattr(f, "detach") else np.asarray(f)
    ta = t.detach().resolve_conj().numpy() if hasattr(t, "detach") else np.asarray(t)
    assert fa.dtype == ta.dtype, (fa.dtype, ta.dtype)
    assert fa.shape == ta.shape, (fa.shape, ta.shape)
    np.testing.assert_allclose(fa, ta, rtol=tol, atol=tol)


def test_dtypes_and_printing():
    assert ff.complex64 is ff.cfloat and ff.complex128 is ff.cdouble
    z, tz = ff.tensor([1 + 2j, 3 - 1j]), torch.tensor([1 + 2j, 3 - 1j])
    assert z.dtype is ff.complex64 and tz.dtype == torch.complex64
    assert z.is_complex() and ff.is_complex(z) and not ff.ones(2).is_complex()
    assert z.dtype.is_complex and not z.dtype.is_floating_point
    assert z.element_size() == 8 and z.to(ff.complex128).element_size() == 16
    assert "dtype" not in repr(z) and "complex128" in repr(z.to(ff.complex128))
    assert z[1].item() == 3 - 1j
    assert z.tolist() == tz.tolist()
    assert ff.zeros(2, dtype=ff.complex64).dtype is ff.complex64
    assert ff.view_as_real(z).dtype is ff.float32 and ff.complex64.to_real() is ff.float32


@pytest.mark.parametrize("device", DEVICES)
def test_views_share_storage(device):
    a = cplx((3, 4))
    z, tz = both(a, device)
    r = ff.view_as_real(z)
    close(r, torch.view_as_real(tz))
    r[0, 0, 1] = 7.0  # the same memory
    assert z[0, 0].item() == complex(a[0, 0].real, 7.0)
    close(ff.view_as_complex(r), torch.view_as_complex(torch.view_as_real(tz).clone().index_put_(
        (torch.tensor(0), torch.tensor(0), torch.tensor(1)), torch.tensor(7.0))))
    close(z.real, tz.real.clone().index_put_((torch.tensor(0), torch.tensor(0)), torch.tensor(a[0, 0].real)))
    z.imag = ff.zeros(3, 4, device=device)  # writes through the view
    assert np.all(z.cpu().numpy().imag == 0)
    zt = ff.tensor(a, device=device).t()  # strided complex views work too
    close(ff.view_as_real(zt), torch.view_as_real(torch.tensor(a).t()))
    with pytest.raises(ff.FusionFlowError, match="last dimension of size 2"):
        ff.view_as_complex(ff.ones(3, device=device))
    with pytest.raises(ff.FusionFlowError, match="stride 1"):
        ff.view_as_complex(ff.ones(2, 3, device=device).t())
    with pytest.raises(ff.FusionFlowError, match="only supported for complex"):
        ff.view_as_real(ff.ones(3, device=device))
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        ff.ones(2).imag


BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
          "div": lambda a, b: a / b, "pow": lambda a, b: a ** b}
UNARY = {"neg": lambda x: -x, "exp": lambda x: x.exp(), "log": lambda x: x.log(), "sqrt": lambda x: x.sqrt(),
         "sin": lambda x: x.sin(), "cos": lambda x: x.cos(), "abs": lambda x: x.abs(), "angle": lambda x: x.angle(),
         "conj": lambda x: x.conj(), "square": lambda x: x.square(), "reciprocal": lambda x: x.reciprocal(),
         "real": lambda x: x.real * 1, "imag": lambda x: x.imag * 1, "sum": lambda x: x.sum(0),
         "mean": lambda x: x.mean(), "view_as_real": lambda x: torch_or_ff(x).view_as_real(x) * 1}


def torch_or_ff(x):
    return torch if isinstance(x, torch.Tensor) else ff


def _loss(y, w):
    """A real loss of y: sum(Re(y conj(w))) for complex y (its gradient is w), sum(y w) else."""
    if y.dtype in (torch.complex64, torch.complex128) or getattr(y.dtype, "is_complex", False):
        lib = torch_or_ff(y)
        if lib is torch:
            y = y.resolve_conj()  # torch's conj is a lazy bit, which view_as_real refuses
        return (lib.view_as_real(y) * lib.view_as_real(w)).sum()
    return (y * w).sum()


def _weights(ty, device):
    w = (RNG.standard_normal(tuple(ty.shape)) + (1j * RNG.standard_normal(tuple(ty.shape))
                                                  if ty.dtype.is_complex else 0)).astype(
        np.complex64 if ty.dtype == torch.complex64 else np.float32 if ty.dtype == torch.float32 else
        np.complex128 if ty.dtype == torch.complex128 else np.float64)
    return ff.tensor(w, device=device), torch.tensor(w)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("other", ["complex", "real", "scalar"])
def test_binary_forward_backward(device, name, other):
    f = BINARY[name]
    a = cplx((3, 4))
    x, tx = both(a, device, True)
    if other == "complex":
        b = cplx((4,))  # broadcast
        y, ty = both(b, device, True)
    elif other == "real":
        b = RNG.standard_normal((3, 1)).astype(np.float32) + (2.0 if name == "pow" else 0.0)
        y, ty = both(b, device, True)
    else:
        y = ty = 1.5 - 0.5j
    out, tout = f(x, y), f(tx, ty)
    close(out, tout, 2e-5)
    w, tw = _weights(tout, device)
    _loss(out, w).backward()
    _loss(tout, tw).backward()
    close(x.grad, tx.grad, 1e-4)
    if other != "scalar":
        close(y.grad, ty.grad, 1e-4)  # a real operand's gradient is real: the real part of the complex one


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_forward_backward(device, name):
    f = UNARY[name]
    x, tx = both(cplx((5, 3)), device, True)
    out, tout = f(x), f(tx)
    close(out, tout, 2e-5)
    w, tw = _weights(tout, device)
    _loss(out, w).backward()
    _loss(tout, tw).backward()
    close(x.grad, tx.grad, 1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_matmul_einsum_and_construction(device):
    a, b = cplx((2, 3, 4)), cplx((4, 5))
    x, tx = both(a, device, True)
    y, ty = both(b, device, True)
    out, tout = x @ y, tx @ ty
    close(out, tout, 1e-4)
    w, tw = _weights(tout, device)
    _loss(out, w).backward()
    _loss(tout, tw).backward()
    close(x.grad, tx.grad, 1e-4)
    close(y.grad, ty.grad, 1e-4)
    close(ff.einsum("bij,jk->bik", x, y), torch.einsum("bij,jk->bik", tx, ty), 1e-4)
    r, i = RNG.standard_normal((3,)).astype(np.float32), RNG.standard_normal((2, 1)).astype(np.float32)
    (fr, tr), (fi, ti) = both(r, device, True), both(i, device, True)
    c, tc = ff.complex(fr, fi), torch.complex(tr, ti)
    close(c, tc)
    p, tp = ff.polar(fr.abs(), fi), torch.polar(tr.abs(), ti)
    close(p, tp)
    w, tw = _weights(tc, device)
    (_loss(c, w) + _loss(p, w)).backward()
    (_loss(tc, tw) + _loss(tp, tw)).backward()
    close(fr.grad, tr.grad, 1e-4)
    close(fi.grad, ti.grad, 1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_data_movement_and_comparisons(device):
    a, b = cplx((4, 3)), cplx((4, 3))
    x, tx = both(a, device)
    y, ty = both(b, device)
    close(ff.cat([x, y], 1), torch.cat([tx, ty], 1))
    close(ff.stack([x, y]), torch.stack([tx, ty]))
    close(x[1:3, ::2], tx[1:3, ::2])
    close(x[ff.tensor([3, 0], device=device)], tx[torch.tensor([3, 0])])
    close(x.t().contiguous(), tx.t().contiguous())
    close(x.gather(0, ff.tensor([[1, 0, 3]], device=device)), tx.gather(0, torch.tensor([[1, 0, 3]])))
    m = a.real > 0
    close(ff.where(ff.tensor(m, device=device), x, y), torch.where(torch.tensor(m), tx, ty))
    close(x == x.clone(), tx == tx.clone())
    close(x != y, tx != ty)
    close(x.sum(1, keepdim=True), tx.sum(1, keepdim=True))
    close(x.to(ff.complex128), tx.to(torch.complex128))
    close(ff.tensor(a.real, device=device).to(ff.complex64), torch.tensor(a.real).to(torch.complex64))
    assert ff.allclose(x, x + 1e-7) and torch.allclose(tx, tx + 1e-7)
    close(ff.isclose(x, y), torch.isclose(tx, ty))
    z = x.clone()
    z[0] = 1j
    z += y
    z *= 2
    tz = tx.clone()
    tz[0] = 1j
    tz += ty
    tz *= 2
    close(z, tz)
    for bad in (lambda t: t < t, lambda t: t.max(), lambda t: t.relu(), lambda t: t.sort()):
        with pytest.raises(Exception):
            bad(tx)
        with pytest.raises(ff.FusionFlowError):
            bad(x)


@pytest.mark.parametrize("device", DEVICES)
def test_promotion_as_torch(device):
    pairs = [(np.complex64, np.float64), (np.complex64, np.int64), (np.complex128, np.float32),
             (np.complex64, np.complex128), (np.float32, np.complex64)]
    for da, db in pairs:
        a, b = np.ones(2, da), np.ones(2, db)
        assert (ff.tensor(a, device=device) + ff.tensor(b, device=device)).dtype.name == \
            str((torch.tensor(a) + torch.tensor(b)).dtype).replace("torch.", "")
    for dt in (np.float32, np.float64, np.int64):
        t = ff.tensor(np.ones(2, dt), device=device)
        assert (t * 1j).dtype.name == str((torch.tensor(np.ones(2, dt)) * 1j).dtype).replace("torch.", "")


def test_randn_complex_is_unit_variance():
    z = ff.randn(200000, dtype=ff.complex64)
    assert z.dtype is ff.complex64
    v = z.numpy()
    assert abs(np.mean(np.abs(v) ** 2) - 1.0) < 0.02  # E|z|^2 = 1, as torch.randn's complex
    assert abs(np.var(v.real) - 0.5) < 0.01 and abs(np.corrcoef(v.real, v.imag)[0, 1]) < 0.01


def _composite(z, w):
    return ((z * w).exp() / (z + 2.0) + (z.conj() @ w.t()).sin().sum() + z.sqrt() * z.abs()).log()


def test_gradcheck_complex_inputs():
    """A composite of the differentiable complex ops, in f64: our .grad of a real loss equals
    central finite differences through each input's real and imaginary parts (dL/dx + i
    dL/dy: PyTorch's convention, which torch.autograd.gradcheck checks the same way), and
    PyTorch's own .grad."""
    z0, w0 = cplx((3, 2), np.complex128) + 3.0, cplx((3, 2), np.complex128)
    c = cplx((3, 2), np.complex128)

    def loss_np(z, w):  # the loss in fusionflow without grad, for the differences
        with ff.no_grad():
            y = _composite(ff.tensor(z), ff.tensor(w))
            return float((ff.view_as_real(y) * ff.view_as_real(ff.tensor(c))).sum().item())
    z, w = ff.tensor(z0, requires_grad=True), ff.tensor(w0, requires_grad=True)
    (ff.view_as_real(_composite(z, w)) * ff.view_as_real(ff.tensor(c))).sum().backward()
    eps = 1e-6
    for x0, grad, which in ((z0, z.grad.numpy(), 0), (w0, w.grad.numpy(), 1)):
        fd = np.zeros_like(x0)
        for idx in np.ndindex(x0.shape):
            for unit in (1.0, 1j):
                d = np.zeros_like(x0)
                d[idx] = eps * unit
                args_p = (x0 + d, w0) if which == 0 else (z0, x0 + d)
                args_m = (x0 - d, w0) if which == 0 else (z0, x0 - d)
                fd[idx] += unit * (loss_np(*args_p) - loss_np(*args_m)) / (2 * eps)
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-7)
    tz, tw = torch.tensor(z0, requires_grad=True), torch.tensor(w0, requires_grad=True)
    (torch.view_as_real(_composite(tz, tw)) * torch.view_as_real(torch.tensor(c))).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), tz.grad.numpy(), rtol=1e-9)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-9)


@pytest.mark.parametrize("device", DEVICES)
def test_fft_family(device):
    x = RNG.standard_normal((4, 8, 6)).astype(np.float32)
    z = cplx((4, 8, 6))
    (fx, tx), (fz, tz) = both(x, device), both(z, device)
    fft_devices_ok = device != "opencl"  # opencl has no fft entry
    if not fft_devices_ok:
        with pytest.raises(ff.FusionFlowError, match="does not support fft"):
            ff.fft.fft(fz)
        return
    for name in ("fft", "ifft"):
        close(getattr(ff.fft, name)(fz), getattr(torch.fft, name)(tz), 1e-4)
        close(getattr(ff.fft, name)(fx, n=5, dim=1), getattr(torch.fft, name)(tx, n=5, dim=1), 1e-4)
    for name in ("fft2", "ifft2", "fftn", "ifftn"):
        close(getattr(ff.fft, name)(fz), getattr(torch.fft, name)(tz), 1e-4)
    close(ff.fft.rfft(fx), torch.fft.rfft(tx), 1e-4)
    close(ff.fft.rfft2(fx), torch.fft.rfft2(tx), 1e-4)
    close(ff.fft.rfftn(fx, dim=(0, 2)), torch.fft.rfftn(tx, dim=(0, 2)), 1e-4)
    r = torch.fft.rfft2(tx)
    close(ff.fft.irfft2(ff.tensor(r.numpy(), device=device)), torch.fft.irfft2(r), 1e-4)
    close(ff.fft.irfft(ff.fft.rfft(fx), n=6), torch.fft.irfft(torch.fft.rfft(tx), n=6), 1e-4)
    close(ff.fft.fftshift(fz, dim=(1, 2)), torch.fft.fftshift(tz, dim=(1, 2)))
    close(ff.fft.ifftshift(fx), torch.fft.ifftshift(tx))
    close(ff.fft.fftfreq(7, 0.5), torch.fft.fftfreq(7, 0.5))
    close(ff.fft.rfftfreq(8), torch.fft.rfftfreq(8))
    # stft / istft with return_complex
    sig = RNG.standard_normal(256).astype(np.float32)
    fs, ts = both(sig, device)
    win_t = torch.hann_window(64)
    win_f = ff.tensor(win_t.numpy(), device=device)
    s, tsp = fs.stft(64, 16, window=win_f, return_complex=True), ts.stft(64, 16, window=win_t, return_complex=True)
    close(s, tsp, 1e-4)
    close(s.abs(), tsp.abs(), 1e-4)
    close(s.istft(64, 16, window=win_f, length=256), tsp.istft(64, 16, window=win_t, length=256), 1e-4)
    # gradients through a spectral product with a complex weight
    fz.requires_grad_(True)
    tz.requires_grad_(True)
    k = cplx((8, 4))
    (fk, tk) = both(k, device, True)
    y, ty = ff.fft.irfft2(ff.fft.rfft2(fz.real) * fk), torch.fft.irfft2(torch.fft.rfft2(tz.real) * tk)
    close(y, ty, 1e-4)
    w, tw = _weights(ty, device)
    _loss(y, w).backward()
    _loss(ty, tw).backward()
    close(fk.grad, tk.grad, 1e-3)
    close(fz.grad, tz.grad, 1e-3)


@pytest.mark.requires_host_memory  # from_numpy and DLPack share the default backend's memory
def test_exchange_numpy_dlpack_files(tmp_path):
    a = cplx((2, 3))
    f = ff.from_numpy(a.copy())
    assert f.dtype is ff.complex64
    np.testing.assert_array_equal(f.numpy(), a)
    t = torch.utils.dlpack.from_dlpack(f)
    assert t.dtype == torch.complex64 and np.array_equal(t.numpy(), a)
    back = ff.from_dlpack(torch.tensor(a.astype(np.complex128)))
    assert back.dtype is ff.complex128
    buf = io.BytesIO()
    torch.save({"w": torch.tensor(a), "d": torch.tensor(a.astype(np.complex128))}, buf)
    buf.seek(0)
    sd = ff.load(buf)
    assert sd["w"].dtype is ff.complex64 and sd["d"].dtype is ff.complex128
    np.testing.assert_array_equal(sd["w"].numpy(), a)
    ff.save({"w": f}, str(tmp_path / "c.pt"))
    np.testing.assert_array_equal(torch.load(str(tmp_path / "c.pt"))["w"].numpy(), a)
    ff.save({"w": f}, str(tmp_path / "c.safetensors"))
    np.testing.assert_array_equal(ff.load(str(tmp_path / "c.safetensors"))["w"].numpy(), a)
    np.save(tmp_path / "c.npy", a)
    np.testing.assert_array_equal(ff.load_npy(str(tmp_path / "c.npy")).numpy(), a)
