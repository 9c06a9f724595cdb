"""Issue 47 item 14: the resampling options PyTorch 1.13 offers that FusionFlow refused, now
composed in nn/_functional/resample.py: interpolate's 'bicubic', 'area' and 'nearest-exact'
modes (on 3-D to 5-D input where PyTorch has them) and antialias=True (bilinear and bicubic,
4-D only, as PyTorch), grid_sample on 5-D input and with 'bicubic', affine_grid for 3-D sizes.
Each is checked against PyTorch 1.13 on every device: values, the gradient to the input, and
for grid_sample the gradient to the grid (for affine_grid, to theta); and the options PyTorch
refuses are refused with its exception type."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fusionflow as ff
import fusionflow.nn.functional as F
from conftest import DEVICES, make_close

close = make_close(1e-5)


def _backward_both(y, ty, rng, device):
    """Backpropagates one random weighting through ours and torch's outputs."""
    w = rng.standard_normal(tuple(ty.shape))
    (y * ff.tensor(w, dtype=y.dtype, device=device)).sum().backward()
    (ty * torch.tensor(w, dtype=ty.dtype)).sum().backward()


# ---- interpolate ------------------------------------------------------------------------------------
INTERPOLATE_CASES = [  # (input shape, interpolate's keywords)
    ((2, 3, 5, 7), dict(size=(9, 4), mode="bicubic", align_corners=False)),
    ((2, 3, 5, 7), dict(size=(3, 11), mode="bicubic", align_corners=True)),
    ((2, 3, 5, 7), dict(scale_factor=(1.7, 0.6), mode="bicubic", align_corners=False)),
    ((2, 3, 5, 7), dict(scale_factor=2.5, mode="bicubic", align_corners=True)),
    ((1, 2, 11, 13), dict(size=(4, 5), mode="bilinear", antialias=True, align_corners=False)),
    ((1, 2, 11, 13), dict(size=(4, 5), mode="bilinear", antialias=True, align_corners=True)),
    ((1, 2, 11, 13), dict(scale_factor=(0.3, 0.45), mode="bicubic", antialias=True, align_corners=False)),
    ((1, 2, 11, 13), dict(scale_factor=0.4, mode="bicubic", antialias=True, align_corners=True)),
    ((1, 2, 5, 7), dict(size=(9, 11), mode="bicubic", antialias=True)),  # upsampling: the plain filter
    ((1, 2, 5, 7), dict(scale_factor=(1.5, 0.5), mode="bilinear", antialias=True)),
    ((2, 3, 7), dict(size=3, mode="area")),
    ((2, 3, 7), dict(scale_factor=1.6, mode="area")),  # area recomputes the scale from the size
    ((2, 3, 5, 7), dict(size=(3, 4), mode="area")),
    ((1, 2, 4, 5, 6), dict(size=(3, 4, 5), mode="area")),
    ((1, 2, 4, 5, 6), dict(scale_factor=(0.5, 1.6, 0.7), mode="area")),
    ((2, 3, 7), dict(size=9, mode="nearest-exact")),
    ((2, 3, 7), dict(scale_factor=1.5, mode="nearest-exact")),
    ((2, 3, 5, 7), dict(size=(9, 3), mode="nearest-exact")),
    ((2, 3, 5, 7), dict(scale_factor=(0.7, 2.3), mode="nearest-exact")),
    ((1, 2, 4, 5, 6), dict(size=(9, 3, 8), mode="nearest-exact")),
    ((1, 2, 4, 5, 6), dict(scale_factor=(1.5, 0.7, 2.3), mode="nearest-exact")),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape,kw", INTERPOLATE_CASES, ids=lambda v: str(v).replace(" ", ""))
def test_interpolate_new_modes_match_torch(device, shape, kw):
    """float32 values and the gradient to the input, as PyTorch's."""
    rng = np.random.default_rng(47)
    a = rng.standard_normal(shape).astype(np.float32)
    x, tx = ff.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = F.interpolate(x, **kw), TF.interpolate(tx, **kw)
    close(y, ty)
    _backward_both(y, ty, rng, device)
    close(x.grad, tx.grad, 2e-5)


def test_nearest_exact_rounds_as_torch_in_float32():
    """Output centres landing on an input pixel's edge: PyTorch computes (o + 0.5) * scale in
    float32, so the pick there is float32's; many sizes and scale factors, exact indices."""
    a = np.arange(1, 38, dtype=np.float32)[None, None]
    x, tx = ff.tensor(a), torch.tensor(a)
    for kw in [dict(size=n) for n in range(1, 80, 3)] + [dict(scale_factor=s) for s in (0.3, 1 / 3, 0.7, 1.1, 2.9)]:
        y, ty = F.interpolate(x, mode="nearest-exact", **kw), TF.interpolate(tx, mode="nearest-exact", **kw)
        assert np.array_equal(y.numpy(), ty.numpy()), kw


def _raises_as_torch(call):
    """call(F) raises, for ours, the exception type it raises for torch's F; returns ours."""
    with pytest.raises(Exception) as want:
        call(TF, torch)
    with pytest.raises(want.type) as got:
        call(F, ff)
    return got


REFUSED_INTERPOLATE = {  # PyTorch 1.13 refuses these too
    "antialias_3d": lambda F, m: F.interpolate(m.zeros(1, 1, 6), size=3, mode="linear", antialias=True),
    "antialias_5d": lambda F, m: F.interpolate(m.zeros(1, 1, 4, 4, 4), size=2, mode="trilinear", antialias=True),
    "antialias_nearest": lambda F, m: F.interpolate(m.zeros(1, 1, 4, 4), size=2, mode="nearest", antialias=True),
    "antialias_area": lambda F, m: F.interpolate(m.zeros(1, 1, 4, 4), size=2, mode="area", antialias=True),
    "bicubic_3d": lambda F, m: F.interpolate(m.zeros(1, 1, 4), size=2, mode="bicubic"),
    "bicubic_5d": lambda F, m: F.interpolate(m.zeros(1, 1, 4, 4, 4), size=2, mode="bicubic"),
    "area_align_corners": lambda F, m: F.interpolate(m.zeros(1, 1, 4, 4), size=2, mode="area", align_corners=True),
    "nearest_exact_align_corners": lambda F, m: F.interpolate(m.zeros(1, 1, 4), size=2, mode="nearest-exact",
                                                              align_corners=False),
    "bicubic_int": lambda F, m: F.interpolate(m.zeros(1, 1, 4, 4, dtype=m.int64), size=2, mode="bicubic"),
    "area_int": lambda F, m: F.interpolate(m.zeros(1, 1, 4, 4, dtype=m.int64), size=2, mode="area"),
    "nearest_exact_int": lambda F, m: F.interpolate(m.zeros(1, 1, 4, dtype=m.int64), size=2, mode="nearest-exact"),
}


@pytest.mark.parametrize("name", sorted(REFUSED_INTERPOLATE))
def test_interpolate_refuses_as_torch(name):
    _raises_as_torch(REFUSED_INTERPOLATE[name])


# ---- grid_sample on 5-D input and with bicubic ------------------------------------------------------
GRID_CASES = [("bicubic", (2, 3, 5, 6), (2, 4, 7, 2))] + \
    [(mode, (2, 2, 4, 5, 6), (2, 3, 4, 5, 3)) for mode in ("bilinear", "nearest")]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode,xshape,gshape", GRID_CASES, ids=[c[0] + "_%dd" % len(c[1]) for c in GRID_CASES])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_5d_and_bicubic_match_torch(device, mode, xshape, gshape, padding_mode, align_corners):
    """Grid points inside and outside [-1, 1] (every padding mode is exercised); values and
    gradients to the input and the grid. float64: the gradient to the grid jumps where a point
    lands on a pixel, and random float64 points stay well away from that."""
    rng = np.random.default_rng(14)
    a, gr = rng.standard_normal(xshape), rng.uniform(-1.3, 1.3, size=gshape)
    x, tx = ff.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)
    g, tg = ff.tensor(gr, device=device, requires_grad=True), torch.tensor(gr, requires_grad=True)
    kw = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    y, ty = F.grid_sample(x, g, **kw), TF.grid_sample(tx, tg, **kw)
    close(y, ty)
    _backward_both(y, ty, rng, device)
    close(x.grad, tx.grad)
    close(g.grad, tg.grad)  # nearest: zeros, as torch's (a gradient, not None)


