"""The PyTorch functions composed in fusionflow/_functions.py and nn/functional.py, against
PyTorch (CI installs it; FF_REQUIRE_TORCH=1 makes its absence an error) on random inputs:
values, dtypes, shapes, and gradients where PyTorch has them."""
import os

import numpy as np
import pytest

import fusionflow as ff
import fusionflow.nn.functional as F
from conftest import DEVICES, make_close

torch = pytest.importorskip("torch") if not os.environ.get("FF_REQUIRE_TORCH") else __import__("torch")
TF = torch.nn.functional


close = make_close(1e-5, equal_nan=True)


RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 4)).astype(np.float32)
P = RNG.uniform(0.2, 0.9, size=(3, 4)).astype(np.float32)


@pytest.mark.parametrize("name,data", [
    ("tan", X), ("sinh", X), ("cosh", X), ("asinh", X), ("acosh", 1 + P * 3), ("atanh", P * 0.9),
    ("log2", P), ("log10", P), ("exp2", X), ("trunc", X * 3), ("frac", X * 3), ("sgn", X),
    ("atan", X * 3), ("asin", P * 2 - 1), ("acos", P * 2 - 1), ("arctan", X), ("arcsin", P - 0.5),
    ("arccos", P - 0.5)])
def test_elementwise_values_and_gradients(name, data):
    x = ff.tensor(data, requires_grad=True)
    tx = torch.tensor(data, requires_grad=True)
    y, ty = getattr(ff, name)(x), getattr(torch, name)(tx)
    assert y.dtype is ff.float32
    close(y, ty, 2e-6)
    y.sum().backward()
    ty.sum().backward()
    close(x.grad, tx.grad, 1e-5)
    if name in ("trunc", "sgn"):  # integers stay integers (PyTorch has no frac for them)
        assert getattr(ff, name)(ff.tensor([1, 2])).dtype is ff.int64
    elif name != "frac":
        assert getattr(ff, name)(ff.tensor([1, 2])).dtype is ff.float32


def test_binary_and_predicates():
    a = np.array([1.0, np.nan, 3.0, np.nan], dtype=np.float32)
    b = np.array([2.0, 5.0, np.nan, np.nan], dtype=np.float32)
    for name in ("fmax", "fmin"):
        close(getattr(ff, name)(ff.tensor(a), ff.tensor(b)), getattr(torch, name)(torch.tensor(a), torch.tensor(b)))
    u = np.array([1.0, 1.0 + 1e-7, np.inf, np.nan], dtype=np.float32)
    v = np.array([1.0, 1.0, np.inf, np.nan], dtype=np.float32)
    for kw in ({}, {"equal_nan": True}, {"rtol": 0, "atol": 0}):
        assert ff.isclose(ff.tensor(u), ff.tensor(v), **kw).tolist() == \
            torch.isclose(torch.tensor(u), torch.tensor(v), **kw).tolist()
    assert ff.allclose(ff.tensor(X), ff.tensor(X + 1e-9)) and not ff.allclose(ff.tensor(X), ff.tensor(X + 1))
    assert ff.equal(ff.tensor(X), ff.tensor(X)) and not ff.equal(ff.tensor(X), ff.tensor(X[:2]))
    t1, t2 = RNG.normal(size=(3, 4)).astype(np.float32), P
    close(ff.addcmul(ff.tensor(X), ff.tensor(t1), ff.tensor(t2), value=0.5),
          torch.addcmul(torch.tensor(X), torch.tensor(t1), torch.tensor(t2), value=0.5))
    close(ff.addcdiv(ff.tensor(X), ff.tensor(t1), ff.tensor(t2), value=2),
          torch.addcdiv(torch.tensor(X), torch.tensor(t1), torch.tensor(t2), value=2))


def test_reductions_and_linear_algebra():
    z = np.array([[0, 1, 0], [2, 0, 3]], dtype=np.float32)
    assert ff.count_nonzero(ff.tensor(z)).item() == 3
    close(ff.count_nonzero(ff.tensor(z), dim=0), torch.count_nonzero(torch.tensor(z), dim=0))
    mn, mx = ff.aminmax(ff.tensor(X), dim=1)
    tmn, tmx = torch.aminmax(torch.tensor(X), dim=1)
    close(mn, tmn)
    close(mx, tmx)
    a, b = RNG.normal(size=(2, 3, 4)).astype(np.float32), RNG.normal(size=(2, 4, 5)).astype(np.float32)
    close(ff.bmm(ff.tensor(a), ff.tensor(b)), torch.bmm(torch.tensor(a), torch.tensor(b)))
    close(ff.inner(ff.tensor(X), ff.tensor(X)), torch.inner(torch.tensor(X), torch.tensor(X)))
    k1, k2 = RNG.normal(size=(2, 3)).astype(np.float32), RNG.normal(size=(3, 2)).astype(np.float32)
    close(ff.kron(ff.tensor(k1), ff.tensor(k2)), torch.kron(torch.tensor(k1), torch.tensor(k2)))
    b2 = RNG.normal(size=(4, 3, 5)).astype(np.float32)
    close(ff.tensordot(ff.tensor(a), ff.tensor(b2), dims=([1, 2], [1, 0])),
          torch.tensordot(torch.tensor(a), torch.tensor(b2), dims=([1, 2], [1, 0])), 1e-4)
    b3 = RNG.normal(size=(4, 5)).astype(np.float32)
    close(ff.tensordot(ff.tensor(a), ff.tensor(b3), dims=1),
          torch.tensordot(torch.tensor(a), torch.tensor(b3), dims=1), 1e-4)
    sq = RNG.normal(size=(4, 4)).astype(np.float32)
    close(ff.trace(ff.tensor(sq)), torch.trace(torch.tensor(sq)))
    for off in (0, 1, -2):
        close(ff.diagonal(ff.tensor(sq), off), torch.diagonal(torch.tensor(sq), off))
        close(ff.diag(ff.tensor(sq), off), torch.diag(torch.tensor(sq), off))
        close(ff.diag(ff.tensor(X[0]), off), torch.diag(torch.tensor(X[0]), off))
    c1, c2 = RNG.normal(size=(4, 3)).astype(np.float32), RNG.normal(size=(4, 3)).astype(np.float32)
    close(ff.cross(ff.tensor(c1), ff.tensor(c2), dim=1), torch.cross(torch.tensor(c1), torch.tensor(c2), dim=1))
    p1, p2 = RNG.normal(size=(5, 3)).astype(np.float32), RNG.normal(size=(4, 3)).astype(np.float32)
    close(ff.cdist(ff.tensor(p1), ff.tensor(p2)), torch.cdist(torch.tensor(p1), torch.tensor(p2)), 1e-4)
    close(ff.dist(ff.tensor(p1[0]), ff.tensor(p2[0])), torch.dist(torch.tensor(p1[0]), torch.tensor(p2[0])))


