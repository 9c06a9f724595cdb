"""PyTorch's semantics for the op results issue 29's third round found wrong: clamp's number
bounds (promoted before they are converted; NaN bounds), bincount's weights dtype, einsum's
diagonal dtype and nonzero(as_tuple=True) on 0-d tensors. As test_semantics_torch.py: every
test checks FusionFlow against written expected values and, when PyTorch is installed (set
FF_REQUIRE_TORCH=1 to make its absence an error), that PyTorch 1.13 gives those same values.
Each runs on the DEVICES of conftest."""
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

nan = float("nan")


def T(data, dtype=None, device="cpu_ref", requires_grad=False):
    return ff.tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


def TT(data, dtype=None, requires_grad=False):
    """The same tensor in PyTorch (dtype given by name)."""
    return torch.tensor(data, dtype=getattr(torch, dtype) if dtype else None, requires_grad=requires_grad)


def dtype_name(t):
    name = str(t.dtype).replace("torch.", "").replace("fusionflow.", "")
    return "bool" if name == "bool_" else name


def same(got, want, dtype):
    """got (an ff or torch tensor) has dtype and equals want (a list), NaN matching NaN."""
    assert dtype_name(got) == dtype, "dtype %s, want %s" % (dtype_name(got), dtype)
    g = got.detach().float().numpy() if isinstance(got, getattr(torch, "Tensor", ())) else got.numpy()
    g = np.asarray(g, dtype=np.float64)
    w = np.asarray(want, dtype=np.float64)
    assert g.shape == w.shape, (g.shape, w.shape)
    assert np.array_equal(g, w, equal_nan=True), "got %r, want %r" % (g.tolist(), w.tolist())


