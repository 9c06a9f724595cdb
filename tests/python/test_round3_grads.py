"""Gradients issue 29 found wrong, item by item, against PyTorch 1.13: scans whose
reverse cumulative sum cancelled (total - prefix), cumprod's gradient on small values
and its second order with several zeros, and second orders through svd, svdvals and qr
(which saw their outputs as constants). As test_semantics_torch.py: every test checks
FusionFlow against written expected values and, when PyTorch is installed (CI: set
FF_REQUIRE_TORCH=1), checks that PyTorch gives those same values."""
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

from conftest import DEVICES  # cpu, and cpu_blas and opencl when they were built

inf = float("inf")
LINALG = [d for d in DEVICES if d in ("cpu_ref", "cpu_blas")]  # opencl has no linalg entry


def same(got, want, rtol=1e-6, atol=0.0):
    """got (ff or torch tensor) equals want (list), inf matching inf of the same sign."""
    g = np.asarray(got.detach().numpy() if hasattr(got, "detach") else got.numpy(), dtype=np.float64)
    w = np.asarray(want, dtype=np.float64)
    assert g.shape == w.shape, (g.shape, w.shape)
    assert np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=False), "got %r, want %r" % (g.tolist(), w.tolist())


def weighted_grad(lib, op, xs, w, dtype, dim=0, device=None):
    """d/dx sum(op(x, dim) * w), in fusionflow (lib=ff) or PyTorch (lib=torch)."""
    if lib is ff:
        x = ff.tensor(xs, dtype=dtype, device=device, requires_grad=True)
        wt = ff.tensor(w, dtype=dtype, device=device)
    else:
        x = torch.tensor(xs, dtype=getattr(torch, dtype), requires_grad=True)
        wt = torch.tensor(w, dtype=getattr(torch, dtype))
    (getattr(x, op)(dim) * wt).sum().backward()
    return x.grad


def second_order(lib, op, xs, w1, w2, dtype="float64", dim=0, device=None):
    """g = d/dx sum(op(x) * w1) with create_graph, then d/dx sum(g * w2): (g, that)."""
    if lib is ff:
        x = ff.tensor(xs, dtype=dtype, device=device, requires_grad=True)
        mk = lambda v: ff.tensor(v, dtype=dtype, device=device)
    else:
        x = torch.tensor(xs, dtype=getattr(torch, dtype), requires_grad=True)
        mk = lambda v: torch.tensor(v, dtype=getattr(torch, dtype))
    g, = lib.autograd.grad((getattr(x, op)(dim) * mk(w1)).sum(), x, create_graph=True)
    h, = lib.autograd.grad((g * mk(w2)).sum(), x)
    return g, h


