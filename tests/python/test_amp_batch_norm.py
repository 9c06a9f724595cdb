"""batch_norm under autocast and with PyTorch's mixed dtypes (half x, f32 weight, bias and
running statistics), against torch 1.13 on CPU: autocast leaves batch_norm in x's dtype
(a bf16 activation stays bf16, an f32 one f32), the parameters keep f32 and get f32
gradients, x's gradient has x's dtype. On every backend, through the batch_norm entry
and through the composition."""
import os

import numpy as np
import pytest

import fusionflow as ff

try:
    import torch
except ImportError:
    torch = None
    if os.environ.get("FF_REQUIRE_TORCH"):
        raise

from conftest import DEVICES

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")


def near(ours, theirs, ulps=1.0):
    """ours within `ulps` bf16 ulps of theirs (relative to the largest magnitude: the
    gradients cancel, so an element's own ulp is too tight a scale)."""
    a = ours.float().numpy() if hasattr(ours, "numpy") and not isinstance(ours, np.ndarray) else ours
    b = theirs.detach().float().numpy()
    assert a.shape == b.shape
    scale = np.abs(b).max()
    np.testing.assert_allclose(a, b, rtol=ulps * 2.0 ** -7, atol=ulps * 2.0 ** -8 * scale)


def pair(device, seed=0):
    """The same BatchNorm2d(4) in both libraries, with non-trivial affine parameters."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.5, 2.0, 4).astype(np.float32)
    b = rng.normal(0.0, 1.0, 4).astype(np.float32)
    fb, tb = ff.nn.BatchNorm2d(4).to(device), torch.nn.BatchNorm2d(4)
    with ff.no_grad(), torch.no_grad():
        fb.weight.copy_(ff.tensor(w, device=device))
        fb.bias.copy_(ff.tensor(b, device=device))
        tb.weight.copy_(torch.from_numpy(w))
        tb.bias.copy_(torch.from_numpy(b))
    x = rng.normal(1.5, 3.0, (6, 4, 5, 7)).astype(np.float32)
    g = rng.normal(0.0, 1.0, x.shape).astype(np.float32)
    return fb, tb, x, g


@needs_torch
@pytest.mark.parametrize("path", ["entry", "compose"])
@pytest.mark.parametrize("xdtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("device", DEVICES)
def test_batch_norm_under_autocast_matches_torch(device, xdtype, path, force_compose):
    if path == "compose":
        force_compose("batch_norm")
    fb, tb, x0, g0 = pair(device)
    fx = ff.tensor(x0, device=device).to(getattr(ff, xdtype)).detach().requires_grad_()
    tx = torch.from_numpy(x0).to(getattr(torch, xdtype)).detach().requires_grad_()
    with ff.autocast(dtype=ff.bfloat16):
        fy = fb(fx)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ty = tb(tx)
    assert str(fy.dtype).split(".")[-1] == str(ty.dtype).split(".")[-1] == xdtype
    assert fb.running_mean.dtype == ff.float32 and tb.running_mean.dtype == torch.float32
    near(fy, ty)
    np.testing.assert_allclose(fb.running_mean.numpy(), tb.running_mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fb.running_var.numpy(), tb.running_var.numpy(), rtol=1e-5, atol=1e-6)
    (fy.float() * ff.tensor(g0, device=device)).sum().backward()
    (ty.float() * torch.from_numpy(g0)).sum().backward()
    assert str(fx.grad.dtype).split(".")[-1] == xdtype
    assert fb.weight.grad.dtype == ff.float32 and fb.bias.grad.dtype == ff.float32
    near(fx.grad, tx.grad)
    # the parameter gradients are sums over 210 elements per channel, in f32 (torch) or f64
    np.testing.assert_allclose(fb.weight.grad.numpy(), tb.weight.grad.numpy(), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(fb.bias.grad.numpy(), tb.bias.grad.numpy(), rtol=1e-4, atol=1e-3)
    fb.eval(), tb.eval()
    with ff.autocast(dtype=ff.bfloat16), ff.no_grad():
        fe = fb(fx.detach())
    with torch.autocast("cpu", dtype=torch.bfloat16), torch.no_grad():
        te = tb(tx.detach())
    assert str(fe.dtype).split(".")[-1] == xdtype
    near(fe, te, ulps=2.0)  # scale and shift rounded to x's dtype first, in both libraries


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
def test_batch_norm_half_x_f32_params_outside_autocast(device):
    """F.batch_norm on bf16 x with f32 weight, bias and running statistics: y bf16, as
    PyTorch's CPU kernel gives it (we used to promote y to f32)."""
    fb, tb, x0, g0 = pair(device, seed=1)
    fx = ff.tensor(x0, device=device).to(ff.bfloat16).detach().requires_grad_()
    tx = torch.from_numpy(x0).bfloat16().detach().requires_grad_()
    fy, ty = fb(fx), tb(tx)
    assert fy.dtype == ff.bfloat16 and ty.dtype == torch.bfloat16
    near(fy, ty)
    (fy * ff.tensor(g0, device=device).to(ff.bfloat16)).sum().backward()
    (ty * torch.from_numpy(g0).bfloat16()).sum().backward()
    near(fx.grad, tx.grad)
    np.testing.assert_allclose(fb.weight.grad.numpy(), tb.weight.grad.numpy(), rtol=1e-3, atol=1e-2)


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
def test_cnn_block_under_autocast_matches_torch(device):
    """conv-BN-ReLU-maxpool-conv under autocast: BN's bf16 output meets the second conv's
    f32 weight (autocast casts it, as torch's), and the pool runs on bf16."""
    rng = np.random.default_rng(2)
    x0 = rng.normal(0.0, 1.0, (4, 1, 8, 8)).astype(np.float32)
    w1 = (rng.normal(0.0, 0.5, (4, 1, 3, 3))).astype(np.float32)
    w2 = (rng.normal(0.0, 0.3, (3, 4, 3, 3))).astype(np.float32)
    fm = ff.nn.Sequential(ff.nn.Conv2d(1, 4, 3, padding=1, bias=False), ff.nn.BatchNorm2d(4), ff.nn.ReLU(),
                          ff.nn.MaxPool2d(2), ff.nn.Conv2d(4, 3, 3, padding=1, bias=False)).to(device)
    tm = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1, bias=False), torch.nn.BatchNorm2d(4),
                             torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Conv2d(4, 3, 3, padding=1, bias=False))
    with ff.no_grad(), torch.no_grad():
        for i, w in ((0, w1), (4, w2)):
            fm[i].weight.copy_(ff.tensor(w, device=device))
            tm[i].weight.copy_(torch.from_numpy(w))
    with ff.autocast(dtype=ff.bfloat16):
        fy = fm(ff.tensor(x0, device=device))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ty = tm(torch.from_numpy(x0))
    assert fy.dtype == ff.bfloat16 and ty.dtype == torch.bfloat16
    near(fy, ty, ulps=4.0)  # two convs and a BN, each rounded to bf16 (in either library)
    fy.float().square().sum().backward()
    ty.float().square().sum().backward()
    for i in (0, 4):
        assert fm[i].weight.grad.dtype == ff.float32
        near(fm[i].weight.grad.numpy(), tm[i].weight.grad, ulps=8.0)
    assert fm[1].weight.grad.dtype == ff.float32
    near(fm[1].weight.grad.numpy(), tm[1].weight.grad, ulps=8.0)


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
def test_batch_norm_bf16_planes_longer_than_a_tile(device):
    """H W = 720 > cpu_blas's 512-element tiles: tiles inside one plane and tiles across two."""
    fb, tb, _, _ = pair(device, seed=3)
    rng = np.random.default_rng(3)
    x0 = rng.normal(-2.0, 2.0, (2, 4, 24, 30)).astype(np.float32)
    g0 = rng.normal(0.0, 1.0, x0.shape).astype(np.float32)
    fx = ff.tensor(x0, device=device).to(ff.bfloat16).detach().requires_grad_()
    tx = torch.from_numpy(x0).bfloat16().detach().requires_grad_()
    fy, ty = fb(fx), tb(tx)
    near(fy, ty)
    (fy * ff.tensor(g0, device=device).to(ff.bfloat16)).sum().backward()
    (ty * torch.from_numpy(g0).bfloat16()).sum().backward()
    near(fx.grad, tx.grad)
    fb.eval(), tb.eval()
    with ff.no_grad(), torch.no_grad():
        near(fb(fx.detach()), tb(tx.detach()), ulps=2.0)
