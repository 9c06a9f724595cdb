"""The resampling options the C ops (ops/interpolate.c, ops/grid_sample.c) do not offer,
composed from differentiable ops so that autograd gives every gradient, with PyTorch 1.13's
rules:

- interpolate's 'bicubic', 'nearest-exact' and 'area' modes and antialias=True: each output
  along an axis is a few weighted taps of the input (index_select, mul, add), axis by axis;
  the taps and weights are computed on the host from the sizes alone;
- grid_sample on 5-D input (trilinear 'bilinear' and 'nearest') and with 'bicubic' on 4-D:
  the corners are gathered from the flattened image and weighted by tensors of the grid;
- affine_grid for 3-D sizes [N, C, D, H, W]: a base grid times theta, as the 2-D C op.

functional.interpolate and pooling.grid_sample / affine_grid check their arguments, then
call here."""
import math

import numpy as np

from ..._dtype import int64
from ..._tensor import as_tensor

__all__ = []  # reached through F.interpolate, F.grid_sample and F.affine_grid only

CUBIC_A = -0.75     # the bicubic convolution's a, as PyTorch's upsample_bicubic2d and grid_sample
AA_CUBIC_A = -0.5   # the antialiasing cubic filter's a (PIL's, which PyTorch's antialias follows)


# ---- interpolate: one axis at a time, each output a weighted sum of a few input taps -------------
def _source_scale(n_in, n_out, align_corners, scale):
    """Input pixels per output pixel: scale (1 / scale_factor) when given, else n_in / n_out;
    with align_corners, the one that maps the corner samples onto each other."""
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return scale if scale is not None and scale > 0 else n_in / n_out


def _cubic_coefficients(t, a):
    """The four cubic-convolution weights of the taps at floor - 1 .. floor + 2 for the
    fraction t (an array, or a tensor for grid_sample's differentiable weights)."""
    def near(d):  # |d| <= 1
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d):  # 1 < |d| < 2
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _bicubic_taps(n_in, n_out, align_corners, scale):
    """Tap indices [4, n_out] (clamped into the axis, as PyTorch reads the border) and weights."""
    s = _source_scale(n_in, n_out, align_corners, scale)
    o = np.arange(n_out, dtype=np.float64)
    real = s * o if align_corners else s * (o + 0.5) - 0.5  # not clamped at 0: cubic reads outside
    base = np.minimum(np.floor(real), n_in - 1)
    t = np.clip(real - base, 0.0, 1.0)
    idx = np.clip(base.astype(np.int64)[None, :] + np.arange(-1, 3)[:, None], 0, n_in - 1)
    return idx, np.stack(_cubic_coefficients(t, CUBIC_A))


def _triangle(d):
    return np.maximum(0.0, 1.0 - np.abs(d))


def _aa_cubic(d):
    d = np.abs(d)
    a = AA_CUBIC_A
    return np.where(d < 1, ((a + 2) * d - (a + 3)) * d * d + 1,
                    np.where(d < 2, (((d - 5) * d + 8) * d - 4) * a, 0.0))


def _antialias_taps(n_in, n_out, align_corners, scale, filt, half_width):
    """Antialiased taps: when downsampling by s the filter is stretched s times (a wider
    support), so every input pixel under an output pixel contributes; weights sum to 1."""
    s = _source_scale(n_in, n_out, align_corners, scale)
    support = half_width * s if s >= 1.0 else float(half_width)
    inv = 1.0 / s if s >= 1.0 else 1.0
    rows = []
    for o in range(n_out):
        center = s * (o + 0.5)
        lo = max(int(center - support + 0.5), 0)  # int(): truncation, as PyTorch's cast
        hi = min(int(center + support + 0.5), n_in)
        j = np.arange(lo, max(hi, lo))
        w = filt((j - center + 0.5) * inv)
        total = w.sum()
        rows.append((j, w / total if total != 0 else w))
    k = max([len(j) for j, _ in rows] + [1])
    idx = np.zeros((k, n_out), np.int64)
    wts = np.zeros((k, n_out))
    for o, (j, w) in enumerate(rows):
        idx[:len(j), o], wts[:len(j), o] = j, w
        idx[len(j):, o] = j[-1] if len(j) else 0  # padding taps: weight 0, on an index already read
    return idx, wts