def test_grid_sample_bicubic_float32_matches_torch():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((1, 2, 6, 5)).astype(np.float32)
    gr = rng.uniform(-1.1, 1.1, (1, 3, 4, 2)).astype(np.float32)
    y = F.grid_sample(ff.tensor(a), ff.tensor(gr), mode="bicubic", padding_mode="reflection", align_corners=False)
    close(y, TF.grid_sample(torch.tensor(a), torch.tensor(gr), mode="bicubic", padding_mode="reflection",
                            align_corners=False))
    assert y.dtype == ff.float32


REFUSED_GRID_SAMPLE = {
    "bicubic_5d": lambda F, m: F.grid_sample(m.zeros(1, 1, 2, 2, 2), m.zeros(1, 1, 1, 1, 3), mode="bicubic",
                                             align_corners=False),
    "ranks_differ": lambda F, m: F.grid_sample(m.zeros(1, 1, 2, 2, 2), m.zeros(1, 1, 1, 2), align_corners=False),
    "mode_unknown": lambda F, m: F.grid_sample(m.zeros(1, 1, 2, 2), m.zeros(1, 1, 1, 2), mode="area",
                                               align_corners=False),
    "padding_unknown": lambda F, m: F.grid_sample(m.zeros(1, 1, 2, 2, 2), m.zeros(1, 1, 1, 1, 3),
                                                  padding_mode="wrap", align_corners=False),
}