def test_shape_functions():
    a = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    close(ff.movedim(ff.tensor(a), 0, -1), torch.movedim(torch.tensor(a), 0, -1))
    close(ff.movedim(ff.tensor(a), (0, 1), (2, 0)), torch.movedim(torch.tensor(a), (0, 1), (2, 0)))
    close(ff.unflatten(ff.tensor(a), 2, (2, 2)), torch.tensor(a).unflatten(2, (2, 2)))
    for shifts, dims in ((1, None), (2, 1), ((1, -1), (0, 2))):
        close(ff.roll(ff.tensor(a), shifts, dims), torch.roll(torch.tensor(a), shifts, dims))
    idx = np.array([[0, 5], [23, 7]])
    close(ff.take(ff.tensor(a), ff.tensor(idx)), torch.take(torch.tensor(a), torch.tensor(idx)))
    close(ff.repeat_interleave(ff.tensor(a), 2, dim=1), torch.repeat_interleave(torch.tensor(a), 2, dim=1))
    close(ff.repeat_interleave(ff.tensor(X[0]), ff.tensor([1, 0, 2, 3])),
          torch.repeat_interleave(torch.tensor(X[0]), torch.tensor([1, 0, 2, 3])))
    for indexing in ("ij", "xy"):
        g = ff.meshgrid(ff.tensor([1.0, 2.0]), ff.tensor([3.0, 4.0, 5.0]), indexing=indexing)
        tg = torch.meshgrid(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0, 5.0]), indexing=indexing)
        for u, v in zip(g, tg):
            close(u, v)
    bt = ff.broadcast_tensors(ff.tensor(X[:, :1]), ff.tensor(X[0]))
    assert [tuple(t.shape) for t in bt] == [(3, 4), (3, 4)]
    close(ff.logspace(0, 2, 5), torch.logspace(0, 2, 5))


def test_losses_and_group_norm():
    p = ff.tensor(P, requires_grad=True)
    t = (RNG.random((3, 4)) > 0.5).astype(np.float32)
    tp = torch.tensor(P, requires_grad=True)
    for red in ("mean", "sum", "none"):
        close(F.binary_cross_entropy(p, ff.tensor(t), reduction=red),
              TF.binary_cross_entropy(tp, torch.tensor(t), reduction=red))
    lp = np.log(P / P.sum(1, keepdims=True))
    q = RNG.dirichlet(np.ones(4), size=3).astype(np.float32)
    q[0, 0] = 0.0
    for red in ("batchmean", "sum"):
        close(F.kl_div(ff.tensor(lp), ff.tensor(q), reduction=red), TF.kl_div(torch.tensor(lp), torch.tensor(q),
                                                                                reduction=red))
    for beta in (1.0, 0.5, 0.0):
        close(F.smooth_l1_loss(ff.tensor(X), ff.tensor(P), beta=beta),
              TF.smooth_l1_loss(torch.tensor(X), torch.tensor(P), beta=beta))
    xg = RNG.normal(size=(2, 6, 3, 3)).astype(np.float32)
    w, b = RNG.normal(size=6).astype(np.float32), RNG.normal(size=6).astype(np.float32)
    close(F.group_norm(ff.tensor(xg), 3, ff.tensor(w), ff.tensor(b)),
          TF.group_norm(torch.tensor(xg), 3, torch.tensor(w), torch.tensor(b)), 1e-4)
    F.binary_cross_entropy(p, ff.tensor(t)).backward()
    TF.binary_cross_entropy(tp, torch.tensor(t)).backward()
    close(p.grad, tp.grad)


def test_random_functions():
    r = ff.randint(3, 9, (1000,), seed=1)
    v = np.asarray(r.tolist())
    assert r.dtype is ff.int64 and v.min() >= 3 and v.max() <= 8 and len(set(v.tolist())) == 6
    bern = ff.bernoulli(ff.full((4000,), 0.25), seed=2).numpy()
    assert set(np.unique(bern).tolist()) <= {0.0, 1.0} and abs(bern.mean() - 0.25) < 0.03


def test_inverse_trig_edges_match_torch():
    """asin/acos at and past +-1 (NaN outside, infinite gradient at the ends), atan at +-inf,
    signed zeros, and integer inputs promoted to float, as PyTorch."""
    v = np.array([-1.5, -1.0, -0.0, 0.0, 1.0, 1.5, np.nan, np.inf, -np.inf], dtype=np.float32)
    for name in ("atan", "asin", "acos"):
        x, tx = ff.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
        y, ty = getattr(ff, name)(x), getattr(torch, name)(tx)
        got, want = y.detach().numpy(), ty.detach().numpy()
        # values to an ulp (we round the double result once; PyTorch's float kernels may be
        # an ulp off), NaN/inf placement and the sign of zeros exactly
        assert np.allclose(got, want, rtol=2e-7, atol=0, equal_nan=True), (name, got, want)
        assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(np.isinf(got), np.isinf(want))
        real = ~np.isnan(want)  # a NaN's sign bit means nothing
        assert np.array_equal(np.signbit(got[real]), np.signbit(want[real])), (name, got, want)
        y.sum().backward()
        ty.sum().backward()
        close(x.grad, tx.grad)
        ints = np.array([-1, 0, 1], dtype=np.int64)
        yi, tyi = getattr(ff, name)(ff.tensor(ints)), getattr(torch, name)(torch.tensor(ints))
        assert yi.dtype is ff.float32 and str(tyi.dtype) == "torch.float32"
        close(yi, tyi, 1e-7)


