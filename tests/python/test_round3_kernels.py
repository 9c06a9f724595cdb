"""Kernel bugs of issue 29, item by item, against PyTorch: conv2d on views whose strides
have gaps (cpu_blas's oneDNN path), the reference DFT on non-finite inputs (backends/cpu),
and the reference SVD on rank-deficient matrices (backends/cpu). As in
test_semantics_torch.py, every test checks FusionFlow against written expected values
and, when PyTorch is installed (CI: FF_REQUIRE_TORCH=1 makes its absence an error),
checks that PyTorch gives those same values, so the written values are PyTorch's."""
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

from conftest import DEVICES  # cpu, and cpu_blas / opencl when they were built

nan, inf = float("nan"), float("inf")
A = slice(None)
FFT_DEVICES = [d for d in DEVICES if d != "opencl"]  # opencl has no fft entry
LINALG = [d for d in DEVICES if d in ("cpu_ref", "cpu_blas")]  # the backends with the linalg entry


def same(got, want, rtol=1e-6, atol=0.0):
    """got (ff or torch tensor, or array) equals want (list), NaN matching NaN."""
    if hasattr(got, "detach"):
        got = got.detach().numpy() if torch is not None and isinstance(got, torch.Tensor) else got.numpy()
    g, w = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert g.shape == w.shape, (g.shape, w.shape)
    assert np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True), "got %r, want %r" % (g.tolist(), w.tolist())