@pytest.mark.parametrize("name", sorted(REFUSED_GRID_SAMPLE))
def test_grid_sample_refuses_as_torch(name):
    got = _raises_as_torch(REFUSED_GRID_SAMPLE[name])
    assert "grid_sample" in str(got.value)


# ---- affine_grid for 3-D sizes ----------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_3d_then_grid_sample_match_torch(device, align_corners):
    """affine_grid [N, D, H, W, 3] and trilinear sampling on it: values, gradients to the
    input and to theta. theta is perturbed so that no sample lands exactly on a pixel."""
    rng = np.random.default_rng(3)
    th0 = np.array([[[1.1, 0.2, -0.1, 0.1], [-0.2, 0.9, 0.3, -0.2], [0.1, -0.3, 1.2, 0.05]]] * 2)
    th0 += rng.uniform(-0.05, 0.05, size=th0.shape)
    a = rng.standard_normal((2, 2, 3, 4, 5))
    th, tth = ff.tensor(th0, device=device, requires_grad=True), torch.tensor(th0, requires_grad=True)
    x, tx = ff.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)
    size = [2, 2, 4, 3, 6]
    grid, tgrid = F.affine_grid(th, size, align_corners=align_corners), TF.affine_grid(tth, size,
                                                                                       align_corners=align_corners)
    close(grid, tgrid)
    y = F.grid_sample(x, grid, padding_mode="border", align_corners=align_corners)
    ty = TF.grid_sample(tx, tgrid, padding_mode="border", align_corners=align_corners)
    close(y, ty)
    _backward_both(y, ty, rng, device)
    close(x.grad, tx.grad)
    close(th.grad, tth.grad)


def test_affine_grid_3d_unit_sizes_match_torch():
    """A size of 1 along an axis puts its coordinate at 0 (PyTorch's rule since 1.3)."""
    th0 = np.random.default_rng(2).standard_normal((1, 3, 4)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns about unit sizes with align_corners
        for ac in (False, True):
            close(F.affine_grid(ff.tensor(th0), [1, 1, 1, 3, 1], align_corners=ac),
                  TF.affine_grid(torch.tensor(th0), [1, 1, 1, 3, 1], align_corners=ac))


REFUSED_AFFINE_GRID = {
    "theta_2d_for_5d_size": lambda F, m: F.affine_grid(m.zeros(1, 2, 3), [1, 1, 2, 2, 2], align_corners=False),
    "theta_3d_for_4d_size": lambda F, m: F.affine_grid(m.zeros(1, 3, 4), [1, 1, 2, 2], align_corners=False),
    "size_3d": lambda F, m: F.affine_grid(m.zeros(1, 2, 3), [1, 1, 2], align_corners=False),
    "theta_int": lambda F, m: F.affine_grid(m.zeros(1, 3, 4, dtype=m.int64), [1, 1, 2, 2, 2], align_corners=False),
    "size_0": lambda F, m: F.affine_grid(m.zeros(1, 3, 4), [1, 1, 0, 2, 2], align_corners=False),
    "batch_differs": lambda F, m: F.affine_grid(m.zeros(2, 3, 4), [3, 1, 2, 2, 2], align_corners=False),
}


@pytest.mark.parametrize("name", sorted(REFUSED_AFFINE_GRID))
def test_affine_grid_refuses_as_torch(name):
    got = _raises_as_torch(REFUSED_AFFINE_GRID[name])
    assert "affine_grid" in str(got.value)