def test_atan2_matches_torch():
    """Quadrants, the axes with signed zeros and infinities, broadcasting, integer promotion,
    and both gradients (NaN at the origin, as PyTorch)."""
    e = np.array([-np.inf, -2.0, -0.0, 0.0, 3.0, np.inf, np.nan], dtype=np.float32)
    a, b = np.meshgrid(e, e, indexing="ij")
    got, want = ff.atan2(ff.tensor(a), ff.tensor(b)).numpy(), torch.atan2(torch.tensor(a), torch.tensor(b)).numpy()
    assert np.allclose(got, want, rtol=2e-7, atol=0, equal_nan=True), (got, want)
    real = ~np.isnan(want)
    assert np.array_equal(np.signbit(got[real]), np.signbit(want[real]))
    x = ff.tensor(X, requires_grad=True)
    y = ff.tensor(P[:1], requires_grad=True)  # broadcast over rows
    tx, ty = torch.tensor(X, requires_grad=True), torch.tensor(P[:1], requires_grad=True)
    r, tr = x.atan2(y), torch.atan2(tx, ty)
    close(r, tr, 2e-6)
    (r * r).sum().backward()
    (tr * tr).sum().backward()
    close(x.grad, tx.grad)
    close(y.grad, ty.grad)
    z = ff.zeros(1, requires_grad=True)
    ff.atan2(z, ff.zeros(1)).sum().backward()
    assert np.isnan(z.grad.numpy()).all()
    i = ff.atan2(ff.tensor(np.array([1, -1])), 2.0)
    assert i.dtype is ff.float32
    close(i, torch.atan2(torch.tensor([1, -1]), torch.tensor(2.0)), 1e-7)


def test_erfinv_matches_torch():
    """Values across (-1, 1) in f32 and f64 (PyTorch 1.13 is up to 7e-6 off in f32 and 6e-5 in
    f64's far tail, so the tolerance is theirs; our own accuracy is checked against a bisection
    oracle by the conformance suite), +-inf at +-1, NaN outside, -0 kept, and the gradient."""
    for dt, tol in ((np.float32, 1e-5), (np.float64, 1e-6)):
        v = np.concatenate([np.linspace(-0.999, 0.999, 801), [1 - 1e-7, -1 + 1e-7]]).astype(dt)
        close(ff.tensor(v).erfinv(), torch.erfinv(torch.tensor(v)), tol)
    e = np.array([-1.0, 1.0, -0.0, 0.0, 1.5, -2.0, np.nan], dtype=np.float32)
    got = ff.erfinv(ff.tensor(e)).numpy()
    assert np.isneginf(got[0]) and np.isposinf(got[1]) and np.all(np.isnan(got[4:]))
    assert got[2] == 0 and np.signbit(got[2]) and not np.signbit(got[3])
    x, tx = ff.tensor(P - 0.5, requires_grad=True), torch.tensor(P - 0.5, requires_grad=True)
    ff.erfinv(x).sum().backward()
    torch.erfinv(tx).sum().backward()
    close(x.grad, tx.grad)


def _gamma_inputs(rng):
    """Negative non-integers (the reflection; at least 0.05 from an integer, where PyTorch's
    own f32 cotangent goes wrong), around digamma's root and lgamma's at 1 and 2, tiny,
    and large (to 1e30)."""
    v = np.concatenate([rng.uniform(-20, 20, 200), rng.uniform(0, 3, 100), 10 ** rng.uniform(-6, 30, 50),
                        -rng.uniform(0, 1, 50) - rng.integers(0, 1000, 50)])
    return v[(v > 0) | (np.abs(v - np.round(v)) > 0.05)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["lgamma", "digamma"])
def test_lgamma_digamma_match_torch(device, name):
    """Values in f32 and f64 on each backend against PyTorch (f64: to 1e-12; f32: to 1e-6
    against PyTorch's f64 on the same f32 inputs, since ours computes in double and rounds
    once while PyTorch's f32 digamma is up to 3.5e-7 off, and 1e-5 against its f32), the
    edges exactly as PyTorch (+-0, negative integers, +-inf, NaN), integer and bool inputs
    promoted to f32, the function and method forms, and the gradient (digamma for lgamma,
    trigamma for digamma) against PyTorch's."""
    rng = np.random.default_rng(11)
    v = _gamma_inputs(rng)
    tf = getattr(torch, name)
    got64 = getattr(ff, name)(ff.tensor(v, device=device))
    assert got64.dtype is ff.float64
    close(got64, tf(torch.tensor(v)), 1e-12)
    v32 = v.astype(np.float32)
    got32 = getattr(ff.tensor(v32, device=device), name)()
    assert got32.dtype is ff.float32
    close(got32, tf(torch.tensor(v32).double()).float(), 1e-6)
    close(got32, tf(torch.tensor(v32)), 1e-5)

    edges = np.array([0.0, -0.0, -1.0, -2.0, -1e20, np.inf, -np.inf, np.nan, 1.0, 2.0, 0.5], dtype=np.float64)
    for dt in (np.float32, np.float64):
        e = edges.astype(dt)
        got, want = getattr(ff, name)(ff.tensor(e, device=device)).numpy(), tf(torch.tensor(e)).numpy()
        assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
        real = ~np.isnan(want)
        assert np.array_equal(np.isinf(got[real]), np.isinf(want[real])) and \
            np.array_equal(np.signbit(got[real]), np.signbit(want[real])), (got, want)
        assert np.allclose(got[real], want[real], rtol=1e-6, atol=1e-7), (got, want)

    for data in ([1, 2, 3, 7], [True, False]):
        i = getattr(ff, name)(ff.tensor(data, device=device))
        assert i.dtype is ff.float32
        close(i, tf(torch.tensor(data)), 1e-6)

    for dt, tol in ((np.float64, 1e-9), (np.float32, 1e-5)):
        vd = v.astype(dt)
        x = ff.tensor(vd, device=device).requires_grad_(True)
        tx = torch.tensor(vd).double().requires_grad_(True)  # PyTorch's f32 trigamma is up to 9e-4 off
        w = rng.normal(size=vd.shape)
        (getattr(ff, name)(x) * ff.tensor(w.astype(dt), device=device)).sum().backward()
        (tf(tx) * torch.tensor(w)).sum().backward()
        assert x.grad.dtype is x.dtype
        close(x.grad, tx.grad.to(torch.float32 if dt == np.float32 else torch.float64), tol)


