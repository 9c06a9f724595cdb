"""Kernel bugs of issue 29, item by item, against PyTorch: conv2d on views whose strides
have gaps (cpu_blas's oneDNN path). As in test_semantics_torch.py, every test checks
FusionFlow against written expected values and, when PyTorch is installed (CI:
FF_REQUIRE_TORCH=1 makes its absence an error), checks that PyTorch gives those same
values, so the written values are PyTorch's."""
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
