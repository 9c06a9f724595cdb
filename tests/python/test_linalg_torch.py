"""fusionflow.linalg and the torch.* linear-algebra forms (det, inverse, solve, lstsq,
cholesky, qr, svd, matrix_power) against PyTorch on random inputs: values, shapes,
dtypes and gradients, f32 and f64, batched and broadcast, on every CPU backend; a
backend without the linalg entry (opencl) must say so."""
import os

import numpy as np
import pytest

import fusionflow as ff
from conftest import DEVICES, make_close

torch = pytest.importorskip("torch") if not os.environ.get("FF_REQUIRE_TORCH") else __import__("torch")

close = make_close(1e-9)
LINALG = [d for d in DEVICES if d in ("cpu", "cpu_blas")]
TOL = {"float32": 2e-4, "float64": 1e-9}
RNG = np.random.default_rng(7)


def pair(data, device, dtype):
    """The same values as a fusionflow and a torch leaf requiring grad."""
    data = np.asarray(data, dtype=dtype)
    return (ff.tensor(data, device=device, requires_grad=True), torch.tensor(data, requires_grad=True))


def well(shape, boost=3.0):
    """Random matrices [..., n, n] + boost I: far from singular."""
    return RNG.normal(size=shape) + boost * np.eye(shape[-1])


def spd(shape):
    a = RNG.normal(size=shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def check_grads(fs, ts, y, ty, tol):
    w = RNG.normal(size=tuple(ty.shape))
    (y * ff.tensor(w.astype(str(ty.dtype).split(".")[-1]), device=y.device)).sum().backward()
    (ty * torch.tensor(w, dtype=ty.dtype)).sum().backward()
    for a, b in zip(fs, ts):
        close(a.grad, b.grad, tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("device", LINALG)
@pytest.mark.parametrize("name,make", [
    ("det", lambda: [well((2, 4, 4), 1.0)]),
    ("inverse", lambda: [well((3, 3))]),
    ("solve", lambda: [well((2, 4, 4)), RNG.normal(size=(2, 4, 3))]),
    ("solve", lambda: [well((2, 1, 3, 3)), RNG.normal(size=(4, 3, 2))]),  # batch dims broadcast
    ("solve", lambda: [well((2, 5, 5)), RNG.normal(size=(2, 5))]),  # a vector right-hand side
    ("solve", lambda: [well((5, 5)), RNG.normal(size=(5,))]),
    ("lstsq", lambda: [RNG.normal(size=(6, 3)), RNG.normal(size=(6, 2))]),
    ("lstsq", lambda: [RNG.normal(size=(2, 3, 5)), RNG.normal(size=(2, 3, 4))]),
    ("cholesky", lambda: [spd((2, 4, 4))]),
])
def test_values_and_gradients(name, make, device, dtype):
    fs, ts = zip(*(pair(x, device, dtype) for x in make()))
    if name == "lstsq":
        y, ty = ff.linalg.lstsq(*fs).solution, torch.linalg.lstsq(*ts).solution
    elif name == "solve":
        y, ty = ff.solve(*fs), torch.linalg.solve(*ts)
    else:
        y, ty = getattr(ff, name)(*fs), getattr(torch, name)(*ts)
    assert y.dtype is getattr(ff, dtype) and tuple(y.shape) == tuple(ty.shape)
    close(y, ty, TOL[dtype])
    if name == "cholesky":  # PyTorch's gradient reads both triangles: feed it a symmetric input
        fs2, ts2 = zip(*(pair(x, device, dtype) for x in [RNG.normal(size=(2, 4, 4))]))
        y = ff.cholesky(fs2[0] @ fs2[0].mT + 4 * ff.eye(4, dtype=getattr(ff, dtype), device=device))
        ty = torch.cholesky(ts2[0] @ ts2[0].mT + 4 * torch.eye(4, dtype=getattr(torch, dtype)))
        fs, ts = fs2, ts2
    check_grads(fs, ts, y, ty, TOL[dtype] * 10)


@pytest.mark.parametrize("device", LINALG)
@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (3, 5), (2, 6, 3), (2, 3, 6)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr(device, shape, mode):
    fa, ta = pair(RNG.normal(size=shape), device, "float64")
    (q, r), (tq, tr) = ff.linalg.qr(fa, mode=mode), torch.linalg.qr(ta, mode=mode)
    close(q, tq, 1e-10)  # both follow LAPACK's Householder signs
    close(r, tr, 1e-10)
    if mode == "complete" and shape[-2] > shape[-1]:
        with pytest.raises(ff.FusionFlowError, match="not differentiable"):
            q.sum().backward()
        return
    w1, w2 = RNG.normal(size=tuple(tq.shape)), RNG.normal(size=tuple(tr.shape))
    ((q * ff.tensor(w1, device=device)).sum() + (r * ff.tensor(w2, device=device)).sum()).backward()
    ((tq * torch.tensor(w1)).sum() + (tr * torch.tensor(w2)).sum()).backward()
    close(fa.grad, ta.grad, 1e-8)
    Q, R = ff.qr(fa)  # torch.qr(some=True)
    close(Q, torch.qr(ta)[0], 1e-10)
    assert ff.linalg.qr(fa, mode="r").Q.numel() == 0


@pytest.mark.parametrize("device", LINALG)
@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (3, 5), (2, 6, 4)])
@pytest.mark.parametrize("full", [False, True])
def test_svd(device, shape, full):
    fa, ta = pair(RNG.normal(size=shape), device, "float64")
    (u, s, vh), (tu, ts, tvh) = ff.linalg.svd(fa, full_matrices=full), torch.linalg.svd(ta, full_matrices=full)
    assert tuple(u.shape) == tuple(tu.shape) and tuple(vh.shape) == tuple(tvh.shape)
    close(s, ts, 1e-10)
    k = s.shape[-1]
    close(u[..., :k] @ (s.unsqueeze(-1) * vh[..., :k, :]), ta, 1e-10)
    close(u.mT @ u, torch.eye(u.shape[-1]).expand(*u.shape[:-2], -1, -1), 1e-10)
    close(vh @ vh.mT, torch.eye(vh.shape[-2]).expand(*vh.shape[:-2], -1, -1), 1e-10)
    # a loss of U, S and V that the free signs do not change
    fu, fv = u[..., :k], vh[..., :k, :]
    tu_, tv_ = tu[..., :k], tvh[..., :k, :]
    wu, wv = RNG.normal(size=tuple(tu_.shape)), RNG.normal(size=tuple(tv_.shape))

    def loss(uu, ss, vv, lib, mk):
        return (((uu * mk(wu)).sum(-2) * (vv * mk(wv)).sum(-1)).sum() + (ss ** 2 * ss).sum())

    loss(fu, s, fv, ff, lambda w: ff.tensor(w, device=device)).backward()
    loss(tu_, ts, tv_, torch, torch.tensor).backward()
    close(fa.grad, ta.grad, 1e-8)
    # torch.svd: U, S, V (not Vh); some=True is reduced
    U, S, V = ff.svd(ff.tensor(RNG.normal(size=shape), device=device))
    assert tuple(V.shape[-2:]) == (shape[-1], min(shape[-2:]))
    _, S0, V0 = ff.svd(ff.tensor(np.eye(3)[:, :2] * 2, device=device), compute_uv=False)
    assert S0.tolist() == [2.0, 2.0] and V0.abs().sum().item() == 0


