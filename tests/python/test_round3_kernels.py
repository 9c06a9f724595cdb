"""Kernel bugs of issue 29, item by item, against PyTorch: conv2d on views whose strides
have gaps (cpu_blas's oneDNN path) and the reference DFT on non-finite inputs
(backends/cpu). As in test_semantics_torch.py, every test checks FusionFlow against
written expected values and, when PyTorch is installed (CI: FF_REQUIRE_TORCH=1 makes its
absence an error), checks that PyTorch gives those same values, so the written values are
PyTorch's."""
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
        got = getattr(ff.fft, kind)(ff.tensor(data, dtype=dtype, device=device), n=n)
        same(got, want, rtol=1e-5, atol=1e-6)
        if torch is not None:
            same(_torch_fft(kind, data, n), want, rtol=1e-12, atol=1e-12)