# ---- 1. conv2d on views oneDNN cannot describe as they are ----------------------------------
# x [1, 2, 5, 4] and w [2, 4, 5, 4] of multiples of 1/4 (every sum exact). Rows 1 and 4 of
# x (x[:, :, 1:5:3]) lie 3 rows apart while a channel is 5 rows long: channel 0's rows
# reach past the start of channel 1, so no dense layout has these strides, and cpu_blas
# handed them to oneDNN as if one did ("oneDNN failed (status 2)", or a crash). The
# stepped weights are the same; with size-1 dims around them (the last case) oneDNN took
# the strides and silently read other values. Each case: x slices, w slices, stride,
# padding, y, and the gradients of sum(y * g) (g = arange % 3 - 1) to the two views
# (conv2d_backward_input reads w's view, conv2d_backward_weight x's).
CONV_CASES = [
    ("x_rows_1_5_3", (A, A, slice(1, 5, 3)), (A, slice(0, 2), slice(0, 2), slice(0, 3)), 1, 0,
     [[[[2.125, 2.25]], [[-1.25, -1.25]]]],
     [[[[0.75, 0.75, 0.5, -0.5], [-1.0, -0.25, -0.5, 0.25]], [[-1.0, 1.0, 0.75, -0.25], [0.75, -1.75, -0.25, 0.5]]]],
     [[[[-1.0, 1.0, 0.5], [0.5, 0.0, -0.5]], [[-1.0, 1.0, 0.5], [0.5, 0.0, -0.5]]],
      [[[2.0, -0.5, -0.5], [-0.5, -0.5, -0.5]], [[2.0, -0.5, -0.5], [-0.5, -0.5, -0.5]]]]),
    ("x_rows_1_5_3_stride2_pad1", (A, A, slice(1, 5, 3)), (A, slice(0, 2), slice(0, 2), slice(0, 3)), 2, 1,
     [[[[-0.5, -0.625], [0.625, -1.375]], [[-0.5, 0.625], [-0.125, 0.875]]]],
     [[[[-0.5, -1.5, -0.5, -0.25], [-0.75, 0.0, 0.5, 0.25]], [[-0.25, 0.25, -0.75, -0.5], [-0.75, -1.5, 0.75, 0.5]]]],
     [[[[0.0, -1.0, -1.0], [0.0, -1.0, 1.0]], [[0.0, -1.0, -1.0], [0.0, -1.0, 1.0]]],
      [[[0.0, 0.5, 0.0], [-1.0, -0.5, 0.0]], [[0.0, 0.5, 0.0], [-1.0, -0.5, 0.0]]]]),
    ("w_rows_step2_kw1", (A,), (A, slice(0, 2), slice(None, None, 2), slice(1, 2)), 1, 0,
     [[[[0.375, 1.125, 0.625, -0.5], [-1.625, 0.375, 1.125, 0.625], [-0.5, -1.625, 0.375, 1.125]],
       [[1.125, 0.375, -1.625, -0.5], [0.625, 1.125, 0.375, -1.625], [-0.5, 0.625, 1.125, 0.375]]]],
     [[[[0.25, 0.0, -0.25, 0.25], [-0.25, -0.25, 0.5, -0.25], [-1.0, 0.5, 0.5, -1.0], [0.25, 0.5, -0.75, 0.25],
        [0.75, -0.75, 0.0, 0.75]],
       [[0.75, 0.0, -0.75, 0.75], [0.25, -0.75, 0.5, 0.25], [-1.0, 0.5, 0.5, -1.0], [-0.25, 0.5, -0.25, -0.25],
        [0.25, -0.25, 0.0, 0.25]]]],
     [[[[-1.0], [-1.0], [-1.0]], [[-1.0], [-1.0], [-1.0]]], [[[-1.0], [-1.0], [-1.0]], [[-1.0], [-1.0], [-1.0]]]]),
    ("w_channels_and_rows_step2_pad1", (A,), (A, slice(1, 3), slice(None, None, 2), slice(0, 3)), 1, 1,
     [[[[1.125, 0.25, 1.25, 0.0], [-0.5, -0.75, -1.0, 1.625], [-0.25, 0.75, -0.75, -0.5], [-1.25, 1.0, 0.75, -1.375],
        [0.0, -1.625, 0.5, 0.0]],
       [[-1.125, -1.0, -0.125, 0.0], [1.25, -0.375, -0.5, -0.625], [1.0, 0.375, -0.375, 0.0],
        [0.125, 0.5, 0.375, 1.25], [0.0, 0.625, 0.0, -0.375]]]],
     [[[[1.5, -2.25, 0.25, 1.25], [-2.25, 0.0, 1.75, 0.25], [0.25, 1.75, -1.75, -0.5], [2.0, -1.75, 0.0, 0.25],
        [-0.5, -0.5, 0.25, 1.25]],
       [[1.75, 1.25, -3.25, 1.25], [1.25, -3.5, 1.75, 2.0], [-3.25, 1.75, 1.75, -2.25], [2.0, 1.75, -3.5, 0.25],
        [1.5, -2.25, 0.25, 1.25]]]],
     [[[[-0.5, 0.0, -0.5], [-1.0, 0.5, 0.5], [-0.5, -1.0, 1.0]],
       [[-0.5, 0.0, -0.5], [-1.0, 0.5, 0.5], [-0.5, -1.0, 1.0]]],
      [[[-0.5, 1.0, 1.0], [0.5, -1.0, 0.5], [1.0, 1.0, -0.5]],
       [[-0.5, 1.0, 1.0], [0.5, -1.0, 0.5], [1.0, 1.0, -0.5]]]]),
    ("w_size1_dims_stride2", (A, A, slice(0, 4), slice(1, 2)),
     (slice(1, 2), slice(2, 4), slice(None, None, 2), slice(3, 4)), 2, 0,
     [[[[0.375]]]],
     [[[[-0.25], [-0.5], [-0.75], [0.0]], [[0.0], [-0.25], [-0.5], [0.0]]]],
     [[[[0.5], [1.0], [-1.0]], [[0.5], [1.0], [-1.0]]]]),
]


def _conv_data():
    x = ((np.arange(40) % 5 - 2) * 0.5).reshape(1, 2, 5, 4).astype(np.float32)
    w = ((np.arange(160) % 7 - 3) * 0.25).reshape(2, 4, 5, 4).astype(np.float32)
    return x, w


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", CONV_CASES, ids=[c[0] for c in CONV_CASES])
def test_conv2d_gapped_views(device, case):
    _, xs, ws, stride, pad, want_y, want_gx, want_gw = case
    x, w = _conv_data()
    xv, wv = ff.tensor(x, device=device)[xs], ff.tensor(w, device=device)[ws]  # views, not copies
    xv.requires_grad_(True), wv.requires_grad_(True)
    y = ff.nn.functional.conv2d(xv, wv, stride=stride, padding=pad)
    same(y, want_y)
    g = (np.arange(y.numel()) % 3 - 1).reshape(tuple(y.shape)).astype(np.float32)
    (y * ff.tensor(g, device=device)).sum().backward()
    same(xv.grad, want_gx)
    same(wv.grad, want_gw)
    if torch is not None:
        tx, tw = torch.tensor(x)[xs].requires_grad_(True), torch.tensor(w)[ws].requires_grad_(True)
        ty = torch.nn.functional.conv2d(tx, tw, stride=stride, padding=pad)
        same(ty, want_y)
        (ty * torch.tensor(g)).sum().backward()
        same(tx.grad, want_gx)
        same(tw.grad, want_gw)