@pytest.mark.parametrize("device", DEVICES)
def test_polygamma_and_higher_orders(device):
    """polygamma(n, x) for n = 0 and 1 (trigamma: PyTorch 1.13's is only about 5e-10
    accurate in f64, ours is checked to 1e-12 by the conformance suite) and clear errors
    for other n; lgamma's second derivative is trigamma; digamma's second derivative
    (polygamma(2, x)) is refused with a message that says so. Trigamma is +inf at its
    poles (PyTorch gives large finite values there, e.g. 6.6e32 at -1)."""
    v = _gamma_inputs(np.random.default_rng(12))
    t, tt = ff.tensor(v, device=device), torch.tensor(v)
    close(ff.polygamma(0, t), torch.polygamma(0, tt), 1e-12)
    close(ff.polygamma(1, t), torch.polygamma(1, tt), 1e-8)
    close(t.polygamma(1).float(), torch.polygamma(1, tt).float(), 1e-6)
    got = ff.polygamma(1, ff.tensor([0.0, -0.0, -1.0, -3.0, np.inf, -np.inf, np.nan], device=device)).numpy()
    assert np.isposinf(got[:4]).all() and got[4] == 0 and np.isnan(got[5:]).all()
    assert ff.polygamma(1, ff.tensor([1, 2], device=device)).dtype is ff.float32
    with pytest.raises(NotImplementedError, match="n = 0 .* and n = 1"):
        ff.polygamma(2, t)
    with pytest.raises(ValueError):
        t.polygamma(-1)

    x = ff.tensor(v[:40], device=device).requires_grad_(True)
    tx = torch.tensor(v[:40], requires_grad=True)
    g, = ff.autograd.grad(ff.lgamma(x).sum(), [x], create_graph=True)
    tg, = torch.autograd.grad(torch.lgamma(tx).sum(), [tx], create_graph=True)
    close(g, tg, 1e-12)
    g.sum().backward()
    tg.sum().backward()
    close(x.grad, tx.grad, 1e-8)
    g2, = ff.autograd.grad(ff.digamma(x).sum(), [x], create_graph=True)
    with pytest.raises(ff.FusionFlowError, match="second derivative of digamma"):
        g2.sum().backward()