def _nearest_exact_taps(n_in, n_out, scale):
    """Index of the input pixel whose centre is nearest each output centre. PyTorch computes
    it in float32 (scale and product), so the ties on .5 land as there."""
    s = np.float32(scale if scale is not None and scale > 0 else np.float32(n_in) / np.float32(n_out))
    o = np.arange(n_out, dtype=np.float64)
    src = np.floor(((o + 0.5) * np.float64(s)).astype(np.float32)).astype(np.int64)
    return np.minimum(src, n_in - 1)[None, :], None


def _apply_taps(x, axis, idx, wts):
    """sum_k x.index_select(axis, idx[k]) * wts[k] (broadcast along axis); wts None: one tap,
    copied as it is."""
    dev = x.device
    out = None
    shape = [1] * x.ndim
    shape[axis] = idx.shape[1]
    for k in range(idx.shape[0]):
        tap = x.index_select(axis, as_tensor(np.ascontiguousarray(idx[k]), device=dev))
        if wts is not None:
            tap = tap * as_tensor(wts[k].reshape(shape), device=dev).to(x.dtype)
        out = tap if out is None else out + tap
    return out


def _axis_taps(mode, antialias, n_in, n_out, align_corners, scale):
    if mode == "nearest-exact":
        return _nearest_exact_taps(n_in, n_out, scale)
    if antialias:
        filt, half = (_triangle, 1) if mode == "bilinear" else (_aa_cubic, 2)
        return _antialias_taps(n_in, n_out, align_corners, scale, filt, half)
    return _bicubic_taps(n_in, n_out, align_corners, scale)


def resize(x, out, scales, mode, align_corners, antialias):
    """interpolate's bicubic, nearest-exact, area and antialiased (bilinear, bicubic) modes.
    out: the output spatial sizes; scales: 1 / scale_factor per axis, or None (from the sizes)."""
    ns = x.ndim - 2
    if antialias and not (mode in ("bilinear", "bicubic") and x.ndim == 4):
        raise ValueError("Anti-alias option is only supported for bilinear and bicubic modes")
    if mode == "bicubic" and x.ndim != 4:
        raise NotImplementedError("interpolate: bicubic needs 4-D input [N, C, H, W], got %d-D %s"
                                  % (x.ndim, tuple(x.shape)))
    if not 1 <= ns <= 3:
        raise NotImplementedError("interpolate: only 3-D, 4-D and 5-D input is supported for mode %r, got %d-D"
                                  % (mode, x.ndim))
    if any(v < 1 for v in out):
        raise RuntimeError("interpolate: output sizes must be > 0, got %s for input %s" % (list(out), tuple(x.shape)))
    if not x.dtype.is_floating_point:
        raise RuntimeError("interpolate: mode %r is not implemented for %s input" % (mode, x.dtype))
    if mode == "area":  # an adaptive average pool to the output size (PyTorch's definition)
        from . import pooling
        return getattr(pooling, "adaptive_avg_pool%dd" % ns)(x, list(out))
    y = x
    for k in range(ns):
        axis = 2 + k
        idx, wts = _axis_taps(mode, antialias, x.shape[axis], out[k], bool(align_corners),
                              scales[k] if scales else None)
        y = _apply_taps(y, axis, idx, wts)
    return y


# ---- grid_sample: 5-D, and bicubic on 4-D ---------------------------------------------------------
def _unnormalize(g, n, align_corners):
    """Pixel coordinate of the normalized coordinate g along an axis of n pixels, in
    PyTorch's order of operations (the gradient jumps at integers, so rounding counts)."""
    if align_corners:
        return (g + 1) / 2 * (n - 1)
    return ((g + 1) * n - 1) / 2