# ---- 1. cumsum's gradient is a real reverse scan: no cancellation, inf stays inf ----------------
CUMSUM_CASES = [  # (x, weight, dim, d/dx sum(cumsum(x) * w))
    ([1.0, 2.0, 3.0], [1e8, 1.0, 1.0], 0, [1e8, 2.0, 1.0]),  # total - prefix gave [1e8, 1, 1]
    ([1.0, 2.0, 3.0], [1.0, inf, 1.0], 0, [inf, inf, 1.0]),  # inf - inf gave NaN
    ([1.0, 2.0, 3.0], [inf, 1.0, 1.0], 0, [inf, 2.0, 1.0]),
    ([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [[1e8, 1e8], [1.0, -3.0], [1.0, 1.0]], 0,
     [[1e8, 1e8], [2.0, -2.0], [1.0, 1.0]]),
    ([[1.0, 2.0, 3.0, 4.0]], [[-1e8, 0.5, 0.25, 0.125]], 1, [[-1e8, 0.875, 0.375, 0.125]]),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("x,w,dim,want", CUMSUM_CASES)
def test_cumsum_gradient_is_a_reverse_scan(device, x, w, dim, want):
    same(weighted_grad(ff, "cumsum", x, w, "float32", dim, device), want, rtol=0)
    if torch is not None:
        same(weighted_grad(torch, "cumsum", x, w, "float32", dim), want, rtol=0)


# ---- 2. cumprod's gradient on small values, with zeros and inf weights --------------------------
def _exact_cumprod_grad(x, w):
    """sum_{j >= k} w_j prod_{i <= j, i != k} x_i, in float64."""
    n = len(x)
    return [sum(w[j] * np.prod([x[i] for i in range(j + 1) if i != k]) for j in range(k, n)) for k in range(n)]


CUMPROD_CASES = [  # (x, weight, d/dx sum(cumprod(x) * w)); the values span many decades
    ([0.01] * 7, [1.0] * 7, [1.010101010101, 1.0101010101e-2, 1.01010101e-4, 1.010101e-6, 1.0101e-8, 1.01e-10,
                             1e-12]),
    ([1e-3, 2e-3, 3e-3, 4e-3], [1.0, 1e8, 1.0, 1.0], _exact_cumprod_grad([1e-3, 2e-3, 3e-3, 4e-3], [1, 1e8, 1, 1])),
    ([2.0, 3.0, 4.0], [1.0, inf, 1.0], [inf, inf, 6.0]),
    ([2.0, 0.0, 3.0, 0.0, 5.0], [1.0, 2.0, 3.0, 4.0, 5.0], [1.0, 22.0, 0.0, 0.0, 0.0]),
    ([2.0, 0.0, 3.0, 0.0, 5.0], [1.0, 1.0, 1.0, 1.0, inf], [1.0, 8.0, 0.0, 0.0, 0.0]),  # inf past the 2nd zero
    ([2.0, 0.0, 3.0, 0.0, 5.0], [1.0, 1.0, inf, 1.0, 1.0], [1.0, inf, 0.0, 0.0, 0.0]),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("x,w,want", CUMPROD_CASES)
def test_cumprod_gradient_small_values_and_zeros(device, x, w, want):
    same(weighted_grad(ff, "cumprod", x, w, "float32", 0, device), want, rtol=2e-6)
    if torch is not None:
        same(weighted_grad(torch, "cumprod", x, w, "float32", 0), want, rtol=2e-6)


def test_cumprod_gradient_small_values_along_an_inner_axis():
    """The same line as the first case above, laid along axis 1 of a [2, 7, 2] tensor."""
    line = np.full(7, 0.01)
    x = np.broadcast_to(line[None, :, None], (2, 7, 2)).copy()
    want = np.broadcast_to(np.asarray(CUMPROD_CASES[0][2])[None, :, None], (2, 7, 2))
    for device in DEVICES:
        same(weighted_grad(ff, "cumprod", x, np.ones_like(x), "float32", 1, device), want, rtol=2e-6)
    if torch is not None:
        same(weighted_grad(torch, "cumprod", x, np.ones_like(x), "float32", 1), want, rtol=2e-6)


# ---- 3. cumprod's second order with several zeros -------------------------------------------------
CUMPROD_SECOND = [  # (x, w1, w2, dim, first order, second order)
    ([0.0, 0.0], [1.0, 1.5], [0.7, -0.3], 0, [1.0, 0.0], [-0.45, 1.05]),  # issue 29: [0, 1.05]
    ([0.0, 0.0], [2.0, 3.0], [0.5, 1.5], 0, [2.0, 0.0], [4.5, 1.5]),
    ([2.0, 0.0, 3.0, 0.0, 5.0], [1.0, 2.0, 3.0, 4.0, 5.0], [0.5, -1.0, 2.0, 1.0, -2.0], 0,
     [1.0, 22.0, 0.0, 0.0, 0.0], [-11.0, 191.5, -6.0, -174.0, 0.0]),
    ([[0.0, 1.0], [0.0, 2.0], [3.0, 0.0]], [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
     [[1.0, -1.0], [2.0, 0.5], [-1.0, 1.0]], 0, [[1.0, 10.0], [0.0, 4.0], [0.0, 12.0]],
     [[36.0, 14.0], [18.0, 2.0], [0.0, -9.0]]),
    ([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[1.0, 1.0, 1.0], [-1.0, 2.0, 0.5]], 1,
     None, None),  # compared with PyTorch only
    ([0.5, -2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 1.0, 1.0], 0, [-21.0, 5.5, -3.0], [5.0, 12.5, -4.5]),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("x,w1,w2,dim,want_g,want_h", CUMPROD_SECOND)
def test_cumprod_second_order_with_zeros(device, x, w1, w2, dim, want_g, want_h):
    g, h = second_order(ff, "cumprod", x, w1, w2, dim=dim, device=device)
    if want_g is not None:
        same(g, want_g, rtol=1e-12)
        same(h, want_h, rtol=1e-12)
    if torch is not None:
        tg, th = second_order(torch, "cumprod", x, w1, w2, dim=dim)
        same(g, tg.tolist(), rtol=1e-12)
        same(h, th.tolist(), rtol=1e-12)
        if want_g is not None:
            same(tg, want_g, rtol=1e-12)
            same(th, want_h, rtol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_cumsum_second_order_through_a_product(device):
    """cumsum's backward is itself differentiable: d/dx of sum(cumsum(x * x) * w)'s gradient."""
    xs, w1, w2 = [1.0, -2.0, 3.0], [1e17, 1.0, 1.0], [1.0, 2.0, 3.0]  # 1e17 + 1 == 1e17 in f64
    x = ff.tensor(xs, dtype="float64", device=device, requires_grad=True)
    g, = ff.autograd.grad(((x * x).cumsum(0) * ff.tensor(w1, dtype="float64", device=device)).sum(), x,
                          create_graph=True)
    h, = ff.autograd.grad((g * ff.tensor(w2, dtype="float64", device=device)).sum(), x)
    want_g, want_h = [2e17, -8.0, 6.0], [2e17, 8.0, 6.0]  # 2 x rc(w1) and 2 rc(w1) w2, rc(w1) = [1e17, 2, 1]
    same(g, want_g, rtol=0)
    same(h, want_h, rtol=0)
    if torch is not None:
        tx = torch.tensor(xs, dtype=torch.float64, requires_grad=True)
        tg, = torch.autograd.grad(((tx * tx).cumsum(0) * torch.tensor(w1, dtype=torch.float64)).sum(), tx,
                                  create_graph=True)
        th, = torch.autograd.grad((tg * torch.tensor(w2, dtype=torch.float64)).sum(), tx)
        same(tg, want_g, rtol=0)
        same(th, want_h, rtol=0)


# ---- 4. second orders through svd, svdvals and qr -------------------------------------------------
A = [[2.0, 1.0], [0.5, -1.0], [1.0, 3.0]]
W = [[1.0, -2.0], [0.5, 0.25], [-1.0, 2.0]]
V = [[1.0, 0.5], [-1.0, 2.0]]


def _svd_loss(lib, x, mk):
    u, s, vh = lib.linalg.svd(x, full_matrices=False)
    # a loss the free signs of the singular vectors do not change (u_i and v_i flip together)
    return ((u * mk(W)).sum(-2) * (vh * mk(V)).sum(-1)).sum() + (s ** 3).sum()


SECOND_LINALG = {  # name: (loss(lib, x, mk), d/dA sum(grad(loss)(A) * W)), written from PyTorch
    "svdvals": (lambda lib, x, mk: lib.linalg.svdvals(x).sum(),
                [[0.196753752053, -0.361699115941], [-0.416726163615, 0.533603461637],
                 [-0.113061147266, 0.274406434182]]),
    "svd": (_svd_loss,
            [[3.009102920388, -15.725591006607], [11.426624933696, -4.03342460726],
             [-4.221702482174, 23.354722007216]]),
    "qr": (lambda lib, x, mk: (lib.linalg.qr(x).Q * mk(W)).sum() + lib.linalg.qr(x).R.sum(),
           [[-1.363411730133, 0.807187178141], [-0.261461854659, -0.250575808164],
            [1.242255853853, 0.127844061371]]),
    "qr wide": (lambda lib, x, mk: lib.linalg.qr(x.mT).Q.sum() + (lib.linalg.qr(x.mT).R * mk(W).mT).sum(),
                [[-3.359692136193, 3.253478907262], [0.0, 0.559016994375], [2.2360679775, 0.0]]),
}


def _linalg_second_order(lib, loss, device=None):
    if lib is ff:
        x = ff.tensor(A, dtype="float64", device=device, requires_grad=True)
        mk = lambda v: ff.tensor(v, dtype="float64", device=device)
    else:
        x = torch.tensor(A, dtype=torch.float64, requires_grad=True)
        mk = lambda v: torch.tensor(v, dtype=torch.float64)
    g, = lib.autograd.grad(loss(lib, x, mk), x, create_graph=True)
    h, = lib.autograd.grad((g * mk(W)).sum(), x)
    return h


@pytest.mark.parametrize("device", LINALG)
@pytest.mark.parametrize("name", list(SECOND_LINALG))
def test_linalg_second_order(device, name):
    loss, want = SECOND_LINALG[name]
    same(_linalg_second_order(ff, loss, device), want, rtol=1e-9, atol=1e-11)
    if torch is not None:
        same(_linalg_second_order(torch, loss), want, rtol=1e-9, atol=1e-11)
