"""x ** number against PyTorch 1.13 (issue 49): cpu_blas computes a broadcast exponent of 2 as
x * x and, in f32, 0.5 as sqrt, and the backward of x ** 2 as g * (2 * x) without pow(x, 1)
or the b == 0 mask. Those must equal PyTorch's x * x and sqrt bit for bit (both are correctly
rounded), the signs of zeros and the infinities included (pow(-0, 0.5) = +0 and
pow(-inf, 0.5) = +inf, where sqrt gives -0 and NaN), and every other exponent must keep the
general rule (within an ulp of PyTorch's own pow).

One known difference, kept: PyTorch 1.13 computes x ** 0.5 as sqrt, so at -0 it gives -0 and
at -inf NaN, where FusionFlow follows C's pow on every backend (+0 and +inf, as NumPy's
np.power); there the expected values are NumPy's."""
import os

import numpy as np
import pytest

import fusionflow as ff

try:
    import torch
except ImportError:  # python3-torch not installed
    torch = None
    if os.environ.get("FF_REQUIRE_TORCH"):
        raise

from conftest import DEVICES

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

DTYPES = {"f32": (ff.float32, "float32"), "f64": (ff.float64, "float64")}


def _x(rng):
    x = rng.standard_normal((33, 17)) * 3
    x[0, :8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 3e38]
    return x


def _np(t):
    return np.array(t.tolist(), dtype=np.float64)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("e", [2, 2.0, 0.5, 3, 1.5, -1, 0])
def test_pow_number_matches_torch(device, dt, e):
    rng = np.random.default_rng(49)
    x = _x(rng)
    fdt, tname = DTYPES[dt]
    tx = torch.tensor(x, dtype=getattr(torch, tname), requires_grad=True)
    fx = ff.tensor(x, device=device).to(fdt).requires_grad_()
    ty, fy = tx ** e, fx ** e
    got, want = _np(fy), ty.detach().double().numpy()
    if e == 0.5:  # C's pow at -0 and -inf (NumPy's), not PyTorch's sqrt
        edge = (x == -np.inf) | ((x == 0) & np.signbit(x))
        want[edge] = np.power(x[edge], 0.5)
    exact = e == 2 or (e == 0.5 and dt == "f32")
    if exact and device != "opencl":  # OpenCL's pow is its compiler's, within the conformance ulps
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    else:
        np.testing.assert_allclose(got, want, rtol=2e-6 if dt == "f32" else 1e-14, atol=0)
    g = rng.standard_normal(x.shape)
    ty.backward(torch.tensor(g, dtype=tx.dtype))
    fy.backward(ff.tensor(g, device=device).to(fdt))
    gg, gw = _np(fx.grad), tx.grad.double().numpy()
    if e == 2 and device != "opencl":
        np.testing.assert_array_equal(gg, gw)
    else:
        fin = np.isfinite(gw)  # at 0 and the infinities both sides give inf or NaN there
        np.testing.assert_allclose(gg[fin], gw[fin], rtol=2e-6 if dt == "f32" else 1e-13, atol=0)


def test_pow_number_twice_differentiable():
    """x ** 2's shortened backward still records a graph: d2/dx2 (x ** 2) = 2."""
    x = ff.tensor([1.5, -2.0, 0.0], dtype=ff.float64, requires_grad=True)
    (g,) = ff.autograd.grad((x ** 2).sum(), [x], create_graph=True)
    assert g.tolist() == [3.0, -4.0, 0.0]
    (h,) = ff.autograd.grad(g.sum(), [x])
    assert h.tolist() == [2.0, 2.0, 2.0]