def _clip(c, n):
    """c clamped into [0, n - 1]; the gradient is 0 where it was clamped, and also at the
    ends (c <= 0 or c >= n - 1), as PyTorch's clip_coordinates_set_grad."""
    inside = (c > 0) & (c < n - 1)
    return c.where(inside, c.detach().clamp(0, n - 1))


def _reflect(c, n, align_corners):
    """c reflected off the image edges (the pixel corners, or centres with align_corners)
    until it lies inside, then clipped: PyTorch's reflect_coordinates."""
    lo, hi = (0.0, n - 1.0) if align_corners else (-0.5, n - 0.5)
    span = hi - lo
    if span <= 0:
        return _clip(c * 0, n)
    dist = (c - lo).abs()
    extra = dist.fmod(span)
    odd = (dist / span).floor().fmod(2) != 0
    return _clip((span + lo - extra).where(odd, extra + lo), n)


def _pad_coordinate(c, n, padding_mode, align_corners):
    if padding_mode == "border":
        return _clip(c, n)
    if padding_mode == "reflection":
        return _reflect(c, n, align_corners)
    return c


def _inside(c, n):
    """1 where the integer coordinate c lies in [0, n - 1], else 0 (c's dtype)."""
    return ((c >= 0) & (c <= n - 1)).to(c.dtype)


def _gather(xf, coords, sizes, weight):
    """xf [N, C, prod(sizes)] read at the integer pixel coords (one [N, P] per axis, x first,
    each clamped into the image), times weight [N, P]: [N, C, P]."""
    flat = None
    stride = 1
    for c, n in zip(coords, sizes):
        term = c.detach().clamp(0, n - 1) * stride
        flat = term if flat is None else flat + term
        stride *= n
    idx = flat.to(int64).unsqueeze(1).expand(xf.shape[0], xf.shape[1], flat.shape[1]).contiguous()
    return xf.gather(2, idx) * weight.unsqueeze(1)


def _sample_linear(xf, pix, sizes, zeros):
    """(Bi/tri)linear: the 2^d corners around each point, weighted by the opposite distances;
    with zeros padding a corner outside the image contributes nothing."""
    lows = [p.floor() for p in pix]
    fracs = [p - f for p, f in zip(pix, lows)]
    y = None
    for corner in range(1 << len(pix)):
        coords, weight = [], None
        for k, (f, t, n) in enumerate(zip(lows, fracs, sizes)):
            up = (corner >> k) & 1
            c, w = (f + 1, t) if up else (f, 1 - t)
            if zeros:
                w = w * _inside(c, n)
            coords.append(c)
            weight = w if weight is None else weight * w
        v = _gather(xf, coords, sizes, weight)
        y = v if y is None else y + v
    return y


def _sample_nearest(xf, pix, sizes):
    """The pixel nearest each point (half to even, as PyTorch's nearbyint); the output depends
    on the grid with a zero gradient (PyTorch gives zeros, not none)."""
    near = [p.round() for p in pix]
    weight = None
    for c, n in zip(near, sizes):
        w = _inside(c, n) + c * 0
        weight = w if weight is None else weight * w
    return _gather(xf, near, sizes, weight)


def _sample_bicubic(xf, pix, sizes, padding_mode, align_corners):
    """4 x 4 taps around each point, weighted by the cubic convolution of the fractions. The
    taps are mapped into the image by the padding mode (zeros: read as 0 outside); only the
    fractions carry the gradient to the grid, as in PyTorch."""
    (px, py), (w, h) = pix, sizes
    fx, fy = px.floor(), py.floor()
    cx, cy = _cubic_coefficients(px - fx, CUBIC_A), _cubic_coefficients(py - fy, CUBIC_A)
    fx, fy = fx.detach(), fy.detach()
    y = None
    for i in range(4):
        ty = _pad_coordinate(fy + (i - 1), h, padding_mode, align_corners)
        row = None
        for j in range(4):
            tx = _pad_coordinate(fx + (j - 1), w, padding_mode, align_corners)
            weight = cx[j] * _inside(tx, w) * _inside(ty, h)
            v = _gather(xf, [tx, ty], sizes, weight)
            row = v if row is None else row + v
        v = row * cy[i].unsqueeze(1)
        y = v if y is None else y + v
    return y