@pytest.mark.parametrize("device", DEVICES)
def test_cumsum_cumprod_match_torch(device):
    """Along every axis (negative too) of a strided view, on each backend: values, dtype
    promotion (integers and bool -> int64, dtype= casts first), 0-d, empty, both gradients
    (cumprod's with zeros too: one, two, none per line), second order of both."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    t, tt = ff.tensor(a, device=device), torch.tensor(a)
    for dim in (0, 1, 2, -1):
        close(t.transpose(0, 2).cumsum(dim), tt.transpose(0, 2).cumsum(dim), 1e-5)
        close(ff.cumprod(t, dim), torch.cumprod(tt, dim), 1e-5)
    i = np.array([[1, -2, 3], [4, 5, -6]], dtype=np.int32)
    ci, ti = ff.tensor(i, device=device).cumsum(1), torch.tensor(i).cumsum(1)
    assert ci.dtype is ff.int64 and np.array_equal(ci.numpy(), ti.numpy())
    b = np.array([True, False, True, True])
    assert np.array_equal(ff.tensor(b, device=device).cumsum(0).numpy(), torch.tensor(b).cumsum(0).numpy())
    assert ff.tensor(i, device=device).cumprod(1, dtype=ff.float64).dtype is ff.float64
    assert ff.tensor(np.float32(2.5), device=device).cumsum(0).item() == 2.5
    assert ff.zeros(0, 3, device=device).cumsum(0).shape == (0, 3)
    x = ff.tensor(a + 3, requires_grad=True, device=device)
    tx = torch.tensor(a + 3, requires_grad=True)
    w = rng.standard_normal(a.shape).astype(np.float32)
    (x.cumsum(1) * ff.tensor(w, device=device)).sum().backward()
    (tx.cumsum(1) * torch.tensor(w)).sum().backward()
    close(x.grad, tx.grad, 1e-5)
    y = ff.tensor(a + 3, requires_grad=True, device=device)
    ty = torch.tensor(a + 3, requires_grad=True)
    (y.cumprod(2) * ff.tensor(w, device=device)).sum().backward()
    (ty.cumprod(2) * torch.tensor(w)).sum().backward()
    close(y.grad, ty.grad, 1e-4)
    z = ff.tensor(a[0], requires_grad=True, device=device)
    tz = torch.tensor(a[0], requires_grad=True)
    g, = ff.autograd.grad((z.cumsum(1) ** 3).sum(), [z], create_graph=True)
    tg, = torch.autograd.grad((tz.cumsum(1) ** 3).sum(), [tz], create_graph=True)
    close(g, tg, 1e-4)
    g.sum().backward()
    tg.sum().backward()
    close(z.grad, tz.grad, 1e-4)
    zs = np.array([[2.0, 0.0, 3.0, 0.5], [0.0, 1.5, 0.0, 2.0], [1.0, 2.0, -1.0, 3.0]], dtype=np.float64)
    wz = rng.standard_normal(zs.shape)
    u = ff.tensor(zs, requires_grad=True, device=device)
    tu = torch.tensor(zs, requires_grad=True)
    gu, = ff.autograd.grad((u.cumprod(1) * ff.tensor(wz, device=device)).sum(), [u], create_graph=True)
    tgu, = torch.autograd.grad((tu.cumprod(1) * torch.tensor(wz)).sum(), [tu], create_graph=True)
    assert not np.isnan(gu.numpy()).any()
    close(gu, tgu, 1e-10)
    (gu * gu).sum().backward()
    (tgu * tgu).sum().backward()
    close(u.grad, tu.grad, 1e-10)


@pytest.mark.parametrize("device", DEVICES)
def test_sorting_matches_torch(device):
    """sort/argsort (stable, both directions, NaN and infinities, integers), topk, kthvalue,
    median (lower median; NaN lines) against PyTorch on every backend, with gradients."""
    rng = np.random.default_rng(9)
    a = rng.standard_normal((4, 7)).astype(np.float32)
    a[1, 2], a[2, 5], a[3, 0] = np.nan, np.inf, -np.inf
    t, tt = ff.tensor(a, device=device), torch.tensor(a)
    for dim in (0, 1, -1):
        for desc in (False, True):
            v, i = t.sort(dim, descending=desc)
            tv, ti = torch.sort(tt, dim=dim, descending=desc, stable=True)
            close(v, tv, 0)
            assert np.array_equal(i.numpy(), ti.numpy()) and i.dtype is ff.int64
            assert np.array_equal(ff.argsort(t, dim, descending=desc).numpy(), ti.numpy())
    ties = np.array([[3, 1, 3, 2, 1, 3], [0, 0, -1, 5, 5, 0]], dtype=np.int64)
    for desc in (False, True):
        got = ff.tensor(ties, device=device).argsort(1, descending=desc).numpy()
        want = torch.tensor(ties).sort(dim=1, descending=desc, stable=True).indices.numpy()
        assert np.array_equal(got, want), (desc, got, want)
    b = rng.standard_normal((3, 5, 6)).astype(np.float32)
    x, tx = ff.tensor(b, requires_grad=True, device=device), torch.tensor(b, requires_grad=True)
    w = rng.standard_normal((3, 5, 2)).astype(np.float32)
    for largest in (True, False):
        v, i = ff.topk(x, 2, dim=-1, largest=largest)
        tv, ti = torch.topk(tx, 2, dim=-1, largest=largest)
        close(v, tv, 0)
        assert np.array_equal(i.numpy(), ti.numpy())
    (ff.topk(x, 2).values * ff.tensor(w, device=device)).sum().backward()
    (torch.topk(tx, 2).values * torch.tensor(w)).sum().backward()
    close(x.grad, tx.grad, 0)
    v, i = x.kthvalue(3, dim=1, keepdim=True)
    tv, ti = tx.kthvalue(3, dim=1, keepdim=True)
    close(v, tv, 0)
    assert np.array_equal(i.numpy(), ti.numpy())
    for keepdim in (False, True):
        v, i = x.median(dim=2, keepdim=keepdim)
        tv, ti = tx.median(dim=2, keepdim=keepdim)
        close(v, tv, 0)
        assert np.array_equal(i.numpy(), ti.numpy())
    close(x.median(), tx.median(), 0)
    m = ff.tensor(a, device=device).median(dim=1)
    tm = tt.median(dim=1)
    close(m.values, tm.values, 0)
    assert np.isnan(m.values.numpy()[1]) and np.isnan(a[1, m.indices.numpy()[1]])
    assert ff.tensor(np.float32(2.5), device=device).median().item() == 2.5
    assert ff.msort(ff.tensor(a[:, :2], device=device)).numpy()[0, 0] == np.sort(a[:, 0])[0]


@pytest.mark.parametrize("device", DEVICES)
def test_nonzero_bincount_randperm_matrix_power(device):
    """Data-sized results (nonzero: NaN counts, 0-d, none; bincount: weights' dtype,
    minlength, empty; errors), randperm is a permutation and follows manual_seed, and
    matrix_power (batched, n = 0, 1, 5, gradient; negative n refused) against PyTorch."""
    a = np.array([[0.0, 1.5, 0.0], [np.nan, 0.0, -2.0]], dtype=np.float32)
    t = ff.tensor(a, device=device)
    assert np.array_equal(t.nonzero().numpy(), torch.tensor(a).nonzero().numpy())
    assert t.nonzero().dtype is ff.int64
    rows, cols = ff.nonzero(t, as_tuple=True)
    trows, tcols = torch.nonzero(torch.tensor(a), as_tuple=True)
    assert np.array_equal(rows.numpy(), trows.numpy()) and np.array_equal(cols.numpy(), tcols.numpy())
    assert ff.zeros(2, 3, device=device).nonzero().shape == (0, 2)
    assert ff.tensor(np.float32(3.0), device=device).nonzero().shape == (1, 0)
    x = np.array([0, 2, 2, 5, 1, 2], dtype=np.int64)
    w = np.array([0.5, 1.0, 2.0, -1.0, 3.0, 0.25], dtype=np.float32)
    xi = ff.tensor(x, device=device)
    assert np.array_equal(xi.bincount().numpy(), torch.tensor(x).bincount().numpy())
    assert np.array_equal(ff.bincount(xi, minlength=9).numpy(), torch.bincount(torch.tensor(x), minlength=9).numpy())
    bw = ff.bincount(xi, ff.tensor(w, device=device))
    assert bw.dtype is ff.float32
    close(bw, torch.bincount(torch.tensor(x), torch.tensor(w)))
    assert ff.bincount(ff.tensor(np.zeros(0, np.int64), device=device)).shape == (0,)
    with pytest.raises(ff.FusionFlowError, match="non-negative"):
        ff.bincount(ff.tensor(np.array([1, -3]), device=device))
    ff.manual_seed(4)
    p = ff.randperm(50, device=device).numpy()
    assert sorted(p.tolist()) == list(range(50)) and p.tolist() != list(range(50))
    ff.manual_seed(4)
    assert np.array_equal(ff.randperm(50).numpy(), p)
    rng = np.random.default_rng(3)
    m = (rng.standard_normal((2, 3, 3)) / 2).astype(np.float64)
    mt = ff.tensor(m, requires_grad=True, device=device)
    tm = torch.tensor(m, requires_grad=True)
    for n in (0, 1, 5):
        close(ff.matrix_power(mt, n), torch.matrix_power(tm, n), 1e-12)
    mt.matrix_power(5).sum().backward()
    torch.matrix_power(tm, 5).sum().backward()
    close(mt.grad, tm.grad, 1e-12)
    if device in ("cpu_ref", "cpu_blas"):  # negative powers: the inverse's (the linalg entry)
        close(mt.matrix_power(-2), torch.matrix_power(tm, -2), 1e-9)
    else:
        with pytest.raises(ff.FusionFlowError, match="does not support"):
            mt.matrix_power(-1)


@pytest.mark.parametrize("device", DEVICES)
def test_einsum_matches_torch(device):
    """Explicit and implicit outputs, batch/contracted/outer labels, '...', diagonals, size-1
    broadcasting, three operands, the list form, gradients of every operand, and errors."""
    rng = np.random.default_rng(21)
    cases = [("ij,jk->ik", (3, 4), (4, 5)), ("ij,jk", (3, 4), (4, 5)), ("bhqd,bhkd->bhqk", (2, 3, 4, 5), (2, 3, 6, 5)),
             ("ii->i", (4, 4)), ("ii", (4, 4)), ("ij->", (3, 4)), ("i,j->ij", (3,), (4,)),
             ("...ij,...jk->...ik", (2, 3, 4), (4, 5)), ("ab,ab->a", (1, 4), (3, 4)),
             ("bn,anm,bm->ba", (2, 3), (5, 3, 4), (2, 4)), ("iij->j", (3, 3, 4))]
    for eq, *shapes in cases:
        arrs = [rng.standard_normal(s) for s in shapes]
        fs = [ff.tensor(a, requires_grad=True, device=device) for a in arrs]
        ts = [torch.tensor(a, requires_grad=True) for a in arrs]
        f, t = ff.einsum(eq, *fs), torch.einsum(eq, *ts)
        assert f.shape == tuple(t.shape), eq
        close(f, t, 1e-10)
        w = rng.standard_normal(tuple(t.shape))
        (f * ff.tensor(w, device=device)).sum().backward()
        (t * torch.tensor(w)).sum().backward()
        for a, b in zip(fs, ts):
            close(a.grad, b.grad, 1e-10)
    x = ff.tensor(rng.standard_normal((2, 3)), device=device)
    close(ff.einsum("ij->ji", [x]), x.numpy().T, 0)
    for bad, msg in (("ij,jk->ik", "operand"), ("ijk->i", "subscripts"), ("ij->q", "not in any operand"),
                     ("i1->i", "not a letter")):
        with pytest.raises(ff.FusionFlowError, match=msg):
            ff.einsum(bad, x)


@pytest.mark.parametrize("device", DEVICES)
def test_searchsorted_bucketize_histc_match_torch(device):
    """searchsorted (1-d and batched sequences, left/right, ties, out_int32, sorter),
    bucketize, and histc (given range with values outside and at max, data range, a
    single value, NaN refused for the data range) against PyTorch."""
    rng = np.random.default_rng(13)
    seq = np.array([1.0, 2, 2, 3, 5, 8])
    v = np.array([[0.0, 2, 2.5], [8, 9, 1]])
    for right in (False, True):
        got = ff.searchsorted(ff.tensor(seq, device=device), ff.tensor(v, device=device), right=right)
        want = torch.searchsorted(torch.tensor(seq), torch.tensor(v), right=right)
        assert got.dtype is ff.int64 and np.array_equal(got.numpy(), want.numpy())
    s2 = np.sort(rng.standard_normal((3, 7)), axis=1)
    v2 = rng.standard_normal((3, 4))
    assert np.array_equal(ff.searchsorted(ff.tensor(s2, device=device), ff.tensor(v2, device=device), side="right").numpy(),
                          torch.searchsorted(torch.tensor(s2), torch.tensor(v2), side="right").numpy())
    perm = rng.permutation(6)
    got = ff.searchsorted(ff.tensor(seq[perm], device=device), ff.tensor(v, device=device),
                          sorter=ff.tensor(np.argsort(seq[perm]), device=device), out_int32=True)
    assert got.dtype is ff.int32
    assert np.array_equal(got.numpy(), torch.searchsorted(torch.tensor(seq), torch.tensor(v)).numpy())
    b = np.array([0.5, 2.0, 9.0, -1.0, 3.0])
    for right in (False, True):
        assert np.array_equal(ff.bucketize(ff.tensor(b, device=device), ff.tensor([1.0, 2, 3], device=device), right=right).numpy(),
                              torch.bucketize(torch.tensor(b), torch.tensor([1.0, 2, 3]), right=right).numpy())
    a = rng.standard_normal(1000).astype(np.float32)
    a[:3] = [1.0, -1.0, 0.25]  # exactly at max, at min, on a bin edge
    for bins, lo, hi in ((10, 0, 0), (7, -1, 1), (4, 0.5, 0.5)):
        h = ff.histc(ff.tensor(a, device=device), bins, lo, hi)
        assert h.dtype is ff.float32
        close(h, torch.histc(torch.tensor(a), bins, lo, hi), 0)
    close(ff.tensor(np.float32([2, 2]), device=device).histc(3), torch.histc(torch.tensor([2.0, 2.0]), 3), 0)
    with pytest.raises(ff.FusionFlowError, match="not finite"):
        ff.histc(ff.tensor(np.float32([1, np.nan]), device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_multinomial_distribution(device):
    """Frequencies follow the weights (20000 draws with replacement; first draws without),
    zero weights are never drawn, no repeats without replacement, rows are independent,
    the global seed reproduces, and impossible requests are errors (as PyTorch)."""
    ff.manual_seed(1)
    w = ff.tensor([0.1, 0.0, 0.6, 0.3], device=device)
    s = ff.multinomial(w, 20000, replacement=True)
    assert s.dtype is ff.int64 and s.shape == (20000,)
    freq = np.bincount(s.numpy(), minlength=4) / 20000
    assert np.allclose(freq, [0.1, 0.0, 0.6, 0.3], atol=0.015), freq
    pairs = np.array([w.multinomial(2).numpy() for _ in range(2000)])
    assert (pairs[:, 0] != pairs[:, 1]).all() and (pairs != 1).all()
    assert np.allclose(np.bincount(pairs[:, 0], minlength=4) / 2000, [0.1, 0.0, 0.6, 0.3], atol=0.04)
    rows = ff.multinomial(ff.tensor([[1.0, 0, 0], [0, 0, 2]], device=device), 3, replacement=True).numpy()
    assert (rows[0] == 0).all() and (rows[1] == 2).all()
    ff.manual_seed(7)
    a = ff.multinomial(w, 5, replacement=True).numpy()
    ff.manual_seed(7)
    assert np.array_equal(a, ff.multinomial(w, 5, replacement=True).numpy())
    for bad, kw in ((ff.tensor([0.5, -0.1], device=device), {}),
                    (ff.tensor([1.0, 0, 0], device=device), {"num_samples": 2})):
        with pytest.raises(ff.FusionFlowError):
            ff.multinomial(bad, kw.get("num_samples", 1))


@pytest.mark.parametrize("device", DEVICES)
def test_unique_matches_torch(device):
    """Values, inverse (x's shape) and counts as torch.unique, integers and floats, empty
    input; NaNs each their own value, placed last (docs/semantics.md)."""
    rng = np.random.default_rng(17)
    for a in (rng.integers(-3, 4, size=(4, 5)), rng.integers(0, 3, size=7).astype(np.float32)):
        got = ff.unique(ff.tensor(a, device=device), return_inverse=True, return_counts=True)
        want = torch.unique(torch.tensor(a), return_inverse=True, return_counts=True)
        for g, w in zip(got, want):
            assert g.shape == tuple(w.shape) and np.array_equal(g.numpy(), w.numpy())
    assert ff.tensor(np.zeros(0, np.float32), device=device).unique().shape == (0,)
    u, c = ff.unique(ff.tensor([1.0, np.nan, np.nan, 1.0], device=device), return_counts=True)
    assert u.numpy()[0] == 1 and np.isnan(u.numpy()[1:]).all() and c.numpy().tolist() == [2, 1, 1]
    with pytest.raises(NotImplementedError):
        ff.unique(ff.tensor([1, 2], device=device), dim=0)


@pytest.mark.parametrize("device", DEVICES)
def test_interpolate_matches_torch(device):
    """nearest / linear / bilinear / trilinear, by size and by scale_factor (PyTorch's
    1 / scale_factor source scale), align_corners, down- and upsampling, and gradients."""
    rng = np.random.default_rng(23)
    cases = [((2, 3, 5, 7), dict(size=(9, 4), mode="bilinear")),
             ((2, 3, 5, 7), dict(scale_factor=2, mode="nearest")),
             ((2, 3, 5, 7), dict(size=(3, 11), mode="bilinear", align_corners=True)),
             ((1, 2, 6), dict(scale_factor=1.7, mode="linear")),
             ((1, 2, 6), dict(size=4, mode="nearest")),
             ((1, 1, 3, 4, 5), dict(size=(5, 3, 7), mode="trilinear")),
             ((2, 3, 5, 7), dict(scale_factor=(0.5, 1.5), mode="bilinear"))]
    for shape, kw in cases:
        a = rng.standard_normal(shape).astype(np.float32)
        x = ff.tensor(a, requires_grad=True, device=device)
        tx = torch.tensor(a, requires_grad=True)
        y, ty = F.interpolate(x, **kw), TF.interpolate(tx, **kw)
        close(y, ty, 2e-6)
        g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
        (y * ff.tensor(g, device=device)).sum().backward()
        (ty * torch.tensor(g)).sum().backward()
        close(x.grad, tx.grad, 2e-5)
    with pytest.raises(NotImplementedError):  # bicubic is 4-D only (test_round4_resample.py has the rest)
        F.interpolate(ff.zeros(1, 1, 4, device=device), size=2, mode="bicubic")


@pytest.mark.parametrize("device", DEVICES)
def test_mode_and_scatter_match_torch(device):
    """mode: smallest of the most frequent values, index of its last occurrence, NaNs each
    counted once, keepdim, gradient. scatter: src and value forms, partial index shapes,
    gradients to input and src (no repeats), and repeats resolved last-wins."""
    for a, d in (([1, 2, 2, 1, 3], 0), ([[3.0, 1, 1, 3, 2], [5, 5, 4, 4, 4]], 1), ([2.0, np.nan, np.nan, 1], 0)):
        f, t = ff.mode(ff.tensor(a, device=device), d), torch.mode(torch.tensor(a), d)
        assert np.array_equal(f.values.numpy(), t.values.numpy()) and np.array_equal(f.indices.numpy(), t.indices.numpy())
    rng = np.random.default_rng(31)
    b = rng.integers(0, 3, size=(3, 4, 6)).astype(np.float32)
    x, tx = ff.tensor(b, requires_grad=True, device=device), torch.tensor(b, requires_grad=True)
    f, t = x.mode(2, keepdim=True), tx.mode(2, keepdim=True)
    close(f.values, t.values, 0)
    assert np.array_equal(f.indices.numpy(), t.indices.numpy())
    f.values.sum().backward()
    t.values.sum().backward()
    close(x.grad, tx.grad, 0)
    base = rng.standard_normal((3, 5)).astype(np.float32)
    src = rng.standard_normal((3, 2)).astype(np.float32)  # index's shape: torch 1.13's backward wants it
    idx = np.array([[4, 0], [1, 3], [0, 2]])
    xi, ts = ff.tensor(base, requires_grad=True, device=device), ff.tensor(src, requires_grad=True, device=device)
    txi, tts = torch.tensor(base, requires_grad=True), torch.tensor(src, requires_grad=True)
    y, ty = ff.scatter(xi, 1, ff.tensor(idx, device=device), ts), torch.scatter(txi, 1, torch.tensor(idx), tts)
    close(y, ty, 0)
    w = rng.standard_normal((3, 5)).astype(np.float32)
    (y * ff.tensor(w, device=device)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    close(xi.grad, txi.grad, 0)
    close(ts.grad, tts.grad, 0)
    big = rng.standard_normal((4, 3)).astype(np.float32)  # src larger than index: its leading part
    close(ff.scatter(ff.tensor(base, device=device), 1, ff.tensor(idx, device=device), ff.tensor(big, device=device)),
          torch.scatter(torch.tensor(base), 1, torch.tensor(idx), torch.tensor(big)), 0)
    v = ff.tensor(base, device=device).scatter(0, ff.tensor(np.array([[0, 1, 2, 0, 1]]), device=device), value=5.0)
    close(v, torch.tensor(base).scatter(0, torch.tensor([[0, 1, 2, 0, 1]]), 5.0), 0)
    rep = ff.scatter(ff.zeros(1, 4, device=device), 1, ff.tensor(np.array([[2, 0, 2, 2]]), device=device),
                     ff.tensor(np.array([[1.0, 2, 3, 4]], np.float32), device=device))
    assert rep.numpy().tolist() == [[2.0, 0.0, 4.0, 0.0]]  # index 2 written by 1, 3, then 4: the last wins


# ---- torch.fft (ops/fft.c): compared in torch.view_as_real's layout (last dim 2) on both sides ----
FFT_DEVICES = [d for d in DEVICES if d != "opencl"]  # opencl has no fft entry: test_fft_declined_by_opencl


def _ff_fft(kind, x, n, dim, norm):
    """Our transform of the pair layout x, through view_as_complex / view_as_real (views, so
    the gradient reaches x as PyTorch's reaches its input)."""
    fn = getattr(ff.fft, kind)
    if kind == "rfft":
        return ff.view_as_real(fn(x, n=n, dim=dim, norm=norm))
    out = fn(ff.view_as_complex(x), n=n, dim=dim, norm=norm)
    return out if kind == "irfft" else ff.view_as_real(out)


def _torch_fft(kind, t, n, dim, norm):
    """PyTorch's transform, with our layout on both sides (view_as_complex / view_as_real)."""
    if kind == "rfft":
        return torch.view_as_real(torch.fft.rfft(t, n=n, dim=dim, norm=norm))
    out = getattr(torch.fft, kind)(torch.view_as_complex(t), n=n, dim=dim, norm=norm)
    return out if kind == "irfft" else torch.view_as_real(out)


def _fft_input(rng, kind, length, dim, dt, layout, device):
    """Signal dims (3, 4) with `length` at dim (of the signal dims), plus the (re, im) dim for
    complex inputs; as numpy data and as a tensor on device laid out contiguous or with two
    signal dims transposed (a complex tensor's pairs are always adjacent)."""
    sig = [3, 4]
    sig[dim] = length
    shape = tuple(sig) + (() if kind == "rfft" else (2,))
    a = rng.standard_normal(shape).astype(dt)
    if layout == "transposed":
        return a, ff.tensor(np.ascontiguousarray(np.swapaxes(a, 0, 1)), device=device).transpose(0, 1)
    return a, ff.tensor(a, device=device)


@pytest.mark.parametrize("device", FFT_DEVICES)
@pytest.mark.parametrize("kind", ["fft", "ifft", "rfft", "irfft"])
def test_fft_matches_torch(device, kind):
    """Each transform and its gradient against PyTorch's, through view_as_real /
    view_as_complex: f32 and f64; lengths 1, 2, 5, 8 and 13 (odd, even, prime); n default,
    1, truncating and padding, prime; every norm; dim -1, 0 and 1 of the signal dims; inputs
    contiguous and transposed. The gradient checks PyTorch's conventions, the Hermitian
    doubling of rfft/irfft included."""
    rng = np.random.default_rng(19)
    i = 0
    for dt, tol in ((np.float32, 1e-4), (np.float64, 1e-10)):
        for length in (1, 2, 5, 8, 13):
            for n in (None, 1, 4, 7, 16):
                for norm in (None, "backward", "forward", "ortho"):
                    i += 1
                    dim = (-1, 0, 1)[i % 3]
                    layout = ("contig", "transposed")[i % 2]
                    a, x = _fft_input(rng, kind, length, dim % 2, dt, layout, device)  # dim -1: signal dim 1
                    tx = torch.tensor(a, requires_grad=True)
                    if kind == "irfft" and n is None and length == 1:  # default n = 2 (1 - 1) = 0
                        with pytest.raises(RuntimeError):
                            _torch_fft(kind, tx, n, dim, norm)
                        with pytest.raises(ff.FusionFlowError, match="ff_fft_irfft: invalid number of data points"):
                            _ff_fft(kind, x, n, dim, norm)
                        continue
                    x = x.detach().requires_grad_(True)  # keeps the layout
                    y, ty = _ff_fft(kind, x, n, dim, norm), _torch_fft(kind, tx, n, dim, norm)
                    assert y.dtype is (ff.float32 if dt == np.float32 else ff.float64)
                    close(y, ty, tol)
                    w = rng.standard_normal(tuple(ty.shape)).astype(dt)
                    (y * ff.tensor(w, device=device)).sum().backward()
                    (ty * torch.tensor(w)).sum().backward()
                    close(x.grad, tx.grad, tol)


@pytest.mark.parametrize("device", FFT_DEVICES)
def test_fft_second_order_and_promotion(device):
    """create_graph through fft and irfft (their gradients are transforms too, so they are
    differentiable again), integer input to rfft computing in f32 as PyTorch's complex64,
    and zero lines (an empty batch dim)."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 6, 2))
    for kind in ("fft", "irfft"):
        x = ff.tensor(a, requires_grad=True, device=device)
        tx = torch.tensor(a, requires_grad=True)
        y, ty = _ff_fft(kind, x, None, -1, "ortho"), _torch_fft(kind, tx, None, -1, "ortho")
        g, = ff.autograd.grad((y ** 3).sum(), [x], create_graph=True)
        tg, = torch.autograd.grad((ty ** 3).sum(), [tx], create_graph=True)
        close(g, tg, 1e-10)
        (g * g).sum().backward()
        (tg * tg).sum().backward()
        close(x.grad, tx.grad, 1e-9)
    i = np.array([[3, 1, -2, 5, 0]], dtype=np.int32)
    r, tr = ff.fft.rfft(ff.tensor(i, device=device)), torch.fft.rfft(torch.tensor(i))
    assert r.dtype is ff.complex64 and tr.dtype == torch.complex64
    close(ff.view_as_real(r), torch.view_as_real(tr), 1e-5)
    assert ff.fft.fft(ff.zeros(0, 5, 2, device=device)).shape == (0, 5, 2)
    assert ff.fft.rfft(ff.zeros(2, 0, 8, device=device), n=6).shape == (2, 0, 4)


def test_fft_bad_input_errors():
    """PyTorch's errors for n, norm, dim and a complex input to rfft; messages name the
    function."""
    assert hasattr(ff, "fft") and callable(ff.fft.fft)
    real = ff.ones(3, 4)
    with pytest.raises(ff.FusionFlowError, match=r"fft: invalid number of data points \(0\)"):
        ff.fft.fft(ff.ones(3, 2), n=0)
    with pytest.raises(ff.FusionFlowError, match="rfft: invalid normalization mode 'sideways'"):
        ff.fft.rfft(real, norm="sideways")
    with pytest.raises(ff.FusionFlowError, match="ff_fft_fft: axis 1 out of range for 1 complex dims"):
        ff.fft.fft(ff.ones(3, dtype=ff.complex64), dim=1)
    with pytest.raises(ff.FusionFlowError, match="rfft expects a real input tensor"):
        ff.fft.rfft(ff.ones(3, dtype=ff.complex64))
    with pytest.raises(ff.FusionFlowError, match="ifft: x is 0-d"):
        ff.fft.ifft(ff.ones((), dtype=ff.complex64))
    with pytest.raises(ff.FusionFlowError, match="ff_fft_rfft: x is 0-d"):
        ff.fft.rfft(ff.tensor(np.float32(1.0)))


@pytest.mark.skipif("opencl" not in DEVICES, reason="the opencl backend is not built or has no platform")
def test_fft_declined_by_opencl():
    """opencl has no fft entry: a clear error naming the backend, for every transform."""
    x = ff.ones(4, 2, device="opencl")
    for kind in ("fft", "ifft", "rfft", "irfft"):
        with pytest.raises(ff.FusionFlowError, match=f"ff_fft_{kind}: backend 'opencl' does not support fft"):
            getattr(ff.fft, kind)(x)