@pytest.mark.parametrize("device", LINALG)
def test_svdvals_gradient_at_repeated_and_zero_singular_values(device):
    """The nuclear norm of a rank-deficient matrix with a repeated singular value: only S
    is used, so the gradient is U[:, :r] Vh[:r] (as PyTorch), finite."""
    a = np.diag([2.0, 2.0, 0.0])
    fa, ta = pair(a, device, "float64")
    ff.linalg.svdvals(fa).sum().backward()
    torch.linalg.svdvals(ta).sum().backward()
    assert np.isfinite(fa.grad.numpy()).all()
    close(fa.grad, ta.grad, 1e-12)


@pytest.mark.parametrize("device", LINALG)
def test_lstsq_outputs_and_rank_deficient(device):
    a = RNG.normal(size=(6, 3))
    b = RNG.normal(size=(6, 2))
    r = ff.linalg.lstsq(ff.tensor(a, device=device), ff.tensor(b, device=device))
    t = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver="gelsd")
    for name in ("solution", "residuals", "singular_values"):
        close(getattr(r, name), getattr(t, name), 1e-10)
    assert r.rank.item() == t.rank.item() == 3
    # rank 2 of 3: the minimum-norm solution, as gelsd's
    a[:, 2] = a[:, 0] + a[:, 1]
    r = ff.linalg.lstsq(ff.tensor(a, device=device), ff.tensor(b, device=device))
    t = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver="gelsd")
    close(r.solution, t.solution, 1e-9)
    assert r.rank.item() == t.rank.item() == 2 and r.residuals.numel() == 0


