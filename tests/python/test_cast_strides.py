"""A dtype cast keeps a dense view's strides, as torch's .to(dtype) does
(memory_format=preserve_format): strides, values and gradients against PyTorch."""
import numpy as np
import pytest

import fusionflow as ff

try:
    import torch
except ImportError:  # CI installs python3-torch (FF_REQUIRE_TORCH=1 fails there instead)
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")

VIEWS = {
    "transpose": lambda t: t.transpose(0, 1),
    "permute": lambda t: t.permute(2, 0, 1),
    "mT of a slice": lambda t: t[1].transpose(0, 1),
    "step slice": lambda t: t[:, :, ::2],
    "expand": lambda t: t[:1].expand(3, 3, 4),
    "contiguous": lambda t: t,
}
DTYPES = [("bfloat16", "float32"), ("float16", "float32"), ("float64", "float32"), ("float32", "bfloat16")]


@needs_torch
@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("to,base", DTYPES)
def test_cast_strides_and_values_match_torch(view, to, base, live_counter):
    a = np.random.default_rng(1).integers(-8, 8, size=(3, 3, 4)) / 4  # exact in every dtype
    x = VIEWS[view](ff.tensor(a).to(getattr(ff, base)))
    tx = VIEWS[view](torch.tensor(a).to(getattr(torch, base)))
    c, tc = x.to(getattr(ff, to)), tx.to(getattr(torch, to))
    assert c.stride() == tc.stride(), (view, c.stride(), tc.stride())
    assert c.storage_offset() == tc.storage_offset() == 0
    assert np.array_equal(c.float().numpy(), tc.float().numpy())


@needs_torch
def test_gradients_through_a_transposed_cast_match_torch():
    rng = np.random.default_rng(2)
    a, w = rng.integers(-8, 8, size=(5, 3)) / 4, rng.integers(-8, 8, size=(3, 5)) / 4
    x, tx = ff.tensor(a, dtype=ff.float32, requires_grad=True), torch.tensor(a, dtype=torch.float32, requires_grad=True)
    c = x.t().to(ff.bfloat16)
    tc = tx.t().to(torch.bfloat16)
    assert c.stride() == tc.stride() == (1, 3)
    (c * ff.tensor(w).to(ff.bfloat16)).square().sum().backward()
    (tc * torch.tensor(w).to(torch.bfloat16)).square().sum().backward()
    assert x.grad.dtype == ff.float32 and x.grad.stride() == tx.grad.stride()
    assert np.array_equal(x.grad.numpy(), tx.grad.numpy())


@needs_torch
def test_autocast_linear_matches_torch_and_keeps_weight_layout():
    rng = np.random.default_rng(3)
    a = rng.integers(-8, 8, size=(6, 16)) / 4
    lin, tlin = ff.nn.Linear(16, 8), torch.nn.Linear(16, 8)
    with torch.no_grad():
        tlin.weight.copy_(torch.tensor(lin.weight.detach().numpy()))
        tlin.bias.copy_(torch.tensor(lin.bias.detach().numpy()))
    with ff.autocast(dtype=ff.bfloat16):
        y = lin(ff.tensor(a, dtype=ff.float32))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ty = tlin(torch.tensor(a, dtype=torch.float32))
    assert y.dtype == ff.bfloat16 and ty.dtype == torch.bfloat16
    y.float().sum().backward()
    ty.float().sum().backward()
    np.testing.assert_allclose(y.float().detach().numpy(), ty.float().detach().numpy(), rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(lin.weight.grad.numpy(), tlin.weight.grad.numpy(), rtol=1e-2, atol=1e-2)
    assert lin.weight.grad.stride() == tlin.weight.grad.stride()
