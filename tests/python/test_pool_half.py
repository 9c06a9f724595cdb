"""Max and average pooling on F16/BF16 (issue 35): cpu_blas's pool2d entry takes halves
directly, and every value it gives, forward and backward, must be the f32 computation
rounded once (the core's f32 detour, which the reference backend still takes), bit for
bit, NaN windows and tied maxima included. Max pooling is also checked against PyTorch."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fusionflow as ff
import fusionflow.nn.functional as F
from conftest import DEVICES

# (shape, kernel, stride, padding): 2 x 2 tiles (the CNN's), odd sizes in floor mode,
# overlapping padded windows (gradients summed), rectangular windows
CASES = [((2, 3, 6, 8), 2, 2, 0), ((2, 3, 7, 5), 2, 2, 0), ((2, 2, 7, 6), 3, 2, 1), ((1, 2, 5, 5), 3, 1, 1),
         ((2, 2, 6, 9), (2, 3), (1, 2), (1, 1)), ((3, 4, 5, 6), 3, 3, 0)]
# opencl declines half pooling and the core composes it there, rounding per op: not the
# rule under test
HOST = [d for d in DEVICES if d in ("cpu_ref", "cpu_blas")]
DTYPES = {"bf16": (ff.bfloat16, torch.bfloat16), "f16": (ff.float16, torch.float16)}


def data(shape, seed):
    """Normal values with a third of them small integers (ties, zeros) and a few NaNs."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape).astype(np.float32) * 3
    ints = rng.random(shape) < 0.35
    x[ints] = np.maximum(rng.integers(-2, 3, size=shape), 0)[ints]
    x[rng.random(shape) < 0.04] = np.nan
    return x


def bits(t):
    """The half values widened to f32 (exact), as raw bits: -0 and +0 differ, NaNs compare."""
    return np.ascontiguousarray(t.detach().float().numpy()).view(np.uint32)


def pool(kind, x, k, s, p):
    return F.max_pool2d(x, k, s, p) if kind == "max" else F.avg_pool2d(x, k, s, p)


@pytest.mark.parametrize("device", HOST)
@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("case", CASES)
def test_half_pool_is_f32_rounded_once(device, dtype, kind, case):
    shape, k, s, p = case
    hd, _ = DTYPES[dtype]
    x0 = data(shape, 11)
    xh = ff.tensor(x0, device=device).to(hd)
    xh.requires_grad_(True)
    yh = pool(kind, xh, k, s, p)
    assert yh.dtype == hd
    g0 = np.random.default_rng(5).normal(size=tuple(yh.shape)).astype(np.float32)
    gh = ff.tensor(g0, device=device).to(hd)
    yh.backward(gh)

    xf = xh.detach().float()  # the half values, exactly
    xf.requires_grad_(True)
    yf = pool(kind, xf, k, s, p)
    yf.backward(gh.float())
    assert np.array_equal(bits(yh), bits(yf.to(hd)))
    assert xh.grad.dtype == hd
    assert np.array_equal(bits(xh.grad), bits(xf.grad.to(hd)))
    if kind == "max":  # some windows hold a NaN, so the NaN rule of both passes is exercised
        assert np.isnan(yh.float().numpy()).any()


@pytest.mark.parametrize("device", HOST)
@pytest.mark.parametrize("case", CASES)
def test_bf16_max_pool_matches_torch(device, case):
    """Max is exact in bf16, and its gradient goes to PyTorch's index (the first maximum,
    the last NaN), so both equal torch's on the same bf16 values exactly."""
    shape, k, s, p = case
    x0 = data(shape, 3)
    xh = ff.tensor(x0, device=device).to(ff.bfloat16)
    xh.requires_grad_(True)
    yh = F.max_pool2d(xh, k, s, p)
    g0 = np.random.default_rng(9).normal(size=tuple(yh.shape)).astype(np.float32)
    yh.backward(ff.tensor(g0, device=device).to(ff.bfloat16))

    tx = torch.tensor(xh.detach().float().numpy(), requires_grad=True)
    ty = TF.max_pool2d(tx, k, s, p)
    ty.backward(torch.tensor(g0).to(torch.bfloat16).float())
    # values, not bits: torch keeps the input NaN's sign and payload, we write the quiet NaN
    assert np.array_equal(yh.detach().float().numpy(), ty.detach().to(torch.bfloat16).float().numpy(), equal_nan=True)
    assert np.array_equal(xh.grad.float().numpy(), tx.grad.to(torch.bfloat16).float().numpy())
