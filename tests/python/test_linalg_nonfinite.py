"""NaN and inf into fusionflow.linalg against PyTorch 1.13, on every backend with the linalg
entry. svd, svdvals and lstsq (gelsd) refuse a non-finite A with a clear error where PyTorch
raises too (NaN), and also for inf, where PyTorch's svd returns NaN without a word; solve,
inv, det, cholesky and qr pass NaN through as PyTorch. NumPy is loaded first on purpose: its
xerbla turned LAPACK's complaint into "SystemError: ... returned a result with an exception
set" under the ctypes call; no LAPACK line may reach stderr either."""
import os

import numpy as np
import pytest

import fusionflow as ff
from fusionflow._lib import FusionFlowValueError
from conftest import DEVICES

torch = pytest.importorskip("torch") if not os.environ.get("FF_REQUIRE_TORCH") else __import__("torch")

LINALG = [d for d in DEVICES if d in ("cpu", "cpu_blas")]
NAN, INF = float("nan"), float("inf")


def batch(v, dtype):
    """Two 2 x 2 matrices, the second holding v at [1, 1]."""
    return np.array([[[4, 1], [1, 3]], [[1, 2], [3, v]]], dtype=dtype)


def both(data, device):
    return ff.tensor(data, device=device), torch.tensor(data)


def assert_quiet(capfd):
    out, err = capfd.readouterr()  # OpenBLAS's xerbla prints to stdout
    for text in (out, err):
        assert "illegal value" not in text and "LASCL" not in text, text


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("device", LINALG)
def test_svd_and_lstsq_refuse_nan_as_pytorch(device, dtype, capfd):
    A, tA = both(batch(NAN, dtype), device)
    B, tB = both(np.ones((2, 2, 1), dtype=dtype), device)
    calls = [
        ("svd", lambda: ff.linalg.svd(A), lambda: torch.linalg.svd(tA)),
        ("svd", lambda: ff.linalg.svdvals(A), lambda: torch.linalg.svdvals(tA)),
        ("svd", lambda: ff.svd(A), lambda: torch.svd(tA)),
        ("lstsq", lambda: ff.linalg.lstsq(A, B), lambda: torch.linalg.lstsq(tA, tB, driver="gelsd")),
    ]
    for _, _, theirs in calls:
        with pytest.raises(RuntimeError):
            theirs()  # PyTorch refuses it too (its gelsd with an internal assert)
    capfd.readouterr()  # PyTorch's own gelsd prints LAPACK's complaint; ours must not
    for name, ours, _ in calls:
        with pytest.raises(FusionFlowValueError) as e:
            ours()
        msg = str(e.value)
        assert "ff_" + name in msg and "contained non-finite values" in msg and "matrix 1 " in msg, msg
        assert "memory" not in msg, msg
    ff.linalg.svd(ff.tensor(batch(5, dtype), device=device))  # and the next call works
    assert_quiet(capfd)


@pytest.mark.parametrize("v", [INF, -INF])
@pytest.mark.parametrize("device", LINALG)
def test_svdvals_of_inf_raises_where_pytorch_returns_nan(device, v, capfd):
    A, tA = both(batch(v, "float64"), device)
    assert torch.isnan(torch.linalg.svdvals(tA)).any()  # PyTorch 1.13: NaN, silently
    with pytest.raises(FusionFlowValueError, match="contained non-finite values"):
        ff.linalg.svdvals(A)
    with pytest.raises(FusionFlowValueError, match="contained non-finite values"):
        ff.linalg.lstsq(A, ff.ones(2, 2, 1, dtype=ff.float64, device=device))
    assert_quiet(capfd)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("device", LINALG)
def test_other_ops_pass_nan_through_as_pytorch(device, dtype, capfd):
    A, tA = both(batch(NAN, dtype), device)
    B, tB = both(np.arange(4, dtype=dtype).reshape(2, 2, 1) + 1, device)
    spd, tspd = both(np.array([[4, 1], [1, NAN]], dtype=dtype), device)
    pairs = [
        (ff.linalg.solve(A, B), torch.linalg.solve(tA, tB)),
        (ff.linalg.inv(A), torch.linalg.inv(tA)),
        (ff.linalg.det(A), torch.linalg.det(tA)),
        (ff.linalg.qr(A).R, torch.linalg.qr(tA).R),
        (ff.linalg.cholesky(spd), torch.linalg.cholesky(tspd)),
    ]
    tol = 1e-5 if dtype == "float32" else 1e-12
    for ours, theirs in pairs:
        o, t = ours.numpy(), theirs.numpy()
        assert np.array_equal(np.isnan(o), np.isnan(t)), (o, t)
        assert np.allclose(o, t, rtol=tol, atol=tol, equal_nan=True), (o, t)
    # a finite A with a NaN in B: NaN in the solution, as PyTorch's gelsd
    F, tF = both(np.array([[1, 2], [3, 4], [5, 7]], dtype=dtype), device)
    Bn, tBn = both(np.array([[1], [NAN], [2]], dtype=dtype), device)
    x = ff.linalg.lstsq(F, Bn).solution.numpy()
    tx = torch.linalg.lstsq(tF, tBn, driver="gelsd").solution.numpy()
    assert np.isnan(x).all() and np.isnan(tx).all()
    assert_quiet(capfd)