# ---- 7. clamp: number bounds join the promotion before they are converted ---------------------
CLAMP_NUMBERS = [  # (data, dtype, min, max, result dtype, values)
    ([1, 254, 0], "uint8", -1, 5.5, "float32", [1.0, 5.5, 0.0]),     # -1 is not 255: f32 first
    ([1, 254, 0], "uint8", -1.5, 300, "float32", [1.0, 254.0, 0.0]),  # 300 is not 44
    ([1, -5, 7], "int32", -1, 2.5, "float32", [1.0, -1.0, 2.5]),
    ([1, 254, 0], "uint8", None, 5.5, "float32", [1.0, 5.5, 0.0]),
    ([True, False], "bool", 0.5, None, "float32", [1.0, 0.5]),
    ([1, 254, 0], "uint8", -1, 5, "uint8", [5, 5, 5]),  # all ints: u8, where -1 is 255 (PyTorch)
    ([-3, 9], "int64", -2, 4, "int64", [-2, 4]),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("data,dtype,lo,hi,rdt,want", CLAMP_NUMBERS)
def test_clamp_number_bounds_promote_first(device, data, dtype, lo, hi, rdt, want):
    x = T(data, dtype, device)
    same(x.clamp(lo, hi), want, rdt)
    same(x.clamp(min=lo, max=hi), want, rdt)
    same(ff.clamp(x, lo, hi), want, rdt)
    same(x.clip(lo, hi), want, rdt)
    if torch is not None:
        same(TT(data, dtype).clamp(lo, hi), want, rdt)
        same(torch.clamp(TT(data, dtype), min=lo, max=hi), want, rdt)


@pytest.mark.parametrize("device", DEVICES)
def test_clamp_number_bounds_gradient(device):
    """The number-bound path (ff_clamp_number) differentiates as torch.clamp: 1 inside
    [min, max], bounds included, 0 outside; an int bound on a float tensor too."""
    xs, g = [-2.0, -1.0, 0.25, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0, 5.0]
    want = [0.0, 2.0, 3.0, 4.0, 0.0]
    for lo, hi in ((-1, 3.0), (-1.0, 3)):
        x = T(xs, "float32", device, requires_grad=True)
        x.clamp(lo, hi).backward(T(g, "float32", device))
        same(x.grad, want, "float32")
        if torch is not None:
            tx = TT(xs, "float32", requires_grad=True)
            tx.clamp(lo, hi).backward(TT(g, "float32"))
            same(tx.grad, want, "float32")


@pytest.mark.parametrize("device", DEVICES)
def test_clamp_number_beside_tensor_bound(device):
    """A number beside a tensor bound: PyTorch takes no such mix, so it is checked against a
    0-d tensor (weak like a number) of the number's kind."""
    x = T([1, 254, 0], "uint8", device)
    same(x.clamp(-1, T([5.5, 5.5, 5.5], "float32", device)), [1.0, 5.5, 0.0], "float32")
    same(x.clamp(T([0.5, 0.5, 0.5], "float32", device), 300), [1.0, 254.0, 0.5], "float32")
    if torch is not None:
        tx = TT([1, 254, 0], "uint8")
        same(tx.clamp(torch.tensor(-1), TT([5.5, 5.5, 5.5], "float32")), [1.0, 5.5, 0.0], "float32")
        same(tx.clamp(TT([0.5, 0.5, 0.5], "float32"), torch.tensor(300)), [1.0, 254.0, 0.5], "float32")


@pytest.mark.parametrize("device", DEVICES)
def test_clamp_int_bound_out_of_range_is_an_error(device):
    """PyTorch refuses an int bound its integer result dtype cannot hold (and takes -1 for
    uint8, as 255); it used to wrap silently (u8 clamp(max=300) clamped to 44)."""
    with pytest.raises(ff.FusionFlowError, match="300"):
        T([1, 254, 0], "uint8", device).clamp(max=300)
    with pytest.raises(ff.FusionFlowError, match="out of range"):
        T([1], "int32", device).clamp(-2 ** 31 - 1, 0)
    if torch is not None:
        with pytest.raises(RuntimeError, match="overflow"):
            TT([1, 254, 0], "uint8").clamp(max=300)
        with pytest.raises(RuntimeError, match="overflow"):
            TT([1], "int32").clamp(-2 ** 31 - 1, 0)


# ---- 8. clamp: NaN bounds ---------------------------------------------------------------------
CLAMP_NAN_NUMBERS = [  # (data, dtype, min, max, result dtype, values)
    ([1.0, -2.0], "float32", 0.0, nan, "float32", [nan, nan]),
    ([1.0, -2.0], "float32", nan, 0.0, "float32", [nan, nan]),
    ([1.0, -2.0], "float64", nan, nan, "float64", [nan, nan]),
    ([1, 2], "int64", nan, 3, "float32", [nan, nan]),
    ([1, 2], "uint8", 0, nan, "float32", [nan, nan]),
    # a NaN number as the only bound leaves x alone in PyTorch 1.13 (its clamp_min/clamp_max
    # kernels compare, and nothing compares true with NaN)
    ([1.0, -2.0], "float32", nan, None, "float32", [1.0, -2.0]),
    ([1.0, -2.0], "float32", None, nan, "float32", [1.0, -2.0]),
    ([1, 2], "int64", nan, None, "float32", [1.0, 2.0]),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("data,dtype,lo,hi,rdt,want", CLAMP_NAN_NUMBERS)
def test_clamp_nan_number_bounds(device, data, dtype, lo, hi, rdt, want):
    same(T(data, dtype, device).clamp(lo, hi), want, rdt)
    if torch is not None:
        same(TT(data, dtype).clamp(lo, hi), want, rdt)


@pytest.mark.parametrize("device", DEVICES)
def test_clamp_nan_tensor_bounds_propagate(device):
    """A NaN in a tensor bound makes its elements NaN (PyTorch's clamp, maximum, minimum),
    and no gradient reaches x or the bound there."""
    xs, los, his, g = [1.0, 2.0, 3.0], [nan, 0.0, 0.0], [5.0, nan, 2.0], [1.0, 10.0, 100.0]
    cases = [  # (lo, hi, y, x.grad, lo.grad, hi.grad)
        (los, his, [nan, nan, 2.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 100.0]),
        ([nan, 0.0, 4.0], None, [nan, 2.0, 4.0], [0.0, 10.0, 0.0], [0.0, 0.0, 100.0], None),
        (None, [nan, 5.0, 2.0], [nan, 2.0, 2.0], [0.0, 10.0, 0.0], None, [0.0, 0.0, 100.0]),
    ]
    for lo, hi, want_y, want_gx, want_glo, want_ghi in cases:
        x = T(xs, "float32", device, requires_grad=True)
        tl = None if lo is None else T(lo, "float32", device, requires_grad=True)
        th = None if hi is None else T(hi, "float32", device, requires_grad=True)
        y = x.clamp(tl, th)
        y.backward(T(g, "float32", device))
        same(y, want_y, "float32")
        same(x.grad, want_gx, "float32")
        for b, want in ((tl, want_glo), (th, want_ghi)):
            if b is not None:
                same(b.grad, want, "float32")
        if torch is not None:
            x = TT(xs, "float32", requires_grad=True)
            tl = None if lo is None else TT(lo, "float32", requires_grad=True)
            th = None if hi is None else TT(hi, "float32", requires_grad=True)
            y = x.clamp(tl, th)
            y.backward(TT(g, "float32"))
            same(y, want_y, "float32")
            same(x.grad, want_gx, "float32")
            for b, want in ((tl, want_glo), (th, want_ghi)):
                if b is not None:
                    same(b.grad, want, "float32")
    same(T([1.0, 2.0], "float32", device).clamp(T(nan, "float32", device)), [nan, nan], "float32")
    same(T([1, 2], "int64", device).clamp(T([0.0, nan], "float32", device)), [1.0, nan], "float32")
    if torch is not None:
        same(TT([1.0, 2.0], "float32").clamp(TT(nan, "float32")), [nan, nan], "float32")
        same(TT([1, 2], "int64").clamp(TT([0.0, nan], "float32")), [1.0, nan], "float32")


@pytest.mark.parametrize("device", DEVICES)
def test_clamp_nan_number_bounds_gradient(device):
    """Both number bounds with a NaN: NaN everywhere and no gradient; a NaN lone bound:
    x unchanged, and still no gradient (PyTorch 1.13's x >= NaN mask)."""
    for lo, hi, want in ((0.0, nan, [nan, nan]), (nan, None, [1.0, -2.0])):
        x = T([1.0, -2.0], "float32", device, requires_grad=True)
        y = x.clamp(lo, hi)
        y.sum().backward()
        same(y, want, "float32")
        same(x.grad, [0.0, 0.0], "float32")
        if torch is not None:
            tx = TT([1.0, -2.0], "float32", requires_grad=True)
            ty = tx.clamp(lo, hi)
            ty.sum().backward()
            same(ty, want, "float32")
            same(tx.grad, [0.0, 0.0], "float32")


# ---- 9. bincount: weights' dtype --------------------------------------------------------------
BINCOUNT_WEIGHTS = [  # (weights dtype, weights, result dtype): PyTorch sums float32 weights in
    ("float32", [0.5, 2.0, 3.0, 4.0], "float32"),  # float32 and converts every other to float64
    ("float64", [0.5, 2.0, 3.0, 4.0], "float64"),
    ("float16", [0.5, 2.0, 3.0, 4.0], "float64"),
    ("bfloat16", [0.5, 2.0, 3.0, 4.0], "float64"),
    ("int32", [1, 2, 3, 4], "float64"),
    ("int64", [1, 2, 3, 4], "float64"),
    ("uint8", [1, 2, 3, 4], "float64"),
    ("bool", [True, True, False, True], "float64"),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("wdt,w,rdt", BINCOUNT_WEIGHTS)
def test_bincount_weights_dtype(device, wdt, w, rdt):
    x = [0, 1, 1, 3]
    want = [float(w[0]), float(w[1]) + float(w[2]), 0.0, float(w[3])]
    same(ff.bincount(T(x, "int64", device), T(w, wdt, device)), want, rdt)
    same(T(x, "int32", device).bincount(T(w, wdt, device), minlength=5), want + [0.0], rdt)
    if torch is not None:
        same(torch.bincount(TT(x, "int64"), TT(w, wdt)), want, rdt)
        same(TT(x, "int32").bincount(TT(w, wdt), minlength=5), want + [0.0], rdt)


@pytest.mark.parametrize("device", DEVICES)
def test_bincount_f16_weights_summed_in_f64(device):
    """2048 + 1 + 1 in f16 is 2048 (1 is below f16's step there); in f64, 2050."""
    x, w = [0, 0, 0], [2048.0, 1.0, 1.0]
    same(ff.bincount(T(x, "int64", device), T(w, "float16", device)), [2050.0], "float64")
    if torch is not None:
        same(torch.bincount(TT(x, "int64"), TT(w, "float16")), [2050.0], "float64")


# ---- 10. einsum: a diagonal keeps the dtype ---------------------------------------------------
EINSUM_DTYPES = [  # (equation, dtype, result dtype, values): 2-d operand [[1, 0], [1, 1]], 3-d
    ("ii->i", "int32", "int32", [1, 1]),                    # [i][a][k] = 4 i + 2 a + k
    ("ii->i", "uint8", "uint8", [1, 1]),
    ("ii->i", "int64", "int64", [1, 1]),
    ("ii->i", "bool", "bool", [True, True]),
    ("iij->ij", "int32", "int32", [[0, 1], [6, 7]]),
    ("iij->ij", "uint8", "uint8", [[0, 1], [6, 7]]),
    ("ii", "int32", "int64", 2),  # a sum after the diagonal: sum's int64
    ("ii", "uint8", "int64", 2),
    ("ij->j", "int32", "int64", [2, 1]),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("eq,dtype,rdt,want", EINSUM_DTYPES)
def test_einsum_diagonal_keeps_dtype(device, eq, dtype, rdt, want):
    if eq.startswith("iij"):
        data = [[[4 * i + 2 * a + k for k in range(2)] for a in range(2)] for i in range(2)]
    else:
        data = [[1, 0], [1, 1]]
    same(ff.einsum(eq, T(data, dtype, device)), want, rdt)
    if torch is not None:
        same(torch.einsum(eq, TT(data, dtype)), want, rdt)


# ---- 12. nonzero: as_tuple takes a 0-d tensor as 1-d -------------------------------------------
NONZERO_0D = [  # (value, dtype, as_tuple index values, nonzero() shape)
    (3.0, "float32", [0], (1, 0)),
    (0.0, "float32", [], (0, 0)),
    (nan, "float32", [0], (1, 0)),
    (True, "bool", [0], (1, 0)),
    (False, "bool", [], (0, 0)),
    (7, "int64", [0], (1, 0)),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("value,dtype,want,shape", NONZERO_0D)
def test_nonzero_zero_dim(device, value, dtype, want, shape):
    x = T(value, dtype, device)
    for got in (ff.nonzero(x, as_tuple=True), x.nonzero(as_tuple=True)):
        assert isinstance(got, tuple) and len(got) == 1
        same(got[0], want, "int64")
    r = ff.nonzero(x)
    assert r.shape == shape and dtype_name(r) == "int64"
    if torch is not None:
        tx = TT(value, dtype)
        for got in (torch.nonzero(tx, as_tuple=True), tx.nonzero(as_tuple=True)):
            assert isinstance(got, tuple) and len(got) == 1
            same(got[0], want, "int64")
        assert tuple(torch.nonzero(tx).shape) == shape