# ---- 2. the reference DFT on non-finite inputs ----------------------------------------------
# FFTs multiply by the twiddles 1, -1 and +-i as adds, subtracts and swaps, so an Inf that
# meets only those stays an Inf with the other part finite; backends/cpu multiplied in
# full, (inf + 0i)(1 - 0i) = inf + (inf * -0 = NaN) i. The cases are those where the
# value meets only such twiddles (t = 0, or n = 4 and 8 at t = 1 for the bins that are
# quarter turns), on which PyTorch (pocketfft) and cpu_blas (FFTW) agree; with several
# non-finite values in general positions FFT algorithms disagree among themselves.
FFT_CASES = [  # kind, input (complex ones as (re, im) pairs), n, expected
    ("fft", [[inf, 0], [0, 0], [0, 0]], None, [[inf, 0.0], [inf, 0.0], [inf, 0.0]]),
    ("fft", [[nan, 0], [1, 0], [2, -1], [0, 0], [-1, 0.5]], None,
     [[nan, -0.5], [nan, -2.114158045612832], [nan, 0.013017036442939611], [nan, -1.440068019567782],
      [nan, 4.041209028737674]]),
    ("fft", [[0, 0], [inf, 0], [0, 0], [1, 0]], None, [[inf, 0.0], [0.0, -inf], [-inf, 0.0], [0.0, inf]]),
    ("fft", [[0, inf], [1, 0], [0, 0]], None, [[1.0, inf], [-0.5, inf], [-0.5, inf]]),
    ("fft", [[-inf, 1], [1, 1], [0, 2], [3, 0], [0, 0], [1, -1], [2, 2]], None,
     [[-inf, 5.0], [-inf, 3.1030566489170655], [-inf, 2.3180069506969923], [-inf, -4.352148281744467],
      [-inf, 2.1933146780474186], [-inf, -3.4550702902397172], [-inf, 2.192840294322707]]),
    ("fft", [[0, 0], [inf, 0], [0, 0], [0, 0], [0, 0], [0, 0], [0, 0], [0, 0]], None,
     [[inf, 0.0], [inf, -inf], [0.0, -inf], [-inf, -inf], [-inf, 0.0], [-inf, inf], [0.0, inf], [inf, inf]]),
    ("ifft", [[-inf, 0], [1, 1], [0, 2]], None,
     [[-inf, 1.0], [-inf, -0.21132486540518713], [-inf, -0.7886751345948128]]),
    ("rfft", [inf, 1, 0, 2, -1], None, [[inf, 0.0], [inf, -0.7265425280053608], [inf, -3.077683537175253]]),
    ("rfft", [nan, 1, 0, 2, -1, 3], None,
     [[nan, 0.0], [nan, 0.8660254037844386], [nan, 2.598076211353316], [nan, 0.0]]),
    ("rfft", [0, inf, 0, 1], None, [[inf, 0.0], [0.0, -inf], [-inf, 0.0]]),
    ("irfft", [[1, 0], [inf, 0], [0, 0]], None, [inf, 0.25, -inf, 0.25]),
    ("irfft", [[1, 0], [0, inf], [0, 0]], None, [0.25, -inf, 0.25, inf]),
    ("irfft", [[inf, 0], [1, 0], [0, 1]], None, [inf, inf, inf, inf]),
]


def _torch_fft(kind, data, n):
    t = torch.tensor(data, dtype=torch.float64)
    if kind == "rfft":
        return torch.view_as_real(torch.fft.rfft(t, n=n))
    out = getattr(torch.fft, kind)(torch.view_as_complex(t), n=n)
    return out if kind == "irfft" else torch.view_as_real(out)