@pytest.mark.parametrize("device", LINALG)
def test_matrix_power_negative_and_higher_order(device):
    a = well((2, 3, 3))
    fa, ta = pair(a, device, "float64")
    y, ty = ff.matrix_power(fa, -3), torch.linalg.matrix_power(ta, -3)
    close(y, ty, 1e-10)
    check_grads([fa], [ta], y, ty, 1e-8)
    # second order through solve: d/dA of sum(grad of sum(inv(A)))
    fb, tb = pair(a[0], device, "float64")
    (g,) = ff.autograd.grad(ff.inverse(fb).sum(), [fb], create_graph=True)
    (tg,) = torch.autograd.grad(torch.inverse(tb).sum(), [tb], create_graph=True)
    close(g, tg, 1e-10)
    (g ** 2).sum().backward()
    (tg ** 2).sum().backward()
    close(fb.grad, tb.grad, 1e-8)


@pytest.mark.parametrize("device", LINALG)
def test_errors(device):
    sing = ff.tensor(np.ones((3, 3)), device=device)
    with pytest.raises(ff.FusionFlowError, match="singular"):
        ff.inverse(sing)
    with pytest.raises(ff.FusionFlowError, match="singular"):
        ff.solve(sing, ff.tensor(np.ones(3), device=device))
    assert ff.det(sing).item() == 0
    with pytest.raises(ff.FusionFlowError, match="positive-definite"):
        ff.cholesky(ff.tensor(-np.eye(3), device=device))
    with pytest.raises(ff.FusionFlowError, match="square"):
        ff.det(ff.tensor(np.ones((2, 3)), device=device))
    with pytest.raises(ff.FusionFlowError, match="floating point"):
        ff.inverse(ff.tensor(np.eye(2, dtype=np.int64), device=device))
    with pytest.raises(ff.FusionFlowError, match="one dtype"):
        ff.solve(ff.tensor(np.eye(2), device=device), ff.tensor(np.ones(2, dtype=np.float32), device=device))
    with pytest.raises(ff.FusionFlowError, match="incompatible shapes"):
        ff.solve(ff.tensor(np.eye(3), device=device), ff.tensor(np.ones((2, 3)), device=device))
    with pytest.raises(ff.FusionFlowError, match="at least 2 dims"):
        ff.linalg.qr(ff.tensor(np.ones(3), device=device))
    # empty matrices, as LAPACK: det of 0 x 0 is 1
    assert ff.det(ff.tensor(np.zeros((2, 0, 0)), device=device)).tolist() == [1.0, 1.0]


@pytest.mark.skipif("opencl" not in DEVICES, reason="the opencl backend does not load here")
def test_opencl_declines_clearly():
    a = ff.tensor(np.eye(3, dtype=np.float32), device="opencl")
    for f in (ff.inverse, ff.det, lambda x: ff.linalg.svd(x), lambda x: ff.linalg.qr(x)):
        with pytest.raises(ff.FusionFlowError, match="does not support"):
            f(a)


@pytest.mark.parametrize("device", LINALG)
def test_degenerate_shapes_and_ranks(device):
    """Empty matrices take PyTorch's shapes (Q and U the identity's columns); rank-deficient
    and zero matrices still give orthonormal U and V that reconstruct A."""
    for shape in [(0, 3), (3, 0), (0, 0), (2, 0, 3)]:
        a, t = ff.zeros(*shape, dtype=ff.float64, device=device), torch.zeros(*shape, dtype=torch.float64)
        for full in (True, False):
            got, want = ff.linalg.svd(a, full_matrices=full), torch.linalg.svd(t, full_matrices=full)
            assert [tuple(x.shape) for x in got] == [tuple(x.shape) for x in want]
        for mode in ("reduced", "complete"):
            (q, r), (tq, tr) = ff.linalg.qr(a, mode=mode), torch.linalg.qr(t, mode=mode)
            close(q, tq)
            assert tuple(r.shape) == tuple(tr.shape)
    for m in [np.ones((4, 3)), np.zeros((3, 3)), np.array([[1.0, 2.0], [2.0, 4.0]]), np.ones((2, 5)),
              np.diag([3.0, 3.0, 1e-20])]:
        for full in (True, False):
            u, s, vh = (x.numpy() for x in ff.linalg.svd(ff.tensor(m, device=device), full_matrices=full))
            k = s.shape[-1]
            close(u[:, :k] * s @ vh[:k], m, 1e-12)
            close(u.T @ u, np.eye(u.shape[1]), 1e-12)
            close(vh @ vh.T, np.eye(vh.shape[0]), 1e-12)
            close(s, np.linalg.svd(m, compute_uv=False), 1e-12)
