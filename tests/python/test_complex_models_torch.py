"""Complex numbers in the two model forms issue 45 names, each written once against a `lib`
that is torch or fusionflow, trained a few steps from the same weights: the losses must agree.
  - Llama's rotary embeddings (facebookresearch/llama model.py's precompute_freqs_cis,
    reshape_for_broadcast and apply_rotary_emb: torch.polar, view_as_complex, a complex
    product, view_as_real) in an attention block, trained by AdamW;
  - an FNO spectral convolution (SpectralConv2d: rfft2, an einsum with complex
    nn.Parameter weights, slice writes into a complex zeros tensor, irfft2), trained by Adam
    (which updates complex parameters as real pairs)."""
import math

import numpy as np
import pytest

import fusionflow as ff
from conftest import DEVICES

torch = pytest.importorskip("torch")


# ---- Llama (model.py, as Meta wrote it; `lib` in place of torch) --------------------------
def precompute_freqs_cis(lib, dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (lib.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = lib.arange(end, device=freqs.device)
    freqs = lib.outer(t, freqs).float()
    return lib.polar(lib.ones_like(freqs), freqs)


def reshape_for_broadcast(freqs_cis, x):
    ndim = x.ndim
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(lib, xq, xk, freqs_cis):
    xq_ = lib.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = lib.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = lib.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = lib.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def make_attention(lib, dim, n_heads):
    nn = lib.nn

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.n_heads, self.head_dim = n_heads, dim // n_heads
            self.wq = nn.Linear(dim, dim, bias=False)
            self.wk = nn.Linear(dim, dim, bias=False)
            self.wv = nn.Linear(dim, dim, bias=False)
            self.wo = nn.Linear(dim, dim, bias=False)

        def forward(self, x, freqs_cis, mask):
            bsz, seqlen, _ = x.shape
            xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
            xq = xq.view(bsz, seqlen, self.n_heads, self.head_dim)
            xk = xk.view(bsz, seqlen, self.n_heads, self.head_dim)
            xv = xv.view(bsz, seqlen, self.n_heads, self.head_dim)
            xq, xk = apply_rotary_emb(lib, xq, xk, freqs_cis=freqs_cis)
            xq, keys, values = xq.transpose(1, 2), xk.transpose(1, 2), xv.transpose(1, 2)
            scores = lib.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
            scores = scores + mask
            scores = lib.nn.functional.softmax(scores.float(), dim=-1).type_as(xq)
            output = lib.matmul(scores, values)
            output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
            return self.wo(output)
    return Attention()


def _copy_weights(src, dst, device):
    sd = {k: ff.tensor(v.detach().numpy(), device=device) for k, v in src.state_dict().items()}
    dst.load_state_dict(sd)


@pytest.mark.parametrize("device", DEVICES)
def test_llama_rotary_attention_trains_as_torch(device):
    torch.manual_seed(0)
    dim, heads, seqlen, bsz = 32, 4, 10, 3
    tm, fm = make_attention(torch, dim, heads), make_attention(ff, dim, heads).to(device)
    _copy_weights(tm, fm, device)
    rng = np.random.default_rng(1)
    x0, y0 = rng.standard_normal((bsz, seqlen, dim)).astype(np.float32), rng.standard_normal(
        (bsz, seqlen, dim)).astype(np.float32)
    tf = precompute_freqs_cis(torch, dim // heads, seqlen)
    ffc = precompute_freqs_cis(ff, dim // heads, seqlen).to(device)
    assert ffc.dtype is ff.complex64
    np.testing.assert_allclose(ffc.cpu().numpy(), tf.numpy(), rtol=1e-5, atol=1e-6)
    tmask = torch.triu(torch.full((1, 1, seqlen, seqlen), float("-inf")), diagonal=1)
    fmask = ff.triu(ff.full((1, 1, seqlen, seqlen), float("-inf"), device=device), diagonal=1)
    topt, fopt = torch.optim.AdamW(tm.parameters(), lr=1e-2), ff.optim.AdamW(fm.parameters(), lr=1e-2)
    tx, ty = torch.tensor(x0), torch.tensor(y0)
    fx, fy = ff.tensor(x0, device=device), ff.tensor(y0, device=device)
    for step in range(4):
        tl = ((tm(tx, tf, tmask) - ty) ** 2).mean()
        fl = ((fm(fx, ffc, fmask) - fy) ** 2).mean()
        assert abs(fl.item() - tl.item()) <= 1e-5 * max(1.0, abs(tl.item())), (step, fl.item(), tl.item())
        topt.zero_grad()
        fopt.zero_grad()
        tl.backward()
        fl.backward()
        topt.step()
        fopt.step()


# ---- FNO's SpectralConv2d (zongyi-li/fourier_neural_operator, fourier_2d.py) ----------
def make_spectral_conv(lib, in_channels, out_channels, modes1, modes2):
    nn = lib.nn

    class SpectralConv2d(nn.Module):
        def __init__(self):
            super().__init__()
            self.in_channels, self.out_channels = in_channels, out_channels
            self.modes1, self.modes2 = modes1, modes2
            self.scale = (1 / (in_channels * out_channels))
            self.weights1 = nn.Parameter(self.scale * lib.rand(in_channels, out_channels, self.modes1, self.modes2,
                                                               dtype=lib.cfloat))
            self.weights2 = nn.Parameter(self.scale * lib.rand(in_channels, out_channels, self.modes1, self.modes2,
                                                               dtype=lib.cfloat))

        def compl_mul2d(self, input, weights):
            return lib.einsum("bixy,ioxy->boxy", input, weights)

        def forward(self, x):
            batchsize = x.shape[0]
            x_ft = lib.fft.rfft2(x)
            out_ft = lib.zeros(batchsize, self.out_channels, x.size(-2), x.size(-1) // 2 + 1, dtype=lib.cfloat,
                               device=x.device)
            out_ft[:, :, :self.modes1, :self.modes2] = \
                self.compl_mul2d(x_ft[:, :, :self.modes1, :self.modes2], self.weights1)
            out_ft[:, :, -self.modes1:, :self.modes2] = \
                self.compl_mul2d(x_ft[:, :, -self.modes1:, :self.modes2], self.weights2)
            return lib.fft.irfft2(out_ft, s=(x.size(-2), x.size(-1)))
    return SpectralConv2d()


@pytest.mark.parametrize("device", [d for d in DEVICES if d != "opencl"])  # opencl has no fft entry
def test_fft_conv_with_complex_parameters_trains_as_torch(device):
    torch.manual_seed(0)
    tm = make_spectral_conv(torch, 3, 2, 4, 3)
    fm = make_spectral_conv(ff, 3, 2, 4, 3).to(device)
    assert fm.weights1.dtype is ff.complex64 and fm.weights1.requires_grad
    _copy_weights(tm, fm, device)
    rng = np.random.default_rng(2)
    x0, y0 = rng.standard_normal((2, 3, 12, 10)).astype(np.float32), rng.standard_normal((2, 2, 12, 10)).astype(
        np.float32)
    tx, ty = torch.tensor(x0), torch.tensor(y0)
    fx, fy = ff.tensor(x0, device=device), ff.tensor(y0, device=device)
    topt, fopt = torch.optim.Adam(tm.parameters(), lr=5e-2), ff.optim.Adam(fm.parameters(), lr=5e-2)
    for step in range(5):
        tl = ((tm(tx) - ty) ** 2).mean()
        fl = ((fm(fx) - fy) ** 2).mean()
        assert abs(fl.item() - tl.item()) <= 1e-5 * max(1.0, abs(tl.item())), (step, fl.item(), tl.item())
        topt.zero_grad()
        fopt.zero_grad()
        tl.backward()
        fl.backward()
        if step == 0:
            np.testing.assert_allclose(fm.weights1.grad.cpu().numpy(), tm.weights1.grad.numpy(), rtol=1e-4,
                                       atol=1e-6)
        topt.step()
        fopt.step()
    np.testing.assert_allclose(fm.weights2.detach().cpu().numpy(), tm.weights2.detach().numpy(), rtol=1e-4,
                               atol=1e-6)
    st = fopt.state_dict()["state"][0]
    assert st["exp_avg"].dtype is ff.complex64  # the state is complex, updated as real pairs (torch's)


OPTIMIZERS = {
    "SGD": dict(lr=0.1, momentum=0.9, weight_decay=0.01), "Adam": dict(lr=0.05, weight_decay=0.01),
    "AdamW": dict(lr=0.05),  # (torch 1.13's amsgrad takes maximum of complex state: it fails there) "RMSprop": dict(lr=0.01, momentum=0.5, centered=True),
    "Adagrad": dict(lr=0.1), "Adadelta": dict(lr=1.0)}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizers_train_complex_parameters_as_torch(name):
    """A complex parameter under a loss of its real and imaginary parts: each optimizer's
    trajectory equals torch.optim's (which updates complex parameters as real pairs)."""
    rng = np.random.default_rng(3)
    z0 = (rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))).astype(np.complex64)
    target = (rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))).astype(np.complex64)
    tp, fp = torch.nn.Parameter(torch.tensor(z0)), ff.nn.Parameter(ff.tensor(z0))
    topt = getattr(torch.optim, name)([tp], **OPTIMIZERS[name])
    fopt = getattr(ff.optim, name)([fp], **OPTIMIZERS[name])
    tt, ft = torch.tensor(target), ff.tensor(target)
    for _ in range(6):
        tl = ((tp - tt).abs() ** 2).sum() + (tp.real * tp.imag).sum()
        fl = ((fp - ft).abs() ** 2).sum() + (fp.real * fp.imag).sum()
        topt.zero_grad()
        fopt.zero_grad()
        tl.backward()
        fl.backward()
        topt.step()
        fopt.step()
    assert fp.dtype is ff.complex64
    np.testing.assert_allclose(fp.detach().numpy(), tp.detach().numpy(), rtol=1e-5, atol=1e-6)