@pytest.mark.parametrize("device", FFT_DEVICES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fft_non_finite_inputs(device, dtype):
    for kind, data, n, want in FFT_CASES:
        x = ff.tensor(data, dtype=dtype, device=device)
        got = getattr(ff.fft, kind)(x if kind == "rfft" else ff.view_as_complex(x), n=n)
        same(got if kind == "irfft" else ff.view_as_real(got), want, rtol=1e-5, atol=1e-6)
        if torch is not None:
            same(_torch_fft(kind, data, n), want, rtol=1e-12, atol=1e-12)


# ---- 11. the reference SVD on rank-deficient matrices ---------------------------------------
# A row repeated (or a multiple of another) leaves a zero singular value. In backends/cpu's
# one-sided Jacobi the null column is rounding noise parallel to a live column: each
# rotation cancelled it to a noise eps times smaller and parallel again, so it shrank
# toward underflow without ever counting as orthogonal, and the SVD "did not converge".
def _svd_checks(a, u, s, vh, tol):
    """A = U S Vh, U and Vh with orthonormal columns / rows, S descending and >= 0."""
    a, u, s, vh = (np.asarray(t.numpy(), dtype=np.float64) for t in (a, u, s, vh))
    k = s.shape[-1]
    assert np.all(s >= 0) and np.all(np.diff(s, axis=-1) <= tol), s
    same(u[..., :k] @ (s[..., :, None] * vh[..., :k, :]), a, atol=tol)
    eye_u, eye_v = np.eye(u.shape[-1]), np.eye(vh.shape[-2])
    same(np.swapaxes(u, -1, -2) @ u, np.broadcast_to(eye_u, u.shape[:-2] + eye_u.shape), atol=tol)
    same(vh @ np.swapaxes(vh, -1, -2), np.broadcast_to(eye_v, vh.shape[:-2] + eye_v.shape), atol=tol)


@pytest.mark.parametrize("device", LINALG)
@pytest.mark.parametrize("dtype,tol", [("float64", 1e-12), ("float32", 1e-5)])
@pytest.mark.parametrize("full", [False, True])
def test_svd_repeated_row(device, dtype, tol, full):
    rows = [[1.0, 2, 3], [2, 4, 6], [0, 1, 0]]  # row 1 = 2 row 0: rank 2
    want = [8.383832511065442, 0.8434171129412104, 0.0]
    zero_row = rows + [[0, 0, 0]]  # zero rows and columns, and reordered rows, keep S
    for data in (rows, np.transpose(rows).tolist(), zero_row, np.transpose(zero_row).tolist(),
                 [[0, 0, 0]] + rows[::-1]):
        a = ff.tensor(data, dtype=dtype, device=device)
        u, s, vh = ff.linalg.svd(a, full_matrices=full)
        same(s, want, rtol=tol, atol=tol)
        _svd_checks(a, u, s, vh, tol)
        if torch is not None:
            same(torch.linalg.svdvals(torch.tensor(data, dtype=getattr(torch, dtype))), want, rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("device", LINALG)
def test_svd_random_rank_deficient(device):
    """Random m x n matrices (2 <= m, n <= 6) with one row a multiple (1, 2, -2.5) of
    another, the last three of each batch of 10 with a zero row too: S as PyTorch's, and the
    decomposition's invariants."""
    rng = np.random.default_rng(29)
    for m in range(2, 7):
        for n in range(2, 7):
            a = rng.standard_normal((10, m, n))
            for b in range(10):
                i, j = rng.choice(m, 2, replace=False)
                a[b, j] = a[b, i] * (1, 2, -2.5)[b % 3]
                if b >= 7 and m > 2:
                    a[b, rng.choice([r for r in range(m) if r not in (i, j)])] = 0
            fa = ff.tensor(a, device=device)
            for full in (False, True):
                u, s, vh = ff.linalg.svd(fa, full_matrices=full)
                _svd_checks(fa, u, s, vh, 1e-12)
            if torch is not None:
                same(s, torch.linalg.svdvals(torch.tensor(a)), atol=1e-12)