def grid_sample(x, grid, mode, padding_mode, align_corners):
    """x [N, C, (D,) H, W] sampled at grid [N, (Do,) Ho, Wo, 2 or 3] (x, y, z in [-1, 1])."""
    if x.ndim != grid.ndim or x.ndim not in (4, 5):
        raise RuntimeError("grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, "
                           "but got input with sizes %s and grid with sizes %s" % (list(x.shape), list(grid.shape)))
    nd = x.ndim - 2
    if grid.shape[0] != x.shape[0] or grid.shape[-1] != nd:
        raise RuntimeError("grid_sampler(): expected grid [N, *out, %d] with input's N = %d, got input %s and "
                           "grid %s" % (nd, x.shape[0], list(x.shape), list(grid.shape)))
    if mode == "bicubic" and nd != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if x.dtype != grid.dtype or not x.dtype.is_floating_point:
        raise RuntimeError("grid_sampler(): expected input and grid of one floating dtype, got %s and %s"
                           % (x.dtype, grid.dtype))
    if any(s < 1 for s in x.shape[2:]):
        raise RuntimeError("grid_sampler(): expected input to have non-empty spatial dimensions, got %s"
                           % (list(x.shape),))
    n, c = x.shape[0], x.shape[1]
    sizes = list(reversed(x.shape[2:]))  # grid's order: x runs along W, y along H, z along D
    out = list(grid.shape[1:-1])
    pts = math.prod(out)
    g = grid.reshape(n, pts, nd)
    pix = [_unnormalize(g.select(2, k), sizes[k], align_corners) for k in range(nd)]
    xf = x.reshape(n, c, math.prod(sizes))
    if mode == "bicubic":
        y = _sample_bicubic(xf, pix, sizes, padding_mode, align_corners)
    else:
        pix = [_pad_coordinate(p, s, padding_mode, align_corners) for p, s in zip(pix, sizes)]
        y = _sample_nearest(xf, pix, sizes) if mode == "nearest" else \
            _sample_linear(xf, pix, sizes, padding_mode == "zeros")
    return y.reshape(n, c, *out)


# ---- affine_grid for 3-D sizes ---------------------------------------------------------------------
def _linspace(n, align_corners):
    """PyTorch's base-grid coordinates: linspace(-1, 1, n) as its CPU kernel computes it (from
    the start in the first half, from the end in the second), times (n - 1) / n without
    align_corners; n = 1 gives 0."""
    if n == 1:
        return np.zeros(1)
    i = np.arange(n, dtype=np.float64)
    step = 2.0 / (n - 1)
    v = np.where(i < n // 2, -1.0 + step * i, 1.0 - step * (n - 1 - i))
    return v if align_corners else v * ((n - 1) / n)


def affine_grid_3d(theta, size, align_corners):
    """grid [N, D, H, W, 3] = base [D H W, 4] (x, y, z, 1) @ theta^T, theta [N, 3, 4]."""
    n, _, d, h, w = [int(e) for e in size]
    base = np.empty((d, h, w, 4))
    base[..., 0] = _linspace(w, align_corners)[None, None, :]
    base[..., 1] = _linspace(h, align_corners)[None, :, None]
    base[..., 2] = _linspace(d, align_corners)[:, None, None]
    base[..., 3] = 1.0
    b = as_tensor(base.reshape(d * h * w, 4), device=theta.device).to(theta.dtype)
    return (b @ theta.transpose(1, 2)).reshape(n, d, h, w, 3)
